package planner

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/vitess/go/mysql"

	"github.com/dpsql/dpsql/release"
	"github.com/dpsql/dpsql/release/lookup"
	"github.com/dpsql/dpsql/sqlext/dpagg"
	"github.com/dpsql/dpsql/sqlext/explain"
)

// GROUP BY over public keys.
//
//	SELECT P.k…, agg… FROM P [alias] LEFT JOIN T [alias] ON T-expr = P.c [AND …T only…]
//	[WHERE …P only…] GROUP BY P.k…
//
// and the same written T RIGHT JOIN P (the planbuilder makes it P LEFT JOIN
// T), where P is a table the configuration declares public, P.c is unique
// among the rows P's WHERE keeps (a lookup table), and every group key is a
// column of P, releases one row for every distinct key tuple of those rows
// of P — Tumult's KeySets, PipelineDP's public partitions — with no key
// selection and no threshold: the aggregates get the whole budget
// (dpagg.Options.PublicKeys). Protected rows join the public row whose P.c
// equals their T-expr (lookup.Get, as for T JOIN P); rows that match none
// are dropped. A key no user has gets noise around 0. COUNT(*) counts
// protected rows: a public row without a match counts 0 (plain SQL would
// count its NULL-extended row as 1).
//
// Why the key set is public. The keys are K = {(p.k…) : p ∈ P, WHERE(p)},
// computed by publicKeys.compute from the join's lookup.Set after it is
// filled from P, before anything is charged or any protected row read
// (Release.fillPublic): a function of P, the WHERE clause's conditions on P
// and the group columns, none of which depends on T. So the number of
// output rows (|K|) and their order (by key bytes, dpagg) are functions of
// public data, and so are the errors of this step (more than
// dpagg.MaxPublicKeys keys; a repeated P.c). Conditions on T would make K
// depend on protected rows in SQL's semantics (a WHERE on T drops the keys
// no row matches), so they are accepted only in ON, where SQL also keeps
// every public row; a condition on P alone in ON is refused (SQL keeps the
// row with no match, which is not what the release would compute).
//
// Reuse. The set's source (release.NewPublicJoin: the public table's
// version, its filter and columns) and the key columns (the scan's keys)
// are in the release's canonical key, and dpagg.Options.PublicKeys in its
// options, so a stored release is reused only for the same public rows and
// the same mechanism. The statement memo keys it apart from the same
// scan with key selection (T JOIN P). The privacy argument of the values
// is dpagg's (publickeys.go there) over the rows publicjoin.go's argument
// makes: each a fixed function of one protected row and public data.

// publicKeys is the public key set of a release over public keys.
type publicKeys struct {
	what    string // the public table, for errors
	set     *lookup.Set
	cols    []int // per group key, its column in the set's rows
	texters []*release.Texter
	keys    []string // encoded as keyEncoder encodes the scan's keys; set by compute
}

// publicKeysSource checks a GROUP BY over P LEFT JOIN T and moves its WHERE
// conditions (all on P) into the join's public side, which then holds
// exactly the public rows that make keys; the ON conditions on T become
// the release's filters.
func (p *policy) publicKeysSource(src source, keys []sql.Expression) (source, error) {
	pj := src.join
	pub := fmt.Sprintf("%s.%s", pj.pub.db, pj.pub.name)
	if len(keys) == 0 {
		return src, release.ErrAccess(src.db, src.name, fmt.Sprintf(
			"%s LEFT JOIN %s without GROUP BY: group by the public table's columns (… GROUP BY %s.col) for a row per public key, or write FROM %s JOIN %s for one row over the matching rows", pub, src.name, pj.pub.ref, src.name, pub))
	}
	for _, k := range keys {
		if gf, ok := k.(*expression.GetField); !ok || !pj.owns(gf) {
			return src, release.ErrAccess(src.db, src.name, fmt.Sprintf(
				"the GROUP BY key %s is not a column of the public table %s: a GROUP BY over %s LEFT JOIN %s groups by the public table's columns, whose keys are all released; to group by the protected table's columns, write FROM %s JOIN %s (keys selected privately)", k, pub, pub, src.name, src.name, pub))
		}
	}
	for _, f := range src.filters {
		for _, c := range expression.SplitConjunction(f) {
			if !pj.pub.only(c) {
				return src, release.ErrAccess(src.db, src.name, fmt.Sprintf(
					"the WHERE condition %s reads the protected table: in %s LEFT JOIN %s it would drop the public keys no row matches, and a release over public keys releases every one; move it into ON (… LEFT JOIN %s ON … AND %s)", c, pub, src.name, src.name, c))
			}
			pj.filter = andOf(pj.filter, c)
		}
	}
	src.filters = pj.tfilter
	pj.checked = true
	return src, nil
}

// refuseKeys refuses a release over P LEFT JOIN T that is not a GROUP BY
// with aggregates: its keys would all be public, and their values need an
// aggregate.
func (pj *publicJoin) refuseKeys(src source, mode releaseMode) error {
	if pj == nil || !pj.keys || mode == aggregateRows {
		return nil
	}
	pub := fmt.Sprintf("%s.%s", pj.pub.db, pj.pub.name)
	return release.ErrAccess(src.db, src.name, fmt.Sprintf(
		"%s LEFT JOIN %s releases a row per public key with noisy aggregates: add COUNT(*), SUM(…) or another DP aggregate and GROUP BY the public columns; the public keys alone are in %s itself", pub, src.name, pub))
}

