package governance

import (
	"fmt"
	"strings"
)

// version returns the version of a protected table that reuse keys carry:
// its load generation and privacy unit.
func (g *Governor) version(database, table string) (string, bool) {
	g.versionMu.RLock()
	defer g.versionMu.RUnlock()
	v, ok := g.versions[tableKey(database, table)]
	return v, ok
}

// Reloaded records a new load of the protected table database.table from
// a source described by source (ledger.LoadGeneration: the same
// description keeps the generation, another one starts the next) and
// makes it the version that reuse keys carry from now on. It returns the
// generation.
//
// A release that read the previous load and is charged after this call is
// kept under the new version: the key then names a newer load than the
// rows it read, so a later identical request may be answered with a
// release of the previous load. That costs freshness, not privacy: the key
// depends on no row (the description never reads the data unless the
// administrator chose generation: content, docs/privacy.md §14), and a
// stored release is post-processing of an output already sent.
func (g *Governor) Reloaded(database, table, source string) (uint64, error) {
	unit, ok := g.PrivacyUnit(database, table)
	if !ok {
		return 0, fmt.Errorf("governance: %s.%s is not a protected table", database, table)
	}
	if source != "" {
		source = "privacy unit " + strings.ToLower(unit) + "; " + source
	}
	gen, err := g.ledger.LoadGeneration(database, table, source)
	if err != nil {
		return 0, fmt.Errorf("governance: load generation of %s.%s: %w", database, table, err)
	}
	g.versionMu.Lock()
	defer g.versionMu.Unlock()
	g.versions[tableKey(database, table)] = fmt.Sprintf("generation %d, privacy unit %s", gen, strings.ToLower(unit))
	return gen, nil
}

// Generation returns the version reuse keys carry for a protected table
// ("generation N, privacy unit C"), "" for another table.
func (g *Governor) Generation(database, table string) string {
	v, _ := g.version(database, table)
	return v
}
