package dpagg

import (
	"testing"

	"github.com/dpsql/dpsql/sqlext/securerand"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// BenchmarkPipelineAdd times Add per row (one triple) on the
// git_python_ecosystem token table: COUNT(*) and AVG(x) GROUP BY word, the
// issue's benchmark query.
func BenchmarkPipelineAdd(b *testing.B) {
	tt := loadTokens(b)
	o := Defaults()
	o.Aggregates = []Aggregate{{Kind: CountRows}, {Kind: Avg, Lower: 0, Upper: 10}}
	vals := []Value{Null, Float(3)}
	b.ResetTimer()
	var p *Pipeline
	for i := 0; i < b.N; i++ {
		if i%len(tt.rows) == 0 {
			b.StopTimer()
			p, _ = New(o)
			b.StartTimer()
		}
		r := tt.rows[i%len(tt.rows)]
		vals[1].Float = float64(r[1] % 11)
		if err := p.Add(tt.users[r[0]], tt.words[r[1]], vals); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPipelineRelease times Release (grouping, Δ0 sampling, selection,
// noise) after the whole token table was added; reported per input row.
func BenchmarkPipelineRelease(b *testing.B) {
	tt := loadTokens(b)
	o := Defaults()
	o.Aggregates = []Aggregate{{Kind: CountRows}, {Kind: Avg, Lower: 0, Upper: 10}}
	vals := []Value{Null, Float(3)}
	for b.Loop() {
		b.StopTimer()
		p, _ := New(o)
		for _, r := range tt.rows {
			vals[1].Float = float64(r[1] % 11)
			_ = p.Add(tt.users[r[0]], tt.words[r[1]], vals)
		}
		b.StartTimer()
		if _, err := p.Release(securerand.New()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(tt.rows)), "ns/row")
}

// BenchmarkBaselineGroupBy is the non-private baseline of
// BenchmarkPipelineAdd: COUNT(*) and AVG(x) GROUP BY word in a Go map, per
// row.
func BenchmarkBaselineGroupBy(b *testing.B) {
	tt := loadTokens(b)
	type agg struct {
		n   int64
		sum float64
	}
	var m map[string]*agg
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%len(tt.rows) == 0 {
			m = map[string]*agg{}
		}
		r := tt.rows[i%len(tt.rows)]
		a, ok := m[string(tt.words[r[1]])]
		if !ok {
			a = &agg{}
			m[string(tt.words[r[1]])] = a
		}
		a.n++
		a.sum += float64(r[1] % 11)
	}
}

// BenchmarkBaselineDistinct is the private DISTINCT's grouping
// (setunion.Builder.AddBytes) on the same rows, per row.
func BenchmarkBaselineDistinct(b *testing.B) {
	tt := loadTokens(b)
	var sb *setunion.Builder
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%len(tt.rows) == 0 {
			sb, _ = setunion.NewBuilder(setunion.Options{Mechanism: DefaultSelectionMechanism, Epsilon: 1, Delta: 1e-6, MaxItems: 100})
		}
		r := tt.rows[i%len(tt.rows)]
		sb.AddBytes(tt.users[r[0]], tt.words[r[1]])
	}
}

// BenchmarkBaselineDistinctRelease is the private DISTINCT's Release on the
// same rows (setunion defaults), per input row: the baseline of
// BenchmarkPipelineRelease.
func BenchmarkBaselineDistinctRelease(b *testing.B) {
	tt := loadTokens(b)
	for b.Loop() {
		b.StopTimer()
		sb, _ := setunion.NewBuilder(setunion.Options{Mechanism: DefaultSelectionMechanism, Epsilon: 1, Delta: 1e-6, MaxItems: 100})
		for _, r := range tt.rows {
			sb.AddBytes(tt.users[r[0]], tt.words[r[1]])
		}
		b.StartTimer()
		sb.Release(securerand.New())
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(tt.rows)), "ns/row")
}
