package dpagg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/sqlext/securerand"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// The accuracy table of docs/accuracy.md:
//
//	DPSQL_ACCURACY=1 go test -count=1 -timeout 60m -run TestAccuracyTable -v ./sqlext/dpagg
//
// (DPSQL_ACCURACY=python: the corpus only, =searches: the synthetic table
// only; DPSQL_ACCURACY_DEFAULTS=1: the default rows only, skipping the
// hand-set grid; DPSQL_ACCURACY_KINDS=stddev_pop,count: only these
// aggregates; DPSQL_ACCURACY_SEEDS=n: n seeds for every table;
// DPSQL_ACCURACY_LEDGER=basic or zcdp: the defaults of a deployment with
// that ledger, where Defaults() is neither; basic-dpsips: a basic one with
// dp_sips at Δ0 = 1, as before docs/privacy.md §42.)
//
// For each dataset and each aggregate of accKinds, one release per
// configuration (ε = 1, δ = 1e-6, the aggregate alone): the defaults
// (every bound chosen privately) and the best of a grid of hand-set bounds
// (chosen with the truth: an oracle no analyst has), each over accSeeds
// seeds; median and p90 relative error on the 100 keys with the most rows
// (a key not released counts as error 1), and keys released against the
// expected keys of Google DP's standard partition selection (the truncated
// geometric thresholding of Desfontaines et al. 2022, run per partition at
// (ε_s/Δ0, δ_s/Δ0)) at the release's selection budget (ε_s, δ_s) and the
// best Δ0 of {1, 2, 4, …, 128} for it.
//
// To add an aggregate (MEDIAN), add one line to accKinds: its Kind and its
// exact value over a key's raw values.

// accKinds are the aggregates of the table with their exact value.
var accKinds = []struct {
	kind  Kind
	truth func(vals []float64) float64
}{
	{CountRows, func(v []float64) float64 { return float64(len(v)) }},
	{Sum, func(v []float64) float64 { return accSum(v) }},
	{Avg, func(v []float64) float64 { return accSum(v) / float64(len(v)) }},
	{StdDevPop, func(v []float64) float64 {
		m := accSum(v) / float64(len(v))
		var s float64
		for _, x := range v {
			s += (x - m) * (x - m)
		}
		return math.Sqrt(s / float64(len(v)))
	}},
}

const accSeeds = 2 // 1 for the corpus (DPSQL_ACCURACY=python)

func accSum(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s
}

// accTable is a dataset: one (user, key, value) per row.
type accTable struct {
	name        string
	users, keys [][]byte
	rows        []accRow
	// The hand-set grid: Δ0, m and the upper bounds of values (lower 0).
	groups, rowsPer []int
	bounds          []float64
}

type accRow struct {
	u, k uint32
	v    float64
}

// searchesTable is the synthetic searches table (user_id, query, country,
// device, amount, day), generated deterministically: 20,000 users, each
// with one country (Zipf over 60), one or two devices, 1 + Pareto searches
// over 14 days; amount log-normal, larger on desktop. The release groups by
// country.
func searchesTable() *accTable {
	r := rand.New(rand.NewPCG(2026, 21))
	t := &accTable{name: "searches (GROUP BY country)", groups: []int{1, 4}, rowsPer: []int{1, 4, 16}, bounds: []float64{10, 30, 100}}
	zipf := rand.NewZipf(r, 1.3, 1, 59)
	for c := range 60 {
		t.keys = append(t.keys, []byte(fmt.Sprintf("C%02d", c)))
	}
	for u := range 20_000 {
		t.users = append(t.users, []byte(fmt.Sprintf("user%05d", u)))
		country := uint32(zipf.Uint64())
		n := min(int(math.Pow(1-r.Float64(), -1/1.5)), 500)
		desktop := r.IntN(3) == 0
		for range n {
			amount := math.Exp(1.5 + 0.8*r.NormFloat64())
			if desktop && r.IntN(2) == 0 {
				amount *= 2
			}
			t.rows = append(t.rows, accRow{u: uint32(u), k: country, v: math.Round(amount*100) / 100})
		}
	}
	return t
}

// usersPerKey counts each key's distinct users.
func (t *accTable) usersPerKey() []int {
	users := make([]int, len(t.keys))
	seen := map[[2]uint32]bool{}
	for _, r := range t.rows {
		if pair := [2]uint32{r.u, r.k}; !seen[pair] {
			seen[pair] = true
			users[r.k]++
		}
	}
	return users
}

