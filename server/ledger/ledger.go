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
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/dpsql/dpsql/sqlext/accounting"
	"github.com/dpsql/dpsql/sqlext/checks"
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

// ChargeError explains a refused charge. It unwraps to ErrNoBudget,
// ErrBudgetExceeded or ErrCapExceeded.
type ChargeError struct {
	Kind      error
	Analyst   string
	Database  string
	Requested Amount
	// Why says which bound of a zCDP account the release would cross
	// (empty under basic composition).
	Why string
	// Balance is the account at the time of the refusal (zero for
	// ErrNoBudget on an unknown account).
	Balance Balance
}

func (e *ChargeError) Error() string {
	b := e.Balance
	switch e.Kind {
	case ErrNoBudget:
		if b.Analyst != "" && !b.Configured {
			return fmt.Sprintf("no privacy budget: analyst %q no longer has a budget on database %q (removed from the configuration; spent %s); an administrator must add one", e.Analyst, e.Database, b.Spent)
		}
		return fmt.Sprintf("no privacy budget: analyst %q has no budget on database %q; an administrator must add one to the configuration", e.Analyst, e.Database)
	case ErrCapExceeded:
		return fmt.Sprintf("per-release privacy cap exceeded: this release asks for %s but one release on database %q may use at most %s; lower dp_epsilon/dp_delta", e.Requested, e.Database, capString(b.MaxRelease))
	default:
		if b.Accounting == ZCDP {
			return fmt.Sprintf("privacy budget exceeded: this release (%s) does not fit what analyst %q has left on database %q under zCDP accounting: %s (budget %s, spent %s in %d releases, %s by basic composition); lower dp_epsilon/dp_delta or ask an administrator for more budget", e.Requested, e.Analyst, e.Database, e.Why, b.Budget, b.Spent, b.Releases, b.Basic)
		}
		return fmt.Sprintf("privacy budget exceeded: this release needs %s but analyst %q has only %s left on database %q (budget %s, spent %s in %d releases); lower dp_epsilon/dp_delta or ask an administrator for more budget", e.Requested, e.Analyst, b.Remaining, e.Database, b.Budget, b.Spent, b.Releases)
	}
}

// Unwrap returns the kind of refusal.
func (e *ChargeError) Unwrap() error { return e.Kind }

func capString(c Amount) string {
	var parts []string
	if c.Epsilon > 0 {
		parts = append(parts, "ε="+fmtFloat(c.Epsilon))
	}
	if c.Delta > 0 {
		parts = append(parts, "δ="+fmtFloat(c.Delta))
	}
	return strings.Join(parts, ", ")
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
	l := &Ledger{db: db, path: path, now: o.Now, acct: o.Accounting}
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

// storedRecord is the stored form of a Record, with exact amounts.
type storedRecord struct {
	Record
	EpsExact   string `json:"epsilon_exact"`
	DeltaExact string `json:"delta_exact"`
}

// dbKey is the key of a database inside an analyst's bucket: database names
// are case-insensitive, as in go-mysql-server.
func dbKey(database string) []byte { return []byte(strings.ToLower(database)) }

// SetLimits makes limits the configured allowances, in one transaction:
// listed accounts get their budget and caps (keeping what they spent), and
// accounts missing from limits are marked unconfigured (they keep their
// history and can no longer be charged). Call it at start with the
// configuration's budgets.
func (l *Ledger) SetLimits(ctx context.Context, limits []Limit) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, lim := range limits {
		if err := validateLimit(lim); err != nil {
			return err
		}
		k := lim.Analyst + "\x00" + strings.ToLower(lim.Database)
		if seen[k] {
			return fmt.Errorf("ledger: analyst %q has two budgets for database %q", lim.Analyst, lim.Database)
		}
		seen[k] = true
	}
	return l.db.Update(func(tx *bolt.Tx) error {
		accounts := tx.Bucket(bucketAccounts)
		// Unconfigure everything, then configure what is listed.
		err := accounts.ForEachBucket(func(analyst []byte) error {
			b := accounts.Bucket(analyst)
			return b.ForEach(func(k, v []byte) error {
				var a account
				if err := json.Unmarshal(v, &a); err != nil {
					return fmt.Errorf("corrupt account %q/%q: %w", analyst, k, err)
				}
				if !a.Configured {
					return nil
				}
				a.Configured = false
				a.BudgetEps, a.BudgetDelta, a.CapEps, a.CapDelta = "0", "0", "0", "0"
				return putJSON(b, k, a)
			})
		})
		if err != nil {
			return err
		}
		for _, lim := range limits {
			b, err := accounts.CreateBucketIfNotExists([]byte(lim.Analyst))
			if err != nil {
				return err
			}
			a := account{Analyst: lim.Analyst, Database: lim.Database, SpentEps: "0", SpentDelta: "0"}
			if v := b.Get(dbKey(lim.Database)); v != nil {
				if err := json.Unmarshal(v, &a); err != nil {
					return fmt.Errorf("corrupt account %q/%q: %w", lim.Analyst, lim.Database, err)
				}
			}
			a.Database = lim.Database
			if err := l.migrate(tx, &a); err != nil {
				return err
			}
			l.fixShare(&a)
			a.BudgetEps = exact(lim.Budget.Epsilon).RatString()
			a.BudgetDelta = exact(lim.Budget.Delta).RatString()
			a.CapEps = exact(lim.MaxRelease.Epsilon).RatString()
			a.CapDelta = exact(lim.MaxRelease.Delta).RatString()
			a.Configured = true
			if err := putJSON(b, dbKey(lim.Database), a); err != nil {
				return err
			}
		}
		return nil
	})
}

