// Package ngrams implements differentially private n-gram extraction (DPNE;
// Kim, Gopi, Kulkarni & Yekhanin 2021, Algorithm 1 and its scalable version
// in Appendix A) exactly as docs/privacy.md §8 specifies: it releases, under
// user-level (ε, δ)-differential privacy, n-grams of 1 to T tokens that occur
// in the text of many users.
//
// Level 1 releases unigrams with a Gaussian DPSU mechanism of
// sqlext/setunion. Level k ≥ 2 works over the public domain
// V_k = { w : w[:−1] ∈ S_{k−1} and w[1:] ∈ S_{k−1} } built from the previous
// level's output S_{k−1}: every user's k-grams are pruned to V_k, then bounded
// to Δ_k uniformly, then added to a histogram H_k by a Gaussian update rule
// (weighted or a policy); a k-gram u of supp(H_k) is released when
// H_k[u] + N(0, σ_k²) > ρ_k (an exact Bernoulli draw of that event), and the
// zero-weight k-grams of V_k are simulated exactly: B_k ~ Binomial(|V_k| −
// |supp H_k|, Φ(−ρ_k/σ_k)) of them, uniform in V_k \ supp(H_k), are added. So
// each level is the Gaussian mechanism over all of V_k, and the levels compose
// to one Gaussian mechanism of scale σ* (see NewPlan).
//
// Differences from the published code, all on the side of the proof: |V_k| is
// computed exactly (not estimated by sampling), the binomial's trial count
// subtracts the observed k-grams supp(H_k) (not the released ones), and the
// spurious k-grams are drawn exactly uniformly (not by rejection against the
// released ones).
//
// Tokens are those of sqlext/tokenize (lowercase, URLs stripped, runs of
// letters and digits with inner apostrophes); n-grams never cross rows, and an
// n-gram's text is its tokens joined by single spaces.
//
// Memory: tokens are interned to dense ids and stored once, row after row
// (4 bytes per token); a released k-gram is a pair of ids of released
// (k−1)-grams; a level keeps one int32 per token position for the ids of the
// (k−1)-grams of S_{k−1} that start there, one for the interned valid k-grams,
// and a map over the distinct valid k-grams of the data.
package ngrams

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/dpsql/dpsql/sqlext/noise"
	"github.com/dpsql/dpsql/sqlext/securerand"
	"github.com/dpsql/dpsql/sqlext/setunion"
	"github.com/dpsql/dpsql/sqlext/tokenize"
)

// Extractor collects user text and runs one extraction. Feed it rows with
// AddRow in any order (a user's rows may be scattered), then call Run once.
// It is not safe for concurrent use.
type Extractor struct {
	opts Options
	plan Plan

	// OnLevel, if set, is called when a level has finished, with its
	// statistics (operator-only; see LevelStats). Run calls it from its own
	// goroutine.
	OnLevel func(LevelStats)

	sc   tokenize.Scanner
	emit func(tok []byte)

	users   setunion.Interner // privacy units with at least one token
	toks    setunion.Interner // distinct tokens
	tokens  []uint32          // the tokens of all stored rows, row after row
	rowEnd  []uint32          // row r is tokens[rowEnd[r−1]:rowEnd[r]] (rowEnd[−1] = 0)
	rowUser []uint32
	rows    int64
	err     error
	ran     bool

	// batchUsers and batchToks map a Batch's ids to the extractor's.
	batchUsers, batchToks []uint32

	// frozen, when set, is the input (NewFromCorpus): the extractor takes
	// no rows and runs over it.
	frozen *Corpus
}

// New validates o and returns an empty extractor.
func New(o Options) (*Extractor, error) {
	plan, err := NewPlan(o)
	if err != nil {
		return nil, err
	}
	e := &Extractor{opts: o, plan: plan}
	e.emit = func(tok []byte) {
		t, _ := e.toks.ID(tok)
		e.tokens = append(e.tokens, t)
	}
	return e, nil
}

