// Package planner holds dpsql's go-mysql-server analyzer rules and the
// parser guard that runs before them.
//
// go-mysql-server v0.20.0 plans a function call as an aggregate only when
// its name is on a hard-coded list (sql/planbuilder/aggregates.go), so
// DP_SET_UNION arrives at the analyzer as a scalar inside a Project. The
// pre-analyzer rule LiftSetUnion moves it into a GroupBy, which makes the
// executor feed it every row of the query (docs/gms.md §1.3). What the
// planbuilder cannot handle at all — DP_SET_UNION(DISTINCT …) crashes it —
// is refused earlier by GuardParser (docs/gms.md §3.5).
//
// Rules carry the batch they belong to, so that later rules (the governed
// server's rewrite of DISTINCT over protected tables, its raw-access guard,
// budget charging) are installed the same way: append to Rules() and pass
// the list to Install. Rule ids of dpsql are in [RuleIDBase, RuleIDBase+100).
package planner

import (
	"fmt"

	"github.com/dolthub/go-mysql-server/sql/analyzer"

	"github.com/dpsql/dpsql/gmsfix"
)

// Batch is the analyzer batch a rule runs in. go-mysql-server v0.20.0 runs
// every batch once per analysis (and again for each subquery analysed
// recursively), so rules must tolerate seeing their own output.
type Batch int

// The batches a builder can add rules to, in the order they run.
const (
	// PreAnalyze runs on the plan exactly as the planbuilder made it.
	PreAnalyze Batch = iota
	// PostAnalyze runs after the default rules (pruning, join planning…).
	PostAnalyze
	// PreValidation runs before the validation rules.
	PreValidation
	// PostValidation runs on the final plan (before exec indexes are
	// assigned): the place for guards that must see everything.
	PostValidation
)

func (b Batch) String() string {
	switch b {
	case PreAnalyze:
		return "pre-analyzer"
	case PostAnalyze:
		return "post-analyzer"
	case PreValidation:
		return "pre-validation"
	case PostValidation:
		return "post-validation"
	}
	return fmt.Sprintf("Batch(%d)", int(b))
}

// Rule is an analyzer rule with its place.
type Rule struct {
	ID    analyzer.RuleId
	Name  string
	Batch Batch
	Apply analyzer.RuleFunc
}

// RuleIDBase is the first rule id dpsql uses; go-mysql-server's own ids are
// a small iota range, far below.
const RuleIDBase analyzer.RuleId = 1000

// Rule ids.
const (
	LiftSetUnionID = RuleIDBase + iota
	EmptyLimitZeroID
	EnumTextID
	LiftQuantilesID
)

// Rules returns dpsql's rules for plain (ungoverned) engines.
func Rules() []Rule {
	return []Rule{
		{ID: LiftSetUnionID, Name: "lift_dp_set_union", Batch: PreAnalyze, Apply: LiftSetUnion},
		{ID: EmptyLimitZeroID, Name: "empty_limit_zero", Batch: PreAnalyze, Apply: gmsfix.EmptyLimitZero},
		{ID: EnumTextID, Name: "enum_text", Batch: PreAnalyze, Apply: gmsfix.EnumText},
		{ID: LiftQuantilesID, Name: "lift_quantiles", Batch: PreAnalyze, Apply: LiftQuantiles},
	}
}

// Install adds rules to an analyzer builder in order, each to its batch.
func Install(b *analyzer.Builder, rules []Rule) (*analyzer.Builder, error) {
	seen := map[analyzer.RuleId]string{}
	for _, r := range rules {
		if prev, dup := seen[r.ID]; dup {
			return nil, fmt.Errorf("planner: rules %s and %s share the id %d", prev, r.Name, r.ID)
		}
		seen[r.ID] = r.Name
		if r.Apply == nil {
			return nil, fmt.Errorf("planner: rule %s has no function", r.Name)
		}
		switch r.Batch {
		case PreAnalyze:
			b = b.AddPreAnalyzeRule(r.ID, r.Apply)
		case PostAnalyze:
			b = b.AddPostAnalyzeRule(r.ID, r.Apply)
		case PreValidation:
			b = b.AddPreValidationRule(r.ID, r.Apply)
		case PostValidation:
			b = b.AddPostValidationRule(r.ID, r.Apply)
		default:
			return nil, fmt.Errorf("planner: rule %s has unknown batch %v", r.Name, r.Batch)
		}
	}
	return b, nil
}
