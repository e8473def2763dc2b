package dpagg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/dpsql/dpsql/sqlext/securerand"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// groupedRows makes random rows whose values are functions of the key
// (NULL, NaN, ±Inf and large values included), and the same rows grouped
// by user and key in order of first row, as a release index keeps them.
func groupedRows(r *rand.Rand, nAggs int) (rows [][3]any, g Grouped) {
	users, keys := 300+r.IntN(700), 5+r.IntN(60)
	val := func(k, a int) Value {
		switch (k + a) % 11 {
		case 0:
			return Null
		case 1:
			return Float(math.NaN())
		case 2:
			return Float(math.Inf(-1 + 2*(k%2)))
		case 3:
			return Float(1e300)
		}
		return Float(float64((k*7+a*3)%40) - 9.5)
	}
	uid, kid := map[string]uint32{}, map[string]uint32{}
	pairs := map[[2]uint32]uint32{}
	for range 3000 + r.IntN(5000) {
		u := fmt.Sprintf("u%d", r.IntN(users))
		k := fmt.Sprintf("k%d", int(float64(keys)*r.Float64()*r.Float64()))
		rows = append(rows, [3]any{u, k, nil})
		if _, ok := uid[u]; !ok {
			uid[u] = uint32(len(g.Users))
			g.Users = append(g.Users, u)
			g.Lists = append(g.Lists, nil)
		}
		if _, ok := kid[k]; !ok {
			kid[k] = uint32(len(g.Keys))
			g.Keys = append(g.Keys, k)
		}
		pairs[[2]uint32{uid[u], kid[k]}]++
	}
	for p, n := range pairs {
		g.Lists[p[0]] = append(g.Lists[p[0]], setunion.GroupedEntry(p[1], n))
	}
	for _, l := range g.Lists {
		slices.Sort(l)
	}
	values := func(k uint32) []Value {
		out := make([]Value, nAggs)
		for a := range out {
			out[a] = val(int(k), a)
		}
		return out
	}
	g.Values = values
	for i := range rows {
		rows[i][2] = values(kid[rows[i][1].(string)])
	}
	return rows, g
}

// TestAddGroupedSameRelease: a pipeline given grouped rows (AddGrouped,
// and AddGroupedValues when it chooses bounds) releases exactly what the
// pipeline given the rows one by one (Add, AddValues) releases, for the
// same seed: every aggregate kind, bounds given and chosen privately.
func TestAddGroupedSameRelease(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 8))
	aggs := []Aggregate{{Kind: CountRows}, {Kind: CountUnits}, {Kind: CountValues}, {Kind: Sum, Lower: -5, Upper: 20},
		{Kind: Avg, Lower: 0, Upper: 30}, {Kind: VarPop, Lower: -10, Upper: 10}, {Kind: StdDevSamp, Lower: 0, Upper: 40}}
	auto := []Aggregate{{Kind: Sum, AutoBounds: true}, {Kind: Avg, AutoBounds: true}, {Kind: CountRows}}
	for trial := range 40 {
		o := Defaults()
		o.Epsilon = 10
		o.Aggregates = aggs
		o.MaxGroupsContributed, o.MaxRowsPerGroup = 1+r.IntN(5), 1+r.IntN(4)
		if trial%3 == 1 {
			o.Aggregates = aggs[:2] // counts only: one word per entry
		}
		if trial%3 == 2 {
			o.Aggregates = auto
			o.MaxGroupsContributed, o.MaxRowsPerGroup = 0, 0
		}
		rows, g := groupedRows(r, len(o.Aggregates))
		seed := r.Uint64()
		var res [2]*Result
		for i := range res {
			p, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			rng := securerand.NewSeeded(seed)
			if p.NeedsValuePass() {
				if i == 0 {
					for _, rw := range rows {
						_ = p.AddValues([]byte(rw[0].(string)), rw[2].([]Value))
					}
				} else if err := p.AddGroupedValues(g); err != nil {
					t.Fatal(err)
				}
				if err := p.ChooseValueBounds(rng); err != nil {
					t.Fatal(err)
				}
			}
			if i == 0 {
				for _, rw := range rows {
					if err := p.Add([]byte(rw[0].(string)), []byte(rw[1].(string)), rw[2].([]Value)); err != nil {
						t.Fatal(err)
					}
				}
			} else if err := p.AddGrouped(g); err != nil {
				t.Fatal(err)
			}
			if res[i], err = p.Release(rng); err != nil {
				t.Fatal(err)
			}
		}
		if len(res[0].Rows) == 0 && trial < 3 {
			t.Fatalf("trial %d: nothing released: the comparison is vacuous", trial)
		}
		if !reflect.DeepEqual(fmt.Sprint(res[0].Rows, res[0].Chosen), fmt.Sprint(res[1].Rows, res[1].Chosen)) {
			t.Fatalf("trial %d:\nrows:    %v %v\ngrouped: %v %v", trial, res[0].Rows, res[0].Chosen, res[1].Rows, res[1].Chosen)
		}
	}
}

// TestKeptPairsAsBuilder: keptPairs holds exactly the grouping a
// setunion.Builder fed the same pairs (UserID, AddID) holds.
func TestKeptPairsAsBuilder(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 9))
	for range 50 {
		p := &Pipeline{}
		for k := range 1 + r.IntN(60) {
			p.keyNames = append(p.keyNames, fmt.Sprintf("k%d", k))
		}
		for u := range 1 + r.IntN(40) {
			p.userNames = append(p.userNames, fmt.Sprintf("u%d", u))
		}
		p.pairs = int64(len(p.keyNames) * len(p.userNames))
		kp := newKeptPairs(p)
		b, err := setunion.NewBuilder(setunion.Defaults())
		if err != nil {
			t.Fatal(err)
		}
		for u := range p.userNames {
			if r.IntN(4) == 0 {
				continue // a user with no kept pair
			}
			bu, _ := b.UserID([]byte(p.userNames[u]))
			for _, k := range r.Perm(len(p.keyNames))[:1+r.IntN(len(p.keyNames))] {
				kp.emit(uint32(u), uint32(k))
				b.AddID(bu, []byte(p.keyNames[k]))
			}
		}
		got, want := kp.grouped(), b.Grouped()
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("keptPairs %+v\nbuilder   %+v", got, want)
		}
	}
}