// pythonTable is git_python_ecosystem's tokens grouped by word; the value
// of a row is the length of the token before it in its user's stream (a
// word's own length would make AVG exact and STDDEV 0).
func pythonTable(tb testing.TB) *accTable {
	tt := loadTokens(tb)
	t := &accTable{name: "git_python_ecosystem (GROUP BY word, value = length of the previous token)", users: tt.users, keys: tt.words,
		groups: []int{64}, rowsPer: []int{4, 16}, bounds: []float64{16}}
	prev := make([]int, len(tt.users))
	for _, r := range tt.rows {
		t.rows = append(t.rows, accRow{u: r[0], k: r[1], v: float64(prev[r[0]])})
		prev[r[0]] = len(tt.words[r[1]])
	}
	return t
}

// accOutcome is one configuration's errors over the seeds.
type accOutcome struct {
	med, p90, keys, google float64
	note                   string
}

// run releases kind over t with o (its aggregate set by run) for seeds
// and returns the mean median and p90 relative error on the top keys, the
// mean keys released and the mean expected keys of Google's selection.
func (t *accTable) run(tb testing.TB, o Options, ki int, top []uint32, truth []float64, seeds int) accOutcome {
	kind := accKinds[ki].kind
	a := Aggregate{Kind: kind} // bounds chosen privately unless o gives them
	if o.Aggregates != nil && kind.clamped() {
		a.Lower, a.Upper = o.Aggregates[0].Lower, o.Aggregates[0].Upper
	}
	a.AutoBounds = kind.clamped() && a.Upper == 0
	o.Aggregates = []Aggregate{a}
	var out accOutcome
	for s := range seeds {
		p, err := New(o)
		if err != nil {
			tb.Fatal(err)
		}
		vals := make([]Value, 1)
		if p.NeedsValuePass() {
			for _, r := range t.rows {
				vals[0] = Float(r.v)
				if err := p.AddValues(t.users[r.u], vals); err != nil {
					tb.Fatal(err)
				}
			}
			if err := p.ChooseValueBounds(securerand.NewSeeded(uint64(1000 + s))); err != nil {
				tb.Fatal(err)
			}
		}
		for _, r := range t.rows {
			vals[0] = Float(r.v)
			if err := p.Add(t.users[r.u], t.keys[r.k], vals); err != nil {
				tb.Fatal(err)
			}
		}
		res, err := p.Release(securerand.NewSeeded(uint64(1000 + s)))
		if err != nil {
			tb.Fatal(err)
		}
		got := map[string]float64{}
		for _, row := range res.Rows {
			got[row.Key] = row.Values[0]
		}
		rel := make([]float64, len(top))
		for i, k := range top {
			v, ok := got[string(t.keys[k])]
			rel[i] = 1
			if ok {
				rel[i] = math.Abs(v-truth[i]) / math.Abs(truth[i])
			}
		}
		slices.Sort(rel)
		out.med += median(rel) / float64(seeds)
		out.p90 += rel[int(math.Ceil(0.9*float64(len(rel))))-1] / float64(seeds)
		out.keys += float64(len(res.Rows)) / float64(seeds)
		plan := p.Plan()
		g := 0.0
		for _, d0 := range []int{1, 2, 4, 8, 16, 32, 64, 128} {
			g = max(g, t.googleKeys(plan.Selection.Epsilon, plan.Selection.Delta, d0, uint64(s)))
		}
		out.google += g / float64(seeds)
		if res.Chosen != nil {
			out.note = res.Chosen.String()
		} else {
			out.note = fmt.Sprintf("max_groups_contributed=%d, max_rows_per_group=%d", plan.MaxGroupsContributed, plan.MaxRowsPerGroup)
			if kind.clamped() {
				out.note += fmt.Sprintf(", bounds [%g, %g]", plan.Aggregates[0].Lower, plan.Aggregates[0].Upper)
			}
		}
	}
	return out
}

