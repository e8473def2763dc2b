package functions

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/dolthub/go-mysql-server/memory"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/sqltypes"

	"github.com/dpsql/dpsql/dpvars"
	"github.com/dpsql/dpsql/release"
	"github.com/dpsql/dpsql/sqlext/ngrams"
	"github.com/dpsql/dpsql/sqlext/securerand"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

func TestSplitTableName(t *testing.T) {
	for in, want := range map[string][2]string{
		"posts":                     {"", "posts"},
		"demo.posts":                {"demo", "posts"},
		" demo . posts ":            {"demo", "posts"},
		"`demo`.`posts`":            {"demo", "posts"},
		"`my db`.`my.table`":        {"my db", "my.table"},
		"`we``ird`":                 {"", "we`ird"},
		"demo.`posts`":              {"demo", "posts"},
		"`demo`.posts":              {"demo", "posts"},
		"`with space `.`x`":         {"with space ", "x"},
		"information_schema.tables": {"information_schema", "tables"},
	} {
		db, tbl, err := splitTableName(in)
		if err != nil || db != want[0] || tbl != want[1] {
			t.Errorf("splitTableName(%q) = %q, %q, %v; want %q", in, db, tbl, err, want)
		}
	}
	for _, in := range []string{"", " ", ".", "a.", ".b", "a.b.c", "`a", "`a`.`b", "a..b"} {
		if db, tbl, err := splitTableName(in); err == nil {
			t.Errorf("splitTableName(%q) = %q, %q, want an error", in, db, tbl)
		}
	}
}

func TestNgramsOptions(t *testing.T) {
	p := dpvars.DefaultSetUnion()
	p.Epsilon, p.Delta, p.MaxItems, p.Mechanism, p.Alpha = 2, 1e-8, 40, "Weighted_Gaussian", setunion.Float(5)

	// Unspecified options come from the session variables and the core's
	// defaults.
	o, err := NgramsOptions(p, "", false)
	if err != nil {
		t.Fatal(err)
	}
	d := ngrams.Defaults()
	if o.Epsilon != 2 || o.Delta != 1e-8 || o.MaxItems != 40 || o.Mechanism != setunion.WeightedGaussian ||
		o.Alpha == nil || *o.Alpha != 5 || o.MaxN != d.MaxN || o.Eta != d.Eta || o.Update != "" || o.BudgetSplit.Kind != "" {
		t.Fatalf("defaults: %+v", o)
	}
	// The options string wins.
	o, err = NgramsOptions(p, "max_n=5, epsilon=0.5, delta=1e-9, max_items=7, mechanism=count_gaussian, update=policy_gaussian_l2, alpha=default, eta=0.1, budget_split=geometric:2", true)
	if err != nil {
		t.Fatal(err)
	}
	if o.MaxN != 5 || o.Epsilon != 0.5 || o.Delta != 1e-9 || o.MaxItems != 7 || o.Mechanism != setunion.CountGaussian ||
		o.Update != setunion.PolicyGaussianL2 || o.Alpha != nil || o.Eta != 0.1 || o.BudgetSplit != (ngrams.Split{Kind: ngrams.Geometric, Ratio: 2}) {
		t.Fatalf("options: %+v", o)
	}
	if _, err := ngrams.NewPlan(o); err != nil {
		t.Fatalf("options do not plan: %v", err)
	}

	// A session mechanism the extraction refuses is reported as such.
	p.Mechanism = "count_laplace"
	_, err = NgramsOptions(p, "epsilon=1", true)
	if err == nil || !strings.Contains(err.Error(), "the session variable dp_mechanism is count_laplace") {
		t.Fatalf("session mechanism: %v", err)
	}
	if _, err := NgramsOptions(p, "mechanism=policy_gaussian_l2", true); err != nil {
		t.Fatalf("mechanism option over a refused session mechanism: %v", err)
	}
	_, err = NgramsOptions(p, "mechanism=count_laplace", true)
	if err == nil || strings.Contains(err.Error(), "session") {
		t.Fatalf("option mechanism: %v", err)
	}
}

func TestIsTextType(t *testing.T) {
	for _, typ := range []sql.Type{
		types.Text, types.LongText, types.MustCreateStringWithDefaults(sqltypes.VarChar, 20), types.Blob, types.LongBlob,
		types.JSON, types.MustCreateEnumType([]string{"a", "b"}, sql.Collation_Default),
		types.MustCreateSetType([]string{"a", "b"}, sql.Collation_Default),
	} {
		if !isTextType(typ) {
			t.Errorf("%s is refused", typ)
		}
	}
	for _, typ := range []sql.Type{types.Int64, types.Int32, types.Uint64, types.Float64, types.Date, types.Datetime, types.Timestamp,
		types.Time, types.Year, types.MustCreateDecimalType(10, 2), types.MustCreateBitType(8), types.Boolean} {
		if isTextType(typ) {
			t.Errorf("%s is accepted as text", typ)
		}
	}
}

