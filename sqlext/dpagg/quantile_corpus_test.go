package dpagg

import (
	"errors"
	"io"
	"math"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/dpsql/dpsql/internal/testenv"
	"github.com/dpsql/dpsql/sqlext/securerand"
	"github.com/dpsql/dpsql/sqlext/tabfile"
	"github.com/dpsql/dpsql/sqlext/tokenize"
)

// commitRow is one commit message of git_python_ecosystem as a table row:
// the author, the message's first word (the key) and its length in bytes.
type commitRow struct {
	user, key string
	length    float64
}

func loadCommits(tb testing.TB) []commitRow {
	tb.Helper()
	r, err := tabfile.Open(testenv.DataFile(tb, "git_python_ecosystem.tsv.gz"), tabfile.TSV)
	if err != nil {
		tb.Fatal(err)
	}
	defer r.Close()
	var out []commitRow
	var sc tokenize.Scanner
	for {
		f, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			tb.Fatal(err)
		}
		var first string
		sc.Each(f[1], func(tok []byte) {
			if first == "" {
				first = string(tok)
			}
		})
		out = append(out, commitRow{user: string(f[0]), key: first, length: float64(len(f[1]))})
	}
}

// releaseCommits runs one release of MEDIAN(length) (and the 0.9
// quantile) per first word, or globally, over the commits.
func releaseCommits(tb testing.TB, o Options, rows []commitRow, seed uint64) (*Result, *Pipeline, time.Duration) {
	tb.Helper()
	p, err := New(o)
	if err != nil {
		tb.Fatal(err)
	}
	rng := securerand.NewSeeded(seed)
	vals := func(r commitRow) []Value {
		v := make([]Value, len(o.Aggregates))
		for i := range v {
			v[i] = Float(r.length)
		}
		return v
	}
	if p.NeedsValuePass() {
		for _, r := range rows {
			if err := p.AddValues([]byte(r.user), vals(r)); err != nil {
				tb.Fatal(err)
			}
		}
		if err := p.ChooseValueBounds(rng); err != nil {
			tb.Fatal(err)
		}
	}
	for _, r := range rows {
		key := []byte(r.key)
		if o.Global {
			key = nil
		}
		if err := p.Add([]byte(r.user), key, vals(r)); err != nil {
			tb.Fatal(err)
		}
	}
	start := time.Now()
	res, err := p.Release(rng)
	if err != nil {
		tb.Fatal(err)
	}
	return res, p, time.Since(start)
}

// boundedQuantile is the exact quantile of the values key kept after
// bounding (the mechanism's input), in value units.
func boundedQuantile(p *Pipeline, ai int, key string, level float64) float64 {
	k, ok := p.keyIdx[key]
	if !ok || p.quant == nil || p.quant[ai] == nil {
		return math.NaN()
	}
	a := p.plan.Aggregates[ai]
	var xs []float64
	for _, j := range p.quant[ai].perKey[k] {
		xs = append(xs, quantileValue(int(j), a.Lower, a.Upper))
	}
	if len(xs) == 0 {
		return math.NaN()
	}
	return quantileOf(xs, level)
}

func quantileOf(xs []float64, p float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	pos := p * float64(len(s)-1)
	i := int(pos)
	if i >= len(s)-1 {
		return s[len(s)-1]
	}
	return s[i] + (pos-float64(i))*(s[i+1]-s[i])
}

