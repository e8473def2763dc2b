package release

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/types"

	"github.com/dpsql/dpsql/release/sealed"
	"github.com/dpsql/dpsql/server/demo"
	"github.com/dpsql/dpsql/sqlext/securerand"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// BenchmarkIndexedRelease is the warm release of the load test's
// statements that read the demo's words index (integration's TestLoad),
// without the SQL engine: the unit filter over the index (keepUsers,
// filtered, Prepare) and the mechanism (dp_sips at the defaults), seeded.
//
//	go test -run '^$' -bench IndexedRelease -benchtime 100x ./release
func BenchmarkIndexedRelease(b *testing.B) {
	db, _, err := demo.New()
	if err != nil {
		b.Fatal(err)
	}
	tbl, ok := db.Table("words")
	if !ok {
		b.Fatal("no words table")
	}
	ctx := sql.NewContext(context.Background())
	ix := NewIndexes(1<<30, nil)
	sch := tbl.Schema()
	unit := expression.NewGetFieldWithTable(sch.IndexOfColName("user_id"), 0, types.Int64, "demo", "words", "user_id", true)
	key := column(tbl, "word")
	scan := func(filter sql.Expression) *Scan {
		s, err := NewScan(ctx, "demo", "words", tbl, "user_id", Expr{E: filter}, []Expr{{E: key}}, sealed.DefaultLimits())
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	if x, ok := scan(nil).Indexed(ctx, ix, 0); ok {
		b.Logf("words index: %s", indexSummary(x))
	}
	release := func(b *testing.B, p *setunion.Prepared, seed uint64) {
		bl, err := setunion.NewPreparedBuilder(setunion.Defaults(), p)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := bl.ReleaseContext(ctx, securerand.NewSeeded(seed)); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct {
		name   string
		filter sql.Expression
	}{
		{"filter=le4000", expression.NewLessThanOrEqual(unit, expression.NewLiteral(int64(4000), types.Int64))},
		{"filter=gt5000", expression.NewGreaterThan(unit, expression.NewLiteral(int64(5000), types.Int64))},
		{"whole", nil},
	} {
		s := scan(c.filter)
		b.Run(c.name+"/pairs", func(b *testing.B) {
			b.ReportAllocs()
			defer reportCPU(b)()
			for range b.N {
				if _, ok := s.IndexedPairs(ctx, ix, 0, DistinctView); !ok {
					b.Fatal("not from the index")
				}
			}
		})
		b.Run(c.name+"/release", func(b *testing.B) {
			b.ReportAllocs()
			defer reportCPU(b)()
			for i := range b.N {
				p, ok := s.IndexedPairs(ctx, ix, 0, DistinctView)
				if !ok {
					b.Fatal("not from the index")
				}
				release(b, p, uint64(i))
			}
		})
	}
}

// reportCPU starts counting the process's CPU time (user and system, the
// collector's included) and returns the function that reports it per
// operation as cpu-ns/op: on a shared machine, wall time per operation
// follows the share of the cores the process gets, CPU time does not.
func reportCPU(b *testing.B) func() {
	cpu0 := processCPU()
	return func() { b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op") }
}

// processCPU returns the CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