// migrate moves an account to the ledger's accounting. Into ZCDP, the
// whole history so far becomes a fixed basic prefix (charged as it was),
// and the zCDP sums start from zero; into Basic, every release counts its
// stated (ε, δ), which the spent sums always hold.
func (l *Ledger) migrate(tx *bolt.Tx, a *account) error {
	m := l.acct.method()
	if a.method() == m && a.Method != "" {
		return nil
	}
	if m == ZCDP && a.method() != ZCDP {
		a.PrefixEps, a.PrefixDelta = a.SpentEps, a.SpentDelta
		if a.PrefixEps == "" {
			a.PrefixEps, a.PrefixDelta = "0", "0"
		}
		a.PrefixSeq = tx.Bucket(bucketAudit).Sequence()
		a.Rho, a.ThresholdFail = 0, 0
	}
	a.Method = m
	return nil
}

// fixShare stores the configured threshold share in a zCDP account whose
// sequence has not started (or that has none stored), and keeps the stored
// one otherwise: a sequence composes under one share from its first
// release to its last.
func (l *Ledger) fixShare(a *account) {
	if a.method() != ZCDP {
		return
	}
	if a.ThresholdShare == 0 || a.freshZCDP() {
		a.ThresholdShare = accounting.Filter{ThresholdShare: l.acct.ThresholdShare}.Share()
	}
}

func validateLimit(lim Limit) error {
	if lim.Analyst == "" || lim.Database == "" {
		return fmt.Errorf("ledger: a budget needs an analyst and a database (got %q, %q)", lim.Analyst, lim.Database)
	}
	where := fmt.Sprintf("budget of analyst %q on database %q", lim.Analyst, lim.Database)
	if err := checks.Epsilon(lim.Budget.Epsilon); err != nil {
		return fmt.Errorf("ledger: %s: %w", where, err)
	}
	if err := checks.DeltaOrZero(lim.Budget.Delta); err != nil {
		return fmt.Errorf("ledger: %s: %w", where, err)
	}
	if err := checks.EpsilonOrZero(lim.MaxRelease.Epsilon); err != nil {
		return fmt.Errorf("ledger: %s: the per-release cap's %w (0: no cap)", where, err)
	}
	if err := checks.DeltaOrZero(lim.MaxRelease.Delta); err != nil {
		return fmt.Errorf("ledger: %s: the per-release cap's %w (0: no cap)", where, err)
	}
	return nil
}

