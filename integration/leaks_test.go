package integration

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/internal/testenv"
	"github.com/dpsql/dpsql/server/demo"
	"github.com/dpsql/dpsql/sqlext/tabfile"
	"github.com/dpsql/dpsql/sqlext/tokenize"
)

// leakCheck knows values of the protected tables that an analyst must never
// see, computed from the data itself (the demo generator, the corpus file):
//
//   - privacy-unit values (when they are not plain numbers, which would be
//     confused with counts and other numbers; the demo's user ids are 1 …
//     20,000 and covered by the counts below);
//   - text values held by exactly one privacy unit: whole cells of more
//     than maxNgramTokens tokens (a post, a commit message: shorter ones
//     may equal an n-gram many users wrote inside longer texts) and tokens
//     of 4 bytes or more that are not numbers (a user's pet word, a typo
//     of their own). A DP release publishes such a value with probability
//     about δ at most; a value many users share may be released by design,
//     so it is not a secret;
//   - exact counts of 1,000 and more: rows, distinct privacy units,
//     distinct values of each text column.
//
// A result cell leaks when it equals a secret value, when it is a JSON
// array (DP_SET_UNION) holding one, when one of its tokens is a privacy-unit
// value, or when it is an integer equal to an exact count.
type leakCheck struct {
	secret map[string]string // value -> what it is
	units  map[string]string // privacy-unit values (non-numeric)
	counts map[int64]string
	// public are values the server shows whatever its data (character set
	// and collation names, variables, the schema's identifiers): a secret
	// that happens to equal one (a user wrote "utf16le" in one commit
	// message) is not a leak when the server shows it.
	public map[string]bool
}

// withoutCounts returns c without the count check, for results that are
// server counters (SHOW STATUS) rather than anything about the data.
func (c *leakCheck) withoutCounts() *leakCheck {
	out := *c
	out.counts = nil
	return &out
}

// withPublic returns c with the values of public added to its public set.
func (c *leakCheck) withPublic(public ...string) *leakCheck {
	out := &leakCheck{secret: c.secret, units: c.units, counts: c.counts, public: map[string]bool{}}
	for k := range c.public {
		out.public[k] = true
	}
	for _, v := range public {
		out.public[v] = true
	}
	return out
}

// maxNgramTokens is DP_NGRAMS' longest n-gram (max_n ≤ 10).
const maxNgramTokens = 10

func newLeakCheck() *leakCheck {
	return &leakCheck{secret: map[string]string{}, units: map[string]string{}, counts: map[int64]string{}}
}

// holder tracks the privacy units holding a value: the first one and
// whether there are others.
type holder struct {
	unit  string
	multi bool
}

// tableScan accumulates one protected table's (unit, text) rows.
type tableScan struct {
	name   string
	rows   int64
	units  map[string]bool
	cells  map[string]*holder
	tokens map[string]*holder
}

func newTableScan(name string) *tableScan {
	return &tableScan{name: name, units: map[string]bool{}, cells: map[string]*holder{}, tokens: map[string]*holder{}}
}

func hold(m map[string]*holder, v, unit string) {
	h, ok := m[v]
	if !ok {
		m[v] = &holder{unit: unit}
		return
	}
	if !h.multi && h.unit != unit {
		h.multi = true
	}
}

func (s *tableScan) add(unit, text string) {
	s.rows++
	s.units[unit] = true
	hold(s.cells, text, unit)
	for _, tok := range tokenize.Tokens(text) {
		hold(s.tokens, tok, unit)
	}
}

// into adds the table's secrets and counts to c.
func (s *tableScan) into(c *leakCheck) {
	for u := range s.units {
		if _, err := strconv.ParseInt(u, 10, 64); err != nil && u != "" {
			c.units[u] = "privacy unit of " + s.name
		}
	}
	for v, h := range s.cells {
		if !h.multi && len(tokenize.Tokens(v)) > maxNgramTokens {
			c.secret[v] = "a text of " + s.name + " held by one privacy unit"
		}
	}
	for v, h := range s.tokens {
		if _, err := strconv.ParseFloat(v, 64); !h.multi && len(v) >= 4 && err != nil {
			c.secret[v] = "a token of " + s.name + " held by one privacy unit"
		}
	}
	for what, n := range map[string]int{"rows": int(s.rows), "privacy units": len(s.units), "distinct texts": len(s.cells), "distinct tokens": len(s.tokens)} {
		if n >= 1000 {
			c.counts[int64(n)] = fmt.Sprintf("the exact number of %s of %s", what, s.name)
		}
	}
}

var (
	demoLeaksOnce sync.Once
	demoLeaks     *leakCheck
	demoLeaksErr  error

	railsLeaksOnce sync.Once
	railsLeaks     *leakCheck
	railsLeaksErr  error
)

