package docs_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// modulePath is the root module's path; packages under it (the Beam
// module's included) are "ours" and written relative to it.
const modulePath = "github.com/dpsql/dpsql"

// importRow is one row of architecture.md's import table: a package, the
// packages of ours it imports and the third-party modules it imports from.
type importRow struct {
	line  int
	pkg   string
	ours  []string
	third []string
}

var codeSpan = regexp.MustCompile("`([^`]+)`")

// importTable reads the table of section 1 of architecture.md: its rows
// are "| layer | `package` | what it is | imports of ours | third-party |",
// with the paths in code spans and "—" for none.
func importTable(t *testing.T, path string) []importRow {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []importRow
	in := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			in = strings.HasPrefix(line, "## 1. ")
			continue
		case !in || !strings.HasPrefix(line, "| "):
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 5 {
			t.Fatalf("%s:%d: %d cells, want 5 (layer, package, what it is, imports of ours, third-party)", path, n, len(cells))
		}
		pkg := spans(cells[1])
		if len(pkg) != 1 {
			continue // the header
		}
		rows = append(rows, importRow{line: n, pkg: pkg[0], ours: spans(cells[3]), third: spans(cells[4])})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// spans returns the code spans of a table cell, sorted.
func spans(cell string) []string {
	var out []string
	for _, m := range codeSpan.FindAllStringSubmatch(cell, -1) {
		out = append(out, m[1])
	}
	slices.Sort(out)
	return out
}

// listedPackage is what go list says of one package.
type listedPackage struct {
	ImportPath string
	Imports    []string
	Standard   bool
	DepOnly    bool
	Module     *struct{ Path string }
}

// goImports runs go list -deps in dir and returns, for each package of
// ours there (relative to modulePath), the packages of ours it imports and
// the third-party modules it imports from (their paths without
// "github.com/"), sorted; test files are not counted.
func goImports(dir string) (map[string]importRow, error) {
	cmd := exec.Command("go", "list", "-deps", "-json", "./...")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, errors.New("go list: " + err.Error() + ": " + stderr.String())
	}
	all := map[string]listedPackage{}
	var mine []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
		all[p.ImportPath] = p
		if !p.DepOnly {
			mine = append(mine, p)
		}
	}
	rows := map[string]importRow{}
	for _, p := range mine {
		r := importRow{pkg: strings.TrimPrefix(p.ImportPath, modulePath+"/")}
		for _, imp := range p.Imports {
			q, ok := all[imp]
			switch {
			case !ok || q.Standard:
			case strings.HasPrefix(imp, modulePath+"/"):
				r.ours = append(r.ours, strings.TrimPrefix(imp, modulePath+"/"))
			case q.Module != nil:
				if m := strings.TrimPrefix(q.Module.Path, "github.com/"); !slices.Contains(r.third, m) {
					r.third = append(r.third, m)
				}
			}
		}
		slices.Sort(r.ours)
		slices.Sort(r.third)
		rows[r.pkg] = r
	}
	return rows, nil
}

// TestImportTable: docs/architecture.md's import table is what go list
// says. Every package of the root and the Beam module has a row; a row's
// imports of ours and third-party modules are exactly the package's
// (non-test) imports; every import of ours is a package of an earlier row,
// so that the table's order is a layering no import runs back up; and no
// package imports its parent.
func TestImportTable(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	doc := filepath.Join(root, "docs", "architecture.md")
	rows := importTable(t, doc)
	if len(rows) < 20 {
		t.Fatalf("only %d rows read from the import table of %s: the table or its parser changed", len(rows), doc)
	}
	got, err := goImports(root)
	if err != nil {
		t.Fatal(err)
	}
	if beam, err := goImports(filepath.Join(root, "beam")); err != nil {
		if os.Getenv("DPSQL_CI") != "" {
			t.Fatalf("the Beam module: %v", err)
		}
		t.Logf("the Beam module's rows are not checked (its modules are not downloaded?): %v", err)
		rows = slices.DeleteFunc(rows, func(r importRow) bool { return strings.HasPrefix(r.pkg, "beam/") })
	} else {
		for p, r := range beam {
			got[p] = r
		}
	}
	seen := map[string]bool{}
	for _, r := range rows {
		where := "architecture.md:" + strconv.Itoa(r.line)
		g, ok := got[r.pkg]
		switch {
		case seen[r.pkg]:
			t.Errorf("%s: %s has two rows", where, r.pkg)
		case !ok:
			t.Errorf("%s: %s is not a package (go list)", where, r.pkg)
		default:
			if !slices.Equal(r.ours, g.ours) {
				t.Errorf("%s: %s imports of ours: the table says %s, go list %s", where, r.pkg, cell(r.ours), cell(g.ours))
			}
			if !slices.Equal(r.third, g.third) {
				t.Errorf("%s: %s third-party modules: the table says %s, go list %s", where, r.pkg, cell(r.third), cell(g.third))
			}
			for _, imp := range g.ours {
				if !seen[imp] {
					t.Errorf("%s: %s imports %s, which has no row above it: the layering runs back up", where, r.pkg, imp)
				}
				if parent := filepath.Dir(r.pkg); imp == parent {
					t.Errorf("%s: %s imports its parent %s", where, r.pkg, imp)
				}
			}
		}
		seen[r.pkg] = true
	}
	for p, g := range got {
		if !seen[p] {
			t.Errorf("%s has no row in the import table of architecture.md; add:\n| LAYER | `%s` | WHAT IT IS | %s | %s |", p, p, cell(g.ours), cell(g.third))
		}
	}
}

// cell writes paths as the table does.
func cell(paths []string) string {
	if len(paths) == 0 {
		return "—"
	}
	return "`" + strings.Join(paths, "`, `") + "`"
}

// testedImports is what go list says of one package with its tests.
type testedImports struct {
	ImportPath                         string
	Imports, TestImports, XTestImports []string
}

// TestTestImports: with their test files too, no package of the root
// module imports its parent, and neither the tests of release and planner
// nor anything they import pulls in package server (they build their
// engines with package engine and fake governors; what needs the server is
// tested in server or integration), so that those packages are tested as
// the layers they are.
func TestTestImports(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	out := goList(t, root, "list", "-json", "./...")
	dec := json.NewDecoder(bytes.NewReader(out))
	n := 0
	for {
		var p testedImports
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		n++
		parent := filepath.Dir(p.ImportPath)
		for what, imps := range map[string][]string{"imports": p.Imports, "test files import": p.TestImports, "external test files import": p.XTestImports} {
			if parent != modulePath && slices.Contains(imps, parent) {
				t.Errorf("%s: %s its parent %s", p.ImportPath, what, parent)
			}
		}
	}
	if n < 20 {
		t.Fatalf("go list listed only %d packages", n)
	}
	server := modulePath + "/server"
	for _, pkg := range []string{"release", "planner"} {
		deps := strings.Fields(string(goList(t, root, "list", "-test", "-deps", "./"+pkg)))
		if slices.Contains(deps, server) {
			t.Errorf("the tests of %s import %s (go list -test -deps ./%s): build the engine with package engine instead", pkg, server, pkg)
		}
	}
}

// goList runs go with args in dir and returns its standard output.
func goList(t *testing.T, dir string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}
