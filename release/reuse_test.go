package release

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/types"
)

func randomReleased(r *rand.Rand) Released {
	str := func() string {
		b := make([]byte, r.IntN(20))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return string(b)
	}
	var out Released
	for range r.IntN(4) {
		set := make([]string, r.IntN(5))
		for i := range set {
			set[i] = str()
		}
		out.Sets = append(out.Sets, set)
	}
	specials := []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), 1e-310, math.MaxFloat64}
	for range r.IntN(4) {
		row := ReleasedRow{Key: str()}
		for range r.IntN(4) {
			v := r.NormFloat64() * 1e6
			if r.IntN(3) == 0 {
				v = specials[r.IntN(len(specials))]
			}
			row.Values = append(row.Values, v)
		}
		out.Rows = append(out.Rows, row)
	}
	return out
}

func TestReleasedRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		in := randomReleased(r)
		b, err := in.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var out Released
		if err := out.UnmarshalBinary(b); err != nil {
			t.Fatalf("%+v: %v", in, err)
		}
		if len(in.Sets) != len(out.Sets) || len(in.Rows) != len(out.Rows) {
			t.Fatalf("%+v → %+v", in, out)
		}
		for i := range in.Sets {
			if !reflect.DeepEqual(in.Sets[i], out.Sets[i]) && (len(in.Sets[i]) != 0 || len(out.Sets[i]) != 0) {
				t.Fatalf("set %d: %q → %q", i, in.Sets[i], out.Sets[i])
			}
		}
		for i := range in.Rows {
			a, b := in.Rows[i], out.Rows[i] // values compared bit for bit: NaN, -0
			if a.Key != b.Key || len(a.Values) != len(b.Values) {
				t.Fatalf("row %d: %+v → %+v", i, a, b)
			}
			for j := range a.Values {
				if math.Float64bits(a.Values[j]) != math.Float64bits(b.Values[j]) {
					t.Fatalf("row %d value %d: %v → %v", i, j, a.Values[j], b.Values[j])
				}
			}
		}
		// Every strict prefix, and any trailing byte, is malformed.
		for cut := 0; cut < len(b); cut++ {
			var x Released
			if x.UnmarshalBinary(b[:cut]) == nil {
				t.Fatalf("prefix %d of %x decoded", cut, b)
			}
		}
		var x Released
		if x.UnmarshalBinary(append(b, 0)) == nil {
			t.Fatalf("%x with a trailing byte decoded", b)
		}
	}
}

func FuzzReleasedUnmarshal(f *testing.F) {
	b, _ := Released{Sets: [][]string{{"a", "b"}}, Rows: []ReleasedRow{{Key: "k", Values: []float64{1}}}}.MarshalBinary()
	f.Add(b)
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		var r Released
		if r.UnmarshalBinary(b) != nil {
			return
		}
		// Not every encoding is canonical (a varint may have padding), but
		// what decodes encodes to something that decodes to the same.
		again, _ := r.MarshalBinary()
		var r2 Released
		if err := r2.UnmarshalBinary(again); err != nil || !reflect.DeepEqual(fmtReleased(r), fmtReleased(r2)) {
			t.Fatalf("%x decodes to %+v, which encodes to %x, which decodes to %+v (%v)", b, r, again, r2, err)
		}
	})
}

// fmtReleased prints r with values as bits (NaN equals itself).
func fmtReleased(r Released) string {
	var b strings.Builder
	for _, s := range r.Sets {
		fmt.Fprintf(&b, "%q;", s)
	}
	for _, row := range r.Rows {
		fmt.Fprintf(&b, "%q:", row.Key)
		for _, v := range row.Values {
			fmt.Fprintf(&b, "%x,", math.Float64bits(v))
		}
	}
	return b.String()
}

// plainGov is a Governor without reuse.
type plainGov struct{ charged int }

func (*plainGov) PrivacyUnit(string, string) (string, bool) { return "u", true }
func (*plainGov) Governed(*sql.Context) bool                { return true }
func (*plainGov) Check(*sql.Context, Request) error         { return nil }
func (g *plainGov) Charge(*sql.Context, Request) error      { g.charged++; return nil }

