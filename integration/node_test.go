package integration

import (
	"path/filepath"
	"testing"

	"github.com/dpsql/dpsql/integration/clients"
	"github.com/dpsql/dpsql/internal/testenv"
)

// nodeRunner returns the mysql2 runner, skipping (failing under CI) when
// node or the npm packages of integration/node are missing.
func nodeRunner(t *testing.T) clients.Node {
	t.Helper()
	externalClient(t, "Node's mysql2")
	n := clients.Node{Node: testenv.Tool(t, "node", "apt-get install nodejs npm"),
		Dir: filepath.Join(testenv.ModuleRoot(), "integration", "node")}
	if err := n.Check(); err != nil {
		if testenv.CI() {
			t.Fatalf("required under CI: %v; .ci/run installs it", err)
		}
		t.Skip(err)
	}
	return n
}