// publicKeysRelease builds a GROUP BY over public keys: the source checked
// and rewritten (publicKeysSource), the aggregates' options made a release
// over public keys, and the key set's columns recorded for fill time.
func (p *policy) publicKeysRelease(ctx *sql.Context, src source, keys []sql.Expression, aggs []aggregate, out []int, schema sql.Schema, ids []sql.Expression, adjust ...func(*dpagg.Options)) (*Release, error) {
	src, err := p.publicKeysSource(src, keys)
	if err != nil {
		return nil, err
	}
	adjust = append(adjust, func(o *dpagg.Options) { o.PublicKeys = true })
	r, err := p.newAggregateRelease(ctx, src, keys, aggs, out, schema, ids, adjust...)
	if err != nil {
		return nil, err
	}
	pk := &publicKeys{what: fmt.Sprintf("%s.%s", src.join.pub.db, src.join.pub.name), set: src.join.set}
	tschema := src.table.Schema()
	for i, k := range keys {
		g, err := src.join.column(src, tschema, k.(*expression.GetField))
		if err != nil {
			return nil, err
		}
		pk.cols = append(pk.cols, g.(*lookup.Get).Col)
		pk.texters = append(pk.texters, release.NewTexter(r.scan.KeyType(i)))
	}
	r.pubKeys = pk
	// The statement memo: apart from the same scan with key selection.
	if memo, ok := ctx.Value(memoKey{}).(map[string]*releaseResult); ok && r.spec() != "" {
		key := r.spec() + "|public keys"
		if prev, ok := memo[key]; ok {
			r.done = prev
		} else {
			r.done = &releaseResult{}
			memo[key] = r.done
		}
	}
	return r, nil
}

// compute makes the key set from the filled public side: each public row's
// group columns, encoded as the scan's keys are (keyEncoder), deduplicated
// by the pipeline. Public data only; it fails beyond dpagg.MaxPublicKeys.
func (pk *publicKeys) compute(ctx *sql.Context, r *Release) error {
	seen := map[string]struct{}{}
	vals := make([]any, len(pk.cols))
	var buf []byte
	err := pk.set.EachRow(func(row []any) {
		for i, c := range pk.cols {
			vals[i] = row[c]
		}
		buf = pk.encode(ctx, buf[:0], vals)
		if len(seen) <= dpagg.MaxPublicKeys {
			seen[string(buf)] = struct{}{}
		}
	})
	if err != nil {
		return err
	}
	if len(seen) > dpagg.MaxPublicKeys {
		return mysql.NewSQLError(mysql.ERTooBigSelect, mysql.SSUnknownSQLState,
			"private GROUP BY over public keys on %s.%s: the public table %s gives more than %d keys, the most one release may release (each gets noise); filter the public table in WHERE or group by coarser public columns",
			r.db, r.name, pk.what, dpagg.MaxPublicKeys)
	}
	pk.keys = make([]string, 0, len(seen))
	for k := range seen {
		pk.keys = append(pk.keys, k)
	}
	return nil
}

// encode appends the key of one public row's group values, exactly as
// keyEncoder.encode appends a scan row's: a single text value as it is
// (unless it starts with a byte ≤ 0x01), otherwise per value 0x00 for
// NULL, or 0x01, the length and the value's MySQL text (release.Texter of
// the scan key's type, as Row.KeyText).
func (pk *publicKeys) encode(ctx *sql.Context, dst []byte, vals []any) []byte {
	if len(vals) == 1 {
		if s, ok := vals[0].(string); ok && (len(s) == 0 || s[0] > 1) {
			return append(dst, s...)
		}
	}
	for i, v := range vals {
		if v == nil {
			dst = append(dst, 0)
			continue
		}
		t := pk.texters[i].Append(ctx, nil, v)
		dst = append(dst, 1)
		dst = binary.AppendUvarint(dst, uint64(len(t)))
		dst = append(dst, t...)
	}
	return dst
}

// explainPublicKeys replaces the plan's key_selection fact by the number
// of public keys, read from the public table (public data only; the
// release's own errors, such as too many keys, show here first).
func (r *Release) explainPublicKeys(ctx *sql.Context, facts []explain.Fact) ([]explain.Fact, error) {
	if r.pubKeys == nil {
		return facts, nil
	}
	if err := r.fillPublic(ctx); err != nil {
		return nil, err
	}
	for i, f := range facts {
		if f.Name == "key_selection" {
			facts[i].Value = fmt.Sprintf("public keys: %d, no selection", len(r.pubKeys.keys))
		}
	}
	return facts, nil
}

var errNoPublicKeys = errors.New("private release: the public key set was not read")

// setPublicKeys gives the pipeline the key set compute made.
func (r *Release) setPublicKeys(pipe *dpagg.Pipeline) error {
	if r.pubKeys == nil {
		return nil
	}
	if r.pubKeys.keys == nil {
		return errNoPublicKeys
	}
	return pipe.SetPublicKeys(r.pubKeys.keys)
}
