package governance

import (
	"fmt"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/mysql_db"
)

// Account is a MySQL account to install.
type Account struct {
	User string
	// Host is the account host: "localhost" (loopback connections only),
	// "%" (any host) or an exact address.
	Host string
	// Plugin and AuthString are the auth plugin (mysql_native_password or
	// caching_sha2_password) and the authentication string as MySQL stores
	// it (config.PasswordHash).
	Plugin, AuthString string
	Role               Role
	// Databases are the databases an analyst gets SELECT on (ignored for
	// administrators, who get every privilege).
	Databases []string
}

// InstallAccounts puts accounts into db, go-mysql-server's user and grant
// tables, and enables authentication (from then on only these accounts
// can log in; go-mysql-server accepts any login while db is disabled).
//
//   - Administrators get every global static privilege WITH GRANT OPTION
//     (the set of MySQL's root), so they may also CREATE USER and GRANT.
//   - Analysts get SELECT on each of their databases and nothing else: no
//     global privilege (in particular no SELECT on the mysql database,
//     which holds the password hashes), no write, no PROCESS, no SUPER.
//     The one exception is CREATE VIEW on those databases: go-mysql-server
//     v0.20.0 re-binds a view's stored CREATE VIEW statement under the
//     reader's privileges, so without it an analyst could read no view at
//     all (docs/gms.md §3.3). The session guard refuses analysts' CREATE,
//     ALTER and DROP VIEW, so the grant only lets them read views.
//
// db's persister is set to a no-op first (docs/gms.md §4.3: without one, the
// first CREATE USER or GRANT panics): accounts and grants changed with SQL
// last until the server stops, and the configuration is installed again at
// every start.
func InstallAccounts(db *mysql_db.MySQLDb, accounts []Account) error {
	db.SetPersister(&mysql_db.NoopPersister{})
	seen := map[string]bool{}
	for _, a := range accounts {
		if a.User == "" || a.Host == "" {
			return fmt.Errorf("governance: an account needs a user and a host (got %q@%q)", a.User, a.Host)
		}
		k := a.User + "@" + strings.ToLower(a.Host)
		if seen[k] {
			return fmt.Errorf("governance: account %s is given twice", k)
		}
		seen[k] = true
		switch a.Plugin {
		case "mysql_native_password", "caching_sha2_password":
		default:
			return fmt.Errorf("governance: account %s: unsupported auth plugin %q", k, a.Plugin)
		}
		if a.Role != Admin && a.Role != Analyst {
			return fmt.Errorf("governance: account %s: role must be admin or analyst", k)
		}
	}
	ed := db.Editor()
	defer ed.Close()
	for _, a := range accounts {
		u := &mysql_db.User{
			User:                a.User,
			Host:                a.Host,
			Plugin:              a.Plugin,
			AuthString:          a.AuthString,
			PasswordLastChanged: time.Now().UTC(),
		}
		switch a.Role {
		case Admin:
			u.PrivilegeSet = mysql_db.NewPrivilegeSetWithAllPrivileges()
		case Analyst:
			u.PrivilegeSet = mysql_db.NewPrivilegeSet()
			for _, d := range a.Databases {
				u.PrivilegeSet.AddDatabase(d, sql.PrivilegeType_Select, sql.PrivilegeType_CreateView)
			}
		}
		ed.PutUser(u)
	}
	db.SetEnabled(true)
	return nil
}