// Plan returns the data-independent calibration of the extraction.
func (e *Extractor) Plan() Plan { return e.plan }

// Options returns the options the extractor was created with.
func (e *Extractor) Options() Options { return e.opts }

// maxTokens bounds the stored tokens: positions are uint32 and the ids of
// the valid k-grams, at most one per position, are int32.
const maxTokens = math.MaxInt32

// AddRow records one row: text written by the privacy unit user. The text is
// tokenised at once and n-grams never span two rows. A row with an empty user
// (a NULL privacy unit) is dropped silently: a count of dropped rows would
// itself leak. The slices may be reused by the caller after AddRow returns.
func (e *Extractor) AddRow(user, text []byte) {
	if len(user) == 0 || e.err != nil || e.ran || e.frozen != nil {
		return
	}
	e.rows++
	start := len(e.tokens)
	e.sc.Each(text, e.emit)
	if len(e.tokens) == start {
		return
	}
	if e.tooMany() {
		return
	}
	u, _ := e.users.ID(user)
	e.rowEnd = append(e.rowEnd, uint32(len(e.tokens)))
	e.rowUser = append(e.rowUser, u)
}

// tooMany sets the error and drops the tokens once there are more than
// maxTokens.
func (e *Extractor) tooMany() bool {
	if len(e.tokens) <= maxTokens {
		return false
	}
	e.err = fmt.Errorf("the input has more than %d tokens; n-gram extraction runs on one machine up to that size", maxTokens)
	e.tokens = nil
	return true
}

func (e *Extractor) tokenBytes(t uint32) []byte { return e.toks.Bytes(t) }

// InputStats describe the input. They are exact, hence operator-only: for
// whoever runs a batch job on data they hold, never for an analyst.
type InputStats struct {
	// Rows is the number of rows with a non-empty privacy unit.
	Rows int64 `json:"rows"`
	// Users is the number of privacy units with at least one token.
	Users int `json:"users"`
	// Tokens is the number of tokens of all rows.
	Tokens int64 `json:"tokens"`
	// DistinctTokens is the number of distinct tokens (unigrams).
	DistinctTokens int `json:"distinct_tokens"`
}

// Stats returns the statistics of the rows added so far.
func (e *Extractor) Stats() InputStats {
	if e.frozen != nil {
		return e.frozen.stats
	}
	return InputStats{Rows: e.rows, Users: e.users.Len(), Tokens: int64(len(e.tokens)), DistinctTokens: e.toks.Len()}
}

// NGram is one released n-gram: its tokens joined by single spaces, and n.
type NGram struct {
	Text string
	N    int
}

// LevelStats describe one level of a run. Apart from the calibration (N,
// Rule, Sigma, Rho, Gamma, MaxItems, Valid) they are exact counts of the
// data, hence operator-only: they must never reach an analyst (Spurious, for
// one, would tell which share of the output is noise, and Observed is the
// number of distinct valid k-grams users kept).
type LevelStats struct {
	N    int                `json:"n"`
	Rule setunion.Mechanism `json:"rule"`
	// Sigma is σ_k; Rho the threshold ρ_k; Gamma the policies' cutoff Γ_k.
	Sigma    float64 `json:"sigma"`
	Rho      float64 `json:"rho"`
	Gamma    float64 `json:"gamma,omitempty"`
	MaxItems int     `json:"max_items"`
	// Valid is |V_k| (nil at level 1, whose domain is not public).
	Valid *uint64 `json:"valid"`
	// Candidates is the number of distinct k-grams of the data in V_k (at
	// level 1, distinct unigrams); Pairs the distinct (user, k-gram) pairs
	// among them, before bounding to Δ_k.
	Candidates int   `json:"candidates"`
	Pairs      int64 `json:"pairs"`
	// Observed is |supp(H_k)|, the k-grams with positive weight after
	// bounding; Released is |S_k|; Spurious is B_k, the released k-grams
	// drawn from V_k \ supp(H_k) (always 0 at level 1).
	Observed int     `json:"observed"`
	Released int     `json:"released"`
	Spurious int     `json:"spurious"`
	Seconds  float64 `json:"seconds"`
}

