package server

import (
	"github.com/dpsql/dpsql/release"
	"github.com/dpsql/dpsql/server/governance"
	"github.com/dpsql/dpsql/server/storage"
)

// prebuildIndexes sets the release indexes to the governed policy (the
// expressions' share divided among the configured analysts; columns'
// indexes and corpora built by the server only) and starts building, in
// the background, the indexes and corpora of the protected tables, in the
// order of the configuration (release.Indexes.Prebuild): whether a cache
// is warm then depends on the time since the load, never on another
// analyst's statements.
func prebuildIndexes(ix *release.Indexes, p *storage.Provider, analysts int, protected []governance.ProtectedTable) {
	if ix == nil {
		return
	}
	ix.Govern(analysts)
	var tables []release.PrebuildTable
	for _, t := range protected {
		db, ok := p.Lookup(t.Database)
		if !ok {
			continue
		}
		tbl, ok := db.Table(t.Table)
		if !ok || tbl.PushdownSource() != nil { // push-down: no rows to index
			continue
		}
		tables = append(tables, release.PrebuildTable{DB: db.Name(), Name: tbl.Name(), Table: tbl, UnitCol: t.PrivacyUnit})
	}
	ix.Prebuild(tables)
}

// PathsTaken returns the counts of the paths releases took (index,
// expression index, corpus or scan): for tests comparing deployments.
func (s *Governed) PathsTaken() release.Paths { return s.indexes.Paths() }

// IndexesPrebuilt returns a channel closed once the server's own builds of
// release indexes and corpora have ended (at once without indexes).
func (s *Governed) IndexesPrebuilt() <-chan struct{} { return s.indexes.Prebuilt() }
