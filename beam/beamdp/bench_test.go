package beamdp_test

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"

	"github.com/dpsql/dpsql/beam/beamdp"
	"github.com/dpsql/dpsql/internal/testenv"
	"github.com/dpsql/dpsql/sqlext/securerand"
	"github.com/dpsql/dpsql/sqlext/setunion"
	"github.com/dpsql/dpsql/sqlext/tabfile"
	"github.com/dpsql/dpsql/sqlext/tokenize"
)

// BenchmarkPythonEcosystem times one release of git_python_ecosystem.tsv.gz
// (24,932 users, 4.4M tokens; user column 1, text column 2) end to end,
// reading the file included, with the default options:
//
//	core-s  the single-machine core, as `dpsql union` runs it (tabfile,
//	        tokenize, setunion.Builder, Release)
//	beam-s  the Beam pipeline on the in-process prism runner (ReadRows,
//	        Union with distinct-item counting, WriteSorted), as
//	        `dpsql-beam union` runs it
//	beam/core  their ratio
//
// for the default policy (policy_gaussian_l2, one shard) and a parallel
// mechanism (weighted_gaussian). Run with
//
//	DPSQL_DATA_DIR=… go test -run '^$' -bench PythonEcosystem -benchtime 1x ./beamdp
//
// Prism is Beam's local runner for tests and small jobs: the ratio measures
// what the portability costs on one machine, not how a cluster runner
// scales.
func BenchmarkPythonEcosystem(b *testing.B) {
	path := testenv.DataFile(b, "git_python_ecosystem.tsv.gz")
	for _, m := range []setunion.Mechanism{setunion.PolicyGaussianL2, setunion.WeightedGaussian} {
		b.Run(string(m), func(b *testing.B) {
			o := setunion.Defaults()
			o.Mechanism = m
			var core, pipe time.Duration
			var coreReleased, beamReleased int
			for range b.N {
				start := time.Now()
				coreReleased = benchCore(b, path, o)
				core += time.Since(start)
				start = time.Now()
				beamReleased = benchBeam(b, path, o)
				pipe += time.Since(start)
			}
			n := float64(b.N)
			b.ReportMetric(core.Seconds()/n, "core-s")
			b.ReportMetric(pipe.Seconds()/n, "beam-s")
			b.ReportMetric(pipe.Seconds()/core.Seconds(), "beam/core")
			b.ReportMetric(float64(coreReleased), "core-released")
			b.ReportMetric(float64(beamReleased), "beam-released")
		})
	}
}

func benchCore(b *testing.B, path string, o setunion.Options) int {
	bl, err := setunion.NewBuilder(o)
	if err != nil {
		b.Fatal(err)
	}
	r, err := tabfile.Open(path, tabfile.TSV)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	var sc tokenize.Scanner
	for {
		f, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		if u, ok := bl.UserID(f[0]); ok {
			sc.Each(f[1], func(tok []byte) { bl.AddID(u, tok) })
		}
	}
	return len(bl.Release(securerand.New()).Items)
}

func benchBeam(b *testing.B, path string, o setunion.Options) int {
	ctx := context.Background()
	p, s := beam.NewPipelineWithRoot()
	rows, _, err := beamdp.ReadRows(ctx, s, beamdp.Input{Glob: path, UserColumn: 1, TextColumn: 2})
	if err != nil {
		b.Fatal(err)
	}
	rel, err := beamdp.Union(s, rows, beamdp.Config{Options: o, CountDistinctItems: true})
	if err != nil {
		b.Fatal(err)
	}
	prefix := filepath.Join(b.TempDir(), "released")
	beamdp.WriteSorted(s, prefix, rel.Items)
	beamdp.WriteStats(s, beamdp.StatsName(prefix), rel.Stats)
	_, err = prism.Execute(ctx, p)
	if err != nil {
		b.Fatal(err)
	}
	st, err := beamdp.ReadStats(ctx, beamdp.StatsName(prefix))
	if err != nil {
		b.Fatal(err)
	}
	return int(st.Released)
}