// validateCost checks the (ε, δ) of a release.
func validateCost(eps, delta float64) error {
	if err := checks.Epsilon(eps); err != nil {
		return fmt.Errorf("ledger: a release's %w", err)
	}
	if err := checks.DeltaOrZero(delta); err != nil {
		return fmt.Errorf("ledger: a release's %w", err)
	}
	return nil
}

// Charge records a release of (eps, delta) by analyst on database: ChargeCost
// with the cost accounting.Basic(eps, delta) (refused on a ZCDP account).
func (l *Ledger) Charge(ctx context.Context, analyst, database string, eps, delta float64, meta Meta) (Receipt, error) {
	return l.ChargeCost(ctx, analyst, database, accounting.Basic(eps, delta), meta)
}

// ChargeCost records a release of cost c by analyst on database, after
// checking that its stated (ε, δ) respect the per-release caps and that it
// fits the remaining budget under the account's accounting (see the package
// documentation). The check, the new totals and the audit record are
// committed together and synced to disk before ChargeCost returns. A refusal
// changes nothing and returns a *ChargeError; the caller must then not run
// or send the release.
func (l *Ledger) ChargeCost(ctx context.Context, analyst, database string, c accounting.Cost, meta Meta) (Receipt, error) {
	if err := ctx.Err(); err != nil {
		return Receipt{}, err
	}
	eps, delta := c.Epsilon, c.Delta
	if err := validateCost(eps, delta); err != nil {
		return Receipt{}, err
	}
	var rec Receipt
	err := l.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketAccounts).Bucket([]byte(analyst))
		var v []byte
		if b != nil {
			v = b.Get(dbKey(database))
		}
		if v == nil {
			return &ChargeError{Kind: ErrNoBudget, Analyst: analyst, Database: database, Requested: Amount{eps, delta}}
		}
		var a account
		if err := json.Unmarshal(v, &a); err != nil {
			return fmt.Errorf("ledger: corrupt account %q/%q: %w", analyst, database, err)
		}
		st, err := a.state()
		if err != nil {
			return err
		}
		d, err := l.decide(a, st, c)
		if err != nil {
			return err
		}

		audit := tx.Bucket(bucketAudit)
		seq, err := audit.NextSequence()
		if err != nil {
			return err
		}
		now := l.now().UTC()
		r := storedRecord{
			Record: Record{
				Seq: seq, Time: now, Analyst: analyst, Database: a.Database,
				Epsilon: eps, Delta: delta, Mechanism: meta.Mechanism, Connection: meta.Connection,
				Function: meta.Function, Table: meta.Table,
			},
			EpsExact: exact(eps).RatString(), DeltaExact: exact(delta).RatString(),
		}
		if a.method() == ZCDP {
			r.Rho, r.ThresholdFail = c.Rho, c.ThresholdFail
		}
		r.Description, r.DescriptionSHA256 = cutDescription(meta.Description)
		if err := putJSON(audit, seqKey(seq), r); err != nil {
			return err
		}
		a.SpentEps, a.SpentDelta = d.eps.RatString(), d.delta.RatString()
		a.Rho, a.ThresholdFail = d.rho, d.thresholdFail
		a.Releases++
		a.LastCharge = now
		if err := putJSON(b, dbKey(database), a); err != nil {
			return err
		}
		st.spentEps, st.spentDelta = d.eps, d.delta
		rec = Receipt{Seq: seq, Time: now, Balance: l.balance(a, st)}
		return nil
	})
	if err != nil {
		return Receipt{}, err
	}
	return rec, nil
}

// Check reports, without charging, whether a release of (eps, delta) by
// analyst on database would be accepted now: CheckCost of
// accounting.Basic(eps, delta).
func (l *Ledger) Check(analyst, database string, eps, delta float64) error {
	return l.CheckCost(analyst, database, accounting.Basic(eps, delta))
}

