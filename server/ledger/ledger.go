// Package ledger keeps the privacy budget of every (analyst, database) pair
// on disk, in a bbolt database, and charges each differentially private
// release to it before the release may leave the server.
//
// # Budget model
//
// Each analyst A has, per database D, a budget (ε_B, δ_B) and optional
// per-release caps (ε_max, δ_max) on a release's stated (ε_i, δ_i). A release
// computed over D is differentially private with respect to D, where
// neighbouring databases differ in all rows of one privacy unit. The ledger
// composes A's releases on D with one of two accountings (Options.Accounting,
// per ledger; an account records which it uses):
//
// Basic composition (Basic). The k releases together are
//
//	(ε_1 + … + ε_k,  δ_1 + … + δ_k)-differentially private
//
// (Dwork & Roth 2014, Theorem 3.16; the bound holds when each release is
// chosen after seeing the earlier ones, Rogers, Roth, Ullman & Vadhan 2016).
// A release is accepted only if ε_i ≤ ε_max, δ_i ≤ δ_max (caps, when set) and
//
//	spent_ε + ε_i ≤ ε_B,  spent_δ + δ_i ≤ δ_B      (both components).
//
// zCDP accounting (ZCDP). Releases whose proof allows it (package
// accounting: the Gaussian and Laplace mechanisms of set union, dp_sips
// rounds, the levels of DPNE) are charged their ρ (zero-concentrated DP) and
// the failure probability p of their thresholds, kept apart. An account that
// moves to ZCDP keeps its earlier charges as a fixed basic prefix (ε_p, δ_p),
// and the remaining budget (ε_B − ε_p, δ_B − δ_p) is an accounting.Filter:
// a share of that δ, fixed in advance, pays for the thresholds (Σp), the
// rest converts Σρ to ε (Canonne, Kamath & Steinke 2020). The filter is
// valid for adaptively chosen releases (Feldman & Zrnic 2021 for the ρ; the
// union bound for the thresholds), and the prefix composes with it by basic
// composition, so everything A learns from D is again (ε_B, δ_B)-DP. Default
// releases fit several times more often (44 against 10 for ε = 1, δ = 1e-6
// in a budget of (10, 1e-5)). Releases without a zCDP account (single_item,
// unproven mechanisms) are refused on a ZCDP account. Every account keeps the
// sums of the stated (ε, δ) too (Balance.Basic): moving an account back to
// Basic charges everything as basic composition would have.
//
// Budgets are separate per database and per analyst: a person present in two
// databases, or analysts who pool their results, compose further (the sum of
// the budgets involved).
//
// # Exact arithmetic
//
// ε and δ arrive as float64. The ledger converts each to the shortest decimal
// that round-trips it (what the analyst typed: SET dp_epsilon = 0.1 charges
// exactly 1/10) and keeps budgets and sums as exact rationals, so ten
// charges of 0.1 exhaust a budget of 1 exactly and three charges of 0.1 fit
// a budget of 0.3 (float64 addition would refuse the third). The decimal and
// the float64 used for calibration differ by less than one unit in the last
// place (relative 1.1e-16), far below any meaningful privacy difference.
//
// # Durability
//
// Charge checks and records a release in one bbolt read-write transaction,
// committed with fdatasync before it returns; the audit record (time,
// analyst, database, ε, δ, description) is written in the same transaction,
// so the spent totals always equal the sum of the audit records of charges
// (the records of reused releases, Record.Reused, charge nothing). A process
// killed at any point leaves either the whole charge or none of it. The
// server must call Charge before it touches the data of a release and send
// nothing if Charge fails; a crash between the charge and the release then
// loses budget, never privacy (docs/privacy.md §10).
//
// bbolt locks the ledger file exclusively (flock), so a second dpsql process
// on the same data directory fails to open it after Options.LockTimeout.
//
// # Release reuse and load generations
//
// The ledger also keeps the released results of recent releases (Keep,
// Reuse) so that an identical request within a window is answered again at
// no charge, and the load generation of every protected table
// (LoadGeneration), which is part of what makes two requests identical.
// Why reuse costs no privacy, and why a generation must never depend on the
// data's content, is argued in reuse.go.
package ledger

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// FileName is the name of the ledger file inside the data directory.
const FileName = "ledger.db"

