package setunion

import (
	"cmp"
	"math"
	"slices"
)

// Histogram is the weighted histogram H of one release over dense item ids
// 0..n−1, together with the update rule of its mechanism (docs/privacy.md §3).
// The batch builder, the n-gram extractor and the Beam pipeline all build
// their histograms with it, so each rule exists once.
//
// Every rule adds at most 1 to H in the rule's norm (ℓ1 for the Laplace
// mechanisms, ℓ2 for the Gaussian ones), and the sequential rules are
// contractive: running the same later users on two histograms never increases
// their distance in that norm (Gopi et al. 2020, Theorem 1.1; Carvalho et al.
// 2022, Lemma 1). That is what the property tests check — and what the
// ℓ1-descent rule with an ℓ2 budget (policy_gaussian_l1) fails; see the
// package documentation.
type Histogram struct {
	// W holds the weights, indexed by item id.
	W []float64
	// Tie holds, per item id, the keyed hash that breaks ties between items of
	// equal priority in the greedy rules. It must not depend on other users'
	// data; the builder fills it with a fresh key per release.
	Tie []uint64

	rule    Mechanism
	gamma   float64
	gaps    []float64
	sortBuf []float64
	order   []int
}

// NewHistogram returns an empty histogram for n items updated by m's rule
// with cutoff gamma (ignored by the rules without one).
func NewHistogram(m Mechanism, gamma float64, n int) *Histogram {
	return &Histogram{W: make([]float64, n), rule: m, gamma: gamma}
}

// Grow makes room for item ids below n.
func (h *Histogram) Grow(n int) {
	if n > len(h.W) {
		h.W = append(h.W, make([]float64, n-len(h.W))...)
	}
}

// Update adds one user whose distinct items (already bounded to Δ0 where the
// mechanism bounds) are items. priority is used by the greedy rules only:
// priority[i] orders items[i] (higher first): the user's own count for
// greedy_frequency, the public frequency for greedy_public.
func (h *Histogram) Update(items []uint32, priority []float64) {
	if len(items) == 0 {
		return
	}
	switch h.rule {
	case CountLaplace, CountGaussian, SingleItem, WeightedLaplace, WeightedGaussian, DPSIPS:
		h.addAll(items, additiveWeight(h.rule, len(items)))
	case PolicyLaplace:
		h.descent(items, false)
	case PolicyGaussianL1:
		h.descent(items, true)
	case PolicyGaussianL2:
		h.l2Descent(items)
	case GreedyFrequency, GreedyPublic:
		h.floor(items)
		h.greedy(items, priority, 1-GreedyFloor)
	case GreedyFrequencyUnproven, GreedyPublicUnproven:
		h.greedy(items, priority, 1)
	default:
		panic("setunion: histogram of unknown mechanism " + string(h.rule))
	}
}

func (h *Histogram) addAll(items []uint32, w float64) {
	for _, u := range items {
		h.W[u] += w
	}
}

// collectGaps fills h.gaps with g_u = Γ − H[u] for the items below Γ and
// returns them (same order as items, 0 for items at or above Γ).
func (h *Histogram) collectGaps(items []uint32) []float64 {
	g := h.gaps[:0]
	for _, u := range items {
		g = append(g, max(h.gamma-h.W[u], 0))
	}
	h.gaps = g
	return g
}

