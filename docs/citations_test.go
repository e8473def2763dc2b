// Package docs_test keeps the citations of the design documents in this
// directory honest: every "docs/<file>.md §N[.M]" or "docs/<file>.md#anchor"
// written in a Go file, in README.md or in a document here must name an
// existing file and heading, a bare "§N" in a document here must name one
// of its own headings, a repository path written in code style in a
// document here must exist, and no Go file may cite the design notes that
// used to live outside the repository.
package docs_test

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// citation matches a cited document, then either an anchor or a list of
// sections ("§2", "§2, §5", "§3.5").
var citation = regexp.MustCompile(`docs/([A-Za-z0-9_-]+\.md)(?:#([A-Za-z0-9_-]+)|((?:\s*,?\s*(?:and\s+)?§[0-9]+(?:\.[0-9]+)*)+))?`)

var sectionRef = regexp.MustCompile(`§([0-9]+(?:\.[0-9]+)*)`)

// codePath matches a path written in code style in a document: `dir/file.go`,
// `dir/sub` (no wildcard, brace or symbol after a dot).
var codePath = regexp.MustCompile("`((?:[a-z0-9_-]+/)+[A-Za-z0-9_-]+(?:\\.(?:go|md|yaml|mod))?)`")

// outside matches citations of the design notes that are no longer kept
// beside the code.
var outside = regexp.MustCompile(`\b(ALGORITHMS\.md|GMS_NOTES|ARCHITECTURE\.md)\b`)

// numbered matches a heading that starts with a section number: "## 3. …"
// or "### 3.5 …".
var numbered = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)*)\.?(?:\s|$)`)

// headings returns the section numbers and GitHub anchors of a Markdown
// file's headings (outside fenced code blocks).
func headings(t *testing.T, path string) (sections, anchors map[string]bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sections, anchors = map[string]bool{}, map[string]bool{}
	fenced := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		if m := numbered.FindStringSubmatch(text); m != nil {
			sections[m[1]] = true
		}
		anchors[anchor(text)] = true
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return sections, anchors
}

// anchor is GitHub's anchor of a heading: lower case, spaces to hyphens,
// punctuation other than '-' and '_' dropped.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestCitations(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	type doc struct{ sections, anchors map[string]bool }
	docs := map[string]*doc{}
	lookup := func(name string) *doc {
		if d, ok := docs[name]; ok {
			return d
		}
		var d *doc
		if _, err := os.Stat(filepath.Join(root, "docs", name)); err == nil {
			d = &doc{}
			d.sections, d.anchors = headings(t, filepath.Join(root, "docs", name))
		}
		docs[name] = d
		return d
	}
	cited := 0
	err = filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if n := e.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		isGo := strings.HasSuffix(path, ".go")
		isDoc := filepath.Dir(rel) == "docs" && strings.HasSuffix(rel, ".md")
		if !isGo && !isDoc && rel != "README.md" {
			return nil
		}
		if rel == filepath.Join("docs", "citations_test.go") {
			return nil // this file describes the syntax
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(data), "\n") {
			where := rel + ":" + strconv.Itoa(i+1)
			if isGo {
				if m := outside.FindString(line); m != "" {
					t.Errorf("%s cites %s, which is not in the repository: cite docs/privacy.md, docs/gms.md or docs/architecture.md", where, m)
				}
			}
			for _, m := range citation.FindAllStringSubmatch(line, -1) {
				cited++
				d := lookup(m[1])
				if d == nil {
					t.Errorf("%s cites docs/%s, which does not exist", where, m[1])
					continue
				}
				if m[2] != "" && !d.anchors[m[2]] {
					t.Errorf("%s cites docs/%s#%s: no heading has that anchor", where, m[1], m[2])
				}
				for _, s := range sectionRef.FindAllStringSubmatch(m[3], -1) {
					if !d.sections[s[1]] {
						t.Errorf("%s cites docs/%s §%s: no heading is numbered %s", where, m[1], s[1], s[1])
					}
				}
			}
			if isDoc {
				for _, p := range codePath.FindAllStringSubmatch(line, -1) {
					// Only paths under one of our top-level directories are
					// ours (go-mysql-server's are written from its module
					// name, go-mysql-server/…).
					top, _, _ := strings.Cut(p[1], "/")
					if fi, err := os.Stat(filepath.Join(root, top)); err != nil || !fi.IsDir() {
						continue
					}
					cited++
					if _, err := os.Stat(filepath.Join(root, p[1])); err != nil {
						t.Errorf("%s names %s, which is not in the repository", where, p[1])
					}
				}
				self := lookup(filepath.Base(rel))
				for _, s := range sectionRef.FindAllStringSubmatch(citation.ReplaceAllString(line, ""), -1) {
					cited++
					if !self.sections[s[1]] {
						t.Errorf("%s refers to §%s: no heading of this file is numbered %s", where, s[1], s[1])
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if cited == 0 {
		t.Fatal("no citation of docs/ found: the walk or the pattern is broken")
	}
}

// TestCitationPattern pins the syntax the citations use.
func TestCitationPattern(t *testing.T) {
	for _, c := range []struct {
		text, file, anchor string
		sections           []string
	}{
		{"(docs/privacy.md §2, §5)", "privacy.md", "", []string{"2", "5"}},
		{"see docs/gms.md §3.5: the", "gms.md", "", []string{"3.5"}},
		{"docs/architecture.md for the layering", "architecture.md", "", nil},
		{"docs/privacy.md#the-privacy-argument", "privacy.md", "the-privacy-argument", nil},
		{"docs/privacy.md §10 and §11.2", "privacy.md", "", []string{"10", "11.2"}},
	} {
		m := citation.FindStringSubmatch(c.text)
		if m == nil || m[1] != c.file || m[2] != c.anchor {
			t.Errorf("%q: got %q", c.text, m)
			continue
		}
		var got []string
		for _, s := range sectionRef.FindAllStringSubmatch(m[3], -1) {
			got = append(got, s[1])
		}
		if strings.Join(got, ",") != strings.Join(c.sections, ",") {
			t.Errorf("%q: sections %v, want %v", c.text, got, c.sections)
		}
	}
	if a := anchor("1. Layers and what each may import"); a != "1-layers-and-what-each-may-import" {
		t.Errorf("anchor: %q", a)
	}
}