// CheckCost reports, without charging, whether a release of cost c by
// analyst on database would be accepted now; it returns the *ChargeError
// ChargeCost would return. It is advisory (another connection may spend the
// budget in between); only ChargeCost decides.
func (l *Ledger) CheckCost(analyst, database string, c accounting.Cost) error {
	if err := validateCost(c.Epsilon, c.Delta); err != nil {
		return err
	}
	return l.db.View(func(tx *bolt.Tx) error {
		a, st, err := getAccount(tx, analyst, database)
		if errors.Is(err, ErrNoBudget) {
			return &ChargeError{Kind: ErrNoBudget, Analyst: analyst, Database: database, Requested: Amount{c.Epsilon, c.Delta}}
		}
		if err != nil {
			return err
		}
		_, err = l.decide(a, st, c)
		return err
	})
}

// Preview is what charging a statement's releases would do to an
// account, computed without charging (DP_EXPLAIN's budget rows).
type Preview struct {
	// Before is the account now.
	Before Balance
	// After is the account after every cost, when all are accepted
	// (Before otherwise).
	After Balance
	// Refused is the *ChargeError of the first cost the ledger would
	// refuse now, nil if all are accepted.
	Refused error
	// Repeats is how many more times the same costs would be accepted
	// after these (at most MaxPreviewRepeats).
	Repeats int
}

// MaxPreviewRepeats bounds Preview.Repeats.
const MaxPreviewRepeats = 10_000

// Preview computes, without charging, what charging costs in order would
// do to the account of analyst on database. Like CheckCost it is advisory.
func (l *Ledger) Preview(analyst, database string, costs []accounting.Cost) (Preview, error) {
	var p Preview
	err := l.db.View(func(tx *bolt.Tx) error {
		a, st, err := getAccount(tx, analyst, database)
		if errors.Is(err, ErrNoBudget) {
			p.Refused = &ChargeError{Kind: ErrNoBudget, Analyst: analyst, Database: database}
			return nil
		}
		if err != nil {
			return err
		}
		p.Before = l.balance(a, st)
		p.After = p.Before
		apply := func() error {
			for _, c := range costs {
				if err := validateCost(c.Epsilon, c.Delta); err != nil {
					return err
				}
				d, err := l.decide(a, st, c)
				if err != nil {
					return err
				}
				a.Rho, a.ThresholdFail = d.rho, d.thresholdFail
				a.Releases++
				st.spentEps, st.spentDelta = d.eps, d.delta
			}
			return nil
		}
		if p.Refused = apply(); p.Refused != nil {
			return nil
		}
		p.After = l.balance(a, st)
		for p.Repeats < MaxPreviewRepeats && apply() == nil {
			p.Repeats++
		}
		return nil
	})
	return p, err
}

// decision is an account's totals after an accepted charge.
type decision struct {
	eps, delta         *big.Rat // the basic sums
	rho, thresholdFail float64  // the zCDP sums (ZCDP accounts)
}

// decide applies the rules of the package documentation to a release of
// cost c on account a and returns the new totals, or the *ChargeError that
// refuses it.
func (l *Ledger) decide(a account, st state, c accounting.Cost) (decision, error) {
	eps, delta := c.Epsilon, c.Delta
	refuse := func(kind error, why string) error {
		return &ChargeError{Kind: kind, Analyst: a.Analyst, Database: a.Database, Requested: Amount{eps, delta}, Balance: l.balance(a, st), Why: why}
	}
	if !a.Configured {
		return decision{}, refuse(ErrNoBudget, "")
	}
	reqEps, reqDelta := exact(eps), exact(delta)
	if (st.capEps.Sign() > 0 && reqEps.Cmp(st.capEps) > 0) || (st.capDelta.Sign() > 0 && reqDelta.Cmp(st.capDelta) > 0) {
		return decision{}, refuse(ErrCapExceeded, "")
	}
	d := decision{
		eps:   new(big.Rat).Add(st.spentEps, reqEps),
		delta: new(big.Rat).Add(st.spentDelta, reqDelta),
	}
	if a.method() == Basic {
		if d.eps.Cmp(st.budgetEps) > 0 || d.delta.Cmp(st.budgetDelta) > 0 {
			return decision{}, refuse(ErrBudgetExceeded, "")
		}
		return d, nil
	}
	d.rho, d.thresholdFail = a.Rho+c.Rho, a.ThresholdFail+c.ThresholdFail
	f, ok := l.filter(a, st)
	if !ok {
		return decision{}, refuse(ErrBudgetExceeded, "the budget was used up before zCDP accounting began")
	}
	total := accounting.Cost{Rho: d.rho, ThresholdFail: d.thresholdFail, BasicEpsilon: c.BasicEpsilon, BasicDelta: c.BasicDelta}
	if err := f.Check(total); err != nil {
		if c.BasicEpsilon > 0 || c.BasicDelta > 0 {
			return decision{}, refuse(ErrBudgetExceeded, "this mechanism has no zCDP accounting (single_item or an unproven mechanism) and the account is charged in zCDP; use another mechanism")
		}
		return decision{}, refuse(ErrBudgetExceeded, strings.TrimPrefix(err.Error(), "accounting: "))
	}
	return d, nil
}

