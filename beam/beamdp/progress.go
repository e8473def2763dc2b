package beamdp

import "sync/atomic"

// Progress is what the pipeline's workers in this process have done so far,
// for progress output while a pipeline runs: on prism, dpsql-beam's default
// runner, the workers run in the launching process (loopback). The counts
// are approximate (a bundle that a runner retries or splits may count
// twice), stay 0 for workers in other processes, and are never a
// statistic: Stats are.
type Progress struct {
	// Files and Bytes are the input files ReadRows has finished and the
	// bytes it has read from them (compressed, as stored).
	Files, Bytes int64
	// Rows is the number of rows ReadRows has parsed.
	Rows int64
	// Users is the number of users grouped (parallel mechanisms) or run
	// through a shard's policy (sequential ones).
	Users int64
	// Items is the number of release decisions made (dp_sips: one per
	// item and round).
	Items int64
}

// live holds this process's counts; see CurrentProgress.
var live struct {
	files, bytes, rows, users, items atomic.Int64
}

// CurrentProgress returns what the workers in this process have done since
// it started (see Progress).
func CurrentProgress() Progress {
	return Progress{
		Files: live.files.Load(),
		Bytes: live.bytes.Load(),
		Rows:  live.rows.Load(),
		Users: live.users.Load(),
		Items: live.items.Load(),
	}
}
