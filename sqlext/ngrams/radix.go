package ngrams

import (
	"math/bits"
	"slices"

	"github.com/dpsql/dpsql/internal/radix"
)

// sortBelow sorts keys, distinct integers below size, ascending: the same
// order as slices.Sort (for distinct keys every sort gives the same), by an
// LSD radix sort of 11 bits a pass over the bits.Len64(size−1) bits a key
// may have. A level's support indices (up to a few hundred thousand below
// |S_{k−1}|²) sort about ten times faster than by comparisons; short inputs
// are sorted by comparisons. Its work is a function of len(keys) and size.
func sortBelow(keys []uint64, size uint64) {
	if len(keys) < 512 || size == 0 {
		slices.Sort(keys)
		return
	}
	radix.SortBits(keys, 0, bits.Len64(size-1))
}
