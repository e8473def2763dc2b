package noise

import (
	"math/big"
	"testing"

	"github.com/dpsql/dpsql/sqlext/securerand"
)

func BenchmarkBernoulliExp(b *testing.B) {
	r := securerand.New()
	n, d := big.NewInt(7), big.NewInt(10)
	for b.Loop() {
		BernoulliExp(r, n, d)
	}
}

func benchLaplace(b *testing.B, num, den uint64) {
	r := securerand.New()
	l, err := NewLaplace(num, den)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := l.Sample(r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLaplaceScale1(b *testing.B)    { benchLaplace(b, 1, 1) }
func BenchmarkLaplaceScale20(b *testing.B)   { benchLaplace(b, 20, 1) }
func BenchmarkLaplaceScale2e40(b *testing.B) { benchLaplace(b, 1<<40, 3) }

func benchGaussian(b *testing.B, sigma2 *big.Rat) {
	r := securerand.New()
	g, err := NewGaussian(sigma2)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := g.Sample(r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGaussianSigma1(b *testing.B)  { benchGaussian(b, big.NewRat(1, 1)) }
func BenchmarkGaussianSigma10(b *testing.B) { benchGaussian(b, RoundUp(big.NewRat(1003, 10), 40)) }
func BenchmarkGaussianSigma2e20(b *testing.B) {
	benchGaussian(b, RoundUp(new(big.Rat).SetFloat64(1.1e12), 40))
}
