package functions

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"

	"github.com/dpsql/dpsql/dpvars"
	"github.com/dpsql/dpsql/internal/mysqlerr"
	"github.com/dpsql/dpsql/release"
	"github.com/dpsql/dpsql/sqlext/explain"
	"github.com/dpsql/dpsql/sqlext/securerand"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// SetUnionName is the SQL name of the DP set union aggregate (lower case, as
// go-mysql-server looks functions up).
const SetUnionName = "dp_set_union"

// ErWrongParamCount is ER_WRONG_PARAMCOUNT_TO_NATIVE_FCT (SQLSTATE 42000).
const ErWrongParamCount = mysqlerr.WrongParamCountToNativeFct

// Config configures the DP functions of one engine.
type Config struct {
	// Rand returns the random source of one release. Nil means
	// securerand.New (crypto/rand), the only choice that is private; tests
	// inject securerand.NewSeeded to make releases reproducible.
	Rand func() *rand.Rand
	// Governor, when set, makes the engine a governed one: DP table
	// functions refuse analysts what the governance forbids and charge
	// their releases. Nil means ungoverned (see Governor).
	Governor release.Governor
	// Indexes, when set, keeps the n-gram corpora of protected text
	// columns for DP_NGRAMS (release.Scan.IndexedCorpus); nil: every
	// extraction reads the table.
	Indexes *release.Indexes
	// Defaults, when set, returns the configured DP defaults of a table
	// (nil: none), which DP_NGRAMS takes below the statement's and the
	// analyst's own options (dpvars.TableDefaults; the governed server
	// gives the protected tables' dp: sections). DP_SET_UNION gets them
	// from the planner (planner.WithTableDefaults).
	Defaults func(db, table string) *dpvars.TableDefaults
}

func (c Config) rand() *rand.Rand {
	if c.Rand != nil {
		return c.Rand()
	}
	return securerand.New()
}

// SetUnionFunction returns the registration of DP_SET_UNION for an engine's
// catalog or function provider.
func SetUnionFunction(cfg Config) sql.Function {
	return sql.FunctionN{
		Name: SetUnionName,
		Fn: func(args ...sql.Expression) (sql.Expression, error) {
			return NewSetUnion(cfg, args...)
		},
	}
}

// SetUnion is the aggregate DP_SET_UNION(item, privacy_unit [, 'options']).
// Over the rows of its group it collects (privacy unit, item) pairs, with
// both values in their MySQL text form, and releases items under user-level
// (ε, δ)-differential privacy with the mechanism and parameters of the
// options (defaults: the dp_* session variables). Rows whose item is NULL, or
// whose privacy unit is NULL or empty, are skipped. The result is a JSON
// array of the released items as strings, sorted; nothing else about the
// data (no count, no weight) leaves the aggregate.
//
// go-mysql-server v0.20.0 plans only built-in aggregate names as aggregates,
// so an engine needs the planner's lifting rule for this one (see package
// planner); Eval on the expression itself reports that the rule is missing.
type SetUnion struct {
	cfg     Config
	item    sql.Expression
	unit    sql.Expression
	options sql.Expression // nil when not given

	// params are the options bound at planning time (Bind); nil until then.
	params *setunion.Options
	id     sql.ColumnId
	window *sql.WindowDefinition
}

var (
	_ sql.Aggregation                = (*SetUnion)(nil)
	_ sql.FunctionExpression         = (*SetUnion)(nil)
	_ sql.NonDeterministicExpression = (*SetUnion)(nil)
	_ sql.CollationCoercible         = (*SetUnion)(nil)
)

// NewSetUnion builds DP_SET_UNION from its arguments: item, privacy unit and
// an optional options string.
func NewSetUnion(cfg Config, args ...sql.Expression) (*SetUnion, error) {
	if len(args) < 2 || len(args) > 3 {
		return nil, mysql.NewSQLError(ErWrongParamCount, mysql.SSClientError,
			"Incorrect parameter count in the call to DP_SET_UNION: it takes 2 or 3 arguments, DP_SET_UNION(item, privacy_unit [, 'options']), but %d were given", len(args))
	}
	f := &SetUnion{cfg: cfg, item: args[0], unit: args[1]}
	if len(args) == 3 {
		f.options = args[2]
	}
	return f, nil
}

// FunctionName implements sql.FunctionExpression.
func (f *SetUnion) FunctionName() string { return SetUnionName }

// Description implements sql.FunctionExpression.
func (f *SetUnion) Description() string {
	return "returns, as a sorted JSON array, the items of the group released under user-level differential privacy"
}

// Item returns the item argument.
func (f *SetUnion) Item() sql.Expression { return f.item }

// PrivacyUnit returns the privacy unit argument.
func (f *SetUnion) PrivacyUnit() sql.Expression { return f.unit }

// OptionsArg returns the options argument, or nil.
func (f *SetUnion) OptionsArg() sql.Expression { return f.options }

// Options returns the options bound by Bind, or nil before.
func (f *SetUnion) Options() *setunion.Options { return f.params }

