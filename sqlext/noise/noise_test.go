package noise

import (
	"math"
	"math/big"
	"testing"
)

// delta10 is δ = e^−10, the papers' setting.
const delta10 = 4.5399929762484854e-05

// TestCalibrationReference checks the calibration against the values of the
// issue (ε = 3, δ = e^−10), to 1e-3 (or to the last digit quoted).
func TestCalibrationReference(t *testing.T) {
	sigma, err := GaussianSigma(3, delta10/2, 1)
	if err != nil {
		t.Fatal(err)
	}
	sigma10, _ := GaussianSigma(3, delta10/2, math.Sqrt(10))
	sigma100, _ := GaussianSigma(3, delta10/2, math.Sqrt(100))
	lambda := 1.0 / 3
	cases := []struct {
		name      string
		got, want float64
		tol       float64
	}{
		{"weighted/policy Gaussian sigma", sigma, 1.3328, 1e-3},
		{"weighted/policy Gaussian rho, Δ0=10", GaussianThresholdMax(sigma, delta10, 10), 6.4353, 1e-3},
		{"weighted/policy Gaussian rho, Δ0=100", GaussianThresholdMax(sigma, delta10, 100), 6.8237, 1e-3},
		{"weighted/policy Laplace lambda", lambda, 0.3333, 1e-3},
		{"weighted/policy Laplace rho, Δ0=10", LaplaceThresholdMax(lambda, delta10, 10), 4.1023, 1e-3},
		{"weighted/policy Laplace rho, Δ0=100", LaplaceThresholdMax(lambda, delta10, 100), 4.6473, 1e-3},
		{"count Laplace lambda, Δ0=10", 10.0 / 3, 3.333, 1e-3},
		{"count Laplace lambda, Δ0=100", 100.0 / 3, 33.33, 5e-3},
		{"count Laplace rho, Δ0=10", CountLaplaceThreshold(10.0/3, delta10, 10), 39.70, 5e-3},
		{"count Laplace rho, Δ0=100", CountLaplaceThreshold(100.0/3, delta10, 100), 464.73, 5e-3},
		{"count Gaussian sigma, Δ0=10", sigma10, 4.2147, 1e-3},
		{"count Gaussian sigma, Δ0=100", sigma100, 13.328, 1e-3},
		{"count Gaussian rho, Δ0=10", CountGaussianThreshold(sigma10, delta10, 10), 20.32, 5e-3},
		{"count Gaussian rho, Δ0=100", CountGaussianThreshold(sigma100, delta10, 100), 68.24, 5e-3},
		{"greedy rho", GreedyThreshold(lambda, delta10), 1 + math.Log(1/(2*delta10))/3, 1e-12},
	}
	for _, c := range cases {
		// tol is 1e-3, or half a unit of the last quoted digit when coarser.
		if math.Abs(c.got-c.want) > c.tol {
			t.Errorf("%s = %.6f, want %.4f", c.name, c.got, c.want)
		}
	}
}

// TestGaussianSigmaIsSmallest checks the defining property of the analytic
// Gaussian scale: the privacy condition holds at σ and fails just below it.
func TestGaussianSigmaIsSmallest(t *testing.T) {
	excess := func(eps, sigma, sens float64) float64 {
		a, b := sens/(2*sigma), eps*sigma/sens
		return Phi(a-b) - math.Exp(eps+LogPhi(-a-b))
	}
	for _, eps := range []float64{0.01, 0.1, 1, 3, 10, 50} {
		for _, dg := range []float64{1e-12, 1e-6, delta10 / 2, 0.01} {
			for _, sens := range []float64{1, 10} {
				s, err := GaussianSigma(eps, dg, sens)
				if err != nil {
					t.Fatal(err)
				}
				if e := excess(eps, s, sens); e > dg*(1+1e-9) {
					t.Errorf("ε=%v δ=%v Δ=%v: σ=%v violates the condition (%v > %v)", eps, dg, sens, s, e, dg)
				}
				if e := excess(eps, s*(1-1e-9), sens); e <= dg {
					t.Errorf("ε=%v δ=%v Δ=%v: σ=%v is not the smallest (condition holds at σ(1−1e-9))", eps, dg, sens, s)
				}
			}
		}
	}
}

