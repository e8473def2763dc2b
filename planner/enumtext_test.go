package planner_test

import "testing"

// TestEnumTextWithView: MySQL Connector/J's getTables query (CASE … ELSE
// TABLE_TYPE END over information_schema.tables, ordered by it) works when
// the database holds a view; go-mysql-server v0.20.0 alone panics in
// EnumToString (dolt#9347). The same for a CASE over TABLE_TYPE in a
// subquery.
func TestEnumTextWithView(t *testing.T) {
	e := newPolicyEngine(t, &fakeGov{budget: 1})
	if _, err := query(t, e, "root", "CREATE VIEW cheap AS SELECT name FROM pages WHERE n < 2"); err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]string{
		"SELECT TABLE_SCHEMA AS TABLE_CAT, NULL AS TABLE_SCHEM, TABLE_NAME, CASE WHEN TABLE_TYPE='BASE TABLE' THEN " +
			"CASE WHEN TABLE_SCHEMA = 'mysql' OR TABLE_SCHEMA = 'performance_schema' THEN 'SYSTEM TABLE' ELSE 'TABLE' END " +
			"WHEN TABLE_TYPE='TEMPORARY' THEN 'LOCAL_TEMPORARY' ELSE TABLE_TYPE END AS TABLE_TYPE, TABLE_COMMENT AS REMARKS " +
			"FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_SCHEMA = 'mydb' AND TABLE_NAME LIKE '%' " +
			"HAVING TABLE_TYPE IN ('TABLE','VIEW',null,null,null) ORDER BY TABLE_TYPE, TABLE_SCHEMA, TABLE_NAME": "mydb,<nil>,pages,TABLE,|mydb,<nil>,visits,TABLE,|mydb,<nil>,cheap,VIEW,VIEW",
		"SELECT * FROM (SELECT TABLE_NAME, CASE WHEN TABLE_TYPE = 'BASE TABLE' THEN 'TABLE' ELSE TABLE_TYPE END AS tt " +
			"FROM information_schema.tables WHERE table_schema = 'mydb') s WHERE tt = 'VIEW'": "cheap,VIEW",
	} {
		for _, user := range []string{"root", "analyst"} {
			rows, err := query(t, e, user, q)
			if err != nil {
				t.Errorf("%s: %s: %v", user, q, err)
				continue
			}
			if got := flat(rows); got != want {
				t.Errorf("%s: %s:\ngot  %s\nwant %s", user, q, got, want)
			}
		}
	}
}