type storeGov struct {
	plainGov
	data []byte
}

func (g *storeGov) ChargeOrReuse(ctx *sql.Context, reqs []Request) (*Reuse, error) {
	if g.data != nil {
		return &Reuse{Data: g.data, At: time.Date(2025, 1, 2, 3, 4, 5, 6000, time.UTC), Seq: 7}, nil
	}
	g.charged += len(reqs)
	return &Reuse{Store: func(d []byte) error { g.data = d; return nil }}, nil
}

func TestChargeOrReuse(t *testing.T) {
	ctx := sql.NewEmptyContext()
	reqs := []Request{{Function: "SELECT DISTINCT"}, {Function: "SELECT DISTINCT"}}
	if u, err := ChargeOrReuse(ctx, nil, reqs); err != nil || u.Reused() {
		t.Errorf("nil governor: %+v %v", u, err)
	}
	p := &plainGov{}
	u, err := ChargeOrReuse(ctx, p, reqs)
	if err != nil || u.Reused() || p.charged != 2 {
		t.Errorf("a governor without reuse: %+v %v, %d charges", u, err, p.charged)
	}
	u.Keep(Released{Sets: [][]string{{"x"}}}) // no store: nothing happens

	s := &storeGov{}
	u, err = ChargeOrReuse(ctx, s, reqs)
	if err != nil || u.Reused() || s.charged != 2 || len(ctx.Warnings()) != 0 {
		t.Fatalf("first: %+v %v", u, err)
	}
	want := Released{Sets: [][]string{{"a", "b"}}}
	u.Keep(want)
	u, err = ChargeOrReuse(ctx, s, reqs)
	if err != nil || !u.Reused() || s.charged != 2 {
		t.Fatalf("second: %+v %v", u, err)
	}
	var got Released
	if err := got.UnmarshalBinary(u.Data); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("stored %+v, %v", got, err)
	}
	w := ctx.Warnings()
	if len(w) != 1 || w[0].Level != "Note" || w[0].Code != NoteReused ||
		!strings.Contains(w[0].Message, "2025-01-02 03:04:05.000006 UTC (audit record 7)") {
		t.Errorf("note: %+v", w)
	}
}

// TestKeepBounded: a release above MaxKeptBytes is not stored.
func TestKeepBounded(t *testing.T) {
	big := make([]string, 0, 1<<10)
	for range cap(big) {
		big = append(big, strings.Repeat("k", MaxKeptBytes>>10))
	}
	for _, tc := range []struct {
		r    Released
		kept bool
	}{{Released{Sets: [][]string{{"small"}}}, true}, {Released{Sets: [][]string{big}}, false}} {
		var stored []byte
		u := &Reuse{Store: func(d []byte) error { stored = d; return nil }}
		u.Keep(tc.r)
		if (stored != nil) != tc.kept {
			t.Errorf("%d keys: kept %v, want %v", len(tc.r.Sets[0]), stored != nil, tc.kept)
		}
	}
}

func TestExprSpecDistinguishesTypes(t *testing.T) {
	col := expression.NewGetFieldWithTable(1, 0, types.Int64, "db", "t", "g", true)
	eq := func(v any, typ sql.Type) sql.Expression {
		return expression.NewEquals(col, expression.NewLiteral(v, typ))
	}
	specs := map[string]string{}
	for name, e := range map[string]sql.Expression{
		"int":     eq(int64(1), types.Int64),
		"int8":    eq(int8(1), types.Int8),
		"float":   eq(1.0, types.Float64),
		"string":  eq("1", types.LongText),
		"other":   eq(int64(2), types.Int64),
		"nothing": nil,
	} {
		k, _, err := exprKey(nil, e)
		if err != nil {
			t.Fatalf("%s: no key: %v", name, err)
		}
		s := string(k)
		for other, os := range specs {
			if os == s {
				t.Errorf("%s and %s have the same specification %q", name, other, s)
			}
		}
		specs[name] = s
	}
}
