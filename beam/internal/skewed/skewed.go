// Package skewed writes generated inputs for the tests of the beam module:
// TSV files of (user, item) rows over a skewed vocabulary, with the core's
// statistics of what was written, so that a test needs no corpus.
package skewed

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dpsql/dpsql/sqlext/securerand"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

// Write writes files TSV files part-NN.tsv under dir: users u0..u{users-1},
// each holding 1 to 8 items w<k> with P(k ≥ x) ≈ 1/x (repetitions
// included), and one row without a user per file. It returns the glob of the
// files, the core's statistics of the input (setunion.Builder.Group) and
// the number of rows. The content depends only on files and users.
func Write(dir string, files, users int) (glob string, st setunion.Stats, rows int64, err error) {
	r := securerand.NewSeeded(3)
	b, err := setunion.NewBuilder(setunion.Defaults())
	if err != nil {
		return "", st, 0, err
	}
	for f := range files {
		var sb strings.Builder
		for u := f; u < users; u += files {
			user := fmt.Sprint("u", u)
			id, _ := b.UserID([]byte(user))
			for range 1 + r.IntN(8) {
				item := fmt.Sprint("w", int(1/(0.001+r.Float64())))
				fmt.Fprintf(&sb, "%s\t%s\n", user, item)
				b.AddID(id, []byte(item))
				rows++
			}
		}
		sb.WriteString("\tno user\n")
		rows++
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("part-%02d.tsv", f)), []byte(sb.String()), 0o644); err != nil {
			return "", st, 0, err
		}
	}
	return filepath.Join(dir, "part-*.tsv"), b.Group(), rows, nil
}
