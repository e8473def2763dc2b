package integration

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/integration/clients"
	"github.com/dpsql/dpsql/internal/testmysql"
	"github.com/dpsql/dpsql/internal/testserver"
	"github.com/dpsql/dpsql/server"
	"github.com/dpsql/dpsql/server/config"
	"github.com/dpsql/dpsql/server/storage"
)

// wordUsers counts the users of each word of the demo's words table (what
// an administrator would see), read from the generated table.
func wordUsers(t *testing.T, dbs []*storage.Database) map[string]int {
	t.Helper()
	var words *storage.Table
	for _, db := range dbs {
		if tb, ok := db.Table("words"); ok {
			words = tb
		}
	}
	if words == nil {
		t.Fatal("no demo words table")
	}
	ctx := sql.NewEmptyContext()
	parts, err := words.Partitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	users := map[string]map[any]bool{}
	for {
		p, err := parts.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		rows, err := words.PartitionRows(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		for {
			r, err := rows.Next(ctx)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			w := fmt.Sprint(r[1])
			if users[w] == nil {
				users[w] = map[any]bool{}
			}
			users[w][r[0]] = true
		}
		rows.Close(ctx)
	}
	out := map[string]int{}
	for w, u := range users {
		out[w] = len(u)
	}
	return out
}

// glossaryDemo is the demo with the public table ref.glossary.
type glossaryDemo struct {
	*server.Governed
	analyst          clients.Target
	user             string
	top1, top2, rare string
}

// startGlossaryDemo starts the demo with ref.glossary holding the two most
// widespread words and one word a single user writes; limits, when set,
// changes the configuration's limits first.
func startGlossaryDemo(t *testing.T, limits func(*config.Limits)) *glossaryDemo {
	t.Helper()
	dataDir := t.TempDir()
	opts, cred, err := server.Demo(server.DemoOptions{Listen: "127.0.0.1:0", DataDir: dataDir,
		AnalystPassword: analystPassword, AdminPassword: adminPassword})
	if err != nil {
		t.Fatal(err)
	}
	counts := wordUsers(t, opts.Databases)
	var ranked []string
	for w := range counts {
		ranked = append(ranked, w)
	}
	slices.SortFunc(ranked, func(a, b string) int {
		if counts[a] != counts[b] {
			return counts[b] - counts[a]
		}
		return strings.Compare(a, b)
	})
	top1, top2 := ranked[0], ranked[1]
	rare := ""
	for _, w := range ranked {
		if counts[w] == 1 {
			rare = w
			break
		}
	}
	if rare == "" || counts[top2] < 1000 {
		t.Fatalf("demo words: top %s (%d users), %s (%d), rare %q", top1, counts[top1], top2, counts[top2], rare)
	}
	glossary := filepath.Join(t.TempDir(), "glossary.csv")
	testmysql.WriteFile(t, glossary, fmt.Sprintf("term,meaning\n%s,the commonest word\n%s,the runner-up\n%s,one person's pet word\n", top1, top2, rare))
	opts.Config.Datasets = append(opts.Config.Datasets, config.Dataset{Database: "ref", Table: "glossary", File: glossary, Header: true,
		Columns: []config.Column{{Name: "term", Type: "VARCHAR(64)"}, {Name: "meaning", Type: "TEXT"}}, Public: true})
	if limits != nil {
		limits(&opts.Config.Limits)
	}
	s := testserver.Governed(t, opts)
	host, port := splitAddr(t, s.Addr())
	return &glossaryDemo{Governed: s, user: cred.AnalystUser, top1: top1, top2: top2, rare: rare,
		analyst: clients.Target{Host: host, Port: port, User: cred.AnalystUser, Password: cred.AnalystPassword, Database: "demo"}}
}

// TestPublicLookupOverTheWire: on the demo with a public table
// ref.glossary(term, meaning) holding the two most widespread words and one
// word a single user writes, go-sql-driver and the mysql command line
// client run IN, EXISTS and NOT IN … GROUP BY releases filtered by the
// glossary, a release over words JOIN glossary, and docs/ngrams.md's DP_NGRAMS ⋈
// glossary example; each release is charged once, the one-user word never
// comes out, and a subquery over or a join with a protected table is
// refused with 1142.
func TestPublicLookupOverTheWire(t *testing.T) {
	fullRunOnly(t)
	g := startGlossaryDemo(t, nil)
	s, analyst, top1, top2, rare := g.Governed, g.analyst, g.top1, g.top2, g.rare

	stmts := []clients.Statement{
		// Each client asks anew (the second would otherwise reuse the
		// first's releases, at no charge).
		clients.Query("SET dp_epsilon = 1, dp_reuse = OFF"),
		clients.Query("SELECT DISTINCT word FROM words WHERE word IN (SELECT term FROM ref.glossary) ORDER BY word"),
		clients.Query("SELECT DISTINCT w.word FROM words w WHERE EXISTS (SELECT 1 FROM ref.glossary g WHERE g.term = w.word AND g.meaning LIKE 'the %') ORDER BY 1"),
		clients.Query("SELECT word, COUNT(*) AS n FROM words WHERE word NOT IN (SELECT term FROM ref.glossary) GROUP BY word ORDER BY n DESC LIMIT 5"),
		// docs/ngrams.md's example (DP_NGRAMS in SQL), with the glossary in ref.
		clients.Query("SELECT g.ngram, t.meaning FROM DP_NGRAMS('posts', 'body', 'user_id', 'epsilon=4') g JOIN ref.glossary t ON t.term = g.ngram ORDER BY g.ngram"),
		clients.Query("SELECT DISTINCT word FROM words WHERE word IN (SELECT body FROM posts)"),
		clients.Query("SELECT DISTINCT w.word FROM words w WHERE EXISTS (SELECT 1 FROM posts p WHERE p.user_id = w.user_id AND p.body LIKE 'a%')"),
		clients.Query("SELECT DISTINCT w.word FROM words w JOIN posts p ON p.user_id = w.user_id"),
		clients.Query("SELECT term, meaning FROM ref.glossary ORDER BY term"),
		clients.Query("SELECT DISTINCT w.word, g.meaning FROM words w JOIN ref.glossary g ON g.term = w.word ORDER BY w.word"),
		clients.Query("SELECT parameter, value FROM DP_EXPLAIN('SELECT DISTINCT w.word FROM words w JOIN ref.glossary g ON g.term = w.word WHERE w.word IN (SELECT term FROM ref.glossary)') WHERE parameter = 'mechanism'"),
	}
	runners := []struct {
		name string
		r    clients.Runner
	}{{"go-sql-driver", clients.GoDriver{}}, {"mysql CLI", clients.MariaDBCLI{Path: mysqlCLI(t), Stdin: true}}}
	for _, c := range runners {
		t.Run(c.name, func(t *testing.T) {
			before := ledgerBalance(t, s.Ledger(), g.user, "demo")
			res := runClient(t, c.r, analyst, stmts)
			if len(res) != len(stmts) {
				t.Fatalf("%d results", len(res))
			}
			for i := 1; i <= 4; i++ {
				if res[i].Error != nil {
					t.Fatalf("%s: %v", stmts[i].SQL, res[i].Error)
				}
				if strings.Contains(fmt.Sprint(res[i].Cells()), rare) {
					t.Errorf("%s: the one-user word %q came out: %q", stmts[i].SQL, rare, res[i].Cells())
				}
			}
			want := []string{top1, top2}
			slices.Sort(want)
			for _, i := range []int{1, 2} {
				if got := res[i].Column(res[i].Columns[0]); !slices.Equal(got, want) {
					t.Errorf("%s: got %q, want %q", stmts[i].SQL, got, want)
				}
			}
			for _, row := range res[3].Cells() {
				if row[0] == top1 || row[0] == top2 {
					t.Errorf("NOT IN released a glossary word: %q", row)
				}
			}
			if len(res[3].Rows) == 0 {
				t.Error("NOT IN … GROUP BY released nothing")
			}
			if len(res[4].Rows) == 0 {
				t.Error("DP_NGRAMS ⋈ glossary: no row")
			}
			for _, row := range res[4].Cells() {
				if !strings.HasPrefix(row[1], "the ") {
					t.Errorf("DP_NGRAMS ⋈ glossary: %q", row)
				}
			}
			for i := 5; i <= 7; i++ {
				if res[i].Error == nil || res[i].Error.Code != 1142 {
					t.Errorf("%s: %q %v, want 1142", stmts[i].SQL, res[i].Cells(), res[i].Error)
				}
			}
			if len(res[8].Rows) != 3 {
				t.Errorf("the public table itself: %q %v", res[8].Cells(), res[8].Error)
			}
			if res[9].Error != nil || len(res[9].Rows) != 2 {
				t.Errorf("join with the glossary: %q %v", res[9].Cells(), res[9].Error)
			}
			for _, row := range res[9].Cells() {
				if (row[0] != top1 && row[0] != top2) || !strings.HasPrefix(row[1], "the ") {
					t.Errorf("join with the glossary: %q", row)
				}
			}
			if res[10].Error != nil || len(res[10].Rows) != 1 {
				t.Errorf("DP_EXPLAIN of a join with a lookup: %q %v", res[10].Cells(), res[10].Error)
			}
			after := ledgerBalance(t, s.Ledger(), g.user, "demo")
			if n := after.Releases - before.Releases; n != 5 {
				t.Errorf("%d releases charged, want 5 (IN, EXISTS, GROUP BY, DP_NGRAMS, JOIN; DP_EXPLAIN charges nothing)", n)
			}
		})
	}
}

// TestPublicLookupLimit: limits.public_lookup_rows bounds the public side;
// beyond it the statement fails, naming the limit, and charges nothing.
func TestPublicLookupLimit(t *testing.T) {
	fullRunOnly(t)
	g := startGlossaryDemo(t, func(l *config.Limits) { l.PublicLookupRows = 2 })
	before := ledgerBalance(t, g.Ledger(), g.user, "demo")
	res := runClient(t, clients.GoDriver{}, g.analyst, []clients.Statement{
		clients.Query("SELECT DISTINCT word FROM words WHERE word IN (SELECT term FROM ref.glossary)"),
		clients.Query("SELECT DISTINCT w.word FROM words w JOIN ref.glossary g ON g.term = w.word AND g.meaning LIKE '%word'"),
	})
	if res[0].Error == nil || !strings.Contains(res[0].Error.Message, "limits.public_lookup_rows") {
		t.Errorf("over the limit: %q %v", res[0].Cells(), res[0].Error)
	}
	if res[1].Error != nil {
		t.Errorf("within the limit (two rows pass ON): %v", res[1].Error)
	}
	after := ledgerBalance(t, g.Ledger(), g.user, "demo")
	if n := after.Releases - before.Releases; n != 1 {
		t.Errorf("%d releases charged, want 1", n)
	}
}
