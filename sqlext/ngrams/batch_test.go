package ngrams

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// TestAddBatchEqualsAddRow: random rows (users mostly in runs, rows without
// tokens, empty users) cut into random batches give the same stored corpus
// and the same seeded run, levels and input statistics included, as AddRow.
func TestAddBatchEqualsAddRow(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	bigrams := 0
	for trial := range 12 {
		var rows [][2]string
		u := 0
		for range 200 + r.IntN(4000) {
			if r.IntN(4) == 0 {
				u = r.IntN(400)
			}
			user := fmt.Sprint("u", u)
			if r.IntN(100) == 0 {
				user = ""
			}
			text := ""
			for range r.IntN(9) {
				text += fmt.Sprintf("w%d ", int(r.ExpFloat64()*20))
			}
			if r.IntN(20) == 0 {
				text = "!!"
			}
			rows = append(rows, [2]string{user, text})
		}
		o := Defaults()
		o.Epsilon, o.Eta = 4, 0.1
		one, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		many, _ := New(o)
		for _, row := range rows {
			one.AddRow([]byte(row[0]), []byte(row[1]))
		}
		var bt Batch
		for k := 0; k < len(rows); {
			end := min(len(rows), k+1+r.IntN(len(rows)/4+1))
			bt.Reset()
			for ; k < end; k++ {
				bt.AddRow([]byte(rows[k][0]), []byte(rows[k][1]))
			}
			many.AddBatch(&bt)
		}
		if one.Stats() != many.Stats() || !slices.Equal(one.tokens, many.tokens) || !slices.Equal(one.rowEnd, many.rowEnd) ||
			!slices.Equal(one.rowUser, many.rowUser) || !slices.Equal(one.toks.Strings(), many.toks.Strings()) ||
			!slices.Equal(one.users.Strings(), many.users.Strings()) {
			t.Fatalf("trial %d: stored corpus differs: %+v vs %+v", trial, one.Stats(), many.Stats())
		}
		seed := r.Uint64()
		a, err := one.Run(rand.New(rand.NewPCG(seed, 0)))
		if err != nil {
			t.Fatal(err)
		}
		b, err := many.Run(rand.New(rand.NewPCG(seed, 0)))
		if err != nil {
			t.Fatal(err)
		}
		for i := range a.Levels {
			a.Levels[i].Seconds, b.Levels[i].Seconds = 0, 0
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("trial %d: runs differ: %d vs %d n-grams", trial, len(a.NGrams), len(b.NGrams))
		}
		for _, g := range a.NGrams {
			if g.N == 2 {
				bigrams++
			}
		}
	}
	if bigrams == 0 {
		t.Fatal("test too easy: no bigram released in any trial")
	}
}
