// Package checks is the one home of what valid privacy parameters are, so
// that every entry point (the batch commands, SQL options, the server's
// configuration and its ledger) accepts and refuses the same values with
// the same words.
//
//   - ε must be a finite number > 0: ε = 0 releases nothing useful and every
//     calibration divides by it; +Inf and NaN would silently disable noise.
//   - δ of a mechanism must be in (0, 1): every set-union mechanism pays its
//     release threshold with δ > 0, and δ ≥ 1 is no guarantee at all.
//   - δ of a charge or a cap may be 0 (a pure-ε release, or "no cap").
package checks

import (
	"fmt"
	"math"
)

// Epsilon returns an error unless eps is a finite number greater than 0.
func Epsilon(eps float64) error {
	if !(eps > 0) || math.IsInf(eps, 0) {
		return fmt.Errorf("epsilon must be a finite number greater than 0, got %v", eps)
	}
	return nil
}

// Delta returns an error unless 0 < delta < 1.
func Delta(delta float64) error {
	if !(delta > 0 && delta < 1) {
		return fmt.Errorf("delta must be greater than 0 and less than 1, got %v", delta)
	}
	return nil
}

// DeltaOrZero returns an error unless 0 ≤ delta < 1.
func DeltaOrZero(delta float64) error {
	if !(delta >= 0 && delta < 1) {
		return fmt.Errorf("delta must be ≥ 0 and less than 1, got %v", delta)
	}
	return nil
}

// EpsilonOrZero returns an error unless eps is a finite number ≥ 0 (0: a
// cap that is not set).
func EpsilonOrZero(eps float64) error {
	if !(eps >= 0) || math.IsInf(eps, 0) {
		return fmt.Errorf("epsilon must be a finite number ≥ 0, got %v", eps)
	}
	return nil
}
