package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/dolthub/go-mysql-server/enginetest"
	"github.com/dolthub/go-mysql-server/enginetest/queries"
	"github.com/dolthub/go-mysql-server/enginetest/scriptgen/setup"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"

	"github.com/dpsql/dpsql/engine"
	"github.com/dpsql/dpsql/internal/testengine"
	"github.com/dpsql/dpsql/server/storage"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// harness runs go-mysql-server's script tests, as root in database mydb,
// on an engine from engine.New over the storage provider that provider
// builds, with seeded randomness so releases are reproducible.
type harness struct {
	provider func(testing.TB) *storage.Provider
}

var _ enginetest.Harness = harness{}

// mydbHarness serves the test tables of testengine.Provider.
var mydbHarness = harness{provider: testengine.Provider}

func (h harness) NewContext() *sql.Context {
	return engine.NewContext(context.Background(), "root", "mydb")
}

// Setup is unused: the data is built in code (h.provider).
func (h harness) Setup(...[]setup.SetupScript) {}

func (h harness) NewEngine(t *testing.T) (enginetest.QueryEngine, error) {
	return engine.New(engine.Config{Provider: h.provider(t), Functions: testengine.Seeded()})
}

func js(s string) types.JSONDocument { return types.MustJSON(s) }

const released = `["common", "even"]`

// errs returns the error string of a MySQL error as the enginetest harness
// renders it. Errors of the parser guard (DISTINCT, OVER) are plain: the
// planbuilder wraps them as syntax errors, which clients see as 1105.
func errs(msg string, code int, state string) string {
	return fmt.Sprintf("%s (errno %d) (sqlstate %s)", msg, code, state)
}

func TestSetUnionScripts(t *testing.T) {
	for _, s := range setUnionScripts() {
		enginetest.TestScript(t, mydbHarness, s)
	}
}

