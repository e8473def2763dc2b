package dpagg

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
)

// Draw traces: the red team's tool for the paired work attacks
// (integration/work_test.go). A tracing source records, for every 64-bit
// word a release draws, the dpagg/setunion functions on the stack; two
// releases on neighbouring inputs with the same seed must make the same
// sequence of draws from the same code, except where the count is a
// function of a DP output or of the public size of the input.

type traceSource struct {
	src   rand.Source
	sites []string
}

func (s *traceSource) Uint64() uint64 {
	pc := make([]uintptr, 24)
	n := runtime.Callers(2, pc)
	frames := runtime.CallersFrames(pc[:n])
	var names []string
	for {
		f, more := frames.Next()
		if i := strings.LastIndex(f.Function, "/"); i >= 0 && (strings.Contains(f.Function, "/dpagg.") || strings.Contains(f.Function, "/setunion.") || strings.Contains(f.Function, "/securerand.")) {
			names = append(names, f.Function[i+1:])
		}
		if !more || len(names) == 6 {
			break
		}
	}
	s.sites = append(s.sites, strings.Join(names, "<"))
	return s.src.Uint64()
}

// traceRelease releases rows under o with a traced seeded source.
func traceRelease(t *testing.T, o Options, rows []row) ([]string, *Result) {
	t.Helper()
	_, sites, res := runTraced(t, o, rows, true)
	return sites, res
}

// runTraced runs the release of rows under o with a traced seeded source
// and returns the pipeline (for its test counters), the draw sites and the
// result; strict fails the test on a row the pipeline refuses, otherwise
// such a row is skipped as the release path skips it.
func runTraced(t *testing.T, o Options, rows []row, strict bool) (*Pipeline, []string, *Result) {
	t.Helper()
	src := &traceSource{src: rand.NewChaCha8([32]byte{7})}
	p, res := releaseRows(t, o, rows, rand.New(src), strict)
	return p, src.sites, res
}

// releaseRows runs both passes of a release of rows under o with rng (the
// value pass when bounds are chosen, then the rows) and returns the
// pipeline and its result; strict as for runTraced.
func releaseRows(t testing.TB, o Options, rows []row, rng *rand.Rand, strict bool) (*Pipeline, *Result) {
	t.Helper()
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	refused := func(err error) {
		if err != nil && strict {
			t.Fatal(err)
		}
	}
	if p.NeedsValuePass() {
		for _, rw := range rows {
			refused(p.AddValues([]byte(rw.unit), rw.values))
		}
		if err := p.ChooseValueBounds(rng); err != nil {
			t.Fatal(err)
		}
	}
	for _, rw := range rows {
		refused(p.Add([]byte(rw.unit), []byte(rw.key), rw.values))
	}
	res, err := p.ReleaseContext(context.Background(), rng)
	if err != nil {
		t.Fatal(err)
	}
	return p, res
}

// firstDivergence describes where two traces first differ.
func firstDivergence(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("draw %d: %s | %s", i, a[i], b[i])
		}
	}
	if len(a) != len(b) {
		long := a
		if len(b) > len(a) {
			long = b
		}
		return fmt.Sprintf("draw %d: one ends, the other draws at %s", min(len(a), len(b)), long[min(len(a), len(b))])
	}
	return ""
}

// victimRows are n rows of one user under key with value v.
func victimRows(unit, key string, n int, v float64) []row {
	var out []row
	for range n {
		out = append(out, row{unit: unit, key: key, values: []Value{Float(v), Float(v), Float(v), Float(v)}})
	}
	return out
}

// TestDrawTraceGlobalChosenBounds: a global release with bounds chosen
// privately over an empty input and over the victim alone.
func TestDrawTraceGlobalChosenBounds(t *testing.T) {
	o := Defaults()
	o.Epsilon = 0.001
	o.Global = true
	o.MaxRowsPerGroup = 0
	o.Aggregates = []Aggregate{{Kind: Sum, AutoBounds: true}, {Kind: Quantile, Quantile: 0.5, AutoBounds: true}, {Kind: VarPop, AutoBounds: true}, {Kind: Avg, AutoBounds: true}}
	var ordinary []row
	for u := range 300 {
		ordinary = append(ordinary, victimRows(fmt.Sprintf("u%d", u), "", 3, float64(u%100))...)
	}
	for _, base := range []struct {
		name string
		rows []row
	}{{"empty", nil}, {"300 users", ordinary}} {
		a, _ := traceRelease(t, o, base.rows)
		b, _ := traceRelease(t, o, append(append([]row(nil), base.rows...), victimRows("victim", "", 120, 424242)...))
		t.Logf("%s: draws %d without the victim, %d with; %s", base.name, len(a), len(b), firstDivergence(a, b))
	}
}

// TestBoundTestsFixedWords: the noisy tests that choose the bounds, and
// the cells of a small table's histograms (smallbounds.go), draw exactly
// two words each (securerand.BernoulliFixed), on neighbouring inputs alike
// — an empty input against the victim alone (the same words), and random
// neighbouring tables. securerand.Bernoulli read 0 words when the test's
// probability rounded to 0 or 1 and a second word with probability about
// p: 295 against 247 words for the global release over nothing and over
// the victim alone, work chosen by the data.
func TestBoundTestsFixedWords(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	o := Defaults()
	o.Epsilon = 0.001
	o.Global = true
	o.MaxRowsPerGroup = 0
	o.Aggregates = []Aggregate{{Kind: Sum, AutoBounds: true}, {Kind: Quantile, Quantile: 0.5, AutoBounds: true}, {Kind: VarPop, AutoBounds: true}, {Kind: Avg, AutoBounds: true}}
	check := func(name string, o Options, rows []row) int {
		t.Helper()
		p, sites, _ := runTraced(t, o, rows, false)
		words := 0
		for _, s := range sites {
			if strings.Contains(s, "(*tester).pass") || strings.Contains(s, "(*tester).cellPasses") {
				words++
			}
		}
		tests := p.tests.passes + p.tests.cells
		if words != 2*tests || p.tests.passes > p.plan.Bounds.Tests-p.tests.left {
			t.Errorf("%s: %d words for %d bound tests and %d histogram cells, want %d; %d of %d planned tests spent",
				name, words, p.tests.passes, p.tests.cells, 2*tests, p.plan.Bounds.Tests-p.tests.left, p.plan.Bounds.Tests)
		}
		return words
	}
	v := victimRows("victim", "", 120, 424242)
	if a, b := check("global, empty", o, nil), check("global, the victim alone", o, v); a != b {
		t.Errorf("%d words over an empty input, %d over the victim alone", a, b)
	}
	keyed := o
	keyed.Global, keyed.MaxGroupsContributed = false, 0
	for it := range iterations(12, 4) {
		d, withAdded := neighbourDBs(r, r.IntN(30), 5, len(o.Aggregates), it%2 == 0)
		oo := o
		if it%2 == 1 {
			oo = keyed
		}
		check(fmt.Sprintf("iteration %d without", it), oo, d)
		check(fmt.Sprintf("iteration %d with", it), oo, withAdded)
	}
}
