package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// link matches a Markdown inline link's target: [text](target).
var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// markdownFiles returns README.md and every docs/*.md, relative to root.
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md"}
	for _, f := range files {
		out = append(out, filepath.Join("docs", filepath.Base(f)))
	}
	return out
}

// outsideFences returns the lines of a Markdown text with the lines of
// fenced code blocks blanked (so that line numbers stay right).
func outsideFences(text string) []string {
	lines := strings.Split(text, "\n")
	fenced := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			lines[i] = ""
			continue
		}
		if fenced {
			lines[i] = ""
		}
	}
	return lines
}

// TestLinks: every relative link of README.md and of the documents here
// leads to a file of the repository and, when it names an anchor of a
// Markdown file, to one of that file's headings (after the README moved
// its reference sections here, links into it must follow them).
func TestLinks(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, rel := range markdownFiles(t, root) {
		data, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range outsideFences(string(data)) {
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				file, frag, _ := strings.Cut(target, "#")
				path := filepath.Join(root, rel) // a bare #anchor: this file
				if file != "" {
					path = filepath.Join(root, filepath.Dir(rel), file)
				}
				where := rel + ":" + strconv.Itoa(i+1)
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s links to %s, which does not exist", where, target)
					continue
				}
				if frag == "" || !strings.HasSuffix(path, ".md") {
					continue
				}
				if _, anchors := headings(t, path); !anchors[frag] {
					t.Errorf("%s links to %s: no heading of %s has the anchor %q", where, target, file, frag)
				}
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d links checked: the pattern or the walk is broken", checked)
	}
}

// readmeTestCommand returns the command of the sh block under README's
// "## Tests" heading.
func readmeTestCommand(t *testing.T, readme string) string {
	t.Helper()
	_, after, ok := strings.Cut(readme, "\n## Tests\n")
	if !ok {
		t.Fatal(`README.md has no "## Tests" section`)
	}
	_, block, ok := strings.Cut(after, "```sh\n")
	if !ok {
		t.Fatal(`README.md's "Tests" section has no sh block`)
	}
	cmd, _, _ := strings.Cut(block, "\n")
	return strings.TrimSpace(cmd)
}

// TestTestCommand: the one test command README.md gives is exactly the one
// .ci/run runs for the root module, and it sets a timeout (go test's
// default of 10 minutes per package is too short for integration on a
// loaded 2-core machine).
func TestTestCommand(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := readmeTestCommand(t, string(readme))
	if !strings.HasPrefix(cmd, "go test ") || !strings.Contains(cmd, "-timeout ") || !strings.HasSuffix(cmd, " ./...") {
		t.Errorf("README's test command %q: want go test with a -timeout over ./...", cmd)
	}
	runs := false
	for _, l := range strings.Split(string(ci), "\n") {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, "#") && (l == cmd || strings.HasPrefix(l, cmd+" ")) {
			runs = true
		}
	}
	if !runs {
		t.Errorf(".ci/run does not run README's test command %q verbatim", cmd)
	}
}