// Explain implements release.Explainer for an administrator's call (an
// analyst's is a planner release): its calibration in plain words. It is
// not charged.
func (f *SetUnion) Explain(*sql.Context) ([]explain.Fact, []release.Request, error) {
	if f.params == nil {
		return nil, nil, nil
	}
	cal, err := setunion.Calibrate(*f.params)
	if err != nil {
		return nil, nil, err
	}
	facts := append([]explain.Fact{explain.F("release", "DP_SET_UNION (not charged: administrator)", "what the statement releases privately")}, cal.Facts()...)
	return facts, nil, nil
}

// Resolved implements sql.Expression.
func (f *SetUnion) Resolved() bool {
	for _, c := range f.Children() {
		if !c.Resolved() {
			return false
		}
	}
	return true
}

// String implements sql.Expression.
func (f *SetUnion) String() string {
	args := make([]string, 0, 3)
	for _, c := range f.Children() {
		args = append(args, c.String())
	}
	return "DP_SET_UNION(" + strings.Join(args, ", ") + ")"
}

// Type implements sql.Expression: a JSON array.
func (f *SetUnion) Type() sql.Type { return types.JSON }

// CollationCoercibility implements sql.CollationCoercible.
func (f *SetUnion) CollationCoercibility(ctx *sql.Context) (sql.CollationID, byte) {
	return ctx.GetCharacterSet().BinaryCollation(), 2
}

// IsNullable implements sql.Expression: the result is never NULL ([] for
// no rows).
func (f *SetUnion) IsNullable() bool { return false }

// IsNonDeterministic implements sql.NonDeterministicExpression: every
// evaluation is a fresh random release, so results must not be cached.
func (f *SetUnion) IsNonDeterministic() bool { return true }

// Children implements sql.Expression.
func (f *SetUnion) Children() []sql.Expression {
	if f.options == nil {
		return []sql.Expression{f.item, f.unit}
	}
	return []sql.Expression{f.item, f.unit, f.options}
}

// WithChildren implements sql.Expression.
func (f *SetUnion) WithChildren(children ...sql.Expression) (sql.Expression, error) {
	if len(children) != len(f.Children()) {
		return nil, sql.ErrInvalidChildrenNumber.New(f, len(children), len(f.Children()))
	}
	nf := *f
	nf.item, nf.unit = children[0], children[1]
	if len(children) == 3 {
		nf.options = children[2]
	}
	return &nf, nil
}

// Id implements sql.IdExpression.
func (f *SetUnion) Id() sql.ColumnId { return f.id }

// WithId implements sql.IdExpression.
func (f *SetUnion) WithId(id sql.ColumnId) sql.IdExpression {
	nf := *f
	nf.id = id
	return &nf
}

// Window implements sql.WindowAdaptableExpression.
func (f *SetUnion) Window() *sql.WindowDefinition { return f.window }

// WithWindow implements sql.WindowAdaptableExpression. The planner refuses
// OVER (…) before a window could be attached.
func (f *SetUnion) WithWindow(w *sql.WindowDefinition) sql.WindowAdaptableExpression {
	nf := *f
	nf.window = w
	return &nf
}

// NewWindowFunction implements sql.WindowAdaptableExpression: DP_SET_UNION
// is not a window function (one release per window row would multiply the
// privacy cost).
func (f *SetUnion) NewWindowFunction() (sql.WindowFunction, error) {
	return nil, ErrWindow()
}

// WindowMessage explains why DP_SET_UNION(…) OVER (…) is refused.
const WindowMessage = "DP_SET_UNION cannot be used as a window function (OVER): each window would be a separate release; use it as an aggregate over the whole query"

// ErrWindow is the error for DP_SET_UNION(…) OVER (…) (MySQL error 1235).
func ErrWindow() error {
	return mysql.NewSQLError(mysql.ERNotSupportedYet, mysql.SSClientError, "%s", WindowMessage)
}

// Eval implements sql.Expression. It is reached only when the engine lacks
// the planner rule that makes DP_SET_UNION an aggregate.
func (f *SetUnion) Eval(*sql.Context, sql.Row) (any, error) {
	return nil, fmt.Errorf("DP_SET_UNION was evaluated as a scalar function: this engine was built without dpsql's planner rules; build it with server.NewEngine or install planner.Rules")
}

// Bind returns f with its options fixed from the options argument and ctx's
// dp_* session variables. The options argument must be a constant (it is
// evaluated once, without a row); errors say which option is wrong and why.
// The planner calls Bind so that bad options fail before any row is read.
func (f *SetUnion) Bind(ctx *sql.Context) (*SetUnion, error) {
	o, err := f.resolveOptions(ctx)
	if err != nil {
		return nil, err
	}
	nf := *f
	nf.params = &o
	return &nf, nil
}

