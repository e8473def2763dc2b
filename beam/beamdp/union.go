package beamdp

import (
	"fmt"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"

	"github.com/dpsql/dpsql/sqlext/securerand"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// MaxShards bounds Config.Shards.
const MaxShards = 1 << 16

// Config configures one release.
type Config struct {
	// Options are the core's options; Options.Public is ignored (greedy_public
	// takes its table from Public). MaxItems = 0 (the core's private choice
	// of Δ0, which needs all users at once) means setunion.FixedMaxItems.
	Options setunion.Options
	// Shards is the number S ≥ 1 of shards of a sequential mechanism (see the
	// package documentation). 0 means 1. More than 1 is an error for the
	// parallel mechanisms, which need no sharding to scale.
	Shards int
	// Public is greedy_public's public frequency table, a PCollection of
	// KV<string, float64> (item, frequency; repeated items add up), which
	// every shard receives whole through a join (public.go). It must not be
	// derived from the protected data. Leave it zero for the other mechanisms.
	Public beam.PCollection
	// Seed, when non-nil, derives every random choice from *Seed: the run is
	// reproducible and therefore NOT private. For tests only.
	Seed *uint64
	// CountDistinctItems makes the parallel mechanisms count the distinct
	// items of the input (Stats.DistinctItems) by also sending the items
	// that bounding drops to the summing stage, with weight 0; on git
	// corpora with Δ0 = 100 that is about 30% more work on prism. The
	// sequential mechanisms always count them, at no cost.
	CountDistinctItems bool
	// Blocks is the number of user shards (and item shards) into which
	// the parallel mechanisms group users and partial weights: each moves
	// between stages as one dictionary-encoded element per bundle and shard
	// (blocks.go). 0 means DefaultBlocks. It changes only how the work is
	// split, never the release.
	Blocks int
}

// validate checks cfg and returns the calibration the release will use.
func (cfg *Config) validate() (setunion.Calibration, error) {
	if cfg.Shards == 0 {
		cfg.Shards = 1
	}
	// Choosing Δ0 privately (max_items = 0, the core's default) needs all
	// users at once: a pipeline uses setunion.FixedMaxItems instead, as the
	// core does for the mechanisms that cannot choose it.
	if cfg.Options.MaxItems == setunion.AutoMaxItems && cfg.Options.Mechanism.Bounded() {
		cfg.Options.MaxItems = setunion.FixedMaxItems
	}
	o := cfg.Options
	o.Public = nil
	cal, err := calibrate(o)
	if err != nil {
		return cal, err
	}
	if cfg.Shards < 1 || cfg.Shards > MaxShards {
		return cal, fmt.Errorf("shards must be an integer from 1 to %d, got %d", MaxShards, cfg.Shards)
	}
	if cfg.Shards > 1 && !o.Mechanism.Sequential() {
		return cal, fmt.Errorf("shards apply to the sequential mechanisms only; %s is parallel and scales without them (leave shards at 1)", o.Mechanism)
	}
	if cfg.Blocks < 0 || cfg.Blocks > MaxShards {
		return cal, fmt.Errorf("blocks must be an integer from 0 (the default, %d) to %d, got %d", DefaultBlocks, MaxShards, cfg.Blocks)
	}
	if o.Mechanism == setunion.GreedyPublic {
		if !cfg.Public.IsValid() {
			return cal, fmt.Errorf("mechanism greedy_public needs a public frequency table (a PCollection of KV<string, float64>) that is not derived from the protected data")
		}
		if t := cfg.Public.Type(); !typex.IsKV(t) || t.Components()[0].Type() != reflect.TypeOf("") || t.Components()[1].Type() != reflect.TypeOf(0.0) {
			return cal, fmt.Errorf("the public frequency table must be a PCollection of KV<string, float64>, got %v", t)
		}
	} else if cfg.Public.IsValid() {
		return cal, fmt.Errorf("a public frequency table is only used by mechanism greedy_public, not %s", o.Mechanism)
	}
	return cal, nil
}

// calibrate is setunion.Calibrate, with an empty public table standing in for
// greedy_public's (calibration does not read it).
func calibrate(o setunion.Options) (setunion.Calibration, error) {
	if o.Mechanism == setunion.GreedyPublic && o.Public == nil {
		o.Public = map[string]float64{}
	}
	return setunion.Calibrate(o)
}

// Release is what Union adds to a pipeline.
type Release struct {
	// Items are the released items, a PCollection<string> in no particular
	// order (see WriteSorted).
	Items beam.PCollection
	// Stats are the release's statistics as partial counts, a
	// PCollection<KV<string, int64>> for WriteStats.
	Stats beam.PCollection
	// Calibration is the calibration every stage uses.
	Calibration setunion.Calibration
}

// Union releases items of input under user-level (ε, δ)-differential privacy.
// input is a PCollection of KV<string, string> (privacy unit, item) pairs or
// of KV<string, []string> rows (privacy unit, items).
//
// The pipeline's shape depends on the mechanism (see the package
// documentation): one GroupByKey on users for the parallel mechanisms, one
// more combine and release stage per dp_sips round, one GroupByKey on S shards
// for the sequential ones.
func Union(s beam.Scope, input beam.PCollection, cfg Config) (Release, error) {
	cal, err := cfg.validate()
	if err != nil {
		return Release{Calibration: cal}, err
	}
	s = s.Scope("beamdp.Union")
	rows, err := asRows(s, input)
	if err != nil {
		return Release{Calibration: cal}, err
	}
	opts := cfg.Options
	opts.Public = nil
	rc := randConfig{Seeded: cfg.Seed != nil}
	if rc.Seeded {
		rc.Seed = *cfg.Seed
	}
	keep := opts.Mechanism == setunion.GreedyFrequency // the user's own counts matter
	if opts.Mechanism.Sequential() {
		keyRng := securerand.New()
		if rc.Seeded {
			keyRng = securerand.NewSeeded(rc.Seed)
		}
		key := securerand.Key(keyRng)
		keyed, occurrences := beam.ParDo2(s, &shardKeyFn{Key: key, Shards: cfg.Shards, KeepDuplicates: keep}, rows)
		var weights, users beam.PCollection
		if opts.Mechanism == setunion.GreedyPublic {
			// The public table joins the shards (public.go), not as a
			// side input.
			joined := joinPublic(s, keyed, cfg.Public, cfg.Shards)
			weights, users = beam.ParDo2(s, &shardPublicFn{shardFn{Opts: opts, Key: key, Rand: rc}}, joined)
		} else {
			weights, users = beam.ParDo2(s, &shardFn{Opts: opts, Key: key, Rand: rc}, beam.GroupByKey(s, keyed))
		}
		summed := stats.SumPerKey(s, weights)
		items, released := beam.ParDo2(s, &releaseFn{Opts: opts, Round: -1, Rand: rc, CountItems: true}, summed)
		return Release{Items: items, Stats: beam.Flatten(s, occurrences, users, released), Calibration: cal}, nil
	}

	blocks := cfg.Blocks
	if blocks <= 0 {
		blocks = DefaultBlocks
	}
	keyed, occurrences := beam.ParDo2(s, &userBlocksFn{Blocks: blocks}, rows)
	users, userStats := beam.ParDo2(s, &mergeUsersFn{}, beam.GroupByKey(s, keyed))
	if opts.Mechanism != setunion.DPSIPS {
		weights := beam.ParDo(s, &roundFn{Opts: opts, Round: -1, Rand: rc, Dropped: cfg.CountDistinctItems, Blocks: blocks}, users)
		items, released := beam.ParDo2(s, &sumReleaseFn{releaseFn{Opts: opts, Round: -1, Rand: rc, CountItems: true}}, beam.GroupByKey(s, weights))
		return Release{Items: items, Stats: beam.Flatten(s, occurrences, userStats, released), Calibration: cal}, nil
	}
	var released, done []beam.PCollection
	parts := []beam.PCollection{occurrences, userStats}
	for r := range cal.Rounds {
		rs := s.Scope(fmt.Sprintf("round%d", r))
		var weights beam.PCollection
		fn := roundFn{Opts: opts, Round: r, Rand: rc, Dropped: r == 0 && cfg.CountDistinctItems, Blocks: blocks}
		if r == 0 {
			weights = beam.ParDo(rs, &fn, users)
		} else {
			// The earlier rounds' releases join the user blocks by user
			// shard (sips.go), not as a side input.
			joined := beam.CoGroupByKey(rs, users, beam.Flatten(rs, done...))
			weights = beam.ParDo(rs, &roundExceptFn{roundFn: fn}, joined)
		}
		grouped := beam.GroupByKey(rs, weights)
		rfn := sumReleaseFn{releaseFn{Opts: opts, Round: r, Rand: rc, CountItems: r == 0}}
		var items, counts beam.PCollection
		if r < len(cal.Rounds)-1 {
			var out beam.PCollection
			items, out, counts = beam.ParDo3(rs, &sipsReleaseFn{sumReleaseFn: rfn, Blocks: blocks}, grouped)
			done = append(done, out)
		} else {
			items, counts = beam.ParDo2(rs, &rfn, grouped)
		}
		released = append(released, items)
		parts = append(parts, counts)
	}
	return Release{Items: beam.Flatten(s, released...), Stats: beam.Flatten(s, parts...), Calibration: cal}, nil
}

// asRows returns input as a PCollection of KV<string, []string> rows,
// wrapping each pair of a KV<string, string> input in a one-item row (a fused
// step: no data moves between workers for it).
func asRows(s beam.Scope, in beam.PCollection) (beam.PCollection, error) {
	if !in.IsValid() {
		return in, fmt.Errorf("input PCollection is not valid")
	}
	t := in.Type()
	if typex.IsKV(t) && t.Components()[0].Type() == reflect.TypeOf("") {
		switch t.Components()[1].Type() {
		case reflect.TypeOf(""):
			return beam.ParDo(s, pairToRow, in), nil
		case reflect.TypeOf([]string(nil)):
			return in, nil
		}
	}
	return in, fmt.Errorf("input must be a PCollection of KV<string, string> (privacy unit, item) or KV<string, []string> (privacy unit, items), got %v", t)
}
