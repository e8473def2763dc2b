package dpagg

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/dpsql/dpsql/sqlext/setunion"
)

// Grouped is a release's input already grouped by user and key, as a
// release index keeps it (see release.GroupPairs): users and keys named in
// the order of their first row, and per user its keys' entries ascending
// by key id, each setunion.GroupedEntry(key, rows). Every row of a key
// has the same values (Values(k)): the aggregates' arguments are functions
// of the key alone.
type Grouped struct {
	Users []string
	Keys  []string
	Lists [][]uint64
	// Values returns one value per aggregate (Options.Aggregates order) of
	// every row of key k; it is called once per key, in key order.
	Values func(k uint32) []Value
}

// AddGroupedValues is AddValues for grouped input: the same per-user
// statistics as AddValues called for every row of g in the order of the
// rows (users are met in order of their first row, and a user's extremes
// do not depend on the order of its rows).
func (p *Pipeline) AddGroupedValues(g Grouped) error {
	vals := make([][]Value, len(g.Keys))
	for k := range vals {
		vals[k] = g.Values(uint32(k))
	}
	for u, l := range g.Lists {
		unit := []byte(g.Users[u])
		for _, e := range l {
			if err := p.AddValues(unit, vals[e>>32]); err != nil {
				return err
			}
		}
	}
	return nil
}

// AddGrouped records the rows of g in an empty pipeline: the state Add
// reaches when it is called, row by row in the order of the rows, with
// each row's unit, key and values. Proof: Add numbers users and keys in
// order of first row (g's order), and a user's compacted list holds one
// entry per key ascending (g's lists), whose words are sums over the
// pair's rows: the saturating row count, and per aggregate the non-NULL
// count and the sums of the rounded values (and squares), which for n
// rows of one value x are n·x in two's complement, as n additions of x.
// Release then runs on the same state with the same randomness.
func (p *Pipeline) AddGrouped(g Grouped) error {
	switch {
	case p.done:
		return errors.New("dpagg: AddGrouped after Release")
	case p.valueStats != nil:
		return errors.New("dpagg: this release chooses clamping bounds: call AddGroupedValues and ChooseValueBounds before AddGrouped")
	case p.rows > 0 || len(p.userNames) > 0:
		return errors.New("dpagg: AddGrouped on a pipeline that has rows")
	case len(g.Users) != len(g.Lists):
		return fmt.Errorf("dpagg: %d users for %d lists", len(g.Users), len(g.Lists))
	case p.plan.Global:
		return errors.New("dpagg: a global release takes rows with the empty key only")
	}
	// Per key, the words one row adds (Add's arithmetic).
	s := p.stride
	per := make([]uint64, len(g.Keys)*s)
	for k := range g.Keys {
		vals := g.Values(uint32(k))
		if len(vals) != len(p.cols) {
			return fmt.Errorf("dpagg: key has %d values for %d aggregates", len(vals), len(p.cols))
		}
		w := per[k*s : (k+1)*s]
		for i, c := range p.cols {
			v := vals[i]
			if c.off == 0 || !v.Valid || math.IsNaN(v.Float) {
				continue
			}
			w[c.off] = 1
			if c.kind == CountValues {
				continue
			}
			c.addValue(w, v.Float, 1) // w is zero: this sets the row's words
		}
	}
	p.userNames = g.Users
	p.userIdx = make(map[string]uint32, len(g.Users))
	for u, name := range g.Users {
		p.userIdx[name] = uint32(u)
	}
	p.keyNames = g.Keys
	p.keyIdx = make(map[string]uint32, len(g.Keys))
	p.keyBytes = make([][]byte, len(g.Keys))
	p.last = make([]lastSeen, len(g.Keys))
	for k, name := range g.Keys {
		p.keyIdx[name] = uint32(k)
		p.keyBytes[k] = []byte(name)
		p.last[k] = lastSeen{u: noUser}
	}
	p.lists = make([][]uint64, len(g.Lists))
	p.clean = make([]int32, len(g.Lists))
	total := 0
	for _, l := range g.Lists {
		total += len(l)
	}
	if s == 1 {
		// Counts only: an entry is its one word, g's own (read, never
		// written: the lists are clean, and Add appends to a copy of a
		// full slice).
		for u, l := range g.Lists {
			for _, e := range l {
				if e>>32 >= uint64(len(g.Keys)) {
					return fmt.Errorf("dpagg: key %d of %d", e>>32, len(g.Keys))
				}
				p.rows += int64(e & 0xffffffff)
			}
			p.lists[u] = l[:len(l):len(l)]
			p.clean[u] = int32(len(l))
		}
		return nil
	}
	var words []uint64 // the current slab's free part
	for u, l := range g.Lists {
		if len(words) < len(l)*s {
			words = make([]uint64, max(len(l)*s, min(total*s, slabWords)))
		}
		total -= len(l)
		out := words[: len(l)*s : len(l)*s]
		words = words[len(l)*s:]
		for j, e := range l {
			k, n := e>>32, e&0xffffffff
			if k >= uint64(len(g.Keys)) {
				return fmt.Errorf("dpagg: key %d of %d", k, len(g.Keys))
			}
			o := out[j*s : (j+1)*s]
			o[0] = k<<32 | n
			w := per[int(k)*s : int(k+1)*s]
			for t := 1; t < s; t++ {
				o[t] = n * w[t]
			}
			p.rows += int64(n)
		}
		p.lists[u] = out
		p.clean[u] = int32(len(l))
	}
	return nil
}

