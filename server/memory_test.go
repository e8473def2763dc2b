package server_test

import (
	"database/sql"
	"errors"
	"net"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/dpsql/dpsql/server"
)

// TestMemoryGuard runs a server whose memory limit is always exceeded: a
// governed (analyst's) statement is stopped with error 1041 naming the
// limit, on a connection that stays usable; an administrator's statement
// is never stopped.
func TestMemoryGuard(t *testing.T) {
	e, err := server.NewEngine(server.Config{Provider: testProvider(t), Functions: seeded()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.NewServer(e, server.ServerConfig{
		Listener:        ln,
		DefaultDatabase: "mydb",
		Governed:        func(user string) bool { return user == "analyst" },
		Limits:          server.Limits{MaxMemoryBytes: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	t.Cleanup(func() {
		s.Shutdown(2 * time.Second)
		e.Close()
	})

	open := func(user string) *gomysql.Config {
		cfg := gomysql.NewConfig()
		cfg.User, cfg.Net, cfg.Addr = user, "tcp", s.Addr()
		return cfg
	}
	analyst := openCfg(t, open("analyst"))
	_, err = analyst.Exec("SELECT SLEEP(5)")
	var me *gomysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1041 {
		t.Fatalf("analyst's statement above the memory limit: got %v, want error 1041", err)
	}
	t.Logf("analyst: %v", err)

	admin := openCfg(t, open("anyone"))
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

func openCfg(t *testing.T, cfg *gomysql.Config) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
