package integration

import (
	"os"
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
	return &clients.JDBC{Jar: jar, WorkDir: t.TempDir(), Javac: javac, Java: java}
}
