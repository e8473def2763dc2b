package sealed

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/internal/testenv"
)

// TestREADMEAllowList: README's list of what a release may evaluate is
// the allow-list (regenerate the table between the markers with Markdown).
func TestREADMEAllowList(t *testing.T) {
	root := testenv.ModuleRoot()
	if root == "" {
		t.Skip("no module root")
	}
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- allow-list begin -->\n", "<!-- allow-list end -->"
	s := string(b)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("README.md has no %q … %q section", begin, end)
	}
	if got, want := s[i+len(begin):j], Markdown(); got != want {
		t.Errorf("README.md's allow-list is out of date; replace it with:\n%s", want)
	}
}
