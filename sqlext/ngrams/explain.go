package ngrams

import (
	"fmt"

	"github.com/dpsql/dpsql/sqlext/explain"
)

// Facts describes the plan for people: the budget, the unigram level's
// calibration (with the users a unigram needs, names prefixed "level_1.")
// and, per level, its rule, noise and bound. Levels above 1 release only
// n-grams whose (n−1)-grams were released, so how many users they need
// depends on the data; their noise is stated.
func (p Plan) Facts() []explain.Fact {
	facts := []explain.Fact{
		explain.F("epsilon", p.Epsilon, "ε of the whole extraction, all levels together"),
		explain.F("delta", p.Delta, "δ of the whole extraction"),
		explain.F("max_n", p.MaxN, "the longest n-grams released"),
		explain.F("budget_split", p.BudgetSplit, "how the levels share the budget"),
		explain.F("sigma_star", p.SigmaStar, "σ* of the single Gaussian mechanism all levels form"),
	}
	facts = append(facts, explain.Prefix("level_1.", p.level1.Facts())...)
	for _, l := range p.Levels {
		facts = append(facts, explain.F(fmt.Sprintf("level_%d", l.N),
			fmt.Sprintf("%s f=%.3g σ=%.4g Δ=%d", l.Rule, l.Fraction, l.Sigma, l.MaxItems),
			"the level's rule, budget share f, noise σ and bound on each user's n-grams"))
	}
	return facts
}
