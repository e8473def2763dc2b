package main

import (
	"crypto/sha256"
	"encoding/hex"
	"runtime"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/internal/testenv"
)

// TestUnionSeededGolden pins the seeded output of `dpsql union` on a real
// corpus: the SHA-256 of the released items of git_rails with --seed 7, as
// the command gave before its batches looked items up in a view of the
// builder's (setunion.Builder.NewBatch) and deduplicated users' lists
// without sorting. Any change to how pairs are interned, grouped or
// numbered that changed the seeded release would change this hash; it must
// hold for every GOMAXPROCS and --workers.
func TestUnionSeededGolden(t *testing.T) {
	in := testenv.DataFile(t, "git_rails.tsv.gz")
	const want = "a97fff0057ee579d7fef0ce4e3a2552189888c559445839d401cc70511766676" // 955 items (since the private Δ0 tests read a fixed two words each)
	for _, c := range []struct {
		procs   int
		workers string
	}{{1, "1"}, {2, "2"}, {2, "5"}} {
		prev := runtime.GOMAXPROCS(c.procs)
		code, out, errOut := runCmd(t, "union", "--input", in, "--user-column", "1", "--text-column", "2",
			"--epsilon", "3", "--delta", "1e-6", "--seed", "7", "--quiet", "--workers", c.workers)
		runtime.GOMAXPROCS(prev)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		sum := sha256.Sum256([]byte(out))
		if got := hex.EncodeToString(sum[:]); got != want {
			t.Errorf("GOMAXPROCS %d, --workers %s: %d items released, SHA-256 %s, want %s (955 items)",
				c.procs, c.workers, len(strings.Fields(out)), got, want)
		}
	}
}
