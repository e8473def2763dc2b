package planner

import (
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/analyzer"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"

	"github.com/dpsql/dpsql/release"
)

// guard is GuardProtected.
func (p *policy) guard(ctx *sql.Context, _ *analyzer.Analyzer, n sql.Node, _ *plan.Scope, _ analyzer.RuleSelector, _ *sql.QueryFlags) (sql.Node, transform.TreeIdentity, error) {
	if p.gov == nil || !p.gov.Governed(ctx) {
		return n, transform.SameTree, nil
	}
	if err := p.check(n); err != nil {
		if better := p.refusal(n); better != nil {
			return n, transform.SameTree, better // refusals.go: says what to write
		}
		return n, transform.SameTree, err
	}
	return n, transform.SameTree, nil
}

// check walks the whole plan — opaque nodes and expression subqueries
// included — and refuses any node that reads a protected table outside a
// Release.
func (p *policy) check(n sql.Node) error {
	var err error
	transform.Inspect(n, func(n sql.Node) bool {
		if err != nil {
			return false
		}
		switch n := n.(type) {
		case *Release:
			return false
		case *plan.ShowColumns, *plan.ShowCreateTable, *plan.ShowIndexes:
			return false // metadata only
		case *plan.AnalyzeTable:
			for _, t := range n.Tables {
				db := n.Db
				if d, ok := t.(sql.Databaser); ok && d.Database() != nil {
					db = d.Database().Name()
				}
				if _, prot := p.gov.PrivacyUnit(db, t.Name()); prot {
					err = release.ErrAccess(db, t.Name(), "ANALYZE TABLE computes statistics of protected rows")
					return false
				}
			}
		case *plan.TableCountLookup:
			if n.Db() != nil {
				if _, prot := p.gov.PrivacyUnit(n.Db().Name(), n.Table().Name()); prot {
					err = release.ErrAccess(n.Db().Name(), n.Table().Name(), "counting rows is not a private release")
					return false
				}
			}
		case sql.TableNode:
			if n.Database() != nil {
				if _, prot := p.gov.PrivacyUnit(n.Database().Name(), n.UnderlyingTable().Name()); prot {
					err = release.ErrAccess(n.Database().Name(), n.UnderlyingTable().Name(), "this query reads its rows directly")
					return false
				}
			}
		}
		if ex, ok := n.(sql.Expressioner); ok {
			for _, e := range ex.Expressions() {
				transform.InspectExpr(e, func(e sql.Expression) bool {
					if sq, ok := e.(*plan.Subquery); ok && sq.Query != nil && err == nil {
						err = p.check(sq.Query)
					}
					return err != nil
				})
			}
		}
		return err == nil
	})
	return err
}
