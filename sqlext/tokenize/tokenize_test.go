package tokenize

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/internal/testenv"
)

func TestTokens(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"Hello, World!", []string{"hello", "world"}},
		{"don't stop", []string{"don't", "stop"}},
		{"Don’t ‘quote’ meʼ", []string{"don't", "quote", "me"}},
		{"'quoted' rock''n roll o'", []string{"quoted", "rock", "n", "roll", "o"}},
		{"a'b'c d'", []string{"a'b'c", "d"}},
		{"snake_case x_1", []string{"snake", "case", "x", "1"}},
		{"see https://example.com/a?b=c for more", []string{"see", "for", "more"}},
		{"HTTP://X.Y and ftp://f and www.foo.bar baz", []string{"and", "and", "baz"}},
		{"xhttps://inside.word ok", []string{"x", "ok"}},
		{"http:// alone www. alone", []string{"http", "alone", "www", "alone"}},
		{"wwww.example.com", []string{"w"}},
		{"Ünïcödé ΣΊΣΥΦΟΣ naïve café", []string{"ünïcödé", "σίσυφοσ", "naïve", "café"}},
		{"数据 privacy² ½", []string{"数据", "privacy²", "½"}},
		{"v1.2.3 3.14", []string{"v1", "2", "3", "3", "14"}},
		{"", nil},
		{"   \t ", nil},
		{"bad\xffutf8", []string{"bad", "utf8"}},
	}
	for _, c := range cases {
		if got := Tokens(c.in); !slices.Equal(got, c.want) {
			t.Errorf("Tokens(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestCorpusStatistics tokenises each shared corpus and compares with the
// statistics published beside it, which the reference (Python) tokeniser
// produced: tokens, unique unigrams and unique bigrams (within rows).
func TestCorpusStatistics(t *testing.T) {
	for _, name := range []string{"git_rails", "spamassassin_ham"} {
		t.Run(name, func(t *testing.T) {
			path := testenv.DataFile(t, name+".tsv.gz")
			want := readStats(t, strings.TrimSuffix(path, ".tsv.gz")+".stats.txt")
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			z, err := gzip.NewReader(f)
			if err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(z)
			sc.Buffer(make([]byte, 1<<20), 1<<26)
			var s Scanner
			uni, bi := map[string]bool{}, map[string]bool{}
			tokens := 0
			for sc.Scan() {
				line := sc.Bytes()
				tab := bytes.IndexByte(line, '\t')
				prev := ""
				s.Each(line[tab+1:], func(tok []byte) {
					tokens++
					w := string(tok)
					uni[w] = true
					if prev != "" {
						bi[prev+" "+w] = true
					}
					prev = w
				})
			}
			if err := sc.Err(); err != nil {
				t.Fatal(err)
			}
			got := map[string]int{"tokens": tokens, "unique unigrams": len(uni), "unique bigrams": len(bi)}
			for k, v := range got {
				if want[k] != v {
					t.Errorf("%s: %d, published %d", k, v, want[k])
				}
			}
		})
	}
}

func readStats(t *testing.T, path string) map[string]int {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	re := regexp.MustCompile(`(?m)^(tokens|unique unigrams|unique bigrams): (\d+)$`)
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		n, _ := strconv.Atoi(m[2])
		out[m[1]] = n
	}
	if len(out) != 3 {
		t.Fatalf("%s: could not read the statistics", path)
	}
	return out
}

func BenchmarkScanner(b *testing.B) {
	text := []byte(strings.Repeat("Fix the `ActiveRecord::StatementCache` bug, see https://github.com/rails/rails/pull/1 — don't panic! ", 100))
	var s Scanner
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		s.Each(text, func([]byte) {})
	}
}
