package ngrams

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dpsql/dpsql/sqlext/securerand"
)

// BenchmarkCorpusRelease is the server's warm DP_NGRAMS (max_n = 2, ε =
// 0.5, dp_sips at level 1) over a stored corpus shaped like the load
// test's demo posts: 20,000 users, one to three posts of 5 to 25 words
// drawn from a Zipf(1.1) vocabulary of 45,000 words (about 480,000
// distinct bigrams). It reports cpu-ns/op, the process's CPU time per
// release, which a shared machine's load disturbs less than wall time.
//
//	go test -run '^$' -bench CorpusRelease -benchtime 40x -count 6 ./sqlext/ngrams
func BenchmarkCorpusRelease(b *testing.B) {
	rng := rand.New(rand.NewPCG(24, 2))
	zipf := rand.NewZipf(rng, 1.1, 2, 45000-1)
	o := Defaults()
	o.Epsilon = 0.5
	o.MaxN = 2
	collect, err := New(o)
	if err != nil {
		b.Fatal(err)
	}
	var words []string
	for u := range 20000 {
		for range 1 + rng.IntN(3) {
			words = words[:0]
			for range 5 + rng.IntN(21) {
				words = append(words, fmt.Sprint("w", zipf.Uint64()))
			}
			collect.AddRow([]byte(fmt.Sprint("u", u)), []byte(strings.Join(words, " ")))
		}
	}
	c, err := collect.Corpus()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu0 := processCPU()
	seed := uint64(0)
	for b.Loop() {
		seed++
		e, err := NewFromCorpus(o, c)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := e.Run(securerand.NewSeeded(seed)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}

// processCPU returns the CPU time (user + system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
