package server_test

import (
	"testing"

	"github.com/dpsql/dpsql/internal/testengine"
	"github.com/dpsql/dpsql/internal/testmysql"
	"github.com/dpsql/dpsql/internal/testserver"
	"github.com/dpsql/dpsql/server"
)

// TestMemoryGuard runs a server whose memory limit is always exceeded: a
// governed (analyst's) statement is stopped with error 1041 naming the
// limit, on a connection that stays usable; an administrator's statement
// is never stopped.
func TestMemoryGuard(t *testing.T) {
	e, err := server.NewEngine(server.Config{Provider: testengine.Provider(t), Functions: testengine.Seeded()})
	if err != nil {
		t.Fatal(err)
	}
	s := testserver.Serve(t, e, server.ServerConfig{
		DefaultDatabase: "mydb",
		Governed:        func(user string) bool { return user == "analyst" },
		Limits:          server.Limits{MaxMemoryBytes: 1},
	})

	analyst := testmysql.Connect(t, testmysql.Login{Addr: s.Addr(), User: "analyst"})
	_, err = analyst.Exec("SELECT SLEEP(5)")
	if testmysql.ErrNo(err) != 1041 {
		t.Fatalf("analyst's statement above the memory limit: got %v, want error 1041", err)
	}
	t.Logf("analyst: %v", err)

	admin := testmysql.Connect(t, testmysql.Login{Addr: s.Addr(), User: "anyone"})
	var one int
	if err := admin.QueryRow("SELECT SLEEP(0.3) + 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("administrator's statement: got %d, %v; want 1 (never stopped)", one, err)
	}
}

func TestDefaultMaxMemory(t *testing.T) {
	if m := server.DefaultMaxMemory(); m == 0 {
		t.Skip("this machine reports neither GOMEMLIMIT, a cgroup limit nor /proc/meminfo")
	} else {
		t.Logf("default memory limit: %d MiB", m>>20)
	}
}
