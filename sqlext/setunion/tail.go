package setunion

// TailBits is k of the release draws' tail: where a release probability is
// known to lie in (0, 2^−TailBits), the first random word decides alone
// unless its top TailBits bits are zero (securerand.BernoulliBelowWord).
const TailBits = tailBits

// TailRange returns lo < hi such that every w in (lo, hi] has 0 < p(w) <
// 2^−TailBits, for p nondecreasing with p(center) large and p(center −
// 2000·scale) tiny (a Gaussian or Laplace release probability with
// threshold center and scale scale), or lo ≥ hi when there is none. It is
// the range the set-union release draws use (tailRange), for the other
// release loops: n-grams' levels.
func TailRange(p func(float64) float64, center, scale float64) (lo, hi float64) {
	return tailRange(p, center, scale)
}
