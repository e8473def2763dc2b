package ngrams

import (
	"math"

	"github.com/dpsql/dpsql/sqlext/noise"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// Plan is what an extraction will use, computed from options alone (no
// data): the Gaussian budget σ* and its split over the levels, the level-1
// calibration, and each level's rule, Δ_k and α. The thresholds ρ_k of the
// levels k ≥ 2 depend on |S_{k−1}| and |V_k|, which are known only when the
// level runs; they are reported in LevelStats.
type Plan struct {
	MaxN    int     `json:"max_n"`
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
	// SigmaStar is σ*, the analytic-Gaussian scale at (ε, δ/2) with
	// sensitivity 1: the scale of the single Gaussian mechanism that all
	// levels together form.
	SigmaStar   float64            `json:"sigma_star"`
	Eta         float64            `json:"eta"`
	BudgetSplit string             `json:"budget_split"`
	Mechanism   setunion.Mechanism `json:"mechanism"`
	Update      setunion.Mechanism `json:"update"`
	Levels      []LevelPlan        `json:"levels"`

	level1 setunion.Calibration
}

// LevelPlan is the data-independent calibration of level k.
type LevelPlan struct {
	N    int                `json:"n"`
	Rule setunion.Mechanism `json:"rule"`
	// Fraction is f_k, the level's share of μ² = 1/σ*².
	Fraction float64 `json:"fraction"`
	// Sigma is σ_k = σ*/√f_k. The noise added to H_k has this standard
	// deviation, except for count_gaussian at level 1, whose counts have ℓ2
	// sensitivity √Δ_1 and get σ_1·√Δ_1 (Scale).
	Sigma    float64 `json:"sigma"`
	Scale    float64 `json:"scale"`
	MaxItems int     `json:"max_items"`
	Alpha    float64 `json:"alpha,omitempty"`
	// Rho and Gamma are set for level 1 only (see Plan).
	Rho   float64 `json:"rho,omitempty"`
	Gamma float64 `json:"gamma,omitempty"`
}

// NewPlan validates o and calibrates the extraction (docs/privacy.md §8):
//
//	σ*   = analytic Gaussian σ at (ε, δ/2), sensitivity 1
//	σ_k  = σ*/√f_k, so Σ_k 1/σ_k² = 1/σ*² (uniform: σ_k = σ*·√T)
//	ρ_1  = max_{t≤Δ_1} 1/√t + σ_1·Φ⁻¹((1 − δ/2)^(1/t))   (weighted and policies)
//	       1 + σ_1√Δ_1·Φ⁻¹((1 − δ/2)^(1/Δ_1))            (count_gaussian)
//	Γ_k  = ρ_k + α·σ_k for the policies.
//
// Every level's histogram has ℓ2 sensitivity 1 (Gopi et al. 2020, Thm 1.1
// for the policies), so the T Gaussian releases compose to one Gaussian
// mechanism of scale σ*, which is (ε, δ/2)-DP; the other δ/2 bounds the
// probability that the unigram threshold releases an item only one user
// holds. The levels k ≥ 2 run over the public domain V_k with spurious
// k-grams simulated exactly, so their thresholds cost no δ.
func NewPlan(o Options) (Plan, error) {
	if err := o.Validate(); err != nil {
		return Plan{}, err
	}
	sigmaStar, err := noise.GaussianSigma(o.Epsilon, o.Delta/2, 1)
	if err != nil {
		return Plan{}, err
	}
	p := Plan{
		MaxN: o.MaxN, Epsilon: o.Epsilon, Delta: o.Delta, SigmaStar: sigmaStar, Eta: o.Eta,
		BudgetSplit: o.BudgetSplit.String(), Mechanism: o.Mechanism, Update: o.UpdateRule(),
	}
	for k, f := range o.BudgetSplit.Fractions(o.MaxN) {
		n := k + 1
		rule := p.Update
		if n == 1 {
			rule = o.Mechanism
		}
		lp := LevelPlan{N: n, Rule: rule, Fraction: f, Sigma: sigmaStar / math.Sqrt(f), MaxItems: o.LevelMax(n)}
		lp.Scale = lp.Sigma
		if rule.HasCutoff() {
			lp.Alpha = o.alphaOf(rule)
		}
		p.Levels = append(p.Levels, lp)
	}
	l1 := &p.Levels[0]
	cal := setunion.Calibration{
		Mechanism: o.Mechanism, Epsilon: o.Epsilon, Delta: o.Delta, MaxItems: l1.MaxItems,
		Alpha: l1.Alpha, Noise: setunion.Gaussian, ThresholdDelta: o.Delta / 2,
	}
	// The threshold fails with probability δ_T/(1 + δ_T), δ_T = δ/2, as in
	// setunion: the proof's direction "D ⊂ D′" costs p/(1 − p) = δ_T. The
	// threshold functions take 2× the failure probability.
	fail2 := 2 * (o.Delta / 2) / (1 + o.Delta/2)
	if o.Mechanism == setunion.CountGaussian {
		// The analytic Gaussian σ is linear in the sensitivity: counts with
		// ℓ2 sensitivity √Δ_1 need σ_1·√Δ_1 for the same privacy.
		l1.Scale = l1.Sigma * math.Sqrt(float64(l1.MaxItems))
		cal.Rho = noise.CountGaussianThreshold(l1.Scale, fail2, l1.MaxItems)
	} else {
		cal.Rho = noise.GaussianThresholdMax(l1.Sigma, fail2, l1.MaxItems)
	}
	cal.Scale = l1.Scale
	if o.Mechanism == setunion.DPSIPS {
		cal.Rounds = setunion.SIPSRounds(l1.Sigma, o.Delta/2, l1.MaxItems, setunion.DefaultRounds)
		cal.Rho = cal.Rounds[len(cal.Rounds)-1].Rho
	}
	if o.Mechanism.HasCutoff() {
		cal.Gamma = cal.Rho + cal.Alpha*cal.Scale
	}
	l1.Rho, l1.Gamma = cal.Rho, cal.Gamma
	p.level1 = cal
	return p, nil
}

// Level1 returns the calibration of the unigram DPSU release.
func (p Plan) Level1() setunion.Calibration { return p.level1 }

// levelRho is the threshold of level k ≥ 2 (docs/privacy.md §8):
//
//	ρ_k = σ_k·Φ⁻¹(1 − η·min(|S_{k−1}|/|V_k|, 1)),
//
// chosen so that the zero-weight k-grams of V_k, each released with
// probability Φ(−ρ_k/σ_k) = η·min(|S_{k−1}|/|V_k|, 1), add about η·|S_{k−1}|
// spurious k-grams. With |V_k| = 0 the ratio is taken as 1.
func levelRho(sigma, eta float64, prev int, valid uint64) float64 {
	ratio := 1.0
	if valid > 0 {
		ratio = min(float64(prev)/float64(valid), 1)
	}
	return sigma * noise.PhiInvUpper(eta*ratio)
}