// DefaultLockTimeout is how long Open waits for another process to release
// the ledger file when Options.LockTimeout is zero.
const DefaultLockTimeout = 2 * time.Second

// MaxDescription is the longest description (in bytes) kept in an audit
// record; longer ones are cut at a UTF-8 boundary and the SHA-256 of the
// full text is kept alongside.
const MaxDescription = 1024

// formatVersion is the layout version stored in the meta bucket. Format 2
// added the buckets of release reuse and load generations (reuse.go) and
// audit records of reused releases, which format-1 readers would count as
// charges; Open upgrades a format-1 ledger in place.
const formatVersion = 2

var (
	bucketMeta     = []byte("meta")
	bucketAccounts = []byte("accounts") // analyst (nested bucket) -> database key -> account JSON
	bucketAudit    = []byte("audit")    // big-endian sequence -> record JSON
	keyVersion     = []byte("format")
)

// Errors a charge can fail with; test with errors.Is. The error returned is a
// *ChargeError whose message says what was asked, what remains and what to do.
var (
	// ErrNoBudget: the analyst has no budget on the database (not in the
	// configuration, or removed from it).
	ErrNoBudget = errors.New("no privacy budget")
	// ErrBudgetExceeded: the release needs more than what remains.
	ErrBudgetExceeded = errors.New("privacy budget exceeded")
	// ErrCapExceeded: the release asks for more than one release may use.
	ErrCapExceeded = errors.New("per-release privacy cap exceeded")
	// ErrInUse: another process holds the ledger file.
	ErrInUse = errors.New("ledger in use by another process")
)

// Amount is a privacy cost or allowance (ε, δ).
type Amount struct {
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
}

func (a Amount) String() string {
	return "ε=" + fmtFloat(a.Epsilon) + ", δ=" + fmtFloat(a.Delta)
}

// Limit is the allowance of one analyst on one database, as configured.
type Limit struct {
	Analyst  string
	Database string
	// Budget is the total (ε, δ) the analyst may spend on the database over
	// the lifetime of the ledger. ε must be finite and > 0, δ in [0, 1).
	Budget Amount
	// MaxRelease caps the (ε, δ) of a single release; a zero component means
	// no cap on that component besides the budget.
	MaxRelease Amount
}

// Balance is the state of one (analyst, database) account.
type Balance struct {
	Analyst  string `json:"analyst"`
	Database string `json:"database"`
	// Budget is the configured allowance (zero once the account is removed
	// from the configuration).
	Budget Amount `json:"budget"`
	// Accounting is how the account is charged: Basic or ZCDP.
	Accounting Method `json:"accounting"`
	// Spent is what the releases used of the budget under the account's
	// accounting: under basic composition the sums of their (ε, δ); under
	// zCDP the ε their ρ converts to (plus the basic prefix) and the δ their
	// thresholds cost (plus the prefix's).
	Spent Amount `json:"spent"`
	// Remaining is what is left under the account's accounting, never
	// below zero (a budget lowered below what was spent leaves nothing);
	// under zCDP, its δ is what is left for thresholds.
	Remaining Amount `json:"remaining"`
	// Basic is the sum of the releases' stated (ε, δ): what basic
	// composition says they cost, whatever the accounting.
	Basic Amount `json:"basic"`
	// MaxRelease is the per-release cap (zero component: none).
	MaxRelease Amount `json:"max_release"`
	// Releases counts the charges.
	Releases int64 `json:"releases"`
	// LastCharge is the time of the latest charge (zero if none).
	LastCharge time.Time `json:"last_charge,omitzero"`
	// Configured is false for accounts that were removed from the
	// configuration; they keep their history but cannot be charged.
	Configured bool `json:"configured"`
}