func (f *SetUnion) resolveOptions(ctx *sql.Context) (setunion.Options, error) {
	p := dpvars.SessionParams(ctx)
	if f.options != nil {
		if !IsConstant(f.options) {
			return setunion.Options{}, ErrOptionsNotConstant(f.options)
		}
		v, err := f.options.Eval(ctx, nil)
		if err != nil {
			return setunion.Options{}, err
		}
		if v != nil {
			s, ok := v.(string)
			if !ok {
				s2, _, err := types.LongText.Convert(ctx, v)
				if err != nil {
					return setunion.Options{}, optionsError("DP_SET_UNION: the options argument must be a string such as 'epsilon=1, delta=1e-6', got %v", v)
				}
				s, _ = s2.(string)
			}
			set := NewOptionSet("DP_SET_UNION")
			set.AddSetUnion(&p)
			if err := set.Parse(s); err != nil {
				return setunion.Options{}, optionsError("%s", err.Error())
			}
			noteStatementOptions(ctx, s)
		}
	}
	o, err := dpvars.CheckSetUnion(p)
	if err != nil {
		return setunion.Options{}, optionsError("DP_SET_UNION: %s", err.Error())
	}
	return o, nil
}

// optionsError is MySQL error 1210 (Incorrect arguments).
func optionsError(format string, args ...any) error {
	return mysql.NewSQLError(mysql.ERWrongArguments, mysql.SSUnknownSQLState, format, args...)
}

// ErrOptionsNotConstant is the error for an options argument that depends
// on the row.
func ErrOptionsNotConstant(e sql.Expression) error {
	return optionsError("DP_SET_UNION: the options argument must be a constant string such as 'epsilon=1, delta=1e-6', not an expression that depends on the row (%s)", e)
}

// IsConstant reports whether e can be evaluated without a row: it holds no
// column reference, subquery or non-deterministic function. Bind variables
// of prepared statements are constant (they are replaced before analysis).
func IsConstant(e sql.Expression) bool {
	constant := true
	transform.InspectExpr(e, func(e sql.Expression) bool {
		switch e := e.(type) {
		case *expression.GetField, *expression.UnresolvedColumn, *expression.Star, *plan.Subquery, sql.Aggregation:
			constant = false
		case sql.NonDeterministicExpression:
			if e.IsNonDeterministic() {
				constant = false
			}
		}
		return !constant
	})
	return constant
}

// NewBuffer implements sql.Aggregation. Each buffer evaluates clones of the
// arguments (they may hold per-evaluation state).
func (f *SetUnion) NewBuffer() (sql.AggregationBuffer, error) {
	item, err := transform.Clone(f.item)
	if err != nil {
		return nil, err
	}
	unit, err := transform.Clone(f.unit)
	if err != nil {
		return nil, err
	}
	return &setUnionBuffer{
		f:    f,
		item: item, unit: unit,
		itemText: release.NewTexter(item.Type()),
		unitText: release.NewTexter(unit.Type()),
	}, nil
}

// setUnionBuffer feeds one group's rows to a setunion.Builder.
type setUnionBuffer struct {
	f                  *SetUnion
	item, unit         sql.Expression
	itemText, unitText *release.Texter
	ubuf, ibuf         []byte
	b                  *setunion.Builder
}

func (b *setUnionBuffer) init(ctx *sql.Context) error {
	o := b.f.params
	if o == nil {
		r, err := b.f.resolveOptions(ctx)
		if err != nil {
			return err
		}
		o = &r
	}
	var err error
	b.b, err = setunion.NewBuilder(*o)
	if err != nil {
		return optionsError("DP_SET_UNION: %s", err.Error())
	}
	return nil
}

// Update implements sql.AggregationBuffer.
func (b *setUnionBuffer) Update(ctx *sql.Context, row sql.Row) error {
	if b.b == nil {
		if err := b.init(ctx); err != nil {
			return err
		}
	}
	iv, err := b.item.Eval(ctx, row)
	if err != nil || iv == nil {
		return err
	}
	uv, err := b.unit.Eval(ctx, row)
	if err != nil || uv == nil {
		return err
	}
	us, ub := b.unitText.Text(ctx, uv)
	is, ib := b.itemText.Text(ctx, iv)
	switch {
	case ub == nil && ib == nil:
		b.b.Add(us, is)
	default:
		if ub == nil {
			b.ubuf = append(b.ubuf[:0], us...)
			ub = b.ubuf
		}
		if ib == nil {
			b.ibuf = append(b.ibuf[:0], is...)
			ib = b.ibuf
		}
		b.b.AddBytes(ub, ib)
	}
	return nil
}

// Eval implements sql.AggregationBuffer: it runs the release with a fresh
// random source and returns the sorted released items as a JSON array.
func (b *setUnionBuffer) Eval(ctx *sql.Context) (any, error) {
	if b.b == nil {
		if err := b.init(ctx); err != nil {
			return nil, err
		}
	}
	res, err := b.b.ReleaseContext(ctx, b.f.cfg.rand())
	b.b = nil
	if err != nil {
		return nil, err
	} // a release happens once; its memory can go now
	out := make([]any, len(res.Items))
	for i, s := range res.Items {
		out[i] = s
	}
	return types.JSONDocument{Val: out}, nil
}

// Dispose implements sql.AggregationBuffer.
func (b *setUnionBuffer) Dispose() {
	expression.Dispose(b.item)
	expression.Dispose(b.unit)
	b.b = nil
}
