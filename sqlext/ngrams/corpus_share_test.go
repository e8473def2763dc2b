package ngrams

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/dpsql/dpsql/sqlext/securerand"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// randomRows returns rows (user, text) of a random corpus: users write
// rows of Zipf-ranked words, in a random interleaving, some rows empty or
// of a NULL (empty) user.
func randomRows(rng *rand.Rand) [][2]string {
	users := 20 + rng.IntN(300)
	vocab := 5 + rng.IntN(60)
	zipf := rand.NewZipf(rng, 1.2, 2, uint64(vocab-1))
	var rows [][2]string
	for range users * (1 + rng.IntN(4)) {
		u := fmt.Sprint("u", rng.IntN(users))
		if rng.IntN(50) == 0 {
			u = ""
		}
		var words []string
		for range rng.IntN(12) {
			words = append(words, fmt.Sprint("w", zipf.Uint64()))
		}
		rows = append(rows, [2]string{u, strings.Join(words, " ")})
	}
	return rows
}

// TestCorpusSameRelease: an extraction over a stored corpus releases,
// for the same seed, exactly what an extractor fed the same rows releases
// (n-grams, level statistics and input statistics), for random corpora
// and every unigram mechanism; and several extractions may share one
// corpus at once (run with -race).
func TestCorpusSameRelease(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 1))
	mechs := []setunion.Mechanism{setunion.DPSIPS, setunion.WeightedGaussian, setunion.CountGaussian, setunion.PolicyGaussianL2}
	checked, released := 0, 0
	for trial := range 40 {
		rows := randomRows(rng)
		o := Defaults()
		o.Epsilon = 1 + 9*rng.Float64()
		o.Delta = 1e-5
		o.MaxN = 1 + rng.IntN(3)
		o.MaxItems = 1 + rng.IntN(20)
		o.Mechanism = mechs[trial%len(mechs)]
		o.Eta = 0.1
		if trial%3 == 0 {
			o.Update = setunion.PolicyGaussianL2
		}
		collect, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			collect.AddRow([]byte(r[0]), []byte(r[1]))
		}
		c, err := collect.Corpus()
		if err != nil {
			t.Fatal(err)
		}
		seeds := []uint64{uint64(trial), uint64(trial) + 1000, uint64(trial) + 2000}
		got := make([]Result, len(seeds))
		var wg sync.WaitGroup
		for i, seed := range seeds {
			wg.Add(1)
			go func() {
				defer wg.Done()
				e, err := NewFromCorpus(o, c)
				if err != nil {
					t.Error(err)
					return
				}
				e.AddRow([]byte("intruder"), []byte("ignored words")) // a corpus takes no rows
				if got[i], err = e.Run(securerand.NewSeeded(seed)); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		for i, seed := range seeds {
			want := run(t, o, seed, rows)
			for _, r := range []*Result{&want, &got[i]} {
				for l := range r.Levels {
					r.Levels[l].Seconds = 0
				}
			}
			if !reflect.DeepEqual(want, got[i]) {
				t.Fatalf("trial %d (%+v) seed %d:\nrows %v\nfed:    %+v\ncorpus: %+v", trial, o, seed, len(rows), want, got[i])
			}
			checked++
			released += len(want.NGrams)
		}
	}
	if released == 0 {
		t.Fatal("test too easy: nothing released")
	}
	t.Logf("%d extractions equal, %d n-grams released in all", checked, released)
}

// TestCorpusOnce: a collecting extractor gives its corpus once and cannot
// run afterwards.
func TestCorpusOnce(t *testing.T) {
	e, err := New(Defaults())
	if err != nil {
		t.Fatal(err)
	}
	e.AddRow([]byte("u"), []byte("a b"))
	c, err := e.Corpus()
	if err != nil {
		t.Fatal(err)
	}
	if c.Stats().Tokens != 2 || c.Bytes() <= 0 {
		t.Fatalf("stats %+v, %d bytes", c.Stats(), c.Bytes())
	}
	// Shared by every analyst's releases: nothing is left to build at the
	// first release (a first use that paid for it would be a warm cache).
	if !c.level1.LookupBuilt() {
		t.Fatal("the corpus's item lookup is built lazily, by the first release")
	}
	if _, err := e.Corpus(); err == nil {
		t.Fatal("a second Corpus succeeded")
	}
	if _, err := e.Run(securerand.NewSeeded(1)); err == nil {
		t.Fatal("Run after Corpus succeeded")
	}
}
