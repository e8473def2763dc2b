package integration

import (
	"os"
	"sync"
	"testing"

	"github.com/dpsql/dpsql/integration/clients"
	"github.com/dpsql/dpsql/internal/testenv"
)

// jdbcRunner returns the Connector/J runner, skipping (failing under CI)
// when javac, java or the Debian driver jar is missing.
func jdbcRunner(t *testing.T) *clients.JDBC {
	t.Helper()
	externalClient(t, "Connector/J")
	javac := testenv.Tool(t, "javac", "apt-get install default-jdk-headless")
	java := testenv.Tool(t, "java", "apt-get install default-jdk-headless")
	jar := os.Getenv("DPSQL_JDBC_JAR")
	if jar == "" {
		jar = clients.DefaultJDBCJar
	}
	if _, err := os.Stat(jar); err != nil {
		msg := "MariaDB Connector/J not found at " + jar + " (apt-get install libmariadb-java, or set DPSQL_JDBC_JAR); .ci/run installs it"
		if testenv.CI() {
			t.Fatal("required under CI: " + msg)
		}
		t.Skip(msg)
	}
	jdbcShared.once.Do(func() {
		dir, err := os.MkdirTemp("", "dpsql-jdbc-")
		if err != nil {
			jdbcShared.err = err
			return
		}
		jdbcShared.dir = dir
		jdbcShared.j = &clients.JDBC{Jar: jar, WorkDir: dir, Javac: javac, Java: java}
	})
	if jdbcShared.err != nil {
		t.Fatal(jdbcShared.err)
	}
	return jdbcShared.j
}

// jdbcShared is the test process's one Connector/J runner: its program is
// compiled once (javac took ~3 s of CPU a time, once for every test that
// drove Connector/J) in a directory TestMain removes. A runner is safe
// for concurrent use (Compile locks; each Run starts a JVM of its own).
var jdbcShared struct {
	once sync.Once
	dir  string
	j    *clients.JDBC
	err  error
}
