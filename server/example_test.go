package server_test

import (
	"context"
	"fmt"
	"log"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/server"
	"github.com/dpsql/dpsql/server/storage"
)

// ExampleNewEngine embeds the engine: a table of (user, query) rows, and a
// differentially private union of the users' queries with DP_SET_UNION. The
// 300 users who searched "weather" make it certain to be released; the
// query only one user typed is (with overwhelming probability) not. Leave
// Config.Functions zero in production: randomness then comes from
// crypto/rand.
func ExampleNewEngine() {
	b, err := storage.NewTableBuilder("searches", []storage.Column{
		{Name: "user_id", Type: storage.BigInt},
		{Name: "query", Type: storage.Text},
	})
	if err != nil {
		log.Fatal(err)
	}
	for u := int64(0); u < 300; u++ {
		if err := b.Append(u, "weather"); err != nil {
			log.Fatal(err)
		}
	}
	if err := b.Append(int64(7), "my own name"); err != nil {
		log.Fatal(err)
	}
	t, err := b.Build()
	if err != nil {
		log.Fatal(err)
	}
	db := storage.NewDatabase("mydb")
	if err := db.AddTable(t); err != nil {
		log.Fatal(err)
	}
	p, err := storage.NewProvider(db)
	if err != nil {
		log.Fatal(err)
	}
	e, err := server.NewEngine(server.Config{Provider: p})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	ctx := server.NewContext(context.Background(), "root", "mydb")
	_, iter, _, err := e.Query(ctx, "SELECT DP_SET_UNION(query, user_id, 'epsilon=1, delta=1e-6') FROM searches")
	if err != nil {
		log.Fatal(err)
	}
	rows, err := sql.RowIterToRows(ctx, iter)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(rows[0][0])
	// Output: ["weather"]
}
