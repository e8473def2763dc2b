package bench

import (
	"context"
	"sync"
	"testing"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/internal/testenv"
	"github.com/dpsql/dpsql/server"
	"github.com/dpsql/dpsql/server/storage"
)

var (
	engineOnce sync.Once
	engine     *sqle.Engine
	engineErr  error
	engineRows int
)

// corpusEngine builds, once per process, an engine over t(user_id, word)
// from git_python_ecosystem.tsv.gz (4.4M rows).
func corpusEngine(b *testing.B) *sqle.Engine {
	path := testenv.DataFile(b, "git_python_ecosystem.tsv.gz")
	engineOnce.Do(func() {
		t, err := WordsTable(path, "t", nil)
		if err != nil {
			engineErr = err
			return
		}
		engineRows = t.Len()
		db := storage.NewDatabase("bench")
		if engineErr = db.AddTable(t); engineErr != nil {
			return
		}
		p, err := storage.NewProvider(db)
		if err != nil {
			engineErr = err
			return
		}
		engine, engineErr = NewEngine(p)
	})
	if engineErr != nil {
		b.Fatal(engineErr)
	}
	return engine
}

// BenchmarkQueries times DP_SET_UNION, COUNT(DISTINCT) and SELECT DISTINCT
// on the same 4.4M-row table. Compare the ns/op of the sub-benchmarks
// (dpsql bench prints the ratios).
func BenchmarkQueries(b *testing.B) {
	e := corpusEngine(b)
	for _, q := range Queries("t") {
		b.Run(q.Name, func(b *testing.B) {
			for b.Loop() {
				ctx := server.NewContext(context.Background(), q.User, "bench")
				if _, err := Run(ctx, e, q.SQL); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(engineRows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// TestQueriesSmall runs the benchmark's queries on a small corpus so that
// the code path stays tested without the cost of the big one.
func TestQueriesSmall(t *testing.T) {
	path := testenv.DataFile(t, "spamassassin_ham.tsv.gz")
	tbl, err := WordsTable(path, "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	if tbl.Len() < 800_000 {
		t.Fatalf("only %d words", tbl.Len())
	}
	db := storage.NewDatabase("bench")
	db.AddTable(tbl)
	p, _ := storage.NewProvider(db)
	e, err := NewEngine(p)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	res, err := Measure(func(user string) *sql.Context { return server.NewContext(context.Background(), user, "bench") }, e, Queries("t"), 1)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Rows != 1 || res[1].Rows < 1 || res[1].Rows >= 43380 || res[2].Rows != 1 || res[3].Rows != 43380 {
		t.Fatalf("rows %d %d %d %d (the corpus has 43,380 distinct unigrams)", res[0].Rows, res[1].Rows, res[2].Rows, res[3].Rows)
	}
}
