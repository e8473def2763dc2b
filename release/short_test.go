package release

import "testing"

// trials is the number of random cases a randomised test runs: full in the
// full run, short under -short (the quick lane), where the property is
// still checked on a few cases of each kind (the loops alternate kinds by
// the trial number, so short keeps a multiple of their period).
func trials(full, short int) int {
	if testing.Short() {
		return short
	}
	return full
}
