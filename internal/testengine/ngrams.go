package testengine

import (
	"fmt"
	"testing"
	"time"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/server/storage"
)

// NgramsProvider is Provider (database mydb) with the tables of the
// DP_NGRAMS tests:
//
//	notes(user_id BIGINT, uname TEXT, body TEXT, score DOUBLE, day DATE)
//	glossary(term TEXT, meaning TEXT)
//
// In notes each of 600 users writes "The quick brown fox!", the even users
// also "jumps over the lazy dog", and every user a row of two tokens of
// their own and a row with a NULL body; uname is user_id as text. Rows with
// a NULL user_id (and uname) say "ghost words here", rows with an empty
// uname "blank words". A guard, if given, is installed on notes as its
// scan guard (storage.Table.WithScanGuard).
func NgramsProvider(t testing.TB, guard ...func(*sql.Context) error) *storage.Provider {
	t.Helper()
	p := Provider(t)
	db, ok := p.Lookup("mydb")
	if !ok {
		t.Fatal("no mydb")
	}
	b, err := storage.NewTableBuilder("notes", []storage.Column{
		{Name: "user_id", Type: storage.BigInt},
		{Name: "uname", Type: storage.Text},
		{Name: "body", Type: storage.Text},
		{Name: "score", Type: storage.Double},
		{Name: "day", Type: storage.Date},
	})
	if err != nil {
		t.Fatal(err)
	}
	day := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	add := func(b *storage.TableBuilder, vals ...any) {
		if err := b.Append(vals...); err != nil {
			t.Fatal(err)
		}
	}
	for u := int64(0); u < 600; u++ {
		name := fmt.Sprint(u)
		add(b, u, name, "The quick brown fox!", 1.5, day)
		if u%2 == 0 {
			add(b, u, name, "jumps over the lazy dog", 2.5, day)
		}
		add(b, u, name, fmt.Sprintf("pw%d pin%d", u, u*7), 0.5, day)
		add(b, u, name, nil, 0.5, day)
		add(b, nil, nil, "ghost words here", 0.5, day)
		add(b, nil, "", "blank words", 0.5, day)
	}
	notes, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range guard {
		notes = notes.WithScanGuard(g)
	}
	gb, err := storage.NewTableBuilder("glossary", []storage.Column{
		{Name: "term", Type: storage.Text},
		{Name: "meaning", Type: storage.Text},
	})
	if err != nil {
		t.Fatal(err)
	}
	add(gb, "brown fox", "an animal")
	add(gb, "lazy dog", "another animal")
	add(gb, "purple cow", "not in the data")
	glossary, err := gb.Build()
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range []*storage.Table{notes, glossary} {
		if err := db.AddTable(tb); err != nil {
			t.Fatal(err)
		}
	}
	return p
}
