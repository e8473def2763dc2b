package dpagg

import (
	"errors"
	"io"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/dpsql/dpsql/internal/testenv"
	"github.com/dpsql/dpsql/sqlext/noise"
	"github.com/dpsql/dpsql/sqlext/securerand"
	"github.com/dpsql/dpsql/sqlext/tabfile"
	"github.com/dpsql/dpsql/sqlext/tokenize"
)

// corpusTokens calls emit for every (user, token) of a shared corpus, one
// row per token, as the SQL table of words would hold them.
func corpusTokens(tb testing.TB, name string, emit func(user, tok []byte)) {
	tb.Helper()
	r, err := tabfile.Open(testenv.DataFile(tb, name), tabfile.TSV)
	if err != nil {
		tb.Fatal(err)
	}
	defer r.Close()
	var sc tokenize.Scanner
	for {
		f, err := r.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			tb.Fatal(err)
		}
		if len(f) < 2 {
			tb.Fatalf("%s line %d: %d columns", name, r.Line(), len(f))
		}
		user := f[0]
		sc.Each(f[1], func(tok []byte) { emit(user, tok) })
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// simulatedMedian predicts the median over keys of |Z_k|/b_k for
// independent noise draws Z_k (one per key of bounded truth b_k): the
// mean and standard deviation, over 300 seeded repetitions, of that median.
// (The median of median|Z|/b_k is not the same statistic when the b_k
// spread over orders of magnitude.)
func simulatedMedian(tb testing.TB, draw func(r *rand.Rand) (float64, error), bs []float64) (mean, sd float64) {
	tb.Helper()
	r := securerand.NewSeeded(53)
	const reps = 300
	rel := make([]float64, len(bs))
	var s, s2 float64
	for range reps {
		for i, b := range bs {
			z, err := draw(r)
			if err != nil {
				tb.Fatal(err)
			}
			rel[i] = math.Abs(z) / b
		}
		m := median(rel)
		s += m
		s2 += m * m
	}
	mean = s / reps
	return mean, math.Sqrt(max(s2/reps-mean*mean, 0))
}

// statDraw draws the statistic's noise in value units.
func statDraw(st *StatPlan) func(r *rand.Rand) (float64, error) {
	return func(r *rand.Rand) (float64, error) {
		var z int64
		var err error
		if st.lap != nil {
			z, err = st.lap.Sample(r)
		} else {
			z, err = st.gau.Sample(r)
		}
		return float64(z) * st.Granularity, err
	}
}

// tokenTable is a corpus as the SQL table of words holds it: one (user,
// word) row per token.
type tokenTable struct {
	users, words [][]byte
	rows         [][2]uint32 // (user id, word id)
	// rowsPerWord and usersPerWord are the raw truth.
	rowsPerWord, usersPerWord []int64
}

var (
	tokensOnce sync.Once
	tokens     *tokenTable
)

// loadTokens reads git_python_ecosystem once per test binary.
func loadTokens(tb testing.TB) *tokenTable {
	tb.Helper()
	testenv.DataFile(tb, "git_python_ecosystem.tsv.gz") // skips or fails when absent
	tokensOnce.Do(func() {
		tt := &tokenTable{}
		userID, wordID := map[string]uint32{}, map[string]uint32{}
		corpusTokens(tb, "git_python_ecosystem.tsv.gz", func(user, tok []byte) {
			u, ok := userID[string(user)]
			if !ok {
				u = uint32(len(tt.users))
				userID[string(user)] = u
				tt.users = append(tt.users, slices.Clone(user))
			}
			w, ok := wordID[string(tok)]
			if !ok {
				w = uint32(len(tt.words))
				wordID[string(tok)] = w
				tt.words = append(tt.words, slices.Clone(tok))
			}
			tt.rows = append(tt.rows, [2]uint32{u, w})
		})
		tt.rowsPerWord = make([]int64, len(tt.words))
		tt.usersPerWord = make([]int64, len(tt.words))
		pairs := make([]uint64, len(tt.rows))
		for i, r := range tt.rows {
			tt.rowsPerWord[r[1]]++
			pairs[i] = uint64(r[1])<<32 | uint64(r[0])
		}
		slices.Sort(pairs)
		for i, pr := range pairs {
			if i == 0 || pr != pairs[i-1] {
				tt.usersPerWord[pr>>32]++
			}
		}
		tokens = tt
	})
	if tokens == nil {
		tb.Fatal("corpus failed to load")
	}
	return tokens
}

// feedTokens builds a pipeline over the token table (every value NULL: the
// aggregates are counts).
func feedTokens(tb testing.TB, o Options, tt *tokenTable) (*Pipeline, time.Duration) {
	tb.Helper()
	p, err := New(o)
	if err != nil {
		tb.Fatal(err)
	}
	vals := make([]Value, len(o.Aggregates))
	start := time.Now()
	for _, r := range tt.rows {
		if err := p.Add(tt.users[r[0]], tt.words[r[1]], vals); err != nil {
			tb.Fatal(err)
		}
	}
	return p, time.Since(start)
}

// TestCorpusWordCounts: word counts on git_python_ecosystem (4.4M tokens,
// 24,932 users) at ε = 1, δ = 1e-6, m = 1, Δ0 = 100 (the default) and 10:
// `SELECT word, COUNT(*), COUNT(DISTINCT user) FROM tokens GROUP BY word`.
// For released words held by ≥ 100 users it reports the median relative
// error of each count against the bounded truth (the noise alone), what the
// stated noise predicts, the error against the raw truth (noise plus
// contribution bounding), and what BigQuery's documented model would give
// for the same bounds — computed, not run: ε split evenly among the
// group-selection count of users and the k aggregates, Laplace noise of
// scale Δ0·c/(ε/(k+1)), groups kept when the noisy user count exceeds
// τ = 1 + λ·ln(1/(2(1 − (1−δ)^(1/Δ0)))) with λ = Δ0/(ε/(k+1)) (Wilson et
// al. 2020, the design BigQuery's DIFFERENTIAL_PRIVACY clause implements).
// It asserts that, at the default bounds, the measured noise error is what
// the plan states.
func TestCorpusWordCounts(t *testing.T) {
	if testing.Short() {
		t.Skip("corpus accuracy test skipped under -short")
	}
	tt := loadTokens(t)
	held100 := 0
	for _, n := range tt.usersPerWord {
		if n >= 100 {
			held100++
		}
	}
	t.Logf("%d tokens, %d users, %d words, %d words held by ≥ 100 users", len(tt.rows), len(tt.users), len(tt.words), held100)
	for _, d0 := range []int{DefaultMaxGroupsContributed, 10} {
		o := Defaults()
		o.Epsilon = 1
		o.MaxGroupsContributed = d0
		o.Aggregates = []Aggregate{{Kind: CountRows}, {Kind: CountUnits}}
		p, addTime := feedTokens(t, o, tt)
		start := time.Now()
		res, err := p.Release(securerand.NewSeeded(51))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("Δ0 = %d, m = %d: %d words released (%d pairs); Add %.0f ns/row, Release %v", d0, o.MaxRowsPerGroup,
			len(res.Rows), res.Stats.Pairs, float64(addTime.Nanoseconds())/float64(len(tt.rows)), time.Since(start).Round(time.Millisecond))
		plan := p.Plan()
		wordID := map[string]uint32{}
		for i, w := range tt.words {
			wordID[string(w)] = uint32(i)
		}
		keyID := func(key string) uint32 { return p.keyIdx[key] }
		// BigQuery model: threshold on the bounded user count.
		k := float64(len(o.Aggregates))
		epsI := o.Epsilon / (k + 1)
		lambda := float64(d0) / epsI
		tau := noise.CountLaplaceThreshold(lambda, o.Delta, d0)
		bqReleased := 0.0
		unitsStat := 1 // COUNT(DISTINCT unit) is the second statistic
		for w, n := range tt.usersPerWord {
			if n < 100 {
				continue
			}
			users := float64(p.tot[unitsStat][keyID(string(tt.words[w]))])
			bqReleased += laplaceSurvival(tau-users, lambda)
		}
		ours := 0
		for _, r := range res.Rows {
			if tt.usersPerWord[wordID[r.Key]] >= 100 {
				ours++
			}
		}
		t.Logf("  words with ≥ 100 users released: ours %d of %d; BigQuery model (τ = %.0f users) %.0f expected", ours, held100, tau, bqReleased)
		for ai, a := range plan.Aggregates {
			st := &a.Stats[0]
			bqScale := float64(d0) * st.Contribution / epsI
			var relNoise, relRaw, bs []float64
			for _, r := range res.Rows {
				w := wordID[r.Key]
				if tt.usersPerWord[w] < 100 {
					continue
				}
				raw := float64(tt.rowsPerWord[w])
				if a.Kind == CountUnits {
					raw = float64(tt.usersPerWord[w])
				}
				b := float64(p.tot[ai][keyID(r.Key)])
				bs = append(bs, b)
				relNoise = append(relNoise, math.Abs(r.Values[ai]-b)/b)
				relRaw = append(relRaw, math.Abs(r.Values[ai]-raw)/raw)
			}
			bq, err := noise.NewLaplaceRat(noise.RoundUp(new(big.Rat).SetFloat64(bqScale), 30))
			if err != nil {
				t.Fatal(err)
			}
			mn, mr := median(relNoise), median(relRaw)
			mp, sp := simulatedMedian(t, statDraw(st), bs)
			mb, _ := simulatedMedian(t, func(r *rand.Rand) (float64, error) { z, err := bq.Sample(r); return float64(z), err }, bs)
			t.Logf("  %s (%s, scale %.1f): median relative error vs bounded truth %.4f, stated noise predicts %.4f ± %.4f; "+
				"vs raw truth %.4f; BigQuery model noise (Laplace b = %.1f) %.4f",
				a.Kind, plan.Noise, st.Scale, mn, mp, sp, mr, bqScale, mb)
			if d0 == DefaultMaxGroupsContributed && math.Abs(mn-mp) > 4*sp {
				t.Errorf("%s: measured median relative noise error %.4f is not the predicted %.4f ± %.4f", a.Kind, mn, mp, sp)
			}
		}
	}
}

// laplaceSurvival is P(Z > x) for Z ~ Laplace(0, λ).
func laplaceSurvival(x, lambda float64) float64 {
	if x >= 0 {
		return 0.5 * math.Exp(-x/lambda)
	}
	return 1 - 0.5*math.Exp(x/lambda)
}
