package setunion

import (
	"fmt"
	"math"
)

// MaxSingleItemTable bounds the calibration table of single_item: π(n) for
// n = 0 … n*, about (2/ε)·ln(1 + (e^ε − 1)/(2δ)) entries. Parameters that
// need more are refused before anything is computed (ε = 1e-8 with
// δ = 1e-12 would need 1.7·10⁹ entries, 27 GB, and crashed a server).
const MaxSingleItemTable = 1_000_000

// checkCost refuses options whose calibration would be unreasonably
// costly, with an error saying which parameter to change.
func (o Options) checkCost() error {
	if o.Mechanism == SingleItem {
		if n := singleItemEntries(o.Epsilon, o.Delta); n > MaxSingleItemTable {
			return fmt.Errorf("single_item with epsilon=%g and delta=%g needs a calibration table of about %.3g entries, more than %d: raise epsilon or delta", o.Epsilon, o.Delta, n, MaxSingleItemTable)
		}
	}
	return nil
}

// singleItemEntries estimates the length of singleItemTable(eps, delta):
// π grows as δ·(e^(εn) − 1)/(e^ε − 1) until ½, and 1 − π shrinks
// symmetrically after, so n* ≈ 2·ln(1 + (e^ε − 1)/(2δ))/ε.
func singleItemEntries(eps, delta float64) float64 {
	return 2 * math.Log1p(math.Expm1(eps)/(2*delta)) / eps
}