// demoLeakCheck computes the secrets of demo.posts and demo.words from the
// generator (the same deterministic data the server serves).
func demoLeakCheck(t testing.TB) *leakCheck {
	t.Helper()
	demoLeaksOnce.Do(func() {
		db, _, err := demo.New()
		if err != nil {
			demoLeaksErr = err
			return
		}
		demoLeaks = newLeakCheck()
		ctx := sql.NewEmptyContext()
		for _, name := range []string{"posts", "words"} {
			tbl, ok := db.Table(name)
			if !ok {
				demoLeaksErr = fmt.Errorf("demo has no table %s", name)
				return
			}
			scan := newTableScan("demo." + name)
			parts, err := tbl.Partitions(ctx)
			if err != nil {
				demoLeaksErr = err
				return
			}
			for {
				p, err := parts.Next(ctx)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					demoLeaksErr = err
					return
				}
				rows, err := tbl.PartitionRows(ctx, p)
				if err != nil {
					demoLeaksErr = err
					return
				}
				for {
					r, err := rows.Next(ctx)
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						demoLeaksErr = err
						return
					}
					scan.add(fmt.Sprint(r[0]), fmt.Sprint(r[1]))
				}
				rows.Close(ctx)
			}
			scan.into(demoLeaks)
		}
	})
	if demoLeaksErr != nil {
		t.Fatal(demoLeaksErr)
	}
	return demoLeaks
}

// railsLeakCheck computes the secrets of rails.commits from the corpus file.
func railsLeakCheck(t testing.TB) *leakCheck {
	t.Helper()
	path := testenv.DataFile(t, "git_rails.tsv.gz")
	railsLeaksOnce.Do(func() {
		r, err := tabfile.Open(path, tabfile.TSV)
		if err != nil {
			railsLeaksErr = err
			return
		}
		defer r.Close()
		scan := newTableScan("rails.commits")
		for {
			f, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				railsLeaksErr = err
				return
			}
			if len(f) < 2 {
				continue
			}
			scan.add(string(f[0]), string(f[1]))
		}
		railsLeaks = newLeakCheck()
		scan.into(railsLeaks)
	})
	if railsLeaksErr != nil {
		t.Fatal(railsLeaksErr)
	}
	return railsLeaks
}

// leaksFor returns the leak check of a deployment.
func leaksFor(t testing.TB, s *govServer) *leakCheck {
	if s.name == "demo" {
		return demoLeakCheck(t)
	}
	return railsLeakCheck(t)
}

// leak returns why cell leaks protected data ("" if it does not).
func (c *leakCheck) leak(cell string) string {
	if c.public[cell] {
		return ""
	}
	if why, ok := c.secret[cell]; ok {
		return why
	}
	if why, ok := c.units[cell]; ok {
		return why
	}
	if n, err := strconv.ParseInt(strings.TrimSpace(cell), 10, 64); err == nil {
		if why, ok := c.counts[n]; ok {
			return why
		}
	}
	if strings.HasPrefix(cell, "[") {
		var arr []any
		if json.Unmarshal([]byte(cell), &arr) == nil {
			for _, v := range arr {
				if s, ok := v.(string); ok {
					if why := c.leak(s); why != "" {
						return why + " (in a JSON array)"
					}
				}
			}
		}
	}
	if len(c.units) > 0 {
		for _, tok := range tokenize.Tokens(cell) {
			if why, ok := c.units[tok]; ok {
				return why + " (inside the value)"
			}
		}
	}
	return ""
}

// checkRows reports every cell of rows that leaks, saying where it came
// from; it returns the number of leaks.
func (c *leakCheck) checkRows(t testing.TB, where string, rows [][]*string) int {
	t.Helper()
	n := 0
	for i, row := range rows {
		for j, v := range row {
			if v == nil {
				continue
			}
			if why := c.leak(*v); why != "" {
				n++
				if n <= 5 {
					t.Errorf("LEAK in %s, row %d column %d: %q is %s", where, i+1, j+1, clipString(*v, 80), why)
				}
			}
		}
	}
	if n > 5 {
		t.Errorf("… %d leaking cells in %s in all", n, where)
	}
	return n
}

func clipString(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// TestLeakCheckFindsSecrets makes sure the leak check is not vacuous: it
// knows secrets of both deployments and recognises them in cells, JSON
// arrays and counts, while common words pass.
func TestLeakCheckFindsSecrets(t *testing.T) {
	d := demoLeakCheck(t)
	if len(d.secret) < 1000 || len(d.counts) == 0 {
		t.Fatalf("demo: %d secrets, %d counts", len(d.secret), len(d.counts))
	}
	var pet string
	for v, why := range d.secret {
		if strings.Contains(why, "demo.words") {
			pet = v
			break
		}
	}
	for _, cell := range []string{pet, `["ka","` + pet + `"]`, "740996"} {
		if d.leak(cell) == "" {
			t.Errorf("demo: %q not recognised as a leak", cell)
		}
	}
	for _, cell := range []string{"ka", `["ka","lo"]`, "1", "demo", "words"} {
		if why := d.leak(cell); why != "" {
			t.Errorf("demo: %q taken for a leak: %s", cell, why)
		}
	}
	t.Logf("demo: %d secret values, counts %v", len(d.secret), d.counts)

	r := railsLeakCheck(t)
	if len(r.units) < 6000 || len(r.secret) < 1000 {
		t.Fatalf("git_rails: %d privacy units, %d secrets", len(r.units), len(r.secret))
	}
	var unit string
	for u := range r.units {
		unit = u
		break
	}
	for _, cell := range []string{unit, "by " + unit, "73048"} {
		if r.leak(cell) == "" {
			t.Errorf("git_rails: %q not recognised as a leak", cell)
		}
	}
	for _, cell := range []string{"fix", "rails", "activerecord", "commits", "user_id", "message"} {
		if why := r.leak(cell); why != "" {
			t.Errorf("git_rails: %q taken for a leak: %s", cell, why)
		}
	}
	t.Logf("git_rails: %d privacy units, %d secret values, counts %v", len(r.units), len(r.secret), r.counts)
}
