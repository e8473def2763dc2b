package demo

import (
	"context"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
)

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
		seen[w] = true
	}
}

var _ = context.Background
var _ sql.Row
