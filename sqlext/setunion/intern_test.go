package setunion

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// TestInternerMatchesMap interns random strings (many repeats, the empty
// string, growth past several table sizes) and checks ids against a map that
// assigns them in first-occurrence order.
func TestInternerMatchesMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 20 {
		var in Interner
		want := map[string]uint32{}
		var order []string
		n := 1 + rng.IntN(5000)
		for range 4 * n {
			s := strconv.Itoa(rng.IntN(n))
			if rng.IntN(50) == 0 {
				s = ""
			}
			if rng.IntN(3) == 0 {
				if id, ok := in.Lookup([]byte(s)); ok != (want[s] != 0 || slices.Contains(order, s)) || (ok && id != want[s]) {
					t.Fatalf("trial %d: Lookup(%q) = %d, %v", trial, s, id, ok)
				}
			}
			id, added := in.ID([]byte(s))
			w, seen := want[s]
			if !seen {
				w = uint32(len(order))
				want[s] = w
				order = append(order, s)
			}
			if id != w || added == seen {
				t.Fatalf("trial %d: ID(%q) = %d, %v; want %d, %v", trial, s, id, added, w, !seen)
			}
		}
		if in.Len() != len(order) {
			t.Fatalf("Len %d, want %d", in.Len(), len(order))
		}
		for i, s := range order {
			if in.String(uint32(i)) != s || string(in.Bytes(uint32(i))) != s {
				t.Fatalf("string %d = %q, want %q", i, in.String(uint32(i)), s)
			}
		}
		if got := in.Strings(); !slices.Equal(got, order) {
			t.Fatalf("Strings() differs")
		}
		in.Reset()
		if in.Len() != 0 {
			t.Fatal("Reset left strings")
		}
		if _, ok := in.Lookup([]byte(order[0])); ok {
			t.Fatal("Reset left a string findable")
		}
		if id, added := in.ID([]byte("x")); id != 0 || !added {
			t.Fatalf("after Reset: ID = %d, %v", id, added)
		}
	}
}

// TestInternerLongStrings interns strings of up to 3 MiB (longer than the
// arena's chunks) between short ones, twice with a Reset between, and checks
// that every string reads back unchanged after all insertions.
func TestInternerLongStrings(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	var in Interner
	for round := range 2 {
		var want [][]byte
		for i := range 3000 {
			n := rng.IntN(40)
			switch {
			case i%500 == 0:
				n = 3 << 20
			case i%50 == 0:
				n = rng.IntN(300 << 10)
			}
			s := make([]byte, n)
			for k := range s {
				s[k] = byte(rng.IntN(256))
			}
			if n >= 4 {
				binary.LittleEndian.PutUint32(s, uint32(i)) // distinct
			} else {
				s = []byte(fmt.Sprint("#", i))
			}
			id, added := in.ID(s)
			if !added || int(id) != len(want) {
				t.Fatalf("round %d: string %d got id %d, added %v", round, i, id, added)
			}
			want = append(want, s)
		}
		for i, s := range want {
			if !bytes.Equal(in.Bytes(uint32(i)), s) {
				t.Fatalf("round %d: string %d changed", round, i)
			}
			if id, ok := in.Lookup(s); !ok || int(id) != i {
				t.Fatalf("round %d: Lookup of string %d = %d, %v", round, i, id, ok)
			}
		}
		for i, s := range in.Strings() {
			if s != string(want[i]) {
				t.Fatalf("round %d: Strings()[%d] differs", round, i)
			}
		}
		in.Reset()
	}
}

// TestInternerIDsIgnoreSeed checks that ids depend on the input only: two
// interners (with different random hash seeds) give every string the same id.
func TestInternerIDsIgnoreSeed(t *testing.T) {
	var a, b Interner
	for i := range 100000 {
		s := []byte(fmt.Sprintf("w%d", (i*7919)%30011))
		x, _ := a.ID(s)
		y, _ := b.ID(s)
		if x != y {
			t.Fatalf("ids %d and %d for %q", x, y, s)
		}
	}
}

// BenchmarkIntern interns a Zipf-distributed token stream (120,000 distinct
// words, the shape of git_python_ecosystem) with Interner and with the Go map
// the builder used before.
func BenchmarkIntern(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	z := rand.NewZipf(rng, 1.1, 1, 120000-1)
	toks := make([][]byte, 1<<20)
	for i := range toks {
		toks[i] = []byte("tok" + strconv.FormatUint(z.Uint64()*2654435761%1000003, 36))
	}
	b.Run("interner", func(b *testing.B) {
		for b.Loop() {
			var in Interner
			for _, t := range toks {
				in.ID(t)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(toks)), "ns/token")
	})
	b.Run("map", func(b *testing.B) {
		for b.Loop() {
			m := map[string]uint32{}
			for _, t := range toks {
				if _, ok := m[string(t)]; !ok {
					m[string(t)] = uint32(len(m))
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(toks)), "ns/token")
	})
}
