package setunion

import (
	"context"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
)

// demoGrouped builds, once, a grouped input shaped like the server's demo
// table words(user_id, word): 20,000 users writing Pareto-many posts
// (shape 1.3, capped at 400) of log-normal length (median 9) over a Zipf
// vocabulary of 50,000 words (P(rank k) ∝ (k+2.7)^−1.07), one word in ten
// from three personal "pet" words of the vocabulary's tail. About 740k
// pairs, as in the server's load test; deterministic.
var demoGrouped = sync.OnceValue(func() Grouped {
	const users, vocabulary = 20_000, 50_000
	rng := rand.New(rand.NewPCG(1, 0x9e3779b97f4a7c15))
	zipf := rand.NewZipf(rng, 1.07, 2.7, vocabulary-1)
	words := make([]string, vocabulary)
	for k := range words {
		words[k] = "w" + strconv.Itoa(k)
	}
	b, err := NewBuilder(Defaults())
	if err != nil {
		panic(err)
	}
	pets := make([]int, 3)
	for u := 1; u <= users; u++ {
		name := strconv.Itoa(u)
		for i := range pets {
			pets[i] = vocabulary/10 + rng.IntN(vocabulary-vocabulary/10)
		}
		n := min(int(math.Pow(1-rng.Float64(), -1/1.3)), 400)
		for range n {
			w := min(max(1, int(math.Exp(2.2+0.7*rng.NormFloat64()))), 200)
			for range w {
				k := int(zipf.Uint64())
				if rng.IntN(10) == 0 {
					k = pets[rng.IntN(len(pets))]
				}
				b.Add(name, words[k])
			}
		}
	}
	return b.Grouped()
})

// benchMechanisms are the mechanisms the server's load test runs from the
// release index: the default and the Gaussian/weighted ones.
var benchMechanisms = []Mechanism{DPSIPS, WeightedGaussian, PolicyGaussianL2, CountGaussian}

// BenchmarkGroupedRelease times what a server release from its cached,
// already-grouped index costs: NewGroupedBuilder on a shared Grouped, then
// ReleaseContext, with the default options (ε = 1, δ = 1e-6, Δ0 chosen
// privately where the mechanism can) and a seeded source, for the default
// dp_sips and the other Gaussian mechanisms.
func BenchmarkGroupedRelease(b *testing.B) {
	g := demoGrouped()
	var pairs int
	for _, l := range g.Lists {
		pairs += len(l)
	}
	b.Logf("%d users, %d items, %d pairs", len(g.Users), len(g.Items), pairs)
	benchReleases(b, func(o Options) (*Builder, error) { return NewGroupedBuilder(o, g) })
}

// BenchmarkPreparedRelease is BenchmarkGroupedRelease for a caller that
// caches the Prepared form of its Grouped (Prepare once, then
// NewPreparedBuilder per release).
func BenchmarkPreparedRelease(b *testing.B) {
	p, err := Prepare(demoGrouped())
	if err != nil {
		b.Fatal(err)
	}
	benchReleases(b, func(o Options) (*Builder, error) { return NewPreparedBuilder(o, p) })
}

// benchReleases times newBuilder + ReleaseContext with the default options
// for each of benchMechanisms, with a seeded source.
func benchReleases(b *testing.B, newBuilder func(Options) (*Builder, error)) {
	for _, m := range benchMechanisms {
		b.Run(string(m), func(b *testing.B) {
			o := Defaults()
			o.Mechanism = m
			seed := uint64(0)
			for b.Loop() {
				seed++
				bl, err := newBuilder(o)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := bl.ReleaseContext(context.Background(), rand.New(rand.NewPCG(seed, 1))); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
