package governance

import (
	"fmt"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/sqltypes"

	"github.com/dpsql/dpsql/release"
	"github.com/dpsql/dpsql/server/ledger"
	"github.com/dpsql/dpsql/sqlext/accounting"
	"github.com/dpsql/dpsql/sqlext/explain"
)

// BudgetName is the SQL name of the budget table function.
const BudgetName = "dp_budget"

// BudgetSchema are the columns of DP_BUDGET(), one row per (analyst,
// database) account of the ledger:
//
//	analyst              the analyst's user name
//	database_name        the database the budget applies to
//	budget_epsilon       total ε the analyst may spend there
//	budget_delta         total δ
//	accounting           how releases are charged: 'zcdp' or 'basic'
//	spent_epsilon        ε used so far under that accounting (zcdp: what the
//	                     releases' ρ converts to at the budget's conversion δ,
//	                     plus any basic prefix; basic: the sum of their ε)
//	spent_delta          δ used so far (zcdp: the thresholds' share; basic:
//	                     the sum of their δ)
//	remaining_epsilon    what is left under that accounting, never below 0
//	remaining_delta      (zcdp: δ left for thresholds)
//	basic_epsilon        the sum of the releases' ε: what basic composition
//	basic_delta          would have charged (Σδ)
//	max_release_epsilon  cap on one release's ε (NULL: no cap besides the budget)
//	max_release_delta    cap on one release's δ (NULL: none)
//	releases             number of charged releases
//	last_release         time (UTC) of the latest charge, NULL if none
//	active               false once the budget was removed from the
//	                     configuration (its history is kept; nothing more
//	                     can be charged)
func BudgetSchema() sql.Schema {
	col := func(name string, t sql.Type, nullable bool) *sql.Column {
		return &sql.Column{Name: name, Type: t, Nullable: nullable, Source: BudgetName}
	}
	return sql.Schema{
		col("analyst", types.MustCreateStringWithDefaults(sqltypes.VarChar, 32), false),
		col("database_name", types.MustCreateStringWithDefaults(sqltypes.VarChar, 64), false),
		col("budget_epsilon", types.Float64, false),
		col("budget_delta", types.Float64, false),
		col("accounting", types.MustCreateStringWithDefaults(sqltypes.VarChar, 8), false),
		col("spent_epsilon", types.Float64, false),
		col("spent_delta", types.Float64, false),
		col("remaining_epsilon", types.Float64, false),
		col("remaining_delta", types.Float64, false),
		col("basic_epsilon", types.Float64, false),
		col("basic_delta", types.Float64, false),
		col("max_release_epsilon", types.Float64, true),
		col("max_release_delta", types.Float64, true),
		col("releases", types.Int64, false),
		col("last_release", types.DatetimeMaxPrecision, true),
		col("active", types.Boolean, false),
	}
}

// BudgetFunction returns the DP_BUDGET() table function of g, to register
// on the engine's provider (storage.Provider.RegisterTableFunction). An
// analyst sees their own accounts; an administrator sees every analyst's.
// Like every table function in go-mysql-server v0.20.0, it needs a current
// database (any).
func BudgetFunction(g *Governor) sql.TableFunction {
	return rowsFunction(BudgetName, BudgetSchema(), g.BudgetRows,
		"filter with WHERE database_name = '…'")
}

// BudgetRows returns the rows DP_BUDGET() shows ctx's user.
func (g *Governor) BudgetRows(ctx *sql.Context) ([]sql.Row, error) {
	var (
		bals []ledger.Balance
		err  error
	)
	switch g.SessionRole(ctx) {
	case Admin:
		bals, err = g.ledger.Balances("")
	default:
		user := User(ctx)
		if user == "" {
			return nil, nil
		}
		bals, err = g.ledger.Balances(user)
	}
	if err != nil {
		return nil, fmt.Errorf("privacy budget ledger: %w", err)
	}
	rows := make([]sql.Row, 0, len(bals))
	for _, b := range bals {
		var capEps, capDelta, last any
		if b.MaxRelease.Epsilon > 0 {
			capEps = b.MaxRelease.Epsilon
		}
		if b.MaxRelease.Delta > 0 {
			capDelta = b.MaxRelease.Delta
		}
		active := int8(0)
		if b.Configured {
			active = 1
		}
		if !b.LastCharge.IsZero() {
			last = b.LastCharge.UTC()
		}
		rows = append(rows, sql.Row{
			b.Analyst, b.Database,
			b.Budget.Epsilon, b.Budget.Delta,
			string(b.Accounting),
			b.Spent.Epsilon, b.Spent.Delta,
			b.Remaining.Epsilon, b.Remaining.Delta,
			b.Basic.Epsilon, b.Basic.Delta,
			capEps, capDelta,
			b.Releases, last, active,
		})
	}
	return rows, nil
}