// descent is the ℓ1-descent update: raise every item below Γ by the same
// amount, capped at its gap, until the budget of 1 is spent.
//
// With the ℓ1 budget (Policy Laplace; Gopi et al. 2020, Algorithm 3) this is
// water-filling: find τ with Σ_u min(g_u, τ) = 1 (if Σ g_u ≤ 1, fill all to Γ)
// and add min(g_u, τ). With the ℓ2 budget (Policy Gaussian ℓ1; journal
// Algorithm 8) find λ ≥ 0 with Σ_u min(g_u, λ)² = 1 (if ‖g‖₂ ≤ 1, fill all
// to Γ) and add min(g_u, λ). Both are solved exactly from the sorted gaps: with
// g₍₁₎ ≤ … ≤ g₍ₘ₎ and the first k gaps filled, the level is
// (1 − Σ_{i≤k} g₍ᵢ₎)/(m−k) or √((1 − Σ_{i≤k} g₍ᵢ₎²)/(m−k)), valid once it does not
// exceed g₍ₖ₊₁₎. (The published reference code sorts by item name and so
// under-spends the budget; docs/privacy.md §11.4.)
func (h *Histogram) descent(items []uint32, l2 bool) {
	g := h.collectGaps(items)
	total := 0.0
	for _, x := range g {
		if l2 {
			total += x * x
		} else {
			total += x
		}
	}
	if total <= 1 {
		for _, u := range items {
			h.W[u] = max(h.W[u], h.gamma)
		}
		return
	}
	sorted := append(h.sortBuf[:0], g...)
	h.sortBuf = sorted
	slices.Sort(sorted)
	level := 0.0
	spent := 0.0
	m := len(sorted)
	for k, x := range sorted {
		if x == 0 {
			continue // items already at Γ take nothing
		}
		rest := 1 - spent
		var lv float64
		if l2 {
			lv = math.Sqrt(max(rest, 0) / float64(m-k))
		} else {
			lv = max(rest, 0) / float64(m-k)
		}
		if lv <= x {
			level = lv
			break
		}
		if l2 {
			spent += x * x
		} else {
			spent += x
		}
		level = x // only reached if every gap fits, excluded by total > 1
	}
	for i, u := range items {
		h.W[u] += min(g[i], level)
	}
}

// l2Descent is the ℓ2-descent update (Policy Gaussian ℓ2; journal Algorithm
// 7): G = Γ − H|W; if ‖G‖₂ ≤ 1 set W's items to Γ, else add G/‖G‖₂, moving H
// toward (Γ,…,Γ) by ℓ2 distance exactly 1.
func (h *Histogram) l2Descent(items []uint32) {
	g := h.collectGaps(items)
	z := 0.0
	for _, x := range g {
		z += x * x
	}
	z = math.Sqrt(z)
	if z <= 1 {
		for _, u := range items {
			h.W[u] = max(h.W[u], h.gamma)
		}
		return
	}
	for i, u := range items {
		h.W[u] += g[i] / z
	}
}

// GreedyFloor is η, the share of a user's ℓ1 budget that the proven greedy
// rules spread evenly over all of the user's (bounded) items before the
// greedy step: each item u gets H[u] ← min(Γ, H[u] + η/|W|). Its only purpose
// is that every item a user holds gets positive weight, so that an item with
// weight 0 in D and positive weight in D′ can only be one the added user
// alone holds (see the package documentation); its size does not enter the
// threshold, so it is tiny and costs no measurable utility.
const GreedyFloor = 1.0 / (1 << 20)

// floor raises each of the user's items by η/|W|, capped at Γ.
func (h *Histogram) floor(items []uint32) {
	c := GreedyFloor / float64(len(items))
	for _, u := range items {
		h.W[u] = min(h.gamma, h.W[u]+c)
	}
}

// greedy is the greedy update GU (Carvalho et al. 2022, Algorithm 2) with an
// ℓ1 budget: take the user's items below Γ in order of priority (descending;
// ties by the keyed hash Tie, never by anything from other users) and spend
// the budget item by item, raising each to Γ while the budget lasts.
func (h *Histogram) greedy(items []uint32, priority []float64, budget float64) {
	ord := h.order[:0]
	for i, u := range items {
		if h.W[u] < h.gamma {
			ord = append(ord, i)
		}
	}
	h.order = ord
	slices.SortFunc(ord, func(a, b int) int {
		if c := cmp.Compare(priority[b], priority[a]); c != 0 {
			return c
		}
		return cmp.Compare(h.Tie[items[a]], h.Tie[items[b]])
	})
	for _, i := range ord {
		u := items[i]
		cost := h.gamma - h.W[u]
		if cost <= budget {
			h.W[u] = h.gamma
			budget -= cost
			continue
		}
		h.W[u] += budget
		break
	}
}
