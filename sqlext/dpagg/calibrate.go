package dpagg

import (
	"fmt"
	"math"
	"math/big"

	"github.com/dpsql/dpsql/sqlext/noise"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// Plan is what a release will do, computed from the options alone (no data,
// no budget spent): the budget split, the key-selection calibration and, per
// aggregate, its statistics, sensitivities and noise. It is what EXPLAIN and
// `dpsql params` show.
type Plan struct {
	Epsilon              float64 `json:"epsilon"`
	Delta                float64 `json:"delta"`
	MaxGroupsContributed int     `json:"max_groups_contributed"`
	MaxRowsPerGroup      int     `json:"max_rows_per_group"`
	// Noise is the resolved noise family of the aggregates.
	Noise Noise `json:"noise"`
	// GaussianAuto: noise auto resolved to the Gaussian with every bound
	// set, for a zCDP ledger (Options.GaussianAuto, noiseauto.go).
	GaussianAuto bool `json:"gaussian_auto,omitempty"`
	// Selection is the key-selection calibration (its Epsilon and Delta are
	// the selection's share; Rho is the release threshold).
	Selection setunion.Calibration `json:"selection"`
	// AggregatesEpsilon and AggregatesDelta are the aggregates' share
	// (rounded down for display; the calibration uses the exact remainder
	// ε − ε_selection, δ − δ_selection).
	AggregatesEpsilon float64 `json:"aggregates_epsilon"`
	AggregatesDelta   float64 `json:"aggregates_delta"`
	// Rho is the zero-concentrated DP parameter of all Gaussian aggregates
	// together (0 for Laplace).
	Rho float64 `json:"rho,omitempty"`
	// Composition is how the Gaussian aggregates' Rho was found:
	// CompositionBasic, from their own share (AggregatesEpsilon,
	// AggregatesDelta), or CompositionZCDP, as what (Epsilon, Delta) allow
	// once the key selection's ρ is composed with them (jointrho.go).
	Composition string `json:"composition,omitempty"`
	// UnitSigma is the Gaussian σ per unit of ℓ2 sensitivity if all of Rho
	// went to one statistic, and AnalyticUnitSigma what the continuous
	// analytic Gaussian mechanism (Balle & Wang 2018) would need at the
	// aggregates' (ε, δ): their ratio is the price of the conservative
	// zCDP → (ε, δ) conversion. Gaussian only.
	UnitSigma         float64 `json:"unit_sigma,omitempty"`
	AnalyticUnitSigma float64 `json:"analytic_unit_sigma,omitempty"`
	// Aggregates holds one entry per aggregate, in order.
	Aggregates []AggregatePlan `json:"aggregates"`
	// Global is set for a release of one row without key selection
	// (Options.Global); Selection is then empty.
	Global bool `json:"global,omitempty"`
	// PublicKeys is set for a release over a public key set without key
	// selection (Options.PublicKeys); Selection is then empty.
	PublicKeys bool `json:"public_keys,omitempty"`
	// Bounds is the private choice of the bounds the options leave unset
	// (bounds.go), or nil. Until the choice is made, the plan's Δ0, m and
	// clamping bounds are placeholders (1, 1 and [0, 1]) and so are its
	// noise scales; the budget split is final.
	Bounds *BoundsPlan `json:"bounds,omitempty"`
	// AggregateGroups is the aggregates' own Δ0 when it was chosen
	// privately (topgroups.go), 0 when they use MaxGroupsContributed.
	AggregateGroups int `json:"aggregate_groups,omitempty"`

	setunionOpts setunion.Options
}

// AggregatePlan is the noise of one aggregate.
type AggregatePlan struct {
	Kind  Kind    `json:"kind"`
	Lower float64 `json:"lower,omitempty"`
	Upper float64 `json:"upper,omitempty"`
	// Share is the aggregate's fraction of the aggregates' budget.
	Share float64 `json:"share"`
	// StdDev and HalfWidth95 are the standard deviation and the half-width of
	// a 95 % interval of the noise added to the released value, in the
	// value's units. For AVG they are absent: its error is about
	// Stats[1].HalfWidth95 / count (see Stats).
	StdDev      float64 `json:"stddev,omitempty"`
	HalfWidth95 float64 `json:"half_width_95,omitempty"`
	// Stats are the noisy statistics the aggregate is computed from: one,
	// or for AVG the count and the sum of (value − midpoint).
	Stats []StatPlan `json:"stats"`
	// Quantile is the level p of a Quantile aggregate, and MaxRows the
	// values one user keeps under one key (quantile.go).
	Quantile float64 `json:"quantile,omitempty"`
	MaxRows  int     `json:"max_rows,omitempty"`
}

// StatPlan is one noisy per-key statistic: an exact integer total in units
// of Granularity plus integer noise.
type StatPlan struct {
	// Name is "count", "sum" or "normalized_sum".
	Name string `json:"name"`
	// Contribution is c, the most one user adds to one key, in value units
	// (max_rows_per_group for counts, 1 for COUNT(DISTINCT unit),
	// m·max(|lower|, |upper|) for SUM, m·(upper − lower)/2 for AVG's sum).
	Contribution float64 `json:"contribution"`
	// Granularity is g, a power of two: every contribution is rounded to a
	// multiple of g and totals are exact integers in units of g (1 for counts).
	Granularity float64 `json:"granularity"`
	// Units is ⌈c/g⌉, the per-key sensitivity in units of g.
	Units int64 `json:"units"`
	// L1 and L2 are the per-user sensitivities over all keys, Δ0·Units·g and
	// √Δ0·Units·g: a user changes at most Δ0 keys.
	L1 float64 `json:"l1"`
	L2 float64 `json:"l2"`
	// Epsilon (Laplace) or Rho (Gaussian) is the statistic's share.
	Epsilon float64 `json:"epsilon,omitempty"`
	Rho     float64 `json:"rho,omitempty"`
	// Scale is the noise parameter in value units: b of the discrete Laplace
	// or σ of the discrete Gaussian, after rounding up to the sampler's
	// rational parameter, times g.
	Scale float64 `json:"scale"`
	// StdDev and HalfWidth95 are the exact standard deviation and 95 %
	// half-width of the noise, in value units.
	StdDev      float64 `json:"stddev"`
	HalfWidth95 float64 `json:"half_width_95"`
	// RankError95 (quantiles only, whose Scale is the exponential
	// mechanism's temperature in ranks): with probability 0.95 the released
	// candidate's rank is within this of p·n (quantile.go).
	RankError95 float64 `json:"rank_error_95,omitempty"`

	quant    *quantileNoise // quantiles: the exponential mechanism
	kind     Kind
	rowBound float64 // sums: the largest |value| of one row (centred for AVG)
	rowGrid  float64 // h: rows are accumulated exactly in units of h
	weight   float64
	level    float64 // quantiles: p
	lap      *noise.Laplace
	gau      *noise.Gaussian
	// halfWidths caches halfWidth per level (interval.go).
	halfWidths map[float64]int64
}

// Grid constants. A sum's granularity g is the power of two with
// c/g ∈ (2^(k−1), 2^k], k = maxUnitsBits unless the noise scale would then
// exceed 2^49 units (then smaller, down to minUnitsBits), so rounding each
// contribution to g raises the sensitivity by less than 2^(1−k) relative.
// Rows are summed exactly in units of h, the power of two with
// rowBound/h ∈ (2^29, 2^30], so an int64 holds the sum of 2^33 rows.
const (
	maxUnitsBits = 30
	minUnitsBits = 10
	rowGridBits  = 30
)

// maxScaleUnits bounds every noise scale (b or σ, in units of g) so that a
// draw leaves the int64 range with probability below e^(−2^63/2^50) =
// e^(−8192).
const maxScaleUnits = 1 << 50

// Calibrate validates o and computes its plan. Nothing here touches data.
//
// Budget: key selection gets ε_s = SelectionShare·ε and δ_s (all of δ with
// Laplace aggregates, SelectionDeltaShare·δ with Gaussian ones); the
// aggregates get the exact remainders ε_a = ε − ε_s and δ_a = δ − δ_s, and
// the release is (ε, δ)-DP by basic composition (see the package
// documentation). Among the statistics, the budget is split by the
// aggregates' weights (AVG's share halved between its count and its sum):
//
//	Laplace   statistic i gets ε_i = w_i·ε_a and discrete Laplace noise of
//	          scale b_i = Δ0·Units_i/ε_i (units of g), rounded up
//	Gaussian  ρ = the largest zCDP parameter whose conversion (CKS20
//	          Corollary 13, below) is (ε_a, δ_a)-DP; statistic i gets
//	          ρ_i = w_i·ρ and discrete Gaussian noise of
//	          σ_i² = Δ0·Units_i²/(2ρ_i) (units of g²), rounded up
//
// Automatic noise takes the family with the smaller total variance per unit
// of contribution, Σ_i Var_i/c_i²: 2(Δ0/ε_a)²·Σ 1/w_i² for Laplace against
// Δ0/(2ρ)·Σ 1/w_i for Gaussian (continuous approximations, which is enough to
// choose; the choice depends on the options only).
func Calibrate(o Options) (*Plan, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	auto := o.autoBounds()
	if auto != nil {
		auto.Chosen = o.chosen
		o = o.withPlaceholders()
		if o.Noise == NoiseAuto {
			// The choice spends a share of the Gaussian ρ; once it is
			// made, the statistics may take Laplace noise if the options
			// allow it (noisechoice.go).
			o.Noise = Gaussian
			auto.NoiseChoice = o.NoiseAfterBounds
		}
	}
	gaussianAuto := auto == nil && o.Noise == NoiseAuto && o.GaussianAuto
	if gaussianAuto {
		o.Noise = Gaussian // noiseauto.go
	}
	p := &Plan{
		Epsilon: o.Epsilon, Delta: o.Delta,
		MaxGroupsContributed: o.MaxGroupsContributed, MaxRowsPerGroup: o.MaxRowsPerGroup,
		Noise: o.Noise, Global: o.Global, PublicKeys: o.PublicKeys, Bounds: auto,
		GaussianAuto: gaussianAuto,
	}
	if o.Global {
		p.MaxGroupsContributed = 1
	}
	if c := o.chosen; c != nil && c.AggregateGroups > 0 && !o.Global {
		p.AggregateGroups = c.AggregateGroups
	}
	d0 := float64(p.statGroups())

	// Statistics and their weights.
	var stats []*StatPlan
	totalW := new(big.Rat)
	for _, a := range o.Aggregates {
		w := a.Weight
		if w == 0 {
			w = 1
		}
		ap := AggregatePlan{Kind: a.Kind, Lower: a.Lower, Upper: a.Upper}
		m := float64(o.MaxRowsPerGroup)
		switch a.Kind {
		case CountRows, CountValues:
			ap.Stats = []StatPlan{countStat(m, w)}
		case CountUnits:
			ap.Stats = []StatPlan{countStat(1, w)}
		case Sum:
			b := max(math.Abs(a.Lower), math.Abs(a.Upper))
			ap.Stats = []StatPlan{sumStat("sum", m*b, b, w)}
		case Avg:
			b := (a.Upper - a.Lower) / 2
			ap.Stats = []StatPlan{countStat(m, w/2), sumStat("normalized_sum", m*b, b, w/2)}
		case VarPop, VarSamp, StdDevPop, StdDevSamp:
			ap.Stats = spreadStats(m, (a.Upper-a.Lower)/2, w) // spread.go
		case Quantile:
			ap.Quantile = a.Quantile
			ap.MaxRows = quantileRows(o, auto)
			ap.Stats = quantileStats(float64(ap.MaxRows), a.Quantile, w) // quantile.go
		}
		for i := range ap.Stats {
			ap.Stats[i].kind = a.Kind
			ap.Stats[i].level = a.Quantile
			totalW.Add(totalW, exactRat(ap.Stats[i].weight))
		}
		p.Aggregates = append(p.Aggregates, ap)
	}
	for i := range p.Aggregates {
		for j := range p.Aggregates[i].Stats {
			stats = append(stats, &p.Aggregates[i].Stats[j])
		}
	}

	if o.Global || o.PublicKeys {
		return p.calibrateGlobal(o, stats, totalW) // no key selection: global.go, publickeys.go
	}

	// Budget split.
	epsSel, deltaSel := o.Epsilon, o.Delta
	var epsAgg, deltaAgg *big.Rat
	if len(stats) > 0 {
		epsSel = o.selectionShare() * o.Epsilon
		epsAgg = new(big.Rat).Sub(exactRat(o.Epsilon), exactRat(epsSel))
		if p.Noise == NoiseAuto {
			p.Noise = autoNoise(stats, totalW, d0, ratFloorFloat(epsAgg), o.Delta-o.selectionDeltaShare()*o.Delta)
		}
		if p.Noise == Gaussian {
			deltaSel = o.selectionDeltaShare() * o.Delta
		}
		deltaAgg = new(big.Rat).Sub(exactRat(o.Delta), exactRat(deltaSel))
		p.AggregatesEpsilon = ratFloorFloat(epsAgg)
		p.AggregatesDelta = ratFloorFloat(deltaAgg)
	}
	p.setunionOpts = setunion.Options{
		Mechanism: o.mechanism(), Epsilon: epsSel, Delta: deltaSel,
		MaxItems: o.MaxGroupsContributed, Alpha: o.Alpha, Rounds: setunion.DefaultRounds,
	}
	if o.singleItemSelection(p) {
		p.setunionOpts.Mechanism = setunion.SingleItem
		if _, err := setunion.Calibrate(p.setunionOpts); err != nil {
			p.setunionOpts.Mechanism = o.mechanism() // its π(n) table is too large: keep the default
		}
	}
	cal, err := setunion.Calibrate(p.setunionOpts)
	if err != nil {
		return nil, fmt.Errorf("key selection: %w", err)
	}
	p.Selection = cal
	if len(stats) == 0 {
		return p, nil
	}
	return p, p.calibrateNoise(o, stats, totalW, epsAgg, deltaAgg)
}

// calibrateNoise calibrates every statistic's noise to the aggregates'
// exact share (ε_a, δ_a) of the budget, split by the weights (see
// Calibrate), and fills the shares and sensitivities.
func (p *Plan) calibrateNoise(o Options, stats []*StatPlan, totalW, epsAgg, deltaAgg *big.Rat) error {
	d0 := float64(p.statGroups())
	if b := p.Bounds; b != nil && b.NoiseChoice {
		lap, err := b.setBranchBudgets(ratFloorFloat(epsAgg), ratFloorFloat(deltaAgg)) // noisechoice.go
		if err != nil {
			return err
		}
		if b.Chosen != nil && b.Chosen.final && laplaceWins(stats, totalW, d0, b.statRho, lap) {
			p.Noise = Laplace
			epsAgg = exactRat(lap)
		}
	}
	var err error
	switch p.Noise {
	case Laplace:
		err = calibrateLaplace(stats, totalW, epsAgg, p.statGroups())
	case Gaussian:
		err = p.calibrateGaussian(stats, totalW, epsAgg, deltaAgg)
	}
	if err != nil {
		return err
	}
	p.finishSensitivities()
	for _, s := range stats {
		if units := s.Scale / s.Granularity; units > maxScaleUnits {
			return s.tooLarge(units)
		}
	}
	for i := range p.Aggregates {
		a := &p.Aggregates[i]
		w := 0.0
		for _, s := range a.Stats {
			w += s.weight
		}
		tw, _ := totalW.Float64()
		a.Share = w / tw
		if len(a.Stats) == 1 {
			a.StdDev, a.HalfWidth95 = a.Stats[0].StdDev, a.Stats[0].HalfWidth95
		}
	}
	return nil
}

// calibrateLaplace gives each statistic Laplace noise for its share
// ε_i = w_i/W·ε_a of the aggregates' ε_a: b_i = Δ0·Units/ε_i, exactly, then
// rounded up (d0 = Δ0).
func calibrateLaplace(stats []*StatPlan, totalW, epsAgg *big.Rat, d0i int) error {
	d0 := float64(d0i)
	for _, s := range stats {
		// ε_i = w_i/W·ε_a and b_i = Δ0·Units/ε_i, exactly, then rounded up.
		epsI := new(big.Rat).Mul(epsAgg, new(big.Rat).Quo(exactRat(s.weight), totalW))
		if s.kind == Quantile {
			if err := s.calibrateQuantileLaplace(d0i, epsI, s.level); err != nil {
				return err
			}
			continue
		}
		s.fitGrid(d0 / ratFloorFloat(epsI)) // b = (Δ0/ε_i)·Units
		b := new(big.Rat).SetInt64(int64(d0i) * s.Units)
		b.Quo(b, epsI)
		// Scales below 2^−32 (noise 0 except with probability
		// e^(−2^32)) are raised to it so that the rational fits the
		// sampler's 63-bit words; raising a scale only adds privacy.
		if floor := new(big.Rat).SetFrac64(1, 1<<32); b.Cmp(floor) < 0 {
			b = floor
		}
		if bf, _ := b.Float64(); bf > maxScaleUnits {
			return s.tooLarge(bf)
		}
		l, err := noise.NewLaplaceRat(noise.RoundUp(b, 30))
		if err != nil {
			return fmt.Errorf("aggregate noise: %w (lower epsilon or max_groups_contributed are too extreme)", err)
		}
		s.lap = l
		s.Epsilon = ratFloorFloat(epsI)
		bf, _ := l.Scale().Float64()
		s.Scale = bf * s.Granularity
		s.StdDev = math.Sqrt(l.Variance()) * s.Granularity
		s.HalfWidth95 = float64(l.HalfWidth(0.95)) * s.Granularity
	}
	return nil
}

// calibrateGaussian gives each statistic Gaussian noise for its share
// ρ_i = w_i/W·ρ of the zCDP ρ that (ε_a, δ_a) allow, and checks that the
// rounded-up σ's use no more than ρ in all.
func (p *Plan) calibrateGaussian(stats []*StatPlan, totalW, epsAgg, deltaAgg *big.Rat) error {
	d0 := float64(p.statGroups())
	ea := ratFloorFloat(epsAgg)
	da := ratFloorFloat(deltaAgg)
	if p.Bounds != nil && p.Bounds.NoiseChoice {
		da *= GaussianBranchDelta // the Gaussian branch's share of δ_a (noisechoice.go)
	}
	rho, err := maxRho(ea, da)
	if err != nil {
		return err
	}
	p.Composition = CompositionBasic
	if j, ok := p.jointRho(); ok && j > rho { // jointrho.go
		rho, p.Composition = j, CompositionZCDP
	}
	p.Rho = rho
	if p.Bounds != nil {
		rho = p.Bounds.setBoundsBudget(rho) // the statistics' part
	}
	p.UnitSigma = 1 / math.Sqrt(2*rho)
	if s, err := noise.GaussianSigma(ea, da, 1); err == nil {
		p.AnalyticUnitSigma = s
	}
	// Guard the float products: each ρ_i is taken 1e-9 below its share,
	// and the exact sum of the rounded-up σ's ρ_i is checked below.
	rhoUsed := new(big.Rat)
	for _, s := range stats {
		wf, _ := new(big.Rat).Quo(exactRat(s.weight), totalW).Float64()
		rhoI := wf * rho * (1 - 1e-9)
		if s.kind == Quantile {
			used, err := s.calibrateQuantileRho(p.statGroups(), rhoI, s.level)
			if err != nil {
				return err
			}
			rhoUsed.Add(rhoUsed, used)
			continue
		}
		s.fitGrid(math.Sqrt(d0 / (2 * rhoI))) // σ = √(Δ0/(2ρ_i))·Units
		// σ² = Δ0·Units²/(2ρ_i) in units of g², exactly from the floats.
		num := new(big.Int).SetInt64(s.Units)
		num.Mul(num, num)
		num.Mul(num, big.NewInt(int64(p.statGroups())))
		s2 := new(big.Rat).SetInt(num)
		s2.Quo(s2, new(big.Rat).Mul(big.NewRat(2, 1), exactRat(rhoI)))
		if sf, _ := s2.Float64(); math.Sqrt(sf) > maxScaleUnits {
			return s.tooLarge(math.Sqrt(sf))
		}
		g, err := noise.NewGaussian(noise.RoundUp(s2, 48))
		if err != nil {
			return fmt.Errorf("aggregate noise: %w (epsilon or delta are too small)", err)
		}
		s.gau = g
		// Actual ρ_i = Δ0·Units²/(2σ²) for the rounded-up σ².
		actual := new(big.Rat).SetInt(num)
		actual.Quo(actual, new(big.Rat).Mul(big.NewRat(2, 1), g.Sigma2()))
		rhoUsed.Add(rhoUsed, actual)
		s.Rho, _ = actual.Float64()
		sf, _ := g.Sigma2().Float64()
		s.Scale = math.Sqrt(sf) * s.Granularity
		s.StdDev = math.Sqrt(g.Variance()) * s.Granularity
		s.HalfWidth95 = float64(g.HalfWidth(0.95)) * s.Granularity
	}
	if rhoUsed.Cmp(exactRat(rho)) > 0 {
		return fmt.Errorf("internal error: the aggregates' zCDP %s exceeds the calibrated %v", rhoUsed.FloatString(20), rho)
	}
	return nil
}

// autoNoise resolves NoiseAuto (see Calibrate); deltaAgg is the aggregates'
// δ under the Gaussian split.
func autoNoise(stats []*StatPlan, totalW *big.Rat, d0, epsAgg, deltaAgg float64) Noise {
	rho, err := maxRho(epsAgg, deltaAgg)
	if err != nil {
		return Laplace
	}
	tw, _ := totalW.Float64()
	var inv, inv2 float64
	for _, s := range stats {
		w := s.weight / tw
		inv += 1 / w
		inv2 += 1 / (w * w)
	}
	if d0/(2*rho)*inv < 2*(d0/epsAgg)*(d0/epsAgg)*inv2 {
		return Gaussian
	}
	return Laplace
}

// Lines renders the plan for people: one line for the budget split and the
// key selection, one per aggregate (and per statistic of AVG), with the noise
// scale and the half-width of a 95 % interval. EXPLAIN and `dpsql params`
// can print them as they are.
func (p *Plan) Lines() []string {
	sel := p.Selection
	out := []string{
		fmt.Sprintf("release: epsilon=%g delta=%g, max_groups_contributed=%d, max_rows_per_group=%d",
			p.Epsilon, p.Delta, p.MaxGroupsContributed, p.MaxRowsPerGroup),
	}
	switch {
	case p.Global:
		out = append(out, "key selection: none (no GROUP BY: one row, always released)")
	case p.PublicKeys:
		out = append(out, "key selection: none (public keys: every key of the public key set is released)")
	default:
		out = append(out, selectionLine(sel)) // selection.go
	}
	if len(p.Aggregates) == 0 {
		return out
	}
	agg := fmt.Sprintf("aggregates: epsilon=%g delta=%g, discrete %s noise", p.AggregatesEpsilon, p.AggregatesDelta, p.Noise)
	if p.Noise == Gaussian {
		agg += fmt.Sprintf(" (zCDP rho=%.4g; sigma per unit of l2 sensitivity %.4g, analytic Gaussian %.4g)", p.Rho, p.UnitSigma, p.AnalyticUnitSigma)
	}
	out = append(out, agg)
	scale := "b"
	if p.Noise == Gaussian {
		scale = "sigma"
	}
	for _, a := range p.Aggregates {
		name := string(a.Kind)
		if a.Kind.clamped() {
			name += fmt.Sprintf(" [%g, %g]", a.Lower, a.Upper)
		}
		if a.Kind == Quantile {
			out = append(out, a.quantileLine(name)) // quantile.go
			continue
		}
		for _, s := range a.Stats {
			label := name
			if len(a.Stats) > 1 {
				label += " " + s.Name
			}
			out = append(out, fmt.Sprintf("%s: share %.3g, sensitivity l1=%.4g l2=%.4g, %s=%.4g, stddev %.4g, 95%% interval ±%.4g, granularity %g",
				label, a.Share, s.L1, s.L2, scale, s.Scale, s.StdDev, s.HalfWidth95, s.Granularity))
		}
		if a.Kind == Avg {
			out = append(out, fmt.Sprintf("%s: mean = midpoint + noisy centred sum / noisy count; error about ±%.4g / count at 95%%", name, a.Stats[1].HalfWidth95))
		}
	}
	return out
}

// tooLarge is the error for a noise scale above 2^50 units.
func (s *StatPlan) tooLarge(units float64) error {
	return fmt.Errorf("the noise of %s (%s) would be %.3g units of its granularity, above 2^50: "+
		"epsilon is too small for these bounds (raise epsilon, or lower max_groups_contributed, max_rows_per_group or the clamping bounds)",
		s.kind, s.Name, units)
}

// countStat is a count with per-key contribution c (an integer) and weight w.
func countStat(c, w float64) StatPlan {
	return StatPlan{Name: "count", Contribution: c, Granularity: 1, Units: int64(c), weight: w}
}

// sumStat is a sum with per-key contribution c > 0, per-row bound
// rowBound > 0 and weight w, on the finest grid (fitGrid may coarsen it).
func sumStat(name string, c, rowBound, w float64) StatPlan {
	s := StatPlan{Name: name, Contribution: c, rowBound: rowBound, weight: w,
		rowGrid: math.Ldexp(1, ceilLog2(rowBound)-rowGridBits)}
	s.setGrid(maxUnitsBits)
	return s
}

// ceilLog2 returns ⌈log2 x⌉ for x > 0.
func ceilLog2(x float64) int {
	frac, exp := math.Frexp(x) // x = frac·2^exp, frac ∈ [0.5, 1)
	if frac == 0.5 {
		return exp - 1
	}
	return exp
}

// setGrid sets g = 2^(⌈log2 c⌉ − k), so that c/g ∈ (2^(k−1), 2^k], and
// Units = ⌈c/g⌉.
func (s *StatPlan) setGrid(k int) {
	s.Granularity = math.Ldexp(1, ceilLog2(s.Contribution)-k)
	s.Units = int64(math.Ceil(s.Contribution / s.Granularity))
}

// fitGrid coarsens a sum's grid when its noise scale, mult·Units units,
// would exceed 2^49 with the finest grid: the largest k ≤ maxUnitsBits with
// mult·2^k ≤ 2^49, but not below minUnitsBits (Calibrate then refuses scales
// above 2^50). Counts keep g = 1.
func (s *StatPlan) fitGrid(mult float64) {
	if s.Name == "count" {
		return
	}
	k := maxUnitsBits
	if l := math.Log2(mult); 49-l < float64(k) {
		k = max(int(math.Floor(49-l)), minUnitsBits)
	}
	s.setGrid(k)
}

// finishSensitivities fills L1 and L2 from Δ0, Units and g.
func (p *Plan) finishSensitivities() {
	d0 := float64(p.statGroups())
	for i := range p.Aggregates {
		for j := range p.Aggregates[i].Stats {
			s := &p.Aggregates[i].Stats[j]
			s.L1 = d0 * float64(s.Units) * s.Granularity
			s.L2 = math.Sqrt(d0) * float64(s.Units) * s.Granularity
		}
	}
}

// statGroups is the Δ0 of the aggregates' sensitivity: AggregateGroups
// when chosen, otherwise MaxGroupsContributed.
func (p *Plan) statGroups() int {
	if p.AggregateGroups > 0 {
		return p.AggregateGroups
	}
	return p.MaxGroupsContributed
}

// exactRat returns x as an exact rational.
func exactRat(x float64) *big.Rat { return new(big.Rat).SetFloat64(x) }

// ratFloorFloat returns the largest float64 ≤ x (x ≥ 0).
func ratFloorFloat(x *big.Rat) float64 {
	f, exact := x.Float64()
	if !exact && exactRat(f).Cmp(x) > 0 {
		f = math.Nextafter(f, 0)
	}
	return f
}

// ZCDPDelta returns the δ for which ρ-zCDP implies (ε, δ)-DP by Canonne,
// Kamath & Steinke 2020, Corollary 13:
//
//	δ = inf_{α>1} exp((α−1)(αρ−ε)) / (α−1) · (1 − 1/α)^α
//
// tighter than the classic exp(−(ε−ρ)²/(4ρ)) of Bun & Steinke 2016. Every α
// gives a valid bound, so the minimisation (golden section over ln(α−1); the
// exponent is convex in α) can only err on the safe side.
func ZCDPDelta(rho, eps float64) float64 {
	if !(rho > 0) {
		return 0
	}
	// ln δ(α) = (α−1)(αρ−ε) + α·ln(1 − 1/α) − ln(α−1).
	f := func(x float64) float64 {
		am1 := math.Exp(x) // α − 1
		a := 1 + am1
		return am1*(a*rho-eps) + a*math.Log1p(-1/a) - x
	}
	lo, hi := -50.0, 50.0
	const phi = 0.6180339887498949
	x1, x2 := hi-phi*(hi-lo), lo+phi*(hi-lo)
	f1, f2 := f(x1), f(x2)
	for range 200 {
		if f1 <= f2 {
			hi, x2, f2 = x2, x1, f1
			x1 = hi - phi*(hi-lo)
			f1 = f(x1)
		} else {
			lo, x1, f1 = x1, x2, f2
			x2 = lo + phi*(hi-lo)
			f2 = f(x2)
		}
	}
	return math.Min(1, math.Exp(min(f1, f2)))
}

// maxRho returns the largest ρ (to 1e-12 relative, on the low side) with
// ZCDPDelta(ρ, eps) ≤ delta·(1 − 1e-9); the margin absorbs the float
// evaluation of the bound.
func maxRho(eps, delta float64) (float64, error) {
	if !(eps > 0) || !(delta > 0 && delta < 1) {
		return 0, fmt.Errorf("the aggregates' share needs epsilon > 0 and 0 < delta < 1, got epsilon=%v delta=%v", eps, delta)
	}
	target := delta * (1 - 1e-9)
	lo, hi := 1e-300, eps+1
	if ZCDPDelta(lo, eps) > target {
		return 0, fmt.Errorf("no Gaussian noise gives (%v, %v)-DP", eps, delta)
	}
	for range 400 {
		mid := math.Sqrt(lo * hi) // bisection in log ρ
		if ZCDPDelta(mid, eps) <= target {
			lo = mid
		} else {
			hi = mid
		}
		if hi-lo <= 1e-12*lo {
			break
		}
	}
	return lo, nil
}