// Preview implements release.Previewer: per database the statement reads,
// the budget, what the releases would charge, what would be left, how many
// more times the statement would fit, or why it would be refused now. A
// release that would be answered from a stored one (release reuse) is
// named as such and charged nothing; that decision depends on no protected
// row (see reuse.go), so saying it in advance reveals nothing more.
func (g *Governor) Preview(ctx *sql.Context, reqs []release.Request) ([]explain.Fact, error) {
	if !g.Governed(ctx) {
		return []explain.Fact{explain.F("charge", "none", "administrators are not charged")}, nil
	}
	var dbs []string
	costs := map[string][]accounting.Cost{}
	var facts []explain.Fact
	reused := 0
	stored := map[string]bool{} // databases with a release that would be stored for reuse
	for _, r := range reqs {
		if err := g.bounds.check(r); err != nil {
			facts = append(facts, explain.F("refused", err.Error(), "the server refuses this release whatever the budget"))
			continue
		}
		if s, ok := g.storedFor(ctx, r); ok {
			reused++
			facts = append(facts, explain.F(r.Database+".reused",
				fmt.Sprintf("the release of %s UTC (audit record %d)", s.Time.UTC().Format("2006-01-02 15:04:05.000000"), s.Charges[0].Seq),
				"an identical release made earlier would be returned again at no charge (SET dp_reuse = OFF asks for a new one)"))
			continue
		}
		key := strings.ToLower(r.Database)
		if _, ok := costs[key]; !ok {
			dbs = append(dbs, r.Database)
		}
		costs[key] = append(costs[key], r.LedgerCost())
		if g.reuseKey(ctx, []release.Request{r}) != nil {
			stored[key] = true
		}
	}
	if reused > 0 && len(dbs) == 0 && reused == len(reqs) {
		facts = append(facts, explain.F("charge", "none", "every release of the statement would be answered from a stored one"))
	}
	user := User(ctx)
	for _, db := range dbs {
		cs := costs[strings.ToLower(db)]
		p, err := g.ledger.Preview(user, db, cs)
		if err != nil {
			return nil, fmt.Errorf("privacy budget ledger: %w", err)
		}
		pre := db + "."
		total := accounting.Compose(cs...)
		charge := fmt.Sprintf("ε=%s δ=%s", explain.Number(total.Epsilon), explain.Number(total.Delta))
		if p.Before.Accounting == ledger.ZCDP && total.Rho > 0 {
			charge += fmt.Sprintf(" (zCDP ρ=%s, threshold δ=%s)", explain.Number(total.Rho), explain.Number(total.ThresholdFail))
		}
		facts = append(facts, explain.F(pre+"charge", charge, fmt.Sprintf("what the statement's %d release(s) on %s would be charged", len(cs), db)))
		if p.Refused != nil {
			facts = append(facts, explain.F(pre+"refused", chargeError(p.Refused).Error(), "the ledger would refuse the statement now"))
			if p.Before.Analyst == "" {
				continue
			}
		}
		b, a := p.Before, p.After
		facts = append(facts,
			explain.F(pre+"budget", fmt.Sprintf("ε=%s δ=%s (%s accounting)", explain.Number(b.Budget.Epsilon), explain.Number(b.Budget.Delta), b.Accounting), "your budget on "+db),
			explain.F(pre+"remaining", fmt.Sprintf("ε=%s δ=%s", explain.Number(b.Remaining.Epsilon), explain.Number(b.Remaining.Delta)), "left now"))
		if p.Refused == nil {
			facts = append(facts,
				explain.F(pre+"remaining_after", fmt.Sprintf("ε=%s δ=%s", explain.Number(a.Remaining.Epsilon), explain.Number(a.Remaining.Delta)), "left after this statement"),
				explain.F(pre+"repeats_after", p.Repeats, "how many more times the same statement would fit after this one"))
		}
		if stored[strings.ToLower(db)] {
			facts = append(facts, explain.F(pre+"reuse_window", g.reuse.Window.String(),
				"the same release asked again within this time is returned from the stored one at no charge (repeats_after counts new releases)"))
		}
	}
	return facts, nil
}
