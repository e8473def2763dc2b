package release

import (
	"context"
	"fmt"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"

	"github.com/dpsql/dpsql/release/pushdown"
	"github.com/dpsql/dpsql/release/sealed"
	"github.com/dpsql/dpsql/sqlext/ngrams"
)

// # The n-gram corpus of a text column
//
// DP_NGRAMS reads a protected table's text column by a scan with no filter
// and the column as its one plain key, and feeds every row to an
// ngrams.Extractor (AddNgramRows), which tokenises and interns it. Since
// protected tables are read-only, the extractor's input — the
// ngrams.Corpus — is the same for every extraction over the same column,
// whatever its options: the release index cache keeps it per (table
// version, privacy-unit column, text column), built by the same scan
// outside any statement — on the governed server by the server itself
// after loading (Indexes.Prebuild; while it is not built, extractions
// scan), elsewhere on first use — and every later extraction runs over it
// (ngrams.NewFromCorpus, which releases exactly what an extractor fed the
// rows releases for the same random source). A plain column of text or
// integer type reads the same in every session (see "The release index"),
// so one corpus serves every analyst; the cache's bound, logging and
// failure rules are the release index's: a corpus that fails or does not
// fit is not kept, and its extractions scan.

// AddNgramRows feeds every row of the scan to ex: the privacy unit and key
// 0 in their MySQL text form. Rows whose unit is NULL or empty are dropped
// by the scan (silently: a count of them would leak); a NULL key adds no
// tokens.
func (s *Scan) AddNgramRows(ctx *sql.Context, ex *ngrams.Extractor) error {
	return s.Run(ctx, func(row *Row) {
		if text, ok := row.KeyText(0); ok {
			ex.AddRow(row.Unit(), text)
		}
	})
}

// IndexedCorpus returns the n-gram corpus of the scan's one key from the
// cache ix, building it on first use, when the scan has no filter, its one
// key is a plain column of an indexable type (as is the unit), and the
// table's rows never change; ok is false otherwise, and when the build
// failed, did not fit or ctx ended while waiting for it: the extraction
// then scans, with the same result.
func (s *Scan) IndexedCorpus(ctx *sql.Context, ix *Indexes) (_ *ngrams.Corpus, ok bool) {
	if ix == nil || s.filter >= 0 || len(s.plain) != 1 || s.plain[0] == "" {
		return nil, false
	}
	v, isVersioned := s.src.(versioned)
	if !isVersioned {
		return nil, false
	}
	key := corpusKey(s.db, s.name, s.unitCol, s.plain[0])
	var c any
	if ix.prebuilt {
		c, ok = ix.lookup(key, v.Version())
	} else {
		name := fmt.Sprintf("%s.%s(n-gram corpus of %s by %s)", key.db, key.table, s.plain[0], s.unitCol)
		c, ok = ix.get(ctx, key, v.Version(), name, 0, startBuild(corpusBuild(context.Background(), s.src, s.db, s.name, s.unitCol, s.plain[0])))
	}
	ix.countCorpus(ok)
	if !ok {
		return nil, false
	}
	return c.(*ngrams.Corpus), true
}

// corpusKey is the cache key of the corpus of textCol.
func corpusKey(db, name, unitCol, textCol string) indexKey {
	return indexKey{"", strings.ToLower(db), strings.ToLower(name), strings.ToLower(unitCol), "\x00ngrams\x00" + strings.ToLower(textCol)}
}

// corpusBuild returns the build of the corpus of textCol, which stops
// when ctx ends.
func corpusBuild(ctx context.Context, table sql.Table, db, name, unitCol, textCol string) indexBuild {
	return func() (any, int64, string, error) {
		c, err := buildCorpus(ctx, table, db, name, unitCol, textCol)
		if err != nil {
			return nil, 0, "", err
		}
		st := c.Stats()
		return c, c.Bytes(), fmt.Sprintf("%d users, %d rows, %d tokens, %d distinct, %.1f MiB",
			st.Users, st.Rows, st.Tokens, st.DistinctTokens, float64(c.Bytes())/(1<<20)), nil
	}
}

// NewNgramsScan compiles DP_NGRAMS's scan of db.name: the privacy unit
// and the text column as the one key, both read as they are, no filter.
func NewNgramsScan(ctx *sql.Context, db, name string, table sql.Table, unitCol, textCol string) (*Scan, error) {
	sch := table.Schema()
	ti := sch.IndexOfColName(textCol)
	if ti < 0 {
		return nil, fmt.Errorf("DP_NGRAMS: table %s.%s has no column %s", db, name, textCol)
	}
	if t, ok := table.(pushdown.Table); ok && t.PushdownSource() != nil {
		return nil, ErrPushdown(db, name, "DP_NGRAMS")
	}
	tc := sch[ti]
	text := expression.NewGetFieldWithTable(ti, 0, tc.Type, db, name, tc.Name, tc.Nullable)
	return NewScan(ctx, db, name, table, unitCol, Expr{}, []Expr{{E: text, Where: "text column"}}, sealed.Limits{})
}

// buildCorpus reads table once, as DP_NGRAMS's scan of the text column,
// and collects its corpus.
func buildCorpus(goctx context.Context, table sql.Table, db, name, unitCol, textCol string) (*ngrams.Corpus, error) {
	ctx := sql.NewContext(goctx)
	scan, err := NewNgramsScan(ctx, db, name, table, unitCol, textCol)
	if err != nil {
		return nil, err
	}
	ex, err := ngrams.New(ngrams.Defaults())
	if err != nil {
		return nil, err
	}
	if err := scan.AddNgramRows(ctx, ex); err != nil {
		return nil, err
	}
	return ex.Corpus()
}
