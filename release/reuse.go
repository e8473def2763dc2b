package release

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
)

// Release reuse
//
// An identical release request within a window may be answered with the
// result of the earlier release instead of a new one, at no charge
// (Reuser). This is post-processing: the earlier result o = M(D) has already
// been released to the analyst, and handing out o again is a function of o
// and of data-independent inputs — the request's specification, the query
// history, the configuration, the tables' load generations and the clock —
// so it is as private as o and composes with nothing (Dwork & Roth 2014,
// Proposition 2.1). With a governor that shares releases between analysts
// (governance.ScopeDatabase) the argument holds for the analysts of a
// database together, not for each: an analyst's view then contains releases
// charged to the others, as if they pooled their results, and is bounded by
// the sum of the budgets involved. The decision "reuse or not"
// is visible to the analyst (the Note NoteReused, DP_AUDIT, DP_BUDGET), so
// it must itself depend on none of D: the ReuseKey is built from the
// planned release (Scan.Spec: the table, the canonical encodings of the
// analysed filter and keys — public lookups with their tables' versions —,
// the evaluation limits, and the session variables and day their
// evaluation reads: see "Canonical keys" in canon.go; the mechanism's
// options), never from a row,
// and the governor adds the scope, the table's configuration and its load
// generation (a counter, never a content hash unless an administrator opts
// into generation: content: see server/ledger's reuse.go and
// docs/privacy.md §14).
//
// The stored form is the release's core output (Released): the encoded keys
// a set-union mechanism released, the key and noisy values of each released
// aggregate row, the released n-grams. A reused answer goes through the same
// decoding as the first one, so it is the same rows, bit for bit. The
// operators above a release (ORDER BY, LIMIT, a projection) are not part of
// it: SELECT DISTINCT w FROM t LIMIT 1 reuses SELECT DISTINCT w FROM t.
//
// What stays observable, and is not data-dependent: a release canceled or
// failed after its charge is not stored (so the next request is a new
// release; whether a scan is canceled by a timeout depends on the table's
// size, a timing channel the server has anyway). Two identical requests
// running at once are made once: the later one waits for the first to end
// (Reuse.Done) and is then answered from what it stored, or made anew if
// it failed; whether and how long it waits depends on the other request
// and the clock, not on a row.

// ReuseKey identifies a release for reuse.
type ReuseKey struct {
	// Spec is the canonical description of the release: what it reads, how
	// and with which options (the planner's Spec of the scan plus the
	// mechanism's options). Empty: the release is never reused nor stored.
	Spec string
	// Fresh asks for a new release even if a stored one could be reused
	// (SET dp_reuse = OFF); the new one is stored for later requests.
	Fresh bool
}

// Reuser is implemented by governors that keep released results for
// reuse. ChargeOrReuse either answers reqs (the requests of one release
// node, sharing one ReuseKey) from a stored release — recording the reuse,
// charging nothing — or charges them as Governor.Charge would, and returns
// a Reuse whose Keep stores the new result.
type Reuser interface {
	ChargeOrReuse(ctx *sql.Context, reqs []Request) (*Reuse, error)
}

// Reuse is how a release was obtained.
type Reuse struct {
	// Data is the stored result (a Released in its binary form) when the
	// release is reused; nil for a new release.
	Data []byte
	// At is the time of the original release, Seq the audit sequence
	// number of its first charge (reused releases only).
	At  time.Time
	Seq uint64
	// Store keeps a new release's result (nil: nothing is stored).
	Store func(data []byte) error
	// End, if set, tells the Reuser that the new release ended (kept or
	// failed): identical requests waiting for it go on (Done calls it).
	End func()
}

// Reused reports whether u answers from a stored release.
func (u *Reuse) Reused() bool { return u != nil && u.Data != nil }

// Done ends a new release, after Keep or on failure: an identical request
// that waits for it then reuses what Keep stored, or is made anew. Every
// caller of ChargeOrReuse calls it once the release has ended (nil-safe;
// a second call does nothing).
func (u *Reuse) Done() {
	if u != nil && u.End != nil {
		u.End()
	}
}

// MaxKeptBytes bounds the encoded size of a release Keep stores: a larger
// one (hundreds of thousands of released keys) is not kept, so that the
// ledger's database, synced at every charge, stays small. Whether a release
// is kept then depends on its output o only (its size), a function of what
// was already released: still post-processing.
const MaxKeptBytes = 16 << 20

// Keep stores the result of a new release for later requests. A failure
// to store, or a result above MaxKeptBytes, is not an error of the release
// (it was charged and computed): the next identical request is then a new
// release.
func (u *Reuse) Keep(r Released) {
	if u == nil || u.Store == nil || u.Reused() {
		return
	}
	data, err := r.MarshalBinary()
	if err != nil || len(data) > MaxKeptBytes {
		return
	}
	_ = u.Store(data)
}