// Meta describes a release for the audit trail.
type Meta struct {
	// Description is what was released, typically the query text. It is cut
	// to MaxDescription bytes (the SHA-256 of the full text is kept).
	Description string
	// Mechanism names the mechanism (setunion.Mechanism string), if any.
	Mechanism string
	// Connection is the MySQL connection id, if any.
	Connection uint32
	// Function and Table say what was released (SELECT DISTINCT,
	// DP_SET_UNION, … over database.Table), if known.
	Function, Table string
}

// Record is one audit record: a charge as it was committed.
type Record struct {
	Seq      uint64    `json:"seq"`
	Time     time.Time `json:"time"`
	Analyst  string    `json:"analyst"`
	Database string    `json:"database"`
	Epsilon  float64   `json:"epsilon"`
	Delta    float64   `json:"delta"`
	// Description is the (possibly cut) description of Meta; DescriptionSHA256
	// is the hex SHA-256 of the full description when it was cut.
	Description       string `json:"description,omitempty"`
	DescriptionSHA256 string `json:"description_sha256,omitempty"`
	Mechanism         string `json:"mechanism,omitempty"`
	Connection        uint32 `json:"connection,omitempty"`
	// Function and Table are those of Meta (empty in records written
	// before format 2).
	Function string `json:"function,omitempty"`
	Table    string `json:"table,omitempty"`
	// Reused marks the record of a release answered again from the
	// stored result of the release recorded under ReusedSeq (Reuse): it
	// charged nothing, and Epsilon and Delta are the stored release's.
	Reused    bool   `json:"reused,omitempty"`
	ReusedSeq uint64 `json:"reused_seq,omitempty"`
	// Rho and ThresholdFail are the release's zCDP cost, when it was
	// charged under ZCDP.
	Rho           float64 `json:"rho,omitempty"`
	ThresholdFail float64 `json:"threshold_fail,omitempty"`
}

// Receipt is returned by a successful Charge.
type Receipt struct {
	// Seq is the audit sequence number of the charge (increasing).
	Seq uint64
	// Time is the time stamped on its audit record.
	Time time.Time
	// Balance is the account after the charge.
	Balance Balance
}

// Options configures Open.
type Options struct {
	// LockTimeout is how long to wait for the exclusive lock on the ledger
	// file; zero means DefaultLockTimeout.
	LockTimeout time.Duration
	// Now returns the time stamped on audit records; nil means time.Now.
	Now func() time.Time
	// Accounting is how SetLimits makes the configured accounts charge (the
	// zero value: Basic).
	Accounting Accounting
}

// Method is an accounting method.
type Method string

// The accounting methods.
const (
	// Basic charges every release its stated (ε, δ) and accepts it while
	// the sums stay within the budget (basic composition).
	Basic Method = "basic"
	// ZCDP charges the releases whose proof allows it in approximate zCDP
	// (accounting.Filter): their ρ adds up and converts to ε at a share of
	// δ fixed in advance, their thresholds' failure probabilities take the
	// rest of δ. Releases without a zCDP account (single_item, unproven
	// mechanisms) are refused on such an account.
	ZCDP Method = "zcdp"
)

// Accounting configures the accounting of a ledger's accounts.
type Accounting struct {
	// Method is Basic (the zero value) or ZCDP.
	Method Method
	// ThresholdShare is ZCDP's share of δ for the thresholds (0:
	// accounting.DefaultThresholdShare).
	ThresholdShare float64
}

func (a Accounting) method() Method {
	if a.Method == "" {
		return Basic
	}
	return a.Method
}

// Ledger is an open ledger. Its methods are safe for concurrent use; charges
// are serialised by bbolt's single writer.
type Ledger struct {
	db   *bolt.DB
	grp  *group // group commit of charges and stored releases (group.go)
	path string
	now  func() time.Time
	acct Accounting
}