// Result is the outcome of a run.
type Result struct {
	// NGrams are the released n-grams, ordered by N, then by Text (bytewise).
	// This is the only part of a result that may be shown to an analyst.
	NGrams []NGram
	// Levels and Input are operator-only (see LevelStats, InputStats).
	Levels []LevelStats
	Input  InputStats
}

// Run is RunContext with a background context.
func (e *Extractor) Run(rng *rand.Rand) (Result, error) {
	return e.RunContext(context.Background(), rng)
}

// RunContext runs the extraction with randomness from rng (securerand.New()
// in production) and returns the released n-grams. It stops with ctx's error
// if ctx is cancelled. It may be called once.
func (e *Extractor) RunContext(ctx context.Context, rng *rand.Rand) (Result, error) {
	if e.ran {
		return Result{}, errors.New("ngrams: Run may be called only once per extractor")
	}
	e.ran = true
	if e.err != nil {
		return Result{}, e.err
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	res := Result{Input: e.Stats()}
	var c *corpus
	if e.frozen != nil {
		c = e.frozen.c
	} else {
		c = e.corpus()
	}

	start := time.Now()
	s1, st, err := e.level1(ctx, rng, c)
	if err != nil {
		return Result{}, err
	}
	st.Seconds = time.Since(start).Seconds()
	e.finish(&res, st)
	sets := []*gramSet{s1}
	if e.opts.MaxN == 1 {
		res.NGrams = e.texts(sets)
		return res, nil
	}

	s1id := make([]int32, e.toks.Len())
	for i := range s1id {
		s1id[i] = -1
	}
	for id, t := range s1.last {
		s1id[t] = int32(id)
	}
	if e.opts.MaxN == 2 && e.frozen != nil && e.frozen.bigrams != nil {
		// Level 2 is the last: from the corpus's bigrams (bigrams.go).
		start := time.Now()
		s2, st, err := e.level(ctx, rng, c, 2, s1, 1, nil, nil, &bigramLevel{e.frozen.bigrams, s1id})
		if err != nil {
			return Result{}, err
		}
		st.Seconds = time.Since(start).Seconds()
		e.finish(&res, st)
		res.NGrams = e.texts(append(sets, s2))
		return res, nil
	}
	// cur[p] is the id in S_{k−1} of the (k−1)-gram starting at token p, or −1.
	cur := make([]int32, len(c.tokens))
	for p, t := range c.tokens {
		cur[p] = s1id[t]
	}
	s1id = nil
	itemAt := make([]int32, len(c.tokens))

	for k := 2; k <= e.opts.MaxN; k++ {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		start := time.Now()
		nMid := 1
		if k > 2 {
			nMid = sets[k-3].len()
		}
		sk, st, err := e.level(ctx, rng, c, k, sets[k-2], nMid, cur, itemAt, nil)
		if err != nil {
			return Result{}, err
		}
		st.Seconds = time.Since(start).Seconds()
		e.finish(&res, st)
		sets = append(sets, sk)
	}
	res.NGrams = e.texts(sets)
	return res, nil
}

func (e *Extractor) finish(res *Result, st LevelStats) {
	res.Levels = append(res.Levels, st)
	if e.OnLevel != nil {
		e.OnLevel(st)
	}
}

// corpus is the stored input with rows grouped by user.
type corpus struct {
	tokens []uint32
	rowEnd []uint32
	// The rows of user u are byUser[userStart[u]:userStart[u+1]].
	userStart []uint32
	byUser    []uint32
	names     []string
}

func (c *corpus) users() int { return len(c.names) }

func (c *corpus) span(r uint32) (start, end int) {
	if r > 0 {
		start = int(c.rowEnd[r-1])
	}
	return start, int(c.rowEnd[r])
}

func (c *corpus) rowsOf(u uint32) []uint32 { return c.byUser[c.userStart[u]:c.userStart[u+1]] }

// corpus groups the stored rows by user (a counting sort).
func (e *Extractor) corpus() *corpus {
	c := &corpus{tokens: e.tokens, rowEnd: e.rowEnd, names: e.users.Strings()}
	c.userStart = make([]uint32, len(c.names)+1)
	for _, u := range e.rowUser {
		c.userStart[u+1]++
	}
	for u := range c.names {
		c.userStart[u+1] += c.userStart[u]
	}
	fill := slices.Clone(c.userStart[:len(c.names)])
	c.byUser = make([]uint32, len(e.rowUser))
	for r, u := range e.rowUser {
		c.byUser[fill[u]] = uint32(r)
		fill[u]++
	}
	e.rowUser = nil
	return c
}

// level1 releases unigrams with the DPSU mechanism of the plan.
func (e *Extractor) level1(ctx context.Context, rng *rand.Rand, c *corpus) (*gramSet, LevelStats, error) {
	lp := e.plan.Levels[0]
	st := LevelStats{N: 1, Rule: lp.Rule, Sigma: lp.Sigma, Rho: lp.Rho, Gamma: lp.Gamma, MaxItems: lp.MaxItems}
	var b *setunion.Builder
	var err error
	if e.frozen != nil {
		// The same pairs in the same order, grouped once (Corpus).
		b, err = setunion.NewCalibratedPreparedBuilder(e.plan.level1, e.frozen.level1)
		if err != nil {
			return nil, st, err
		}
	} else {
		if b, err = setunion.NewCalibratedBuilder(e.plan.level1); err != nil {
			return nil, st, err
		}
		var toks []uint32
		for u := range c.users() {
			toks = c.userTokens(uint32(u), toks[:0])
			id, _ := b.UserID([]byte(c.names[u]))
			for _, t := range toks {
				b.AddID(id, e.tokenBytes(t))
			}
		}
	}
	res, err := b.ReleaseContext(ctx, rng)
	if err != nil {
		return nil, st, err
	}
	s := &gramSet{k: 1, last: make([]uint32, len(res.Items))}
	for i, item := range res.Items {
		s.last[i], _ = e.toks.Lookup([]byte(item))
	}
	st.Candidates = res.Stats.DistinctItems
	st.Pairs = res.Stats.Pairs
	st.Observed = res.Support
	st.Released = len(res.Items)
	return s, st, nil
}

// bigramLevel is level 2's input from a frozen corpus's bigrams: the
// bigrams and the S_1 id of each token (−1 if not in S_1).
type bigramLevel struct {
	bi   *bigrams
	s1id []int32
}

// level runs level k ≥ 2 from prev = S_{k−1} (nMid = |S_{k−2}|, 1 for k = 2).
// On entry cur holds the S_{k−1} ids of the (k−1)-grams at each position; on
// return it holds the S_k ids of the k-grams. itemAt is scratch of the same
// length. With fast (k = 2 over a frozen corpus, the last level), level reads
// the corpus's bigrams instead of the positions, with the same result
// (bigrams.go), and cur and itemAt are nil and left alone.
func (e *Extractor) level(ctx context.Context, rng *rand.Rand, c *corpus, k int, prev *gramSet, nMid int, cur, itemAt []int32, fast *bigramLevel) (*gramSet, LevelStats, error) {
	lp := e.plan.Levels[k-1]
	st := LevelStats{N: k, Rule: lp.Rule, Sigma: lp.Sigma, MaxItems: lp.MaxItems}
	vs, err := newValidSet(prev, nMid)
	if err != nil {
		return nil, st, err
	}
	st.Valid = &vs.size
	st.Rho = levelRho(lp.Sigma, e.opts.Eta, prev.len(), vs.size)
	if lp.Rule.HasCutoff() {
		st.Gamma = st.Rho + lp.Alpha*lp.Sigma
	}
	sk := &gramSet{k: k}
	if vs.size == 0 {
		for i := range cur {
			cur[i] = -1
		}
		return sk, st, nil
	}

	// Prune to V_k, then bound and build H_k user by user.
	bound := func(_ uint32, items []uint32) []uint32 { return securerand.SampleInPlace(rng, items, lp.MaxItems) }
	var keys []uint64
	var intern map[uint64]int32
	var h *setunion.Histogram
	var pairs int64
	if fast != nil {
		var valid candidateSet
		keys, valid = fast.bi.candidates(fast.s1id)
		st.Candidates = len(keys)
		order := c.order(rng, lp.Rule.Sequential())
		h, pairs, err = fast.bi.histogram(ctx, lp.Rule, st.Gamma, len(keys), order, valid, bound)
	} else {
		keys, intern = c.prune(k, cur, itemAt)
		st.Candidates = len(keys)
		order := c.order(rng, lp.Rule.Sequential())
		h, pairs, err = c.histogram(ctx, k, lp.Rule, st.Gamma, len(keys), order, itemAt, bound)
	}
	if err != nil {
		return nil, st, err
	}
	st.Pairs = pairs

	// Release supp(H_k): u with probability P(H_k[u] + N(0, σ_k²) > ρ_k).
	// In the far tail, where p(w) < 2^−TailBits, the first word decides
	// alone but in 2^−TailBits of the draws: Bernoulli's words and result
	// without an erfc (securerand.BernoulliBelowWord), as dp_sips' draws.
	p := func(w float64) float64 { return noise.Phi((w - st.Rho) / lp.Sigma) }
	lo, hi := setunion.TailRange(p, st.Rho, lp.Sigma)
	supp := make([]uint64, 0, len(h.W)) // at most one per candidate: no growth
	for i, w := range h.W {
		if !(w > 0) {
			continue
		}
		a, b := unpack(keys[i])
		idx, _ := vs.index(a, b)
		supp = append(supp, idx)
		var keep bool
		if w > lo && w <= hi {
			x := rng.Uint64()
			keep = x>>(64-setunion.TailBits) == 0 && securerand.BernoulliBelowWord(rng, setunion.TailBits, x, p(w))
		} else {
			keep = securerand.Bernoulli(rng, p(w))
		}
		if keep {
			sk.pre = append(sk.pre, a)
			sk.suf = append(sk.suf, b)
		}
	}
	st.Observed = len(supp)
	fromSupp := len(sk.pre)

	// Spurious k-grams: the zero-weight part of V_k released exactly as the
	// Gaussian mechanism over V_k would.
	sortBelow(supp, vs.size)
	for _, idx := range sampleSpurious(rng, vs.size, supp, noise.Phi(-st.Rho/lp.Sigma)) {
		a, b := vs.at(idx)
		sk.pre = append(sk.pre, a)
		sk.suf = append(sk.suf, b)
	}
	st.Spurious = len(sk.pre) - fromSupp
	st.Released = len(sk.pre)
	sk.last = make([]uint32, len(sk.pre))
	for i, b := range sk.suf {
		sk.last[i] = prev.last[b]
	}
	if fast != nil {
		return sk, st, nil // the last level: no cur to update
	}

	// cur ← S_k ids of the k-grams at each position.
	sid := make([]int32, len(keys))
	for i := range sid {
		sid[i] = -1
	}
	for id := range sk.pre {
		if item, ok := intern[pack(sk.pre[id], sk.suf[id])]; ok {
			sid[item] = int32(id)
		}
	}
	for r := range c.rowEnd {
		s, end := c.span(uint32(r))
		for p := s; p < end; p++ {
			v := int32(-1)
			if p+k <= end && itemAt[p] >= 0 {
				v = sid[itemAt[p]]
			}
			cur[p] = v
		}
	}
	return sk, st, nil
}

func pack(a, b int32) uint64         { return uint64(uint32(a))<<32 | uint64(uint32(b)) }
func unpack(key uint64) (a, b int32) { return int32(uint32(key >> 32)), int32(uint32(key)) }

// prune interns the k-grams of every row that lie in V_k: the k-gram at
// position p is valid iff its prefix and suffix (k−1)-grams are in S_{k−1},
// that is cur[p] ≥ 0 and cur[p+1] ≥ 0 (both within the row). It sets
// itemAt[p] to the valid k-gram's dense id or −1, and returns the ids' keys
// (prefix, suffix) and the map back.
func (c *corpus) prune(k int, cur, itemAt []int32) ([]uint64, map[uint64]int32) {
	intern := make(map[uint64]int32)
	var keys []uint64
	for r := range c.rowEnd {
		s, end := c.span(uint32(r))
		for p := s; p+k <= end; p++ {
			a, b := cur[p], cur[p+1]
			if a < 0 || b < 0 {
				itemAt[p] = -1
				continue
			}
			key := pack(a, b)
			id, ok := intern[key]
			if !ok {
				id = int32(len(keys))
				intern[key] = id
				keys = append(keys, key)
			}
			itemAt[p] = id
		}
	}
	return keys, intern
}

// order returns the users in the order the histogram processes them: for a
// sequential rule, by SipHash-2-4 of the privacy unit under a fresh key from
// rng (ties by the name), so that the order does not depend on any other
// user's data; for a parallel rule, which ignores the order, by id. The key
// is drawn either way.
func (c *corpus) order(rng *rand.Rand, sequential bool) []uint32 {
	key := securerand.Key(rng)
	if sequential {
		return setunion.OrderUsers(key, c.names)
	}
	order := make([]uint32, c.users())
	for i := range order {
		order[i] = uint32(i)
	}
	return order
}

// histogram builds H_k over the n interned valid k-grams: for each user in
// order, the distinct valid k-grams of all their rows (itemAt, already pruned
// to V_k) are bounded by bound (Δ_k sampled uniformly without replacement in
// a release) and added with rule's update. It returns H_k and the number of
// distinct (user, valid k-gram) pairs before bounding.
func (c *corpus) histogram(ctx context.Context, k int, rule setunion.Mechanism, gamma float64, n int, order []uint32, itemAt []int32, bound func(u uint32, items []uint32) []uint32) (*setunion.Histogram, int64, error) {
	h := setunion.NewHistogram(rule, gamma, n)
	var items []uint32
	var pairs int64
	for i, u := range order {
		if i&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, 0, err
			}
		}
		items = items[:0]
		for _, r := range c.rowsOf(u) {
			s, end := c.span(r)
			for p := s; p+k <= end; p++ {
				if id := itemAt[p]; id >= 0 {
					items = append(items, uint32(id))
				}
			}
		}
		if len(items) == 0 {
			continue
		}
		slices.Sort(items)
		items = slices.Compact(items)
		pairs += int64(len(items))
		h.Update(bound(u, items), nil)
	}
	return h, pairs, nil
}

// texts renders the released n-grams of every level, ordered by n, then text.
func (e *Extractor) texts(sets []*gramSet) []NGram {
	var out []NGram
	var prev []string
	for _, s := range sets {
		cur := make([]string, s.len())
		for i, t := range s.last {
			if s.k == 1 {
				cur[i] = string(e.tokenBytes(t))
			} else {
				cur[i] = prev[s.pre[i]] + " " + string(e.tokenBytes(t))
			}
		}
		sorted := slices.Clone(cur)
		slices.Sort(sorted)
		for _, t := range sorted {
			out = append(out, NGram{Text: t, N: s.k})
		}
		prev = cur
	}
	return out
}
