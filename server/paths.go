package server

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/dolthub/vitess/go/mysql"

	"github.com/dpsql/dpsql/server/config"
)

// pathScrubber hides the server's own directories in the error messages
// governed users (analysts) receive: where the ledger, the data files and
// the keys are is not theirs to know (a ledger error showed the absolute
// data directory). Each path is replaced by "<server path>" wherever it
// starts a path in the message.
type pathScrubber struct {
	paths []string // longest first, so that a directory's subdirectory is replaced whole
}

// newPathScrubber returns a scrubber of paths, each also in its absolute
// and symlink-free forms; the root and relative names are ignored.
func newPathScrubber(paths []string) *pathScrubber {
	seen := map[string]bool{}
	add := func(p string) {
		p = filepath.Clean(p)
		if !filepath.IsAbs(p) || len(p) < 2 || p == string(filepath.Separator) {
			return
		}
		seen[p] = true
	}
	for _, p := range paths {
		if p == "" {
			continue
		}
		if abs, err := filepath.Abs(p); err == nil {
			add(abs)
			if real, err := filepath.EvalSymlinks(abs); err == nil {
				add(real)
			}
		}
	}
	s := &pathScrubber{}
	for p := range seen {
		s.paths = append(s.paths, p)
	}
	sort.Slice(s.paths, func(i, j int) bool {
		if len(s.paths[i]) != len(s.paths[j]) {
			return len(s.paths[i]) > len(s.paths[j])
		}
		return s.paths[i] < s.paths[j]
	})
	return s
}

// scrub returns msg with every server path replaced.
func (s *pathScrubber) scrub(msg string) string {
	if s == nil {
		return msg
	}
	for _, p := range s.paths {
		msg = strings.ReplaceAll(msg, p, "<server path>")
	}
	return msg
}

// scrubError returns err with its message scrubbed: a MySQL error keeps
// its number and state; another error whose text names a server path
// becomes error 1105 (what go-mysql-server makes of it) with the scrubbed
// text, and is returned unchanged otherwise.
func (s *pathScrubber) scrubError(err error) error {
	if s == nil || err == nil {
		return err
	}
	var se *mysql.SQLError
	if errors.As(err, &se) {
		msg := s.scrub(se.Message)
		if msg == se.Message {
			return err
		}
		out := *se
		out.Message = msg
		return &out
	}
	if msg := s.scrub(err.Error()); msg != err.Error() {
		return mysql.NewSQLError(mysql.ERUnknownError, mysql.SSUnknownSQLState, "%s", msg)
	}
	return err
}

// serverPaths are the directories and files of a governed server's
// configuration that analysts must not see: the data directory, the
// configuration's directory, the datasets' files and the TLS files, the
// working directory and the executable's, and the home directory.
func serverPaths(cfg *config.Config) []string {
	paths := []string{cfg.DataDir}
	if cfg.Path != "" {
		paths = append(paths, cfg.Path, filepath.Dir(cfg.Path))
	}
	for _, d := range cfg.Datasets {
		paths = append(paths, d.File, filepath.Dir(d.File))
	}
	if cfg.TLS != nil {
		paths = append(paths, cfg.TLS.Cert, cfg.TLS.Key, filepath.Dir(cfg.TLS.Cert), filepath.Dir(cfg.TLS.Key))
	}
	if wd, err := os.Getwd(); err == nil {
		paths = append(paths, wd)
	}
	if exe, err := os.Executable(); err == nil {
		paths = append(paths, filepath.Dir(exe))
	}
	if home, err := os.UserHomeDir(); err == nil {
		paths = append(paths, home)
	}
	return paths
}