// TestExtremeInputs: δ = 1e-12, Δ0 = 10,000, ε = 0.01 and ε = 50 give finite
// values that move the right way (σ falls as ε grows; ρ grows with Δ0 and as
// δ shrinks).
func TestExtremeInputs(t *testing.T) {
	finite := func(name string, v float64) {
		t.Helper()
		if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
			t.Fatalf("%s = %v, want finite and positive", name, v)
		}
	}
	prevSigma := math.Inf(1)
	for _, eps := range []float64{0.01, 0.1, 1, 3, 10, 50} {
		s, err := GaussianSigma(eps, 1e-12/2, 1)
		if err != nil {
			t.Fatal(err)
		}
		finite("sigma", s)
		if !(s < prevSigma) {
			t.Errorf("σ(ε=%v) = %v is not below σ at the smaller ε (%v)", eps, s, prevSigma)
		}
		prevSigma = s
		prevRho := 0.0
		for _, d0 := range []int{1, 10, 100, 1000, 10000} {
			rg := GaussianThresholdMax(s, 1e-12, d0)
			rl := LaplaceThresholdMax(1/eps, 1e-12, d0)
			finite("gaussian rho", rg)
			finite("laplace rho", rl)
			finite("count laplace rho", CountLaplaceThreshold(float64(d0)/eps, 1e-12, d0))
			finite("count gaussian rho", CountGaussianThreshold(s*math.Sqrt(float64(d0)), 1e-12, d0))
			if rg < prevRho {
				t.Errorf("ε=%v: ρ(Δ0=%d) = %v decreased from %v", eps, d0, rg, prevRho)
			}
			prevRho = rg
		}
		// Smaller δ, larger threshold.
		if a, b := GaussianThresholdMax(s, 1e-6, 100), GaussianThresholdMax(s, 1e-12, 100); !(b > a) {
			t.Errorf("ε=%v: ρ(δ=1e-12) = %v not above ρ(δ=1e-6) = %v", eps, b, a)
		}
	}
}

func TestGaussianSigmaRejectsBadInput(t *testing.T) {
	for _, c := range []struct{ eps, d, s float64 }{
		{0, 1e-6, 1}, {-1, 1e-6, 1}, {math.Inf(1), 1e-6, 1}, {math.NaN(), 1e-6, 1},
		{1, 0, 1}, {1, 1, 1}, {1, math.NaN(), 1}, {1, 1e-6, 0},
	} {
		if _, err := GaussianSigma(c.eps, c.d, c.s); err == nil {
			t.Errorf("GaussianSigma(%v, %v, %v) accepted", c.eps, c.d, c.s)
		}
	}
}

// TestOneMinusRoot compares with 200-bit arithmetic where the naive
// 1 − (1−δ)^(1/t) loses every digit.
func TestOneMinusRoot(t *testing.T) {
	for _, c := range []struct{ d, t float64 }{{1e-10, 1000}, {1e-12, 10000}, {delta10, 1}, {0.5, 3}} {
		got := OneMinusRoot(c.d, c.t)
		want := exactOneMinusRoot(c.d, c.t)
		if math.Abs(got-want) > 1e-13*want {
			t.Errorf("OneMinusRoot(%v, %v) = %v, want %v", c.d, c.t, got, want)
		}
	}
}

// exactOneMinusRoot uses the series 1 − (1−d)^(1/t) = Σ_k≥1 −C(1/t, k)(−d)^k in
// 200-bit floats.
func exactOneMinusRoot(d, t float64) float64 {
	prec := uint(200)
	a := new(big.Float).SetPrec(prec).Quo(big.NewFloat(1).SetPrec(prec), big.NewFloat(t).SetPrec(prec))
	sum := new(big.Float).SetPrec(prec)
	coef := new(big.Float).SetPrec(prec).SetFloat64(1) // C(a, k)·(−d)^k, built up
	negD := new(big.Float).SetPrec(prec).SetFloat64(-d)
	for k := 1; k < 200; k++ {
		// coef_k = coef_{k−1} · (a − k + 1)/k · (−d)
		f := new(big.Float).SetPrec(prec).Sub(a, big.NewFloat(float64(k-1)))
		f.Quo(f, big.NewFloat(float64(k)))
		coef.Mul(coef, f)
		coef.Mul(coef, negD)
		sum.Sub(sum, coef)
	}
	v, _ := sum.Float64()
	return v
}

// TestTails checks that the tail functions keep relative accuracy where the
// naive forms underflow or cancel.
func TestTails(t *testing.T) {
	// LogPhi is continuous across its switch at −30 and matches log Φ there.
	for _, x := range []float64{-29.999, -30, -30.001} {
		if got, want := LogPhi(x), math.Log(Phi(x)); math.Abs(got-want) > 1e-9*math.Abs(want) {
			t.Errorf("LogPhi(%v) = %v, log Φ = %v", x, got, want)
		}
	}
	// Far tail: log Φ(−100) ≈ −5005.524 (Φ itself underflows).
	if got := LogPhi(-100); math.Abs(got-(-5005.5242086)) > 1e-5 {
		t.Errorf("LogPhi(-100) = %v", got)
	}
	// PhiInvUpper inverts the upper tail to full relative precision.
	for _, q := range []float64{0.4, 1e-3, 1e-8, 1e-12, 1e-20, 1e-100} {
		z := PhiInvUpper(q)
		if back := Phi(-z); math.Abs(back-q) > 1e-12*q {
			t.Errorf("Φ(−PhiInvUpper(%v)) = %v", q, back)
		}
	}
}