// NoteReused is the code of the Note a reused release adds to the
// statement's warnings (MySQL's 1003, the code of its informational notes).
const NoteReused = 1003

// ChargeOrReuse charges the requests of one release node or answers them
// from a stored release when gov keeps them (Reuser), adding the Note
// NoteReused to the session's warnings for a reused one. A nil gov charges
// nothing and stores nothing.
func ChargeOrReuse(ctx *sql.Context, gov Governor, reqs []Request) (*Reuse, error) {
	if gov == nil {
		return &Reuse{}, nil
	}
	ru, ok := gov.(Reuser)
	if !ok {
		return &Reuse{}, Charge(ctx, gov, reqs)
	}
	u, err := ru.ChargeOrReuse(ctx, reqs)
	if err != nil {
		return nil, err
	}
	if u == nil {
		u = &Reuse{}
	}
	if u.Reused() && ctx != nil && ctx.Session != nil {
		ctx.Session.Warn(&sql.Warning{Level: "Note", Code: NoteReused, Message: ReusedNote(u.At, u.Seq)})
	}
	return u, nil
}

// ReusedNote is the text of the Note of a reused release.
func ReusedNote(at time.Time, seq uint64) string {
	return fmt.Sprintf("dpsql: this is the release of %s UTC (audit record %d), returned again at no charge: "+
		"the same release over the same data version within the server's reuse window; SET dp_reuse = OFF for a new, charged release",
		at.UTC().Format("2006-01-02 15:04:05.000000"), seq)
}

// Released is the core output of a release, the form in which it is
// stored for reuse: Sets for set-union releases (SELECT DISTINCT: one set
// of encoded keys; DP_SET_UNION: one set per call), Rows for releases of
// values per key (GROUP BY aggregates: the encoded key and the noisy
// aggregates; DP_NGRAMS: the n-gram and its n).
type Released struct {
	Sets [][]string
	Rows []ReleasedRow
}

// ReleasedRow is a released key with its values.
type ReleasedRow struct {
	Key    string
	Values []float64
}

const releasedFormat = 1

// MarshalBinary encodes r: a format byte, then counts as uvarints, strings
// length-prefixed, values as IEEE 754 bits (so that NaN, ±Inf and the sign
// of zero come back as they were).
func (r Released) MarshalBinary() ([]byte, error) {
	b := []byte{releasedFormat}
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = binary.AppendUvarint(b, uint64(len(r.Sets)))
	for _, set := range r.Sets {
		b = binary.AppendUvarint(b, uint64(len(set)))
		for _, s := range set {
			str(s)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(r.Rows)))
	for _, row := range r.Rows {
		str(row.Key)
		b = binary.AppendUvarint(b, uint64(len(row.Values)))
		for _, v := range row.Values {
			b = binary.BigEndian.AppendUint64(b, math.Float64bits(v))
		}
	}
	return b, nil
}

var errMalformed = errors.New("release: malformed stored release")

// UnmarshalBinary decodes the form of MarshalBinary.
func (r *Released) UnmarshalBinary(b []byte) error {
	if len(b) == 0 || b[0] != releasedFormat {
		return errMalformed
	}
	b = b[1:]
	count := func() (int, bool) {
		n, w := binary.Uvarint(b)
		if w <= 0 || n > uint64(len(b)) { // every element takes at least a byte
			return 0, false
		}
		b = b[w:]
		return int(n), true
	}
	str := func() (string, bool) {
		n, ok := count()
		if !ok || n > len(b) {
			return "", false
		}
		s := string(b[:n])
		b = b[n:]
		return s, true
	}
	*r = Released{}
	nsets, ok := count()
	if !ok {
		return errMalformed
	}
	if nsets > 0 {
		r.Sets = make([][]string, nsets)
	}
	for i := range r.Sets {
		n, ok := count()
		if !ok {
			return errMalformed
		}
		set := make([]string, n)
		for j := range set {
			if set[j], ok = str(); !ok {
				return errMalformed
			}
		}
		r.Sets[i] = set
	}
	nrows, ok := count()
	if !ok {
		return errMalformed
	}
	if nrows > 0 {
		r.Rows = make([]ReleasedRow, nrows)
	}
	for i := range r.Rows {
		k, ok := str()
		if !ok {
			return errMalformed
		}
		n, ok := count()
		if !ok || 8*n > len(b) {
			return errMalformed
		}
		vals := make([]float64, n)
		for j := range vals {
			vals[j] = math.Float64frombits(binary.BigEndian.Uint64(b))
			b = b[8:]
		}
		r.Rows[i] = ReleasedRow{Key: k, Values: vals}
	}
	if len(b) != 0 {
		return errMalformed
	}
	return nil
}
