package integration

import (
	"os"
	"reflect"
	"testing"

	"github.com/dpsql/dpsql/integration/clients"
	"github.com/dpsql/dpsql/internal/testenv"
)

// jdbcRunner returns the Connector/J runner, skipping (failing under CI)
// when javac, java or the Debian driver jar is missing.
func jdbcRunner(t *testing.T) *clients.JDBC {
	t.Helper()
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

// jdbcMetadata are the DatabaseMetaData calls DBeaver and Metabase make when
// they connect and browse a database (Metabase's sql-jdbc sync asks for
// these table types; DBeaver lists catalogs, then tables, columns, keys).
func jdbcMetadata(db string) []clients.Statement {
	return []clients.Statement{
		clients.Meta("getDatabaseInfo"),
		clients.Meta("getCatalogs"),
		clients.Meta("getSchemas"),
		clients.Meta("getTables", db, nil, "%", []string{"TABLE", "PARTITIONED TABLE", "VIEW", "FOREIGN TABLE", "MATERIALIZED VIEW", "EXTERNAL TABLE"}),
		clients.Meta("getColumns", db, nil, "items", "%"),
		clients.Meta("getPrimaryKeys", db, nil, "items"),
		clients.Meta("getIndexInfo", db, nil, "items"),
		clients.Meta("getImportedKeys", db, nil, "items"),
	}
}

// TestJDBCPlainGMS runs the common statements and the metadata calls in one
// JVM against the plain go-mysql-server. The database has a view: MariaDB
// Connector/J's getTables query lists it, where MySQL Connector/J's makes
// go-mysql-server v0.20.0 panic (see TestReplayPlainGMS).
func TestJDBCPlainGMS(t *testing.T) {
	j := jdbcRunner(t)
	target := startPlainGMS(t, plainOptions{View: true})
	stmts := append(append([]clients.Statement{}, commonStatements...), jdbcMetadata(plainDB)...)
	res := runClient(t, j, target, stmts)
	checkCommon(t, res[:len(commonStatements)], true)
	meta := res[len(commonStatements):]
	for i, r := range meta {
		t.Logf("%v → columns %v rows %q error %v", stmts[len(commonStatements)+i], r.Columns, r.Cells(), r.Error)
		if r.Error != nil {
			t.Errorf("%v: %v", stmts[len(commonStatements)+i], r.Error)
		}
	}
	if got := meta[1].Column("TABLE_CAT"); !containsString(got, plainDB) {
		t.Errorf("getCatalogs: %q does not list %s", got, plainDB)
	}
	if got, types := meta[3].Column("TABLE_NAME"), meta[3].Column("TABLE_TYPE"); !reflect.DeepEqual(got, []string{"items", "cheap_items"}) ||
		!reflect.DeepEqual(types, []string{"TABLE", "VIEW"}) {
		t.Errorf("getTables: got %q of types %q, want [items cheap_items] of types [TABLE VIEW]", got, types)
	}
	if got := meta[4].Column("COLUMN_NAME"); !reflect.DeepEqual(got, []string{"id", "name", "price", "note", "added"}) {
		t.Errorf("getColumns: got %q", got)
	}
	// Connector/J reads keys from information_schema.STATISTICS, which the
	// plain go-mysql-server's memory tables leave empty (SHOW INDEX too), so
	// getPrimaryKeys and getIndexInfo list nothing there.
	if got := meta[5].Column("COLUMN_NAME"); len(got) != 0 && !reflect.DeepEqual(got, []string{"id"}) {
		t.Errorf("getPrimaryKeys: got %q, want [id] or nothing", got)
	} else if len(got) == 0 {
		t.Logf("getPrimaryKeys lists no key: information_schema.STATISTICS is empty on the plain server")
	}
	wantLoginRefused(t, j, target)
}

func TestJDBCTLSPlainGMS(t *testing.T) { wantTLSOnly(t, jdbcRunner(t)) }

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