// filter is the zCDP filter of an account: the budget left after its basic
// prefix, split by the account's stored threshold share (the configured
// one for an account that has none stored). ok is false when nothing is
// left.
func (l *Ledger) filter(a account, st state) (accounting.Filter, bool) {
	eps := toFloat(new(big.Rat).Sub(st.budgetEps, st.prefixEps))
	delta := toFloat(new(big.Rat).Sub(st.budgetDelta, st.prefixDelta))
	share := a.ThresholdShare
	if share == 0 {
		share = l.acct.ThresholdShare
	}
	return accounting.Filter{Epsilon: eps, Delta: delta, ThresholdShare: share}, eps > 0 && delta > 0
}

// Balance returns the account of analyst on database; the error wraps
// ErrNoBudget if there is none.
func (l *Ledger) Balance(analyst, database string) (Balance, error) {
	var bal Balance
	err := l.db.View(func(tx *bolt.Tx) error {
		a, st, err := getAccount(tx, analyst, database)
		if err != nil {
			return err
		}
		bal = l.balance(a, st)
		return nil
	})
	return bal, err
}

// Balances returns the accounts of analyst, or of every analyst if analyst
// is "" (for administrators), sorted by analyst and database. Unconfigured
// accounts with history are included (Configured false).
func (l *Ledger) Balances(analyst string) ([]Balance, error) {
	var out []Balance
	err := l.db.View(func(tx *bolt.Tx) error {
		accounts := tx.Bucket(bucketAccounts)
		visit := func(b *bolt.Bucket) error {
			return b.ForEach(func(k, v []byte) error {
				var a account
				if err := json.Unmarshal(v, &a); err != nil {
					return fmt.Errorf("ledger: corrupt account %q: %w", k, err)
				}
				st, err := a.state()
				if err != nil {
					return err
				}
				out = append(out, l.balance(a, st))
				return nil
			})
		}
		if analyst != "" {
			if b := accounts.Bucket([]byte(analyst)); b != nil {
				return visit(b)
			}
			return nil
		}
		return accounts.ForEachBucket(func(k []byte) error { return visit(accounts.Bucket(k)) })
	})
	slices.SortFunc(out, func(a, b Balance) int {
		if c := strings.Compare(a.Analyst, b.Analyst); c != 0 {
			return c
		}
		return strings.Compare(strings.ToLower(a.Database), strings.ToLower(b.Database))
	})
	return out, err
}

// AuditFilter selects audit records.
type AuditFilter struct {
	// Analyst and Database, when set, keep only their records (Database
	// case-insensitively).
	Analyst  string
	Database string
	// After keeps records with Seq > After.
	After uint64
	// Limit caps the number of records returned (0: all).
	Limit int
}

// Audit returns the audit records matching f in commit order.
func (l *Ledger) Audit(f AuditFilter) ([]Record, error) {
	var out []Record
	err := l.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketAudit).Cursor()
		for k, v := c.Seek(seqKey(f.After + 1)); k != nil; k, v = c.Next() {
			var r storedRecord
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("ledger: corrupt audit record %x: %w", k, err)
			}
			if f.Analyst != "" && r.Analyst != f.Analyst {
				continue
			}
			if f.Database != "" && !strings.EqualFold(r.Database, f.Database) {
				continue
			}
			out = append(out, r.Record)
			if f.Limit > 0 && len(out) >= f.Limit {
				break
			}
		}
		return nil
	})
	return out, err
}

