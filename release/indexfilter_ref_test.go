package release

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/release/sealed"
	"github.com/dpsql/dpsql/sqlext/securerand"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// TestFilteredPreparedAsReference: over random tables (small ones and
// ones of 70,000 rows or more), every indexable column, both views and
// random sets of kept users (none, all, sparse, dense), filteredPrepared
// gives the grouping of the reference (filtered, then setunion.Prepare),
// the same statistics, and the same seeded releases, missing mass and
// support included, for several mechanisms.
func TestFilteredPreparedAsReference(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 1))
	ctx := sql.NewContext(context.Background())
	mechs := []setunion.Options{setunion.Defaults()}
	for _, m := range []setunion.Mechanism{setunion.WeightedGaussian, setunion.PolicyGaussianL2, setunion.GreedyFrequency} {
		o := setunion.Defaults()
		o.Mechanism, o.MaxItems = m, 3
		mechs = append(mechs, o)
	}
	for trial := range trials(20, 6) {
		tbl := randomTable(t, r, trial%2 == 1)
		if trial%10 == 0 {
			tbl = bigRandomTable(t, r, trial%20 == 0)
		}
		for _, col := range []string{"s", "n", "uid"} {
			x, err := buildIndex(ctx, tbl, "db", "t", "uid", column(tbl, col), sealed.DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			for _, density := range []float64{0, 1, 0.05, 0.5, 0.95} {
				keep := make([]bool, len(x.users))
				for u := range keep {
					keep[u] = r.Float64() < density
				}
				for _, view := range []int{DistinctView, ValueView} {
					want, err := setunion.Prepare(x.filtered(view, keep))
					if err != nil {
						t.Fatal(err)
					}
					where := fmt.Sprintf("trial %d column %s density %v view %d", trial, col, density, view)
					for mi, o := range mechs {
						// A fresh one per release: the lists with their
						// counts are laid out only for the mechanisms that
						// read them (the greedy ones).
						got, err := x.filteredPrepared(view, keep)
						if err != nil {
							t.Fatal(err)
						}
						seed := r.Uint64()
						a, b := preparedRelease(t, o, got, seed), preparedRelease(t, o, want, seed)
						if fmt.Sprintf("%+v", a) != fmt.Sprintf("%+v", b) {
							t.Fatalf("%s mechanism %d: release\n%+v\nwant\n%+v", where, mi, a, b)
						}
					}
					got, err := x.filteredPrepared(view, keep)
					if err != nil {
						t.Fatal(err)
					}
					if fmt.Sprint(got.Grouped()) != fmt.Sprint(want.Grouped()) || got.Stats() != want.Stats() {
						t.Fatalf("%s:\ngot  %v %+v\nwant %v %+v", where, got.Grouped(), got.Stats(), want.Grouped(), want.Stats())
					}
				}
			}
		}
	}
}

// preparedRelease releases p with o and the seeded source of seed.
func preparedRelease(t *testing.T, o setunion.Options, p *setunion.Prepared, seed uint64) setunion.Result {
	t.Helper()
	b, err := setunion.NewPreparedBuilder(o, p)
	if err != nil {
		t.Fatal(err)
	}
	return b.Release(securerand.NewSeeded(seed))
}

// filtered is the reference of filteredPrepared (the release path's
// until November 2026, kept for the tests): it makes view of the pairs of the users keep keeps: users in their
// order (of first row, or of first non-NULL value for ValueView), items
// renumbered by their first row among the kept users' rows (the order in
// which a scan with the filter meets them), lists sorted again.
func (x *Index) filtered(view int, keep []bool) setunion.Grouped {
	valueView := view == ValueView
	order := x.nnOrder
	if !valueView || x.null < 0 {
		order = nil
	}
	users := len(x.users)
	if order != nil {
		users = len(order)
	}
	user := func(k int) uint32 {
		if order != nil {
			return order[k]
		}
		return uint32(k)
	}
	skip := func(item uint64) bool { return valueView && x.null >= 0 && item == uint64(x.null) }
	minFirst := make([]uint32, len(x.items))
	for i := range minFirst {
		minFirst[i] = math.MaxUint32
	}
	for k := range users {
		u := user(k)
		if !keep[u] {
			continue
		}
		for j := x.offs[u]; j < x.offs[u+1]; j++ {
			if it := x.ents[j] >> 32; !skip(it) {
				minFirst[it] = min(minFirst[it], x.first[j])
			}
		}
	}
	var ids []uint32
	for i, f := range minFirst {
		if f != math.MaxUint32 {
			ids = append(ids, uint32(i))
		}
	}
	slices.SortFunc(ids, func(a, b uint32) int { return cmp.Compare(minFirst[a], minFirst[b]) })
	newID := make([]uint32, len(x.items))
	g := setunion.Grouped{Items: make([]string, len(ids))}
	for n, i := range ids {
		newID[i] = uint32(n)
		g.Items[n] = x.items[i]
		if valueView {
			g.Items[n], _ = itemText(x.items[i])
		}
	}
	for k := range users {
		u := user(k)
		if !keep[u] {
			continue
		}
		var l []uint64
		for j := x.offs[u]; j < x.offs[u+1]; j++ {
			e := x.ents[j]
			if skip(e >> 32) {
				continue
			}
			l = append(l, uint64(newID[e>>32])<<32|e&0xffffffff)
			g.Occurrences += int64(e & 0xffffffff)
		}
		if len(l) == 0 {
			continue
		}
		slices.Sort(l)
		g.Users = append(g.Users, x.users[u])
		g.Lists = append(g.Lists, l)
	}
	return g
}
