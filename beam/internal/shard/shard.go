// Package shard holds the part of dpsql-beam's sharded sequential
// mechanisms that does not need Beam: the shard of a user and the policy a
// shard runs over its users. beamdp's shard DoFns call these functions, and
// this package's tests check the sharding's privacy argument on them
// (sensitivity of the summed histogram, shards as hash ranges) without
// compiling the Beam SDK into a second variant of beamdp.
package shard

import (
	"math/bits"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/dpsql/dpsql/sqlext/setunion"
)

// Row is one input row routed to a shard: a privacy unit and its items.
type Row struct {
	User  string
	Items []string
}

// Of returns the shard of a user: ⌊S·h/2⁶⁴⌋ for h = UserHash(key, user),
// so that shards are contiguous ranges of the hash order.
func Of(key [2]uint64, shards int, user []byte) int {
	hi, _ := bits.Mul64(setunion.UserHash(key, user), uint64(shards))
	return int(hi)
}

// Weights runs the sequential mechanism of opts over the rows of one
// shard: a setunion.Builder groups them by user, orders the users by
// UserHash under key, bounds each to Δ0 with rng and applies the update rule
// (Builder.Weights). It returns every distinct item of the shard with its
// weight. With sorted (seeded runs), the rows are first put in a fixed order:
// the builder's item ids, and so the subset a seeded rng samples, follow
// arrival order, which a runner does not fix.
func Weights(opts setunion.Options, key [2]uint64, rng *rand.Rand, rows func(*Row) bool, sorted bool) ([]string, []float64, setunion.Stats, error) {
	b, err := setunion.NewBuilder(opts)
	if err != nil {
		return nil, nil, setunion.Stats{}, err
	}
	var row Row
	if !sorted {
		for rows(&row) {
			addRow(b, row)
		}
		return b.Weights(rng, key)
	}
	var all []Row
	for rows(&row) {
		all = append(all, row)
	}
	slices.SortFunc(all, func(a, b Row) int {
		if c := strings.Compare(a.User, b.User); c != 0 {
			return c
		}
		return slices.Compare(a.Items, b.Items)
	})
	for _, r := range all {
		addRow(b, r)
	}
	return b.Weights(rng, key)
}

func addRow(b *setunion.Builder, r Row) {
	u, ok := b.UserID([]byte(r.User))
	if !ok {
		return
	}
	for _, it := range r.Items {
		b.AddID(u, []byte(it))
	}
}
