package setunion

import (
	"bufio"
	"crypto/sha256"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/release_golden.txt from the current implementation")

// goldenCase is one seeded release of TestReleaseGolden.
type goldenCase struct {
	name  string
	pairs [][2]string
	opts  Options
	cal   *Calibration // NewCalibratedBuilder instead of options
	seed  uint64
}

// goldenCases are random inputs (Zipf-ish items, so that every mechanism
// releases some; users of one to hundreds of items, so that bounding
// samples) for every usable mechanism at several ε and Δ0, fixed or chosen
// privately, plus a custom dp_sips calibration with a policy round.
func goldenCases() []goldenCase {
	r := rand.New(rand.NewPCG(2026, 14))
	var out []goldenCase
	for _, m := range Mechanisms() {
		if m.Disabled() != nil {
			continue
		}
		for trial := range 8 {
			nUsers, nItems := 1+r.IntN(400), 1+r.IntN(300)
			var pairs [][2]string
			for range r.IntN(4000) {
				u := fmt.Sprintf("u%d", int(float64(nUsers)*r.Float64()*r.Float64()))
				if r.IntN(80) == 0 {
					u = ""
				}
				pairs = append(pairs, [2]string{u, fmt.Sprintf("w%d", int(float64(nItems)*r.Float64()*r.Float64()))})
			}
			o := Defaults()
			o.Mechanism, o.Epsilon, o.MaxItems, o.AllowUnproven = m, 0.5+r.Float64()*6, 1+r.IntN(30), true
			if r.IntN(3) == 0 {
				o.Delta = 1e-3
			}
			if m == DPSIPS {
				o.Rounds = 1 + r.IntN(5)
			}
			if m == CountLaplace {
				o.MaxItems = 1 + r.IntN(3) // λ = Δ0/ε: release something
			}
			if m == GreedyPublic || m == GreedyPublicUnproven {
				o.Public = map[string]float64{"w0": 100, "w1": 50, "w3": 2, "w7": 2}
			}
			if trial >= 6 {
				o.MaxItems = AutoMaxItems
			}
			out = append(out, goldenCase{name: fmt.Sprintf("%s/%d", m, trial), pairs: pairs, opts: o, seed: r.Uint64()})
		}
	}
	for trial := range 4 {
		pairs := pairsOf(r, 3000+r.IntN(3000), 300, 200)
		sigma := 0.5 + r.Float64()
		cal := Calibration{Mechanism: DPSIPS, Noise: Gaussian, Scale: sigma, MaxItems: 20,
			Rounds: planRounds(sigma, 1e-6, []RoundPlan{
				{Weight: 1, MaxItems: 10, Rule: WeightedGaussian},
				{Weight: 2, MaxItems: 20, Rule: PolicyGaussianL2, Alpha: 3},
				{Weight: 4, MaxItems: 5, Rule: WeightedGaussian},
			})}
		cal.Rho = cal.Rounds[len(cal.Rounds)-1].Rho
		out = append(out, goldenCase{name: fmt.Sprintf("calibrated/%d", trial), pairs: pairs, cal: &cal, seed: r.Uint64()})
	}
	return out
}

// goldenDigest releases c from pairs added one by one ("pairs") or from
// their grouping ("grouped") and digests everything observable: the items,
// Stats, Support, Missing, InSupport of a few items, the calibration after
// the release, and the next word of the random source (so that the number
// of draws is covered too).
func goldenDigest(t *testing.T, c goldenCase, grouped bool) string {
	t.Helper()
	var b *Builder
	var err error
	switch {
	case c.cal != nil:
		b, err = NewCalibratedBuilder(*c.cal)
		if err == nil {
			for _, p := range c.pairs {
				b.Add(p[0], p[1])
			}
		}
	case grouped:
		b, err = NewGroupedBuilder(c.opts, groupPairs(c.pairs))
	default:
		b, err = NewBuilder(c.opts)
		if err == nil {
			for _, p := range c.pairs {
				b.Add(p[0], p[1])
			}
		}
	}
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	rng := rand.New(rand.NewPCG(c.seed, 99))
	res := b.Release(rng)
	h := sha256.New()
	fmt.Fprintf(h, "%q %+v %d %v %v|", res.Items, res.Stats, res.Support, res.Missing.Pairs, res.Missing.Occurrences)
	for _, it := range []string{"w0", "w1", "w5", "i0", "i3", "nope"} {
		fmt.Fprintf(h, "%v", res.InSupport(it))
	}
	cal := b.Calibration()
	fmt.Fprintf(h, "|%d %v %v|%d", cal.MaxItems, cal.Rho, cal.Scale, rng.Uint64())
	return fmt.Sprintf("%x %d", h.Sum(nil)[:12], len(res.Items))
}

// TestReleaseGolden pins the output and the random draws of seeded releases
// for every usable mechanism to those of the implementation that recorded
// testdata/release_golden.txt (the one before the prepared fast path; issue
// 14): a restructuring of the release must not change a single released
// item or draw. Regenerate only for an intended change of the mechanisms:
// go test -run TestReleaseGolden -update-golden.
func TestReleaseGolden(t *testing.T) {
	path := filepath.Join("testdata", "release_golden.txt")
	var got []string
	released := 0
	for _, c := range goldenCases() {
		for _, grouped := range []bool{false, true} {
			if grouped && c.cal != nil {
				continue
			}
			d := goldenDigest(t, c, grouped)
			var n int
			fmt.Sscanf(strings.Fields(d)[1], "%d", &n)
			released += n
			got = append(got, fmt.Sprintf("%s grouped=%v %s", c.name, grouped, d))
		}
	}
	if released < 200 {
		t.Fatalf("only %d items released over all cases: the comparison is nearly vacuous", released)
	}
	if *updateGolden {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("%v (record it with -update-golden)", err)
	}
	defer f.Close()
	var want []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		want = append(want, sc.Text())
	}
	if len(want) != len(got) {
		t.Fatalf("%d golden lines, %d cases", len(want), len(got))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("release changed:\n got %s\nwant %s", got[i], want[i])
		}
	}
}
