package sealed

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/internal/testenv"
)

// allowListDoc is the document, relative to the module root, whose table
// between the allow-list markers lists what a release may evaluate (ListDoc
// names it in refusals).
const allowListDoc = "docs/deployment.md"

// TestAllowListDoc: the documented list of what a release may evaluate is
// the allow-list (regenerate the table between the markers with Markdown).
func TestAllowListDoc(t *testing.T) {
	root := testenv.ModuleRoot()
	if root == "" {
		t.Skip("no module root")
	}
	if !strings.HasPrefix(ListDoc, allowListDoc+",") {
		t.Fatalf("ListDoc %q does not name %s", ListDoc, allowListDoc)
	}
	b, err := os.ReadFile(filepath.Join(root, allowListDoc))
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- allow-list begin -->\n", "<!-- allow-list end -->"
	s := string(b)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no %q … %q section", allowListDoc, begin, end)
	}
	if got, want := s[i+len(begin):j], Markdown(); got != want {
		t.Errorf("%s's allow-list is out of date; replace it with:\n%s", allowListDoc, want)
	}
}