// TestCorpusQuantileAccuracy measures MEDIAN and the 0.9 quantile of the
// commit messages' length on git_python_ecosystem (24,932 users, 363,675
// commits), per first word of the message and globally, at the defaults
// (ε = 1, δ = 1e-6, every bound chosen privately) and with hand-set
// bounds, against the exact (unbounded) quantiles: median and p90 over the
// 100 keys with the most users of the relative error |released − truth| /
// truth of the released ones.
func TestCorpusQuantileAccuracy(t *testing.T) {
	if testing.Short() {
		t.Skip("corpus accuracy test skipped under -short")
	}
	rows := loadCommits(t)
	byKey := map[string][]float64{}
	users := map[string]map[string]bool{}
	var all []float64
	for _, r := range rows {
		byKey[r.key] = append(byKey[r.key], r.length)
		all = append(all, r.length)
		if users[r.key] == nil {
			users[r.key] = map[string]bool{}
		}
		users[r.key][r.user] = true
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if len(users[keys[i]]) != len(users[keys[j]]) {
			return len(users[keys[i]]) > len(users[keys[j]])
		}
		return keys[i] < keys[j]
	})
	top := keys[:100]
	t.Logf("%d commits, %d first words; the 100th has %d users; global median length %.0f, p90 %.0f",
		len(rows), len(keys), len(users[top[99]]), quantileOf(all, 0.5), quantileOf(all, 0.9))
	levels := []float64{0.5, 0.9}
	for _, c := range []struct {
		name string
		seed uint64
		set  func(*Options)
	}{
		{"defaults (bounds chosen privately)", 61, func(o *Options) {}},
		{"defaults, seed 2", 71, func(o *Options) {}},
		{"defaults, seed 3", 81, func(o *Options) {}},
		{"hand-set Δ0=1, m=1, [0, 256]", 61, func(o *Options) { o.MaxGroupsContributed, o.MaxRowsPerGroup = 1, 1; fixBounds(o, 0, 256) }},
		{"hand-set Δ0=3, m=4, [0, 512]", 61, func(o *Options) { o.MaxGroupsContributed, o.MaxRowsPerGroup = 3, 4; fixBounds(o, 0, 512) }},
	} {
		o := Defaults()
		o.MaxGroupsContributed, o.MaxRowsPerGroup = 0, 0
		for _, l := range levels {
			o.Aggregates = append(o.Aggregates, Aggregate{Kind: Quantile, Quantile: l, AutoBounds: true})
		}
		c.set(&o)
		seed := c.seed
		res, pipe, took := releaseCommits(t, o, rows, seed)
		released := map[string][]float64{}
		for _, r := range res.Rows {
			released[r.Key] = r.Values
		}
		for li, l := range levels {
			var rel, rel10, noise []float64
			for i, k := range top {
				v, ok := released[k]
				if !ok {
					continue
				}
				truth := quantileOf(byKey[k], l)
				rel = append(rel, math.Abs(v[li]-truth)/truth)
				noise = append(noise, math.Abs(v[li]-boundedQuantile(pipe, li, k, l))/truth)
				if i < 10 {
					rel10 = append(rel10, math.Abs(v[li]-truth)/truth)
				}
			}
			t.Logf("  top 10 keys (≥ %d users): %d released, relative error median %.3f; against the bounded data's exact quantile (the mechanism's error alone), all keys: median %.3f", len(users[top[9]]), len(rel10), quantileOf(rel10, 0.5), quantileOf(noise, 0.5))
			t.Logf("%s, p=%.1f: %d of the top 100 keys released; relative error median %.3f, p90 %.3f (release %v; chosen %v)",
				c.name, l, len(rel), quantileOf(rel, 0.5), quantileOf(rel, 0.9), took.Round(time.Millisecond), res.Chosen)
			if c.name[0] == 'd' && l == 0.5 && (len(rel) < 80 || quantileOf(rel, 0.5) > 0.6) {
				t.Errorf("defaults: median relative error %.3f over %d keys", quantileOf(rel, 0.5), len(rel))
			}
		}
		// Global.
		o.Global = true
		res, _, took = releaseCommits(t, o, rows, seed+1)
		for li, l := range levels {
			truth := quantileOf(all, l)
			relErr := math.Abs(res.Rows[0].Values[li]-truth) / truth
			t.Logf("%s, global p=%.1f: %.1f against %.1f (relative error %.3f; release %v; chosen %v)", c.name, l,
				res.Rows[0].Values[li], truth, relErr, took.Round(time.Millisecond), res.Chosen)
			if c.name[0] == 'd' && relErr > 0.3 {
				t.Errorf("defaults: global p=%v relative error %.3f", l, relErr)
			}
		}
	}
}

func fixBounds(o *Options, lo, hi float64) {
	for i := range o.Aggregates {
		o.Aggregates[i].AutoBounds = false
		o.Aggregates[i].Lower, o.Aggregates[i].Upper = lo, hi
	}
}
