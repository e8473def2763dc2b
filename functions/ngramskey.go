package functions

import "github.com/dpsql/dpsql/sqlext/ngrams"

// canonicalNgrams returns a DP_NGRAMS call's options in the form its reuse
// specification encodes: an option with a default meaning written as its
// effective value, so that two spellings of one extraction — no update
// rule and update=weighted_gaussian; no budget_split and
// budget_split=uniform, whose ratio nothing reads — have one key and are
// charged once. Update is read only through Options.UpdateRule (and by
// Validate, which accepts both), the split's ratio only for a geometric
// split (Split.Fractions).
func canonicalNgrams(o ngrams.Options) ngrams.Options {
	o.Update = o.UpdateRule()
	if o.BudgetSplit.Kind != ngrams.Geometric {
		o.BudgetSplit = ngrams.Split{Kind: ngrams.Uniform}
	}
	return o
}
