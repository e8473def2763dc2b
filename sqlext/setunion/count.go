package setunion

import "math"

// AddIDCount records that the user with id u (from UserID) holds item c
// times: the builder's state is then the one c calls of AddID(u, item)
// reach (the pair's count saturates at 2³²−1 either way: saturating sums
// of non-negative counts do not depend on how they are split), so its
// release is the same for the same random source. It is for inputs that
// arrive already grouped, such as a database's GROUP BY (dpsql's push-down
// releases). c < 1 adds nothing.
func (b *Builder) AddIDCount(u uint32, item []byte, c int64) {
	if c < 1 {
		return
	}
	i := b.item(item)
	for c > 0 {
		n := min(c, math.MaxUint32)
		b.add(u, i, uint32(n))
		c -= n
	}
}
