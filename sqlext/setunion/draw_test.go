package setunion

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpsql/dpsql/sqlext/securerand"
)

// TestDrawTail checks the tail range of every usable mechanism's release
// decision (and every dp_sips round): it is not empty, every weight in it
// has a probability in (0, 2^−tailBits) as BernoulliBelow requires, and a
// weight of one user (1, or 1/√Δ0 for the weighted rules) far below the
// threshold lies in it, so the fast path is taken. A draw equals
// securerand.Bernoulli's, with the same random words left.
func TestDrawTail(t *testing.T) {
	g := rand.New(rand.NewPCG(5, 6))
	for _, m := range Mechanisms() {
		if m.Disabled() != nil || m == SingleItem {
			continue
		}
		for _, eps := range []float64{0.1, 1, 8} {
			o := Defaults()
			o.Mechanism, o.Epsilon, o.MaxItems, o.AllowUnproven = m, eps, 10, true
			o.Public = map[string]float64{}
			cal, err := Calibrate(o)
			if err != nil {
				t.Fatal(err)
			}
			rounds := 1
			if m == DPSIPS {
				rounds = len(cal.Rounds)
			}
			for r := range rounds {
				d := cal.drawer(r)
				if !(d.lo < d.hi) {
					t.Fatalf("%s ε=%v round %d: empty tail (%v, %v]", m, eps, r, d.lo, d.hi)
				}
				if eps <= 1 && !(d.lo < 1/math.Sqrt(10) && 1 <= d.hi) {
					t.Errorf("%s ε=%v round %d: tail (%v, %v] misses one user's weight", m, eps, r, d.lo, d.hi)
				}
				for k := range 2000 {
					w := d.lo + (d.hi-d.lo)*g.Float64()
					switch k {
					case 0:
						w = d.hi
					case 1:
						w = math.Nextafter(d.lo, math.Inf(1))
					}
					if p := d.p(w); !(p > 0 && p < math.Ldexp(1, -tailBits)) {
						t.Fatalf("%s ε=%v round %d: p(%v) = %v in the tail (%v, %v]", m, eps, r, w, p, d.lo, d.hi)
					}
					seed := g.Uint64()
					a, b := securerand.NewSeeded(seed), securerand.NewSeeded(seed)
					if d.draw(a, w) != securerand.Bernoulli(b, d.p(w)) || a.Uint64() != b.Uint64() {
						t.Fatalf("%s: draw at w=%v differs from Bernoulli", m, w)
					}
				}
			}
		}
	}
}
