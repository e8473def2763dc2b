package ngrams

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/sqlext/securerand"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// TestNeighbourL2 is the privacy property of every level: for two databases
// that differ in one user (added at a random place of the same user order,
// every other user drawing the same bounded subset), the histograms H_k
// differ by at most 1 in ℓ2 (√Δ_1 for count_gaussian, whose noise is scaled
// by √Δ_1). Level 1 uses every unigram; levels 2 and 3 prune to V_k for a
// random S_{k−1} first, as a run does. The histograms are built by the code a
// run uses (corpus.prune, corpus.histogram, setunion.Histogram).
func TestNeighbourL2(t *testing.T) {
	rng := securerand.NewSeeded(9)
	ctx := context.Background()
	var saturated, bounded, checks int
	for trial := range 400 {
		vocab := 3 + rng.IntN(4)
		skewed := func() uint32 { return uint32(min(rng.IntN(vocab), rng.IntN(vocab))) }
		user := func() [][]uint32 {
			var rows [][]uint32
			for range 1 + rng.IntN(3) {
				row := make([]uint32, 1+rng.IntN(8))
				for i := range row {
					row[i] = skewed()
				}
				rows = append(rows, row)
			}
			return rows
		}
		var db [][][]uint32
		for range 2 + rng.IntN(10) {
			db = append(db, user())
		}
		extra := uint32(len(db))
		c := newTestCorpus(db)
		c2 := newTestCorpus(append(slices.Clone(db), user()))
		order := make([]uint32, len(db))
		for i, u := range rng.Perm(len(db)) {
			order[i] = uint32(u)
		}
		order2 := slices.Insert(slices.Clone(order), rng.IntN(len(order)+1), extra)

		for k := 1; k <= 3; k++ {
			rules := []setunion.Mechanism{setunion.WeightedGaussian, setunion.PolicyGaussianL2}
			if k == 1 {
				rules = append(rules, setunion.CountGaussian)
			}
			rule := rules[rng.IntN(len(rules))]
			gamma := 0.3 + 3*rng.Float64()
			maxItems := 1 + rng.IntN(4)
			seed := rng.Uint64()
			bound := func(u uint32, items []uint32) []uint32 {
				if len(items) > maxItems {
					bounded++
				}
				return securerand.SampleInPlace(securerand.NewSeeded(seed+uint64(u)), items, maxItems)
			}
			var hier *hierarchy
			if k > 1 {
				hier = newHierarchy(randomTuples(rng, vocab, k-1, 1+rng.IntN(vocab*vocab)))
			}
			weights := func(c *corpus, order []uint32) map[uint64]float64 {
				itemAt := make([]int32, len(c.tokens))
				var keys []uint64
				if k == 1 {
					for p, tok := range c.tokens {
						itemAt[p] = int32(tok)
					}
					for tok := range vocab {
						keys = append(keys, uint64(tok))
					}
				} else {
					keys, _ = c.prune(k, hier.cur(c), itemAt)
				}
				h, _, err := c.histogram(ctx, k, rule, gamma, len(keys), order, itemAt, bound)
				if err != nil {
					t.Fatal(err)
				}
				w := map[uint64]float64{}
				for i, x := range h.W {
					if x != 0 {
						w[keys[i]] = x
					}
					if rule.HasCutoff() && x == gamma {
						saturated++
					}
				}
				return w
			}
			w1, w2 := weights(c, order), weights(c2, order2)
			d2 := 0.0
			for key, x := range w2 {
				d2 += (x - w1[key]) * (x - w1[key])
			}
			for key, x := range w1 {
				if _, ok := w2[key]; !ok {
					d2 += x * x
				}
			}
			limit := 1.0
			if rule == setunion.CountGaussian {
				limit = math.Sqrt(float64(maxItems))
			}
			if d := math.Sqrt(d2); d > limit*(1+1e-9) {
				t.Fatalf("trial %d level %d rule %s Γ=%.3f Δ=%d: ‖H − H'‖₂ = %.12f > %g", trial, k, rule, gamma, maxItems, d, limit)
			}
			checks++
		}
	}
	// The property must have been exercised where it is not trivial.
	if saturated == 0 || bounded == 0 {
		t.Fatalf("test too easy: %d items at Γ, %d bounded users", saturated, bounded)
	}
	t.Logf("%d level histograms checked; %d items at Γ, %d users bounded", checks, saturated, bounded)
}