// googleKeys is the expected number of keys Google DP's standard partition
// selection releases at (ε_s, δ_s) and max_partitions_contributed d0: each
// user keeps d0 of its keys uniformly (seeded), and a key of n users is
// kept with probability π(n) of the truncated geometric mechanism at
// (ε_s/d0, δ_s/d0). The table reports the best d0 of a grid (an oracle).
func (t *accTable) googleKeys(epsS, deltaS float64, d0 int, seed uint64) float64 {
	eps, delta := epsS/float64(d0), deltaS/float64(d0)
	pi := []float64{0}
	for pi[len(pi)-1] < 1 {
		p := pi[len(pi)-1]
		next := min(math.Exp(eps)*p+delta, 1-math.Exp(-eps)*(1-p-delta), 1)
		if next <= p {
			next = 1
		}
		pi = append(pi, next)
	}
	userKeys := make([]map[uint32]bool, len(t.users))
	for _, r := range t.rows {
		if userKeys[r.u] == nil {
			userKeys[r.u] = map[uint32]bool{}
		}
		userKeys[r.u][r.k] = true
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	users := make([]int, len(t.keys))
	for _, ks := range userKeys {
		l := make([]uint32, 0, len(ks))
		for k := range ks {
			l = append(l, k)
		}
		slices.Sort(l)
		for _, k := range securerand.SampleInPlace(rng, l, d0) {
			users[k]++
		}
	}
	var e float64
	for _, n := range users {
		e += pi[min(n, len(pi)-1)]
	}
	return e
}

// TestAccuracyTable prints the accuracy table (see the top of the file).
func TestAccuracyTable(t *testing.T) {
	if os.Getenv("DPSQL_ACCURACY") == "" {
		t.Skip("set DPSQL_ACCURACY=1 to compute the accuracy table (minutes)")
	}
	tables := []func() *accTable{searchesTable, func() *accTable { return pythonTable(t) }}
	switch os.Getenv("DPSQL_ACCURACY") {
	case "python": // the corpus only
		tables = tables[1:]
	case "searches":
		tables = tables[:1]
	}
	kinds := os.Getenv("DPSQL_ACCURACY_KINDS")
	var lines []string
	lines = append(lines, "| dataset | aggregate | bounds | median rel. error | p90 rel. error | keys released | Google partition selection at its best Δ0 (expected keys) | bounds used |",
		"|---|---|---|---|---|---|---|---|")
	for _, mk := range tables {
		tab := mk()
		// Truth per key, and the 100 keys with the most rows.
		perKey := make([][]float64, len(tab.keys))
		for _, r := range tab.rows {
			perKey[r.k] = append(perKey[r.k], r.v)
		}
		order := make([]uint32, len(tab.keys))
		for i := range order {
			order[i] = uint32(i)
		}
		sort.Slice(order, func(a, b int) bool { return len(perKey[order[a]]) > len(perKey[order[b]]) })
		top := order[:min(100, len(order))]
		for ki, ak := range accKinds {
			if kinds != "" && !slices.Contains(strings.Split(kinds, ","), string(ak.kind)) {
				continue
			}
			truth := make([]float64, len(top))
			for i, k := range top {
				truth[i] = ak.truth(perKey[k])
			}
			o := Defaults()
			o.MaxGroupsContributed, o.MaxRowsPerGroup = 0, 0
			switch os.Getenv("DPSQL_ACCURACY_LEDGER") { // a deployment's defaults (dpvars.AggregateOptions, server/defaults.go)
			case "basic":
				o.NoiseAfterBounds, o.BasicLedger = true, true
			case "zcdp":
				o.GaussianAuto = true
			case "basic-dpsips": // a basic deployment before single_item at Δ0 = 1 (docs/privacy.md §42)
				o.NoiseAfterBounds, o.BasicLedger, o.Mechanism = true, true, setunion.DPSIPS
			}
			seeds := accSeeds
			if n, err := strconv.Atoi(os.Getenv("DPSQL_ACCURACY_SEEDS")); err == nil && n > 0 {
				seeds = n
			}
			if len(tab.rows) > 1_000_000 && os.Getenv("DPSQL_ACCURACY_SEEDS") == "" {
				seeds = 1
			}
			def := tab.run(t, o, ki, top, truth, seeds)
			if os.Getenv("DPSQL_ACCURACY_DEFAULTS") != "" { // the defaults only (hand-set rows do not change with the private choice)
				lines = append(lines, fmt.Sprintf("| %s | %s | %s | %.3f | %.3f | %.1f | %.1f | %s |",
					tab.name, strings.ToUpper(string(ak.kind)), "default (chosen privately)", def.med, def.p90, def.keys, def.google, def.note))
				t.Log(lines[len(lines)-1])
				continue
			}
			// Hand-set grid, one seed each; the best median is re-run.
			var best Options
			bestMed := math.Inf(1)
			for _, d0 := range tab.groups {
				for _, m := range tab.rowsPer {
					bs := []float64{0}
					if ak.kind.clamped() {
						bs = tab.bounds
					}
					for _, u := range bs {
						o := Defaults()
						o.MaxGroupsContributed, o.MaxRowsPerGroup = d0, m
						o.Aggregates = []Aggregate{{Lower: 0, Upper: max(u, 1)}}
						if r := tab.run(t, o, ki, top, truth, 1); !(r.med >= bestMed) {
							bestMed, best = r.med, o
						}
					}
				}
			}
			hand := tab.run(t, best, ki, top, truth, seeds)
			for _, c := range []struct {
				label string
				r     accOutcome
			}{{"default (chosen privately)", def}, {"best hand-set", hand}} {
				lines = append(lines, fmt.Sprintf("| %s | %s | %s | %.3f | %.3f | %.1f | %.1f | %s |",
					tab.name, strings.ToUpper(string(ak.kind)), c.label, c.r.med, c.r.p90, c.r.keys, c.r.google, c.r.note))
			}
			t.Log(lines[len(lines)-2])
			t.Log(lines[len(lines)-1])
		}
	}
	fmt.Println(strings.Join(lines, "\n"))
}
