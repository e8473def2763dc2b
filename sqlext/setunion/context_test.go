package setunion

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
)

// stopAfter is a context whose Err reports context.Canceled from its n-th
// call on (n < 0: never), and which counts the calls.
type stopAfter struct {
	context.Context
	n     int64
	calls atomic.Int64
}

func (c *stopAfter) Err() error {
	if k := c.calls.Add(1); c.n >= 0 && k > c.n {
		return context.Canceled
	}
	return nil
}

// contextPairs is a release input of many users (several checkUsers) and
// enough pairs that grouping runs on several goroutines.
func contextPairs(r *rand.Rand) [][2]string {
	return pairsOf(r, 2*parallelGroupMin, 5000, 4000)
}

func builderOf(t *testing.T, o Options, pairs [][2]string) *Builder {
	t.Helper()
	b, err := NewBuilder(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pairs {
		b.Add(p[0], p[1])
	}
	return b
}

// TestReleaseContext: when its context is never done, ReleaseContext gives
// exactly Release's seeded result, for every kind of mechanism (dp_sips with
// a fixed and a privately chosen Δ0, parallel, sequential, greedy); a
// release whose context becomes done at any of the points where it looks
// stops there with the context's error and no items; and the release looks
// at its context at least once per checkUsers users of every histogram.
func TestReleaseContext(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, m := range []Mechanism{DPSIPS, DPSIPS, WeightedGaussian, PolicyGaussianL2, GreedyFrequency, CountGaussian} {
		o := Defaults()
		o.Epsilon, o.Delta, o.Mechanism = 3, 1e-6, m
		if m == DPSIPS && r.IntN(2) == 0 {
			o.MaxItems = 0
		}
		seed := r.Uint64()
		pairs := contextPairs(r)
		build := func() *Builder { return builderOf(t, o, pairs) }

		want := build().Release(rand.New(rand.NewPCG(seed, 1)))
		never := &stopAfter{Context: context.Background(), n: -1}
		got, err := build().ReleaseContext(never, rand.New(rand.NewPCG(seed, 1)))
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		if !slices.Equal(got.Items, want.Items) || got.Stats != want.Stats || got.Support != want.Support || got.Missing != want.Missing {
			t.Fatalf("%s: ReleaseContext released %d items, Release %d", m, len(got.Items), len(want.Items))
		}
		if len(want.Items) == 0 {
			t.Fatalf("%s: nothing released; the case tests too little", m)
		}
		looks := never.calls.Load()
		histograms := int64(1)
		if m == DPSIPS {
			histograms = int64(len(build().Calibration().Rounds))
		}
		if least := histograms * int64(want.Stats.Users/checkUsers); looks < least {
			t.Fatalf("%s: %d looks at the context, want at least %d", m, looks, least)
		}

		// Stop at the first, the last and random looks in between.
		stops := []int64{0, looks - 1}
		for range 4 {
			stops = append(stops, r.Int64N(looks))
		}
		for _, n := range stops {
			ctx := &stopAfter{Context: context.Background(), n: n}
			res, err := build().ReleaseContext(ctx, rand.New(rand.NewPCG(seed, 1)))
			if !errors.Is(err, context.Canceled) || res.Items != nil {
				t.Fatalf("%s: stopped at look %d of %d: err %v, %d items", m, n, looks, err, len(res.Items))
			}
		}
	}
}

// TestReleaseContextCancelled: a real cancelled context stops the release
// before it draws anything.
func TestReleaseContextCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b := builderOf(t, Defaults(), contextPairs(rand.New(rand.NewPCG(1, 2))))
	if _, err := b.ReleaseContext(ctx, rand.New(rand.NewPCG(3, 4))); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}
