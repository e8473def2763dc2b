package integration

import (
	"context"
	dbsql "database/sql"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/dpsql/dpsql/internal/testmysql"
)

// BenchmarkPairedTiming sends each work attack (TestWorkIsolation's) to the
// two deployments differing by the heavy victim, b.N times each, the two
// interleaved in a random order per pair so that the machine's drift hits
// both alike, and reports the median response time of each, their
// difference, and the Mann–Whitney z of the two samples (|z| > 3: the
// response time tells the deployments apart; the sign says which is
// slower, positive = with the victim). Nothing is asserted: it is for a
// human to see the timing gaps. The table has 3,000 ordinary users (9,000
// rows) and the victim's 120 rows.
//
// Run: go test -run XXX -bench PairedTiming -benchtime 200x ./integration
func BenchmarkPairedTiming(b *testing.B) {
	deps := [2]*workDeployment{startWork(b, 3000, false), startWork(b, 3000, true)}
	ctx := context.Background()
	order := rand.New(rand.NewPCG(1, 2))
	for _, a := range workAttacks() {
		b.Run(a.name, func(b *testing.B) {
			var conns [2]*dbsql.Conn
			for i, d := range deps {
				conns[i] = testmysql.Session(b, testmysql.Login{Addr: d.g.Addr(), User: a.user, Password: userPassword(a.user), DB: "iso", Timeout: 10 * time.Second, ReadTimeout: 2 * time.Minute})
				for j, s := range a.stmts { // also warms what the analyst's own history warms
					var args []any
					if j == len(a.stmts)-1 {
						args = a.args
					}
					if _, err := readAll(ctx, conns[i], s, args...); err != nil && !strings.HasPrefix(a.name, "error/") && !strings.HasPrefix(a.name, "refused/") {
						b.Fatal(err)
					}
				}
			}
			last := a.stmts[len(a.stmts)-1]
			var times [2][]float64
			b.ResetTimer()
			for range b.N {
				first := order.IntN(2)
				for _, i := range []int{first, 1 - first} {
					start := time.Now()
					_, _ = readAll(ctx, conns[i], last, a.args...)
					times[i] = append(times[i], float64(time.Since(start).Microseconds())/1000)
				}
			}
			b.StopTimer()
			m0, m1 := median(times[0]), median(times[1])
			b.ReportMetric(m0, "ms-without")
			b.ReportMetric(m1, "ms-with")
			b.ReportMetric(m1-m0, "ms-diff")
			b.ReportMetric(mannWhitneyZ(times[1], times[0]), "mw-z")
		})
	}
}

// mannWhitneyZ is the normal approximation of the Mann–Whitney U statistic
// of x against y: (U − n·m/2)/√(n·m·(n + m + 1)/12) with U the number of
// pairs where x is larger (ties count ½). Positive: x tends to be larger.
func mannWhitneyZ(x, y []float64) float64 {
	n, m := float64(len(x)), float64(len(y))
	if n == 0 || m == 0 {
		return 0
	}
	var u float64
	for _, a := range x {
		for _, c := range y {
			switch {
			case a > c:
				u++
			case a == c:
				u += 0.5
			}
		}
	}
	return (u - n*m/2) / math.Sqrt(n*m*(n+m+1)/12)
}

// TestMannWhitneyZ checks the statistic on samples whose order is known.
func TestMannWhitneyZ(t *testing.T) {
	x := []float64{5, 6, 7, 8, 9}
	y := []float64{1, 2, 3, 4, 4.5}
	if z := mannWhitneyZ(x, y); !(z > 2.5) || mannWhitneyZ(y, x) != -z {
		t.Errorf("z(x, y) = %v, z(y, x) = %v: want a large positive z and its negation", z, mannWhitneyZ(y, x))
	}
	if z := mannWhitneyZ(x, x); z != 0 {
		t.Errorf("z(x, x) = %v, want 0", z)
	}
}