// run extracts from rows (user, text) with options o and a fixed seed.
func run(t *testing.T, o Options, seed uint64, rows [][2]string) Result {
	t.Helper()
	e, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		e.AddRow([]byte(r[0]), []byte(r[1]))
	}
	res, err := e.Run(securerand.NewSeeded(seed))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestExtractKnownPhrases: with a large budget and a tiny η, exactly the
// n-grams that many users write are released, ordered by n then text; an
// n-gram that spans two rows ("fox jumps", valid since both unigrams are
// released) and a token only one user writes are not.
func TestExtractKnownPhrases(t *testing.T) {
	var rows [][2]string
	for u := range 60 {
		id := fmt.Sprintf("user%d", u)
		rows = append(rows,
			[2]string{id, "The quick brown fox"},
			[2]string{id, "jumps over the LAZY dog!"},
			[2]string{id, fmt.Sprintf("my secret%d code", u)})
	}
	for _, mech := range []setunion.Mechanism{setunion.WeightedGaussian, setunion.PolicyGaussianL2, setunion.CountGaussian} {
		o := Defaults()
		o.Epsilon, o.Eta, o.Mechanism, o.MaxItems = 8, 1e-9, mech, 12
		res := run(t, o, 1, rows)
		var got []string
		for _, g := range res.NGrams {
			got = append(got, fmt.Sprintf("%d:%s", g.N, g.Text))
		}
		want := []string{
			"1:brown", "1:code", "1:dog", "1:fox", "1:jumps", "1:lazy", "1:my", "1:over", "1:quick", "1:the",
			"2:brown fox", "2:jumps over", "2:lazy dog", "2:over the", "2:quick brown", "2:the lazy", "2:the quick",
			"3:jumps over the", "3:over the lazy", "3:quick brown fox", "3:the lazy dog", "3:the quick brown",
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: released\n%v\nwant\n%v", mech, got, want)
		}
		// |V_2| = 10², |V_3| = pairs of S_2 where the first ends as the second
		// starts: the quick·quick brown, quick brown·brown fox, jumps over·over
		// the, over the·the quick, over the·the lazy, the lazy·lazy dog.
		if len(res.Levels) != 3 || res.Levels[0].Valid != nil || *res.Levels[1].Valid != 100 || *res.Levels[2].Valid != 6 {
			t.Errorf("%s: levels %+v", mech, res.Levels)
		}
		if res.Input.Users != 60 || res.Input.Rows != 180 {
			t.Errorf("input stats %+v", res.Input)
		}
	}
}

// TestValidCounts checks |V_k| in a run against a count by hand.
func TestValidCounts(t *testing.T) {
	var rows [][2]string
	for u := range 60 {
		rows = append(rows, [2]string{fmt.Sprint(u), "a b c a b"})
	}
	o := Defaults()
	o.Epsilon, o.Eta = 8, 1e-9
	res := run(t, o, 2, rows)
	// S_1 = {a, b, c}: |V_2| = 9. S_2 = {a b, b c, c a}: V_3 = {a b c, b c a,
	// c a b}. S_3 = those three: V_4 would be {a b c a, b c a b, c a b c}.
	if *res.Levels[1].Valid != 9 || *res.Levels[2].Valid != 3 {
		t.Fatalf("|V_2| = %d, |V_3| = %d; want 9, 3", *res.Levels[1].Valid, *res.Levels[2].Valid)
	}
	if res.Levels[2].Released != 3 || res.Levels[2].Spurious != 0 || res.Levels[2].Observed != 3 {
		t.Fatalf("level 3: %+v", res.Levels[2])
	}
}

// TestPruneBeforeBound: a user's k-grams are pruned to V_k before they are
// bounded to Δ_k, so invalid k-grams never crowd out valid ones.
func TestPruneBeforeBound(t *testing.T) {
	o := Defaults()
	o.MaxN, o.LevelMaxItems = 2, []int{100, 2}
	e, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	// S_1 = {0, 1, 2}; the user writes the valid bigrams "0 1", "1 2" and 30
	// bigrams over tokens 3..33 that are not in V_2.
	h := newHierarchy([][]uint32{{0}, {1}, {2}})
	row := []uint32{0, 1, 2}
	for x := range uint32(30) {
		row = append(row, 3+x, 4+x)
	}
	c := newTestCorpus([][][]uint32{{row}})
	for seed := range uint64(20) {
		cur := h.cur(c)
		_, st, err := e.level(t.Context(), securerand.NewSeeded(seed), c, 2, h.sets[0], 1, cur, make([]int32, len(cur)), nil)
		if err != nil {
			t.Fatal(err)
		}
		if st.Candidates != 2 || st.Pairs != 2 || st.Observed != 2 {
			t.Fatalf("candidates %d, pairs %d, observed %d; want 2, 2, 2", st.Candidates, st.Pairs, st.Observed)
		}
	}
}

