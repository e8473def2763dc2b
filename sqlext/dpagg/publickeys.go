package dpagg

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dpsql/dpsql/sqlext/securerand"
)

// Releases over public keys.
//
// A GROUP BY whose keys come from a public table (SQL: public LEFT JOIN
// protected … GROUP BY public columns; Tumult's KeySets, PipelineDP's public
// partitions) releases one row for every key of a key set K that is a
// function of public data alone, fixed before any protected row is read
// (Options.PublicKeys, Pipeline.SetPublicKeys). There is no key selection
// and no threshold: every key of K is released, including the keys no user
// has (their values are noise around 0, clamped at 0 for counts as any
// count), and rows whose key is not in K are dropped before anything else
// sees them (before the private choice of Δ0 and m, too). The aggregates get
// the whole budget: ε_a = ε, δ_a = δ (a Laplace release uses no δ).
//
// Sensitivity. Each user's rows are grouped by key, and the user's keys (all
// in K) are sampled down to Δ0 = max_groups_contributed uniformly without
// replacement, exactly as with key selection; each kept (user, key) pair adds
// at most Units_i to statistic i's total of that key (max_rows_per_group and
// the clamping bounds, as per key with selection). For neighbouring
// databases D, D' = D plus the rows of one user u, couple the samples of all
// other users: their contributions are identical, so the vectors
// (T_i[k])_{k ∈ K} differ only on u's at most Δ0 kept keys, each by at most
// Units_i: ‖ΔT_i‖1 ≤ Δ0·Units_i and ‖ΔT_i‖2 ≤ √Δ0·Units_i, the sensitivities
// calibrateNoise calibrates each statistic's discrete Laplace (ℓ1) or
// Gaussian (ℓ2) noise to. The released object is (k, T_i[k] + Z_ik) for k ∈ K
// in the order of K's sorted key bytes: its rows, their number and their
// order are functions of K alone, and its values a Laplace or Gaussian
// mechanism of those sensitivities, so the release is (ε, δ)-DP by the same
// composition over the statistics as a global release (global.go), for every
// fixed K. Since K is computed from public data only, it is a constant of
// the mechanism (TestPublicKeysNeighbourSensitivity checks the bounds on
// random neighbouring databases).
//
// Size. A release over public keys draws noise for every key of K whatever
// the data, so its time and memory grow with |K|; MaxPublicKeys bounds |K|,
// and SetPublicKeys refuses a larger set (an error that depends on public
// data only, raised before anything is charged).

// MaxPublicKeys bounds the keys of one release over public keys.
const MaxPublicKeys = 100_000

// ErrTooManyPublicKeys is wrapped by SetPublicKeys' error for a set above
// MaxPublicKeys.
var ErrTooManyPublicKeys = errors.New("too many public keys")

// SetPublicKeys gives a release over public keys (Options.PublicKeys) its
// key set, before any row is added: the keys as the caller encodes them for
// Add, duplicates ignored. It fails for more than MaxPublicKeys distinct
// keys.
func (p *Pipeline) SetPublicKeys(keys []string) error {
	switch {
	case !p.plan.PublicKeys:
		return errors.New("dpagg: SetPublicKeys is for a release over public keys (Options.PublicKeys)")
	case p.rows > 0 || p.publicSet != nil:
		return errors.New("dpagg: SetPublicKeys must be called once, before Add")
	}
	sorted := slices.Clone(keys)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	if len(sorted) > MaxPublicKeys {
		return fmt.Errorf("%w: the public key set has %d keys, more than the %d a release over public keys may release", ErrTooManyPublicKeys, len(sorted), MaxPublicKeys)
	}
	p.publicKeys = sorted
	p.publicSet = make(map[string]struct{}, len(sorted))
	for _, k := range sorted {
		p.publicSet[k] = struct{}{}
	}
	return nil
}

// PublicKeys returns the number of keys of the public key set (0 before
// SetPublicKeys).
func (p *Pipeline) PublicKeys() int { return len(p.publicKeys) }

// publicKey reports whether a row with this key is kept: always, unless the
// release is over public keys and the key is not one of them.
func (p *Pipeline) publicKey(key []byte) bool {
	if p.publicSet == nil {
		return true
	}
	_, ok := p.publicSet[string(key)]
	return ok
}

// releasePublic is ReleaseContext for a release over public keys: every
// user's keys sampled down to Δ0, then one row per public key, in sorted
// order, with noise on every statistic, present in the data or not.
func (p *Pipeline) releasePublic(ctx context.Context, rng *rand.Rand) (*Result, error) {
	d0 := p.plan.MaxGroupsContributed
	tot := p.bound(func(_ uint32, idx []int32) []int32 { return securerand.SampleInPlace(rng, idx, d0) }, func(uint32, uint32) {})
	p.tot = tot
	res := &Result{Chosen: p.chosen}
	res.Stats.Occurrences = p.rows
	res.Stats.Users = len(p.userNames)
	res.Stats.DistinctItems = len(p.keyNames)
	res.Stats.Pairs = p.pairs
	res.Rows = make([]Row, 0, len(p.publicKeys))
	for n, key := range p.publicKeys {
		if n%64 == 0 { // a quantile's sampler takes about a millisecond per key
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		k, present := p.keyIdx[key]
		row, err := p.noisyRow(rng, tot, k, present)
		if err != nil {
			return nil, err
		}
		row.Key = key
		res.Rows = append(res.Rows, row)
	}
	return res, nil
}

// noisyRow is the released row of key k: each aggregate from its
// statistics' totals (0 when the key is not present) plus fresh noise.
func (p *Pipeline) noisyRow(rng *rand.Rand, tot totals, k uint32, present bool) (Row, error) {
	row := newRow("", len(p.plan.Aggregates))
	si := 0
	for ai, a := range p.plan.Aggregates {
		if a.Kind == Quantile {
			kk := -1 // a key no user has
			if present {
				kk = int(k)
			}
			v, err := p.releaseQuantile(rng, ai, kk)
			if err != nil {
				return Row{}, err
			}
			row.Values[ai] = v
			row.Low[ai], row.High[ai] = math.NaN(), math.NaN() // no interval: the exponential mechanism's error depends on the data
			si += len(a.Stats)
			continue
		}
		noisy := make([]int64, len(a.Stats))
		for j := range a.Stats {
			var total int64
			if present {
				total = tot[si+j][k]
			}
			v, err := a.Stats[j].addNoise(rng, total)
			if err != nil {
				return Row{}, err
			}
			noisy[j] = v
		}
		si += len(a.Stats)
		row.Values[ai] = a.value(noisy)
		row.Low[ai], row.High[ai] = a.interval(noisy)
	}
	return row, nil
}
