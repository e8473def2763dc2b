package clients

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Node runs statements through the mysql2 package's promise API: the script
// dpsql_mysql2.js in Dir (integration/node, where `npm ci` installs mysql2
// from package-lock.json). Plain statements use query() (text protocol),
// prepared ones execute() (server-side prepare). BIGINT and DECIMAL arrive
// as exact strings, temporal values as the server's text.
type Node struct {
	Dir  string // the directory with dpsql_mysql2.js and node_modules (required)
	Node string // "" finds node on PATH
}

func (Node) Name() string { return "Node mysql2 (promise API)" }

// Check reports whether mysql2 is installed in Dir.
func (n Node) Check() error {
	if _, err := os.Stat(filepath.Join(n.Dir, "node_modules", "mysql2", "package.json")); err != nil {
		return fmt.Errorf("mysql2 is not installed in %s (run npm ci there): %w", n.Dir, err)
	}
	return nil
}

func (n Node) Run(ctx context.Context, t Target, stmts []Statement) ([]Result, error) {
	if err := n.Check(); err != nil {
		return nil, err
	}
	node := n.Node
	if node == "" {
		node = "node"
	}
	cmd := exec.CommandContext(ctx, node, filepath.Join(n.Dir, "dpsql_mysql2.js"))
	cmd.Dir = n.Dir
	return runJSON(cmd, newRequest(t, stmts))
}
