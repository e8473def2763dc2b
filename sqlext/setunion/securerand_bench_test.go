package setunion

import (
	"context"
	"testing"

	"github.com/dpsql/dpsql/sqlext/securerand"
)

// BenchmarkPreparedReleaseProduction is BenchmarkPreparedRelease with the
// production source, securerand.New(), one per release as the server does:
// it shows what the randomness itself costs a warm release.
func BenchmarkPreparedReleaseProduction(b *testing.B) {
	p, err := Prepare(demoGrouped())
	if err != nil {
		b.Fatal(err)
	}
	for _, m := range benchMechanisms {
		b.Run(string(m), func(b *testing.B) {
			o := Defaults()
			o.Mechanism = m
			for b.Loop() {
				bl, err := NewPreparedBuilder(o, p)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := bl.ReleaseContext(context.Background(), securerand.New()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
