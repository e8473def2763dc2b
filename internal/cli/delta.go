package cli

import (
	"fmt"
	"io"
	"math"
)

// DeltaWarnAbove is the δ above which the batch commands warn: (ε, δ)-DP
// allows, with probability up to about δ per user, an output that exposes
// that user — say, an item only they hold — so a useful δ is far below
// 1/users; 1e-4 is already large for any data set of more than a few
// thousand users. (The server refuses δ above its configured ceilings
// instead: limits.max_delta, limits.max_budget_delta.)
const DeltaWarnAbove = 1e-4

// WarnDelta prints a warning to w when δ > DeltaWarnAbove, saying what such
// a δ allows in practice. Call it before reading the data; WarnDeltaUsers
// adds what the number of users implies once it is known.
func WarnDelta(w io.Writer, delta float64) {
	if delta > DeltaWarnAbove {
		fmt.Fprintf(w, "WARNING: δ = %g is large (above %g): the release may contain a single user's own items — say, a query only that user made — "+
			"with probability up to about δ per user, that is about %s of all users; choose δ well below 1/users (1e-6 or less is usual)\n",
			delta, DeltaWarnAbove, share(delta))
	}
}

// WarnDeltaUsers prints a warning to w when users > 0 and δ ≥ 1/users: a
// release may then expose about δ·users ≥ 1 users in expectation.
func WarnDeltaUsers(w io.Writer, delta float64, users int) {
	if users <= 0 || delta < 1/float64(users) {
		return
	}
	fmt.Fprintf(w, "WARNING: δ = %g is at least 1/users (%d users): each user's own items may be released with probability up to about δ, "+
		"so about %.3g of the %d users (δ·users) may be exposed; choose δ well below 1/users, e.g. %g\n",
		delta, users, delta*float64(users), users, suggestedDelta(users))
}

// share formats a probability as a percentage or "1 in N".
func share(p float64) string {
	if p >= 0.01 {
		return fmt.Sprintf("%.3g%%", 100*p)
	}
	return fmt.Sprintf("1 in %.0f", 1/p)
}

// suggestedDelta is a power of ten at most 1/(100·users) and at most 1e-6.
func suggestedDelta(users int) float64 {
	return math.Min(1e-6, math.Pow(10, math.Floor(math.Log10(1/(100*float64(users))))))
}