// Verify checks the ledger's consistency: bbolt's structural check, and that
// every account's spent totals and release count equal the sums over its
// audit records (exactly). It reads the whole audit trail.
func (l *Ledger) Verify() error {
	return l.db.View(func(tx *bolt.Tx) error {
		var damaged error
		for err := range tx.Check() { // drain: Check's goroutine sends every error
			if damaged == nil {
				damaged = err
			}
		}
		if damaged != nil {
			return fmt.Errorf("ledger: %s is damaged: %w", l.path, damaged)
		}
		type sums struct {
			eps, delta big.Rat
			n          int64
			records    []storedRecord // for the zCDP sums after a prefix
		}
		got := map[string]*sums{}
		err := tx.Bucket(bucketAudit).ForEach(func(k, v []byte) error {
			var r storedRecord
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("corrupt audit record %x: %w", k, err)
			}
			if r.Reused {
				return nil // charged nothing
			}
			key := r.Analyst + "\x00" + strings.ToLower(r.Database)
			s := got[key]
			if s == nil {
				s = &sums{}
				got[key] = s
			}
			e, ok1 := new(big.Rat).SetString(r.EpsExact)
			d, ok2 := new(big.Rat).SetString(r.DeltaExact)
			if !ok1 || !ok2 {
				return fmt.Errorf("corrupt audit record %d: amounts %q, %q", r.Seq, r.EpsExact, r.DeltaExact)
			}
			s.eps.Add(&s.eps, e)
			s.delta.Add(&s.delta, d)
			s.n++
			if r.Rho != 0 || r.ThresholdFail != 0 {
				s.records = append(s.records, storedRecord{Record: Record{Seq: r.Seq, Rho: r.Rho, ThresholdFail: r.ThresholdFail}})
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("ledger: %w", err)
		}
		accounts := tx.Bucket(bucketAccounts)
		err = accounts.ForEachBucket(func(analyst []byte) error {
			return accounts.Bucket(analyst).ForEach(func(k, v []byte) error {
				var a account
				if err := json.Unmarshal(v, &a); err != nil {
					return fmt.Errorf("corrupt account %q/%q: %w", analyst, k, err)
				}
				st, err := a.state()
				if err != nil {
					return err
				}
				key := string(analyst) + "\x00" + string(k)
				s := got[key]
				if s == nil {
					s = &sums{}
				}
				delete(got, key)
				if st.spentEps.Cmp(&s.eps) != 0 || st.spentDelta.Cmp(&s.delta) != 0 || a.Releases != s.n {
					return fmt.Errorf("account %q/%q: spent ε=%s, δ=%s in %d releases but the audit records sum to ε=%s, δ=%s in %d",
						analyst, a.Database, a.SpentEps, a.SpentDelta, a.Releases, s.eps.RatString(), s.delta.RatString(), s.n)
				}
				if a.method() == ZCDP {
					var rho, thr float64
					for _, r := range s.records {
						if r.Seq > a.PrefixSeq {
							rho += r.Rho
							thr += r.ThresholdFail
						}
					}
					if !closeTo(rho, a.Rho) || !closeTo(thr, a.ThresholdFail) {
						return fmt.Errorf("account %q/%q: zCDP sums ρ=%v, P=%v but the audit records since sequence %d sum to ρ=%v, P=%v",
							analyst, a.Database, a.Rho, a.ThresholdFail, a.PrefixSeq, rho, thr)
					}
				}
				return nil
			})
		})
		if err != nil {
			return fmt.Errorf("ledger: %w", err)
		}
		for key := range got {
			return fmt.Errorf("ledger: audit records for %q have no account", strings.ReplaceAll(key, "\x00", "/"))
		}
		return nil
	})
}

// state is an account's amounts as exact rationals.
type state struct {
	budgetEps, budgetDelta, capEps, capDelta, spentEps, spentDelta *big.Rat
	prefixEps, prefixDelta                                         *big.Rat
}

func (a account) state() (state, error) {
	var st state
	for _, f := range []struct {
		dst **big.Rat
		s   string
	}{
		{&st.budgetEps, a.BudgetEps}, {&st.budgetDelta, a.BudgetDelta},
		{&st.capEps, a.CapEps}, {&st.capDelta, a.CapDelta},
		{&st.spentEps, a.SpentEps}, {&st.spentDelta, a.SpentDelta},
		{&st.prefixEps, cmpOr(a.PrefixEps, "0")}, {&st.prefixDelta, cmpOr(a.PrefixDelta, "0")},
	} {
		r, ok := new(big.Rat).SetString(f.s)
		if !ok {
			return st, fmt.Errorf("ledger: corrupt account %q/%q: amount %q", a.Analyst, a.Database, f.s)
		}
		*f.dst = r
	}
	return st, nil
}

// closeTo compares float sums that were added in different orders.
func closeTo(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// balance is the account's Balance under its accounting.
func (l *Ledger) balance(a account, st state) Balance {
	rem := func(budget, spent *big.Rat) float64 {
		r := new(big.Rat).Sub(budget, spent)
		if r.Sign() < 0 {
			return 0
		}
		return toFloat(r)
	}
	b := Balance{
		Analyst:    a.Analyst,
		Database:   a.Database,
		Accounting: a.method(),
		Budget:     Amount{toFloat(st.budgetEps), toFloat(st.budgetDelta)},
		Basic:      Amount{toFloat(st.spentEps), toFloat(st.spentDelta)},
		Spent:      Amount{toFloat(st.spentEps), toFloat(st.spentDelta)},
		Remaining:  Amount{rem(st.budgetEps, st.spentEps), rem(st.budgetDelta, st.spentDelta)},
		MaxRelease: Amount{toFloat(st.capEps), toFloat(st.capDelta)},
		Releases:   a.Releases,
		LastCharge: a.LastCharge,
		Configured: a.Configured,
	}
	if a.method() == ZCDP {
		total := accounting.Cost{Rho: a.Rho, ThresholdFail: a.ThresholdFail}
		f, ok := l.filter(a, st)
		e, d := f.Spent(total)
		b.Spent = Amount{toFloat(st.prefixEps) + e, toFloat(st.prefixDelta) + d}
		b.Remaining = Amount{}
		if ok {
			b.Remaining.Epsilon, b.Remaining.Delta = f.Remaining(total)
		}
	}
	return b
}

func getAccount(tx *bolt.Tx, analyst, database string) (account, state, error) {
	var a account
	b := tx.Bucket(bucketAccounts).Bucket([]byte(analyst))
	var v []byte
	if b != nil {
		v = b.Get(dbKey(database))
	}
	if v == nil {
		return a, state{}, fmt.Errorf("ledger: %w: analyst %q has no budget on database %q", ErrNoBudget, analyst, database)
	}
	if err := json.Unmarshal(v, &a); err != nil {
		return a, state{}, fmt.Errorf("ledger: corrupt account %q/%q: %w", analyst, database, err)
	}
	st, err := a.state()
	return a, st, err
}

// exact returns the shortest decimal that round-trips x, as a rational.
func exact(x float64) *big.Rat {
	r, ok := new(big.Rat).SetString(strconv.FormatFloat(x, 'g', -1, 64))
	if !ok {
		panic(fmt.Sprintf("ledger: cannot convert %v", x)) // callers validated x is finite
	}
	return r
}

func toFloat(r *big.Rat) float64 {
	f, _ := r.Float64()
	return f
}

func fmtFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

func seqKey(seq uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], seq)
	return k[:]
}

func putJSON(b *bolt.Bucket, k []byte, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return b.Put(k, data)
}

// cutDescription cuts s to MaxDescription bytes at a rune boundary and
// returns the SHA-256 of s when it was cut.
func cutDescription(s string) (string, string) {
	if len(s) <= MaxDescription {
		return s, ""
	}
	sum := sha256.Sum256([]byte(s))
	cut := MaxDescription
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut], hex.EncodeToString(sum[:])
}
