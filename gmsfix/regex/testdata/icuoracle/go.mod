module icuoracle

go 1.26.0

require github.com/dolthub/go-icu-regex v0.0.0-20250327004329-6799764f2dad

require (
	github.com/pkg/errors v0.9.1 // indirect
	github.com/tetratelabs/wazero v1.8.2 // indirect
	gopkg.in/src-d/go-errors.v1 v1.0.0 // indirect
)