func setUnionScripts() []queries.ScriptTest {
	return []queries.ScriptTest{
		{
			Name: "DP_SET_UNION as an aggregate",
			Assertions: []queries.ScriptTestAssertion{
				{
					Query:           "SELECT DP_SET_UNION(item, user_id) FROM visits",
					Expected:        []sql.Row{{js(released)}},
					ExpectedColumns: sql.Schema{{Name: "DP_SET_UNION(item, user_id)", Type: types.JSON}},
				},
				{
					Query:           "SELECT DP_SET_UNION(item, user_id) AS items FROM visits",
					Expected:        []sql.Row{{js(released)}},
					ExpectedColumns: sql.Schema{{Name: "items", Type: types.JSON}},
				},
				{
					Query:    "select dp_set_union(v.item, v.user_id) from visits v where v.user_id % 2 = 1",
					Expected: []sql.Row{{js(`["common"]`)}},
				},
				{
					Query:    "SELECT JSON_LENGTH(DP_SET_UNION(item, user_id)) FROM visits",
					Expected: []sql.Row{{2}},
				},
				{
					Query:    "SELECT JSON_LENGTH(j) AS n, j FROM (SELECT DP_SET_UNION(item, user_id) AS j FROM visits) s",
					Expected: []sql.Row{{2, js(released)}},
				},
				{
					Query:    "SELECT jt.item FROM (SELECT DP_SET_UNION(item, user_id) AS j FROM visits) s, JSON_TABLE(s.j, '$[*]' COLUMNS (item VARCHAR(64) PATH '$')) jt ORDER BY jt.item",
					Expected: []sql.Row{{"common"}, {"even"}},
				},
				{
					Query:    "WITH r AS (SELECT DP_SET_UNION(item, user_id) AS j FROM visits) SELECT j FROM r",
					Expected: []sql.Row{{js(released)}},
				},
				{
					Query:    "SELECT DP_SET_UNION(item, user_id) FROM visits WHERE user_id < 200 UNION ALL SELECT DP_SET_UNION(item, user_id) FROM visits WHERE user_id >= 200",
					Expected: []sql.Row{{js(released)}, {js(released)}},
				},
				{
					Query:    "SELECT (SELECT DP_SET_UNION(item, user_id) FROM visits) AS j",
					Expected: []sql.Row{{js(released)}},
				},
				{
					Query:    "SELECT DP_SET_UNION(item, user_id) AS a, DP_SET_UNION(item, uname) AS b FROM visits",
					Expected: []sql.Row{{js(released), js(released)}},
				},
				{
					Query:    "SELECT COUNT(*), DP_SET_UNION(item, user_id) FROM visits",
					Expected: []sql.Row{{2210, js(released)}},
				},
				{
					Query:    "SELECT DISTINCT DP_SET_UNION(item, user_id) FROM visits",
					Expected: []sql.Row{{js(released)}},
				},
				{
					Query:    "SELECT DP_SET_UNION(t1.item, t2.user_id) FROM visits t1 JOIN visits t2 ON t1.user_id = t2.user_id AND t1.item = t2.item",
					Expected: []sql.Row{{js(released)}},
				},
				{
					Query:    "SELECT COUNT(*) AS c, DP_SET_UNION(item, user_id) AS j FROM visits ORDER BY c",
					Expected: []sql.Row{{2210, js(released)}},
				},
				{
					Query:    "SELECT DP_SET_UNION(item, user_id) AS j FROM visits ORDER BY j LIMIT 5",
					Expected: []sql.Row{{js(released)}},
				},
				{
					Query:    "SELECT DP_SET_UNION(item, user_id) AS j FROM visits ORDER BY 1",
					Expected: []sql.Row{{js(released)}},
				},
				{
					Query:    "SELECT DP_SET_UNION(item, user_id) FROM visits LIMIT 0",
					Expected: []sql.Row{},
				},
				{
					Query:    "SELECT COUNT(*) FROM visits LIMIT 0",
					Expected: []sql.Row{},
				},
			},
		},
		{
			Name: "DP_SET_UNION over column types",
			Assertions: []queries.ScriptTestAssertion{
				{Query: "SELECT DP_SET_UNION(g, user_id) FROM visits", Expected: []sql.Row{{js(`["0", "1", "2"]`)}}},
				{Query: "SELECT DP_SET_UNION(day, user_id) FROM visits", Expected: []sql.Row{{js(`["2024-01-01", "2024-01-02"]`)}}},
				{Query: "SELECT DP_SET_UNION(at, user_id) FROM visits", Expected: []sql.Row{{js(`["2024-01-01 10:00:00", "2024-01-02 11:30:00.5"]`)}}},
				{Query: "SELECT DP_SET_UNION(score, user_id) FROM visits", Expected: []sql.Row{{js(`["1.5", "2.25"]`)}}},
				{Query: "SELECT DP_SET_UNION(item, uname) FROM visits", Expected: []sql.Row{{js(released)}}},
				{Query: "SELECT DP_SET_UNION(item, CONCAT('u', user_id)) FROM visits", Expected: []sql.Row{{js(released)}}},
				{Query: "SELECT DP_SET_UNION(UPPER(item), day) FROM visits WHERE item = 'common'", Expected: []sql.Row{{js(`[]`)}}},
				{Query: "SELECT DP_SET_UNION(item, user_id) FROM no_rows", Expected: []sql.Row{{js(`[]`)}}},
				{Query: "SELECT DP_SET_UNION(item, user_id) FROM visits WHERE 1 = 0", Expected: []sql.Row{{js(`[]`)}}},
				{Query: "SELECT DP_SET_UNION('a', 'b')", Expected: []sql.Row{{js(`[]`)}}},
			},
		},
		{
			Name: "options and session variables",
			Assertions: []queries.ScriptTestAssertion{
				{
					Query:    "SELECT DP_SET_UNION(item, user_id, 'epsilon=1, delta=1e-6, max_items=50, mechanism=policy_gaussian_l2, alpha=5, rounds=3') FROM visits",
					Expected: []sql.Row{{js(released)}},
				},
				{
					Query:    "SELECT DP_SET_UNION(item, user_id, ' EPSILON = 2 ,Mechanism=Weighted_Gaussian, ') FROM visits",
					Expected: []sql.Row{{js(released)}},
				},
				{
					Query:    "SELECT DP_SET_UNION(item, user_id, CONCAT('epsilon=', 2)) FROM visits",
					Expected: []sql.Row{{js(released)}},
				},
				{
					Query:    "SELECT DP_SET_UNION(item, user_id, NULL) FROM visits",
					Expected: []sql.Row{{js(released)}},
				},
				{
					Query:    "SELECT @@dp_epsilon, @@dp_delta, @@dp_max_items, @@dp_mechanism, @@dp_alpha, @@dp_rounds",
					Expected: []sql.Row{{setunion.DefaultEpsilon, setunion.DefaultDelta, int64(setunion.DefaultMaxItems), string(setunion.DefaultMechanism), setunion.CutoffAlpha, int64(setunion.DefaultRounds)}},
				},
				{Query: "SET dp_epsilon = 0.5", Expected: []sql.Row{{}}},
				{Query: "SET @@session.dp_mechanism = 'dp_sips', dp_rounds = 2, dp_alpha = 4, dp_max_items = 20, dp_delta = 1e-8", Expected: []sql.Row{{}}},
				{
					Query:    "SELECT @@dp_epsilon, @@session.dp_mechanism, @@dp_rounds, @@dp_alpha, @@dp_max_items, @@dp_delta",
					Expected: []sql.Row{{0.5, "dp_sips", int64(2), 4.0, int64(20), 1e-8}},
				},
				{
					Query:    "SELECT DP_SET_UNION(item, user_id) FROM visits",
					Expected: []sql.Row{{js(released)}},
				},
				{Query: "SET dp_alpha = 3", Expected: []sql.Row{{}}},
				{
					Query:          "SET dp_epsilon = 0",
					ExpectedErrStr: errs("Variable 'dp_epsilon' can't be set to the value of '0': epsilon must be a finite number greater than 0, got 0", 1231, "42000"),
				},
				{
					Query:          "SET dp_epsilon = -1",
					ExpectedErrStr: errs("Variable 'dp_epsilon' can't be set to the value of '-1': epsilon must be a finite number greater than 0, got -1", 1231, "42000"),
				},
				{
					Query:          "SET dp_delta = 1",
					ExpectedErrStr: errs("Variable 'dp_delta' can't be set to the value of '1': delta must be greater than 0 and less than 1, got 1", 1231, "42000"),
				},
				{
					Query:          "SET dp_max_items = -1",
					ExpectedErrStr: errs("Variable 'dp_max_items' can't be set to the value of '-1': max_items must be an integer from 1 to 1000000, or 0 to choose it privately from the data, got -1", 1231, "42000"),
				},
				{
					Query:          "SET dp_mechanism = 'magic'",
					ExpectedErrStr: errs(`Variable 'dp_mechanism' can't be set to the value of 'magic': unknown mechanism "magic": use one of count_laplace, count_gaussian, weighted_laplace, weighted_gaussian, policy_laplace, policy_gaussian_l2, greedy_frequency, greedy_public, single_item, dp_sips (without a privacy proof, where an operator allows it: greedy_frequency_unproven, greedy_public_unproven)`, 1231, "42000"),
				},
				{
					Query:          "SET dp_mechanism = 'greedy_public'",
					ExpectedErrStr: errs("Variable 'dp_mechanism' can't be set to the value of 'greedy_public': mechanism greedy_public needs a public frequency table, which SQL functions cannot take: choose another mechanism (greedy_frequency is the closest)", 1231, "42000"),
				},
				{
					Query:          "SET dp_mechanism = 'policy_gaussian_l1'",
					ExpectedErrStr: errs("Variable 'dp_mechanism' can't be set to the value of 'policy_gaussian_l1': "+setunion.PolicyGaussianL1.Disabled().Error(), 1231, "42000"),
				},
				{
					Query:          "SET dp_alpha = -2",
					ExpectedErrStr: errs("Variable 'dp_alpha' can't be set to the value of '-2': alpha must be a finite number ≥ 0, got -2", 1231, "42000"),
				},
				{
					Query:          "SET dp_rounds = 101",
					ExpectedErrStr: errs("Variable 'dp_rounds' can't be set to the value of '101': rounds must be an integer from 1 to 100, got 101", 1231, "42000"),
				},
				{
					Query:    "SELECT @@dp_epsilon",
					Expected: []sql.Row{{0.5}},
				},
				{Query: "SET GLOBAL dp_max_items = 10", Expected: []sql.Row{{}}},
				{Query: "SELECT @@global.dp_max_items, @@session.dp_max_items", Expected: []sql.Row{{int64(10), int64(20)}}},
				{Query: "SET GLOBAL dp_max_items = 100", Expected: []sql.Row{{}}},
				{Query: "SELECT @@global.dp_max_items", Expected: []sql.Row{{int64(100)}}},
			},
		},
		{
			Name: "every mechanism through the options string",
			Assertions: func() []queries.ScriptTestAssertion {
				var out []queries.ScriptTestAssertion
				for _, m := range setunion.Mechanisms() {
					if m == setunion.GreedyPublic || m.Disabled() != nil || !m.Proven() {
						continue // refused; tested below
					}
					out = append(out, queries.ScriptTestAssertion{
						Query:    fmt.Sprintf("SELECT JSON_CONTAINS(DP_SET_UNION(item, user_id, 'mechanism=%s, max_items=5'), '\"common\"') FROM visits", m),
						Expected: []sql.Row{{true}},
					})
				}
				return out
			}(),
		},
		{
			Name: "prepared statements",
			SetUpScript: []string{
				"PREPARE p FROM 'SELECT DP_SET_UNION(item, user_id, ?) FROM visits WHERE user_id < ?'",
				"SET @o = 'epsilon=3', @n = 400",
			},
			Assertions: []queries.ScriptTestAssertion{
				{Query: "EXECUTE p USING @o, @n", Expected: []sql.Row{{js(released)}}},
				{Query: "SET @o = 'epsilon=nope'", Expected: []sql.Row{{}}},
				{
					Query:          "EXECUTE p USING @o, @n",
					ExpectedErrStr: errs(`DP_SET_UNION: option epsilon: "nope" is not a finite number`, 1210, "HY000"),
				},
			},
		},
		{
			Name: "bad input gets clear errors",
			Assertions: []queries.ScriptTestAssertion{
				{
					Query:          "SELECT DP_SET_UNION(item) FROM visits",
					ExpectedErrStr: errs("Incorrect parameter count in the call to DP_SET_UNION: it takes 2 or 3 arguments, DP_SET_UNION(item, privacy_unit [, 'options']), but 1 were given", 1582, "42000"),
				},
				{
					Query:          "SELECT DP_SET_UNION(item, user_id, 'epsilon=1', 'x') FROM visits",
					ExpectedErrStr: errs("Incorrect parameter count in the call to DP_SET_UNION: it takes 2 or 3 arguments, DP_SET_UNION(item, privacy_unit [, 'options']), but 4 were given", 1582, "42000"),
				},
				{
					Query:          "SELECT DP_SET_UNION(item, user_id, 'epsilon=1, colour=red') FROM visits",
					ExpectedErrStr: errs(`DP_SET_UNION: unknown option "colour": the options are epsilon, delta, max_items, mechanism, alpha, rounds`, 1210, "HY000"),
				},
				{
					Query:          "SELECT DP_SET_UNION(item, user_id, 'epsilon=1.5x') FROM visits",
					ExpectedErrStr: errs(`DP_SET_UNION: option epsilon: "1.5x" is not a finite number`, 1210, "HY000"),
				},
				{
					Query:          "SELECT DP_SET_UNION(item, user_id, 'max_items=2.5') FROM visits",
					ExpectedErrStr: errs(`DP_SET_UNION: option max_items: "2.5" is not an integer`, 1210, "HY000"),
				},
				{
					Query:          "SELECT DP_SET_UNION(item, user_id, 'epsilon=1, Epsilon=2') FROM visits",
					ExpectedErrStr: errs("DP_SET_UNION: option epsilon is given twice", 1210, "HY000"),
				},
				{
					Query:          "SELECT DP_SET_UNION(item, user_id, 'epsilon=1 delta=1e-5') FROM visits",
					ExpectedErrStr: errs(`DP_SET_UNION: option epsilon has the value "1 delta=1e-5", which contains '=': separate options with commas`, 1210, "HY000"),
				},
				{
					Query:          "SELECT DP_SET_UNION(item, user_id, 'epsilon') FROM visits",
					ExpectedErrStr: errs(`DP_SET_UNION: option "epsilon" has no value: write key=value pairs separated by commas, e.g. 'epsilon=1, delta=1e-6'`, 1210, "HY000"),
				},
				{
					Query:          "SELECT DP_SET_UNION(item, user_id, 'epsilon=0') FROM visits",
					ExpectedErrStr: errs("DP_SET_UNION: epsilon must be a finite number greater than 0, got 0", 1210, "HY000"),
				},
				{
					Query:          "SELECT DP_SET_UNION(item, user_id, 'delta=2') FROM visits",
					ExpectedErrStr: errs("DP_SET_UNION: delta must be greater than 0 and less than 1, got 2", 1210, "HY000"),
				},
				{
					Query:          "SELECT DP_SET_UNION(item, user_id, 'mechanism=magic') FROM visits",
					ExpectedErrStr: errs(`DP_SET_UNION: unknown mechanism "magic": use one of count_laplace, count_gaussian, weighted_laplace, weighted_gaussian, policy_laplace, policy_gaussian_l2, greedy_frequency, greedy_public, single_item, dp_sips (without a privacy proof, where an operator allows it: greedy_frequency_unproven, greedy_public_unproven)`, 1210, "HY000"),
				},
				{
					Query:          "SELECT DP_SET_UNION(item, user_id, 'mechanism=greedy_public') FROM visits",
					ExpectedErrStr: errs("DP_SET_UNION: mechanism greedy_public needs a public frequency table, which SQL functions cannot take: choose another mechanism (greedy_frequency is the closest)", 1210, "HY000"),
				},
				{
					Query:          "SELECT DP_SET_UNION(item, user_id, 'mechanism=policy_gaussian_l1') FROM visits",
					ExpectedErrStr: errs("DP_SET_UNION: "+setunion.PolicyGaussianL1.Disabled().Error(), 1210, "HY000"),
				},
				{
					Query:          "SELECT DP_SET_UNION(item, user_id, 'alpha=-3') FROM visits",
					ExpectedErrStr: errs("DP_SET_UNION: alpha must be a finite number ≥ 0, got -3", 1210, "HY000"),
				},
				{
					Query:          "SELECT DP_SET_UNION(item, user_id, item) FROM visits",
					ExpectedErrStr: errs("DP_SET_UNION: the options argument must be a constant string such as 'epsilon=1, delta=1e-6', not an expression that depends on the row (visits.item)", 1210, "HY000"),
				},
				{
					Query:          "SELECT DP_SET_UNION(item, user_id, CONCAT('epsilon=', RAND())) FROM visits",
					ExpectedErrStr: errs("DP_SET_UNION: the options argument must be a constant string such as 'epsilon=1, delta=1e-6', not an expression that depends on the row (concat('epsilon=',rand()))", 1210, "HY000"),
				},
				{
					Query:          "SELECT DP_SET_UNION(DISTINCT item, user_id) FROM visits",
					ExpectedErrStr: "DP_SET_UNION does not take DISTINCT: it already counts each (privacy unit, item) pair once; write DP_SET_UNION(item, privacy_unit [, 'options'])",
				},
				{
					Query:          "SELECT DP_SET_UNION(DISTINCT item) FROM visits",
					ExpectedErrStr: "DP_SET_UNION does not take DISTINCT: it already counts each (privacy unit, item) pair once; write DP_SET_UNION(item, privacy_unit [, 'options'])",
				},
				{
					Query:          "SELECT CONCAT(DISTINCT item, 'x') FROM visits",
					ExpectedErrStr: "function CONCAT does not take DISTINCT: DISTINCT is only allowed in aggregate functions",
				},
				{
					Query:          "SELECT DP_SET_UNION(item, user_id) OVER () FROM visits",
					ExpectedErrStr: "DP_SET_UNION cannot be used as a window function (OVER): each window would be a separate release; use it as an aggregate over the whole query",
				},
				{
					Query:          "SELECT g, DP_SET_UNION(item, user_id) FROM visits GROUP BY g",
					ExpectedErrStr: errs("DP_SET_UNION cannot be used with GROUP BY yet: to release the (group, item) pairs under differential privacy, write SELECT DISTINCT g, item FROM … instead", 1235, "42000"),
				},
				{
					Query:          "SELECT DP_SET_UNION(item, user_id) FROM visits GROUP BY g",
					ExpectedErrStr: errs("DP_SET_UNION cannot be used with GROUP BY yet: to release the (group, item) pairs under differential privacy, write SELECT DISTINCT g, item FROM … instead", 1235, "42000"),
				},
				{
					Query:          "SELECT DP_SET_UNION(item, user_id) AS j FROM visits HAVING JSON_LENGTH(j) > 0",
					ExpectedErrStr: errs("DP_SET_UNION cannot be used with HAVING: filter in an outer query instead, e.g. SELECT j FROM (SELECT DP_SET_UNION(item, user_id) AS j FROM t) s WHERE JSON_LENGTH(j) > 0", 1235, "42000"),
				},
				{
					Query:          "SELECT item, DP_SET_UNION(item, user_id) FROM visits",
					ExpectedErrStr: errs("In aggregated query without GROUP BY, expression #1 of SELECT list contains nonaggregated column 'visits.item'; DP_SET_UNION makes the query an aggregate, so every other column of the SELECT list must be inside an aggregate", 1140, "42000"),
				},
				{
					Query:          "SELECT DP_SET_UNION(item, user_id) FROM visits ORDER BY DP_SET_UNION(item, user_id)",
					ExpectedErrStr: "DP_SET_UNION cannot be used in ORDER BY: without GROUP BY the query returns one row, so drop the ORDER BY",
				},
				{
					Query:          "SELECT * FROM visits WHERE JSON_LENGTH(DP_SET_UNION(item, user_id)) > 0",
					ExpectedErrStr: errs("Invalid use of group function: DP_SET_UNION can only be used in the SELECT list (not in WHERE, ORDER BY, GROUP BY, JOIN conditions or next to window functions)", 1111, "HY000"),
				},
				{
					Query:          "SELECT DP_SET_UNION(DP_SET_UNION(item, user_id), user_id) FROM visits",
					ExpectedErrStr: errs("Invalid use of group function: the arguments of DP_SET_UNION cannot contain aggregates (DP_SET_UNION included)", 1111, "HY000"),
				},
				{
					Query:          "SELECT DP_SET_UNION(COUNT(*), user_id) FROM visits",
					ExpectedErrStr: errs("Invalid use of group function: the arguments of DP_SET_UNION cannot contain aggregates (DP_SET_UNION included)", 1111, "HY000"),
				},
			},
		},
	}
}
