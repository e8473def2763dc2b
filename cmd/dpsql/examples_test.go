package main

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/dpsql/dpsql/internal/testenv"
)

var updateExamples = flag.Bool("update-examples", false, "rewrite examples/searches.csv from its generator")

// exampleQueries are the common queries of examples/searches.csv, most
// popular first.
var exampleQueries = []string{
	"weather", "news", "translate", "maps", "football scores", "recipes", "cheap flights", "movies near me",
	"bank login", "train times", "horoscope", "currency converter", "pizza delivery", "lottery results",
	"stock prices", "how to tie a tie", "running shoes", "library opening hours", "yoga for beginners",
	"used cars", "cinema tickets", "flu symptoms", "tax return deadline", "hiking trails", "pharmacy open now",
	"job offers", "apartment for rent", "concert tickets", "birthday gift ideas", "electric bikes",
	"learn guitar", "bus schedule", "gardening tips", "vegan recipes", "phone repair", "museum exhibitions",
	"car insurance quotes", "marathon training plan", "wedding venues", "cheap hotels",
}

// exampleSearches generates examples/searches.csv: synthetic (user_id,
// query) rows with a header, from a fixed seed. 800 users each search 1 to
// 8 common queries drawn from a Zipf law over exampleQueries (repeats
// count once per user in a release) and one private query that only they
// make ("reset password for u0042"), which no release at a sane δ
// publishes.
func exampleSearches() []byte {
	r := rand.New(rand.NewPCG(2024, 13))
	weights := make([]float64, len(exampleQueries))
	total := 0.0
	for i := range weights {
		weights[i] = 1 / float64(i+1)
		total += weights[i]
	}
	pick := func() string {
		x := r.Float64() * total
		for i, w := range weights {
			if x < w {
				return exampleQueries[i]
			}
			x -= w
		}
		return exampleQueries[len(exampleQueries)-1]
	}
	var b bytes.Buffer
	b.WriteString("user_id,query\n")
	for u := 1; u <= 800; u++ {
		user := fmt.Sprintf("u%04d", u)
		private := r.IntN(1 + 1) // before or after the common queries
		if private == 0 {
			fmt.Fprintf(&b, "%s,reset password for %s\n", user, user)
		}
		for range 1 + r.IntN(8) {
			fmt.Fprintf(&b, "%s,%s\n", user, pick())
		}
		if private == 1 {
			fmt.Fprintf(&b, "%s,reset password for %s\n", user, user)
		}
	}
	return b.Bytes()
}

// TestExampleSearches: examples/searches.csv is what its generator makes
// (go test ./cmd/dpsql -run TestExampleSearches -update-examples rewrites
// it): synthetic data only.
func TestExampleSearches(t *testing.T) {
	path := filepath.Join(testenv.ModuleRoot(), "examples", "searches.csv")
	want := exampleSearches()
	if *updateExamples {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from its generator (exampleSearches); rewrite it with -update-examples", path)
	}
}