// TestValueText: privacy units and text are compared in their MySQL text
// form, so BIGINT 1 and VARCHAR '1' are the same unit.
func TestValueText(t *testing.T) {
	ctx := sql.NewEmptyContext()
	enum := types.MustCreateEnumType([]string{"red", "green"}, sql.Collation_Default)
	for _, c := range []struct {
		typ  sql.Type
		v    any
		want string
	}{
		{types.Int64, int64(1), "1"},
		{types.Text, "1", "1"},
		{types.Blob, []byte("1"), "1"},
		{types.Uint8, uint8(1), "1"},
		{types.Int32, int32(-7), "-7"},
		{types.Float64, 1.5, "1.5"},
		{types.Date, time.Date(2024, 1, 31, 0, 0, 0, 0, time.UTC), "2024-01-31"},
		{enum, uint16(2), "green"},
		{types.JSON, types.MustJSON(`{"a": "b c"}`), `{"a": "b c"}`},
	} {
		if got := string(release.NewTexter(c.typ).Append(ctx, nil, c.v)); got != c.want {
			t.Errorf("%s %v: %q, want %q", c.typ, c.v, got, c.want)
		}
	}
}

// memoryCall builds the test table t(uid BIGINT, body TEXT, uname TEXT) in
// an in-memory database and returns a context for it.
func memoryCall(t *testing.T, rows ...sql.Row) (*sql.Context, *memory.Database) {
	t.Helper()
	db := memory.NewDatabase("db")
	pro := memory.NewDBProvider(db)
	ctx := sql.NewContext(context.Background(), sql.WithSession(memory.NewSession(sql.NewBaseSession(), pro)))
	ctx.SetCurrentDatabase("db")
	tbl := memory.NewTable(db, "t", sql.NewPrimaryKeySchema(sql.Schema{
		{Name: "uid", Type: types.Int64, Nullable: true, Source: "t"},
		{Name: "body", Type: types.Text, Nullable: true, Source: "t"},
		{Name: "uname", Type: types.Text, Nullable: true, Source: "t"},
	}), nil)
	db.AddTable("t", tbl)
	for _, r := range rows {
		if err := tbl.Insert(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	return ctx, db
}

func lit(s string) sql.Expression { return expression.NewLiteral(s, types.LongText) }

// TestReadNgramRows: rows whose privacy unit is NULL or empty are dropped,
// NULL text adds nothing, and the unit's text form identifies the user.
func TestReadNgramRows(t *testing.T) {
	ctx, db := memoryCall(t,
		sql.Row{int64(1), "a b", "1"},
		sql.Row{int64(1), "c", "1"},
		sql.Row{int64(2), nil, "2"},
		sql.Row{nil, "ghost words", nil},
		sql.Row{int64(3), "d e f", ""},
		sql.Row{int64(4), "", "4"},
	)
	for unit, want := range map[string]ngrams.InputStats{
		// uid: rows 1, 2, 5 and 6 (row 3's text is NULL, row 4's unit).
		"uid": {Rows: 4, Users: 2, Tokens: 6, DistinctTokens: 6},
		// uname: row 5's unit is empty too.
		"uname": {Rows: 3, Users: 1, Tokens: 3, DistinctTokens: 3},
	} {
		n, err := (&NGrams{}).NewInstance(ctx, db, []sql.Expression{lit("t"), lit("body"), lit(unit)})
		if err != nil {
			t.Fatal(err)
		}
		call, err := n.(*NGrams).resolve(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ex, err := ngrams.New(call.opts)
		if err != nil {
			t.Fatal(err)
		}
		scan, err := ngramsScan(ctx, call)
		if err != nil {
			t.Fatal(err)
		}
		if err := scan.AddNgramRows(ctx, ex); err != nil {
			t.Fatal(err)
		}
		if got := ex.Stats(); got != want {
			t.Errorf("unit %s: %+v, want %+v", unit, got, want)
		}
	}
}

// TestNgramsCancelled: a cancelled query stops before reading.
func TestNgramsCancelled(t *testing.T) {
	ctx, db := memoryCall(t, sql.Row{int64(1), "a b", "1"})
	n, err := NgramsTableFunction(Config{Rand: func() *rand.Rand { return securerand.NewSeeded(1) }}).NewInstance(ctx, db, []sql.Expression{lit("t"), lit("body"), lit("uid")})
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = n.(sql.ExecSourceRel).RowIter(ctx.WithContext(cctx), nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	// The instance's release happened (and failed) once; it is not retried.
	_, err2 := n.(sql.ExecSourceRel).RowIter(ctx, nil)
	if !errors.Is(err2, context.Canceled) {
		t.Fatalf("second RowIter: %v", err2)
	}
}