// Open opens (creating if needed) the ledger in directory dir. It fails with
// an error wrapping ErrInUse if another process holds the ledger.
func Open(dir string, o Options) (*Ledger, error) {
	if dir == "" {
		return nil, errors.New("ledger: no data directory given")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("ledger: cannot create data directory: %w", err)
	}
	timeout := o.LockTimeout
	if timeout <= 0 {
		timeout = DefaultLockTimeout
	}
	path := filepath.Join(dir, FileName)
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout})
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return nil, fmt.Errorf("ledger: %w: could not lock %s within %v; another dpsql is using data directory %s: stop it or choose another data directory", ErrInUse, path, timeout, dir)
		}
		return nil, fmt.Errorf("ledger: open %s: %w", path, err)
	}
	switch o.Accounting.method() {
	case Basic, ZCDP:
	default:
		db.Close()
		return nil, fmt.Errorf("ledger: unknown accounting method %q: use %q or %q", o.Accounting.Method, Basic, ZCDP)
	}
	l := &Ledger{db: db, grp: newGroup(db), path: path, now: o.Now, acct: o.Accounting}
	if l.now == nil {
		l.now = time.Now
	}
	err = db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		if v := meta.Get(keyVersion); v != nil {
			n, _ := strconv.Atoi(string(v))
			if n < 1 || n > formatVersion {
				return fmt.Errorf("ledger format %q is not supported by this dpsql (it reads formats 1 to %d); use the dpsql version that wrote it", v, formatVersion)
			}
		}
		if err := meta.Put(keyVersion, []byte(strconv.Itoa(formatVersion))); err != nil {
			return err
		}
		for _, name := range [][]byte{bucketReuse, bucketReuseTime, bucketGenerations} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		if _, err := tx.CreateBucketIfNotExists(bucketAccounts); err != nil {
			return err
		}
		_, err = tx.CreateBucketIfNotExists(bucketAudit)
		return err
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("ledger: %s: %w", path, err)
	}
	return l, nil
}

// Path returns the ledger file's path.
func (l *Ledger) Path() string { return l.path }

// Close closes the ledger and releases its lock.
func (l *Ledger) Close() error { return l.db.Close() }

// account is the stored form of an account. Amounts are exact rationals
// (big.Rat text, e.g. "3/10").
type account struct {
	Analyst     string    `json:"analyst"`
	Database    string    `json:"database"`
	BudgetEps   string    `json:"budget_epsilon"`
	BudgetDelta string    `json:"budget_delta"`
	CapEps      string    `json:"max_release_epsilon"`
	CapDelta    string    `json:"max_release_delta"`
	SpentEps    string    `json:"spent_epsilon"`
	SpentDelta  string    `json:"spent_delta"`
	Releases    int64     `json:"releases"`
	LastCharge  time.Time `json:"last_charge,omitzero"`
	Configured  bool      `json:"configured"`
	// Method is the account's accounting ("" in ledgers written before
	// accounting methods: Basic).
	Method Method `json:"accounting,omitempty"`
	// Under ZCDP: the basic-composition prefix (the spent sums when the
	// account moved to ZCDP, fixed since), the audit sequence number then,
	// and the sums of ρ and of the thresholds' failure probabilities of the
	// releases charged since.
	PrefixEps     string  `json:"prefix_epsilon,omitempty"`
	PrefixDelta   string  `json:"prefix_delta,omitempty"`
	PrefixSeq     uint64  `json:"prefix_seq,omitempty"`
	Rho           float64 `json:"rho,omitempty"`
	ThresholdFail float64 `json:"threshold_fail,omitempty"`
	// ThresholdShare is the share of δ for the thresholds the account's
	// zCDP sequence composes under (accounting.Filter), stored when the
	// sequence starts: the filter's stopping region must be fixed before
	// the first release, so a changed accounting.threshold_share applies
	// only to an account without zCDP releases yet (0 in ledgers written
	// before it was stored: SetLimits stores the configured share).
	ThresholdShare float64 `json:"threshold_share,omitempty"`
}

// freshZCDP reports whether a zCDP account has charged no release since
// its prefix: its filter has not started, and may still take another
// share.
func (a account) freshZCDP() bool { return a.Rho == 0 && a.ThresholdFail == 0 }

func (a account) method() Method {
	if a.Method == "" {
		return Basic
	}
	return a.Method
}

// MaxPreviewRepeats bounds Preview.Repeats.
const MaxPreviewRepeats = 10_000
