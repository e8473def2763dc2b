package demo

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/server/storage"
	"github.com/dpsql/dpsql/sqlext/tokenize"
)

// BenchmarkGenerate measures the start-up cost of the demo database.
func BenchmarkGenerate(b *testing.B) {
	for b.Loop() {
		if _, _, err := New(); err != nil {
			b.Fatal(err)
		}
	}
}

func TestVocabularyDistinct(t *testing.T) {
	v := vocabulary(50_000)
	seen := map[string]bool{}
	for _, w := range v {
		if seen[w] {
			t.Fatalf("duplicate word %q", w)
		}
		if toks := tokenize.Tokens(w); len(toks) != 1 || toks[0] != w {
			t.Fatalf("word %q tokenizes as %q", w, toks)
		}
		seen[w] = true
	}
}

func scan(t *testing.T, tbl *storage.Table) []sql.Row {
	t.Helper()
	ctx := sql.NewContext(context.Background())
	parts, _ := tbl.Partitions(ctx)
	rows, err := sql.RowIterToRows(ctx, sql.NewTableRowIter(ctx, tbl, parts))
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestCorpus checks the promised shape: at least 20,000 users, words = the
// tokens of the posts, a Zipf-like vocabulary, long-tailed per-user volume,
// and determinism.
func TestCorpus(t *testing.T) {
	db, st, err := New()
	if err != nil {
		t.Fatal(err)
	}
	if st.Users < 20_000 {
		t.Fatalf("%d users", st.Users)
	}
	posts, _ := db.Table("posts")
	words, _ := db.Table("words")
	if !strings.Contains(posts.Comment(), "SYNTHETIC") || !strings.Contains(words.Comment(), "SYNTHETIC") {
		t.Fatal("tables are not labelled synthetic")
	}
	prow, wrow := scan(t, posts), scan(t, words)
	if len(prow) != st.Posts || len(wrow) != st.Tokens {
		t.Fatalf("%d posts, %d words; stats %+v", len(prow), len(wrow), st)
	}
	// words is exactly the token stream of posts.
	k := 0
	for _, p := range prow {
		for _, tok := range tokenize.Tokens(p[1].(string)) {
			if wrow[k][0] != p[0] || wrow[k][1] != tok {
				t.Fatalf("word %d is %v, want (%v, %s)", k, wrow[k], p[0], tok)
			}
			k++
		}
	}
	// Zipf: the most frequent word is far more frequent than the 100th.
	freq := map[string]int{}
	perUser := map[int64]int{}
	for _, w := range wrow {
		freq[w[1].(string)]++
		perUser[w[0].(int64)]++
	}
	counts := make([]int, 0, len(freq))
	for _, c := range freq {
		counts = append(counts, c)
	}
	slices.Sort(counts)
	slices.Reverse(counts)
	if r := float64(counts[0]) / float64(counts[99]); r < 20 {
		t.Errorf("top word / 100th word frequency = %.1f; not Zipf-like", r)
	}
	// Long tail: the median user writes little, the top 1% write a lot.
	vol := make([]int, 0, len(perUser))
	for _, n := range perUser {
		vol = append(vol, n)
	}
	slices.Sort(vol)
	median, p99 := vol[len(vol)/2], vol[len(vol)*99/100]
	if median > 30 || p99 < 10*median {
		t.Errorf("per-user words: median %d, 99th percentile %d; not long-tailed", median, p99)
	}
	// Deterministic.
	db2, st2, _ := New()
	w2, _ := db2.Table("words")
	if st2.Tokens != st.Tokens || scan(t, w2)[12345][1] != wrow[12345][1] {
		t.Fatal("two generations differ")
	}
}