// TestBoundPerLevel: Δ_k applies per user and level.
func TestBoundPerLevel(t *testing.T) {
	o := Defaults()
	o.MaxN, o.LevelMaxItems = 2, []int{100, 3}
	e, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	var top [][]uint32
	for x := range uint32(10) {
		top = append(top, []uint32{x})
	}
	h := newHierarchy(top)
	// Two users, each with 9 distinct valid bigrams.
	row := []uint32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	c := newTestCorpus([][][]uint32{{row}, {slices.Clone(row)}})
	cur := h.cur(c)
	_, st, err := e.level(t.Context(), securerand.NewSeeded(1), c, 2, h.sets[0], 1, cur, make([]int32, len(cur)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Pairs != 18 || st.Observed < 3 || st.Observed > 6 || st.MaxItems != 3 {
		t.Fatalf("pairs %d observed %d Δ %d; want 18, 3..6, 3", st.Pairs, st.Observed, st.MaxItems)
	}
}

func TestNullUserAndEmptyRows(t *testing.T) {
	e, err := New(Defaults())
	if err != nil {
		t.Fatal(err)
	}
	e.AddRow(nil, []byte("hello world"))
	e.AddRow([]byte{}, []byte("hello world"))
	e.AddRow([]byte("u"), []byte("  !!  "))
	e.AddRow([]byte("u"), nil)
	if st := e.Stats(); st.Rows != 2 || st.Users != 0 || st.Tokens != 0 {
		t.Fatalf("stats %+v", st)
	}
	res, err := e.Run(securerand.NewSeeded(1))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.NGrams) != 0 || len(res.Levels) != 3 {
		t.Fatalf("empty input released %v, levels %d", res.NGrams, len(res.Levels))
	}
	for _, l := range res.Levels[1:] {
		if *l.Valid != 0 || l.Released != 0 {
			t.Fatalf("empty level %+v", l)
		}
	}
}

func TestRunOnceAndCancel(t *testing.T) {
	e, err := New(Defaults())
	if err != nil {
		t.Fatal(err)
	}
	e.AddRow([]byte("u"), []byte("a b c"))
	if _, err := e.Run(securerand.NewSeeded(1)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Run(securerand.NewSeeded(1)); err == nil || !strings.Contains(err.Error(), "only once") {
		t.Fatalf("second Run: %v", err)
	}

	e, _ = New(Defaults())
	e.AddRow([]byte("u"), []byte("a b c"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.RunContext(ctx, securerand.NewSeeded(1)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled run: %v", err)
	}
}

// TestOnLevel: the hook sees every level in order.
func TestOnLevel(t *testing.T) {
	e, _ := New(Defaults())
	e.AddRow([]byte("u"), []byte("a b c"))
	var seen []int
	e.OnLevel = func(st LevelStats) { seen = append(seen, st.N) }
	if _, err := e.Run(securerand.NewSeeded(1)); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(seen, []int{1, 2, 3}) {
		t.Fatalf("OnLevel saw %v", seen)
	}
}

// TestSeededReproducible: the same seed gives the same output (the --seed
// contract), and different seeds generally do not on noisy data.
func TestSeededReproducible(t *testing.T) {
	var rows [][2]string
	for u := range 300 {
		rows = append(rows, [2]string{fmt.Sprint(u), fmt.Sprintf("w%d w%d w%d w%d", u%7, u%11, u%13, u%17)})
	}
	o := Defaults()
	o.Epsilon = 2
	a, b := run(t, o, 5, rows), run(t, o, 5, rows)
	if !slices.Equal(a.NGrams, b.NGrams) {
		t.Fatal("same seed, different output")
	}
}

// TestUnigramsOnly: T = 1 is a plain DPSU release of unigrams.
func TestUnigramsOnly(t *testing.T) {
	var rows [][2]string
	for u := range 50 {
		rows = append(rows, [2]string{fmt.Sprint(u), "alpha beta"}, [2]string{fmt.Sprint(u), fmt.Sprintf("solo%d", u)})
	}
	o := Defaults()
	o.MaxN, o.Epsilon = 1, 8
	res := run(t, o, 4, rows)
	if !slices.Equal(res.NGrams, []NGram{{"alpha", 1}, {"beta", 1}}) || len(res.Levels) != 1 {
		t.Fatalf("released %v, %d levels", res.NGrams, len(res.Levels))
	}
}
