package ngrams

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/dpsql/dpsql/sqlext/securerand"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// seededGolden is the SHA-256 of the released n-grams and level counts of
// TestSeededGolden's 600 extractions, as released by main at 0cd5451
// (before the level-2 changes of docs/privacy.md §40) and since.
const seededGolden = "ab4793d9645e43f5e7eb6adbc88af79bf9535d6a0631e910241aa947baa93079"

// TestSeededGolden: seeded extractions over stored corpora release what
// they released before the speed changes of a level (docs/privacy.md §40):
// 120 random corpora (every unigram mechanism, max_n 1 to 3, random ε and
// Δ0), 5 seeds each, hashed. A change that moves a draw changes the hash;
// one that only changes speed must not. Regenerate the constant only for a
// change meant to change the released n-grams, and say so in the commit.
func TestSeededGolden(t *testing.T) {
	rng := rand.New(rand.NewPCG(99, 1))
	mechs := []setunion.Mechanism{setunion.DPSIPS, setunion.WeightedGaussian, setunion.CountGaussian, setunion.PolicyGaussianL2}
	sum := sha256.New()
	for trial := range 120 {
		rows := randomRows(rng)
		o := Defaults()
		o.Epsilon = 0.5 + 9*rng.Float64()
		o.Delta = 1e-5
		o.MaxN = 1 + rng.IntN(3)
		o.MaxItems = 1 + rng.IntN(20)
		o.Mechanism = mechs[trial%len(mechs)]
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
		for seed := range uint64(5) {
			e, err := NewFromCorpus(o, c)
			if err != nil {
				t.Fatal(err)
			}
			res, err := e.Run(securerand.NewSeeded(seed + 100*uint64(trial)))
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(sum, "%v|", res.NGrams)
			for _, l := range res.Levels {
				fmt.Fprintf(sum, "%d %d %d %d %d|", l.Candidates, l.Observed, l.Released, l.Spurious, l.Pairs)
			}
		}
	}
	if got := hex.EncodeToString(sum.Sum(nil)); got != seededGolden {
		t.Fatalf("seeded extractions changed: hash %s, want %s", got, seededGolden)
	}
}