// slabWords is the size of the slabs AddGrouped cuts users' lists from:
// 32 KiB, the largest object Go allocates from its size classes. One array
// for every list (33 MB on git_python_ecosystem's 1.36M pairs) was 18 % of
// a private GROUP BY's CPU in `dpsql bench`, nearly all of it zeroing pages
// that fault in again each release; slabs come from spans the heap keeps
// (private GROUP BY 0.17× → 0.13–0.14× of the plain one; docs/performance.md,
// 27 November 2026). A list longer than a slab gets its own array.
const slabWords = 4096

// keptPairs collects the (user, key) pairs Pipeline.bound keeps, in the
// order it emits them (users in order, each user's keys together), as the
// setunion.Grouped that a Builder given them one by one (UserID, AddID)
// holds after Group: users and items in order of first emission, each
// user's entries by ascending item with count 1 (bound emits a pair at
// most once). setunion.NewGroupedBuilder then releases exactly as that
// builder would, for the same random source.
type keptPairs struct {
	p     *Pipeline
	newID []uint32 // per key, 1 + its item id (0: not emitted yet)
	g     setunion.Grouped
	all   []uint64 // every user's entries, one after the other
	start int      // where the current user's entries start in all
	cur   uint32
}

func newKeptPairs(p *Pipeline) *keptPairs {
	return &keptPairs{p: p, newID: make([]uint32, len(p.keyNames)), all: make([]uint64, 0, p.pairs), cur: noUser}
}

// emit records the pair (u, k).
func (kp *keptPairs) emit(u, k uint32) {
	if u != kp.cur {
		kp.flush()
		kp.cur = u
		kp.g.Users = append(kp.g.Users, kp.p.userNames[u])
	}
	id := kp.newID[k]
	if id == 0 {
		kp.g.Items = append(kp.g.Items, kp.p.keyNames[k])
		id = uint32(len(kp.g.Items))
		kp.newID[k] = id
	}
	kp.all = append(kp.all, setunion.GroupedEntry(id-1, 1))
	kp.g.Occurrences++
}

// flush ends the current user's entries.
func (kp *keptPairs) flush() {
	if kp.cur == noUser {
		return
	}
	l := kp.all[kp.start:len(kp.all):len(kp.all)]
	slices.Sort(l)
	kp.g.Lists = append(kp.g.Lists, l)
	kp.start = len(kp.all)
}

// grouped returns the pairs emitted.
func (kp *keptPairs) grouped() setunion.Grouped {
	kp.flush()
	kp.cur = noUser
	return kp.g
}
