package server

// Loading, reloading and refreshing datasets.
//
// Every dataset of the configuration is loaded at start; an administrator's
// SELECT * FROM DP_RELOAD('db.table'), and a dataset's refresh: period,
// load it again. A reload builds the new table beside the one being served
// and swaps it in at once (storage.Database.ReplaceTable): a statement
// resolves its tables when it starts, and a table never changes once built,
// so releases in flight finish on the snapshot they started on. A reload
// that fails changes nothing: the old snapshot stays served, the failure is
// logged and shown in DP_DATASETS(), administrators' view of every dataset.
//
// A dataset read from a database (config.Source) that fails to load at
// start does not stop the server: the others are served, the table is
// absent until a refresh or DP_RELOAD loads it, and the error is logged and
// shown in DP_DATASETS().
//
// Load generations (the version that reuse keys carry) are recorded at
// every load: see loadSource and docs/privacy.md §14.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/release"
	"github.com/dpsql/dpsql/server/config"
	"github.com/dpsql/dpsql/server/governance"
	"github.com/dpsql/dpsql/server/storage"
	"github.com/dpsql/dpsql/sqlext/tabfile"
)

// datasets holds the state of every configured dataset.
type datasets struct {
	p        *storage.Provider
	log      func(format string, args ...any)
	progress io.Writer
	memLimit uint64
	gov      *governance.Governor // set once the governor exists
	// swapped, when set, is told of every protected table a reload swapped
	// in: the server builds its release indexes and corpora again for the
	// new version (prebuildIndexes), as after the load.
	swapped func(db, table, unit string, t sql.Table)

	mu      sync.Mutex
	all     []*dataset
	closing bool
	loads   sync.WaitGroup // reloads running
	stop    chan struct{}
	loops   sync.WaitGroup // refresh loops
}

// dataset is one dataset and what its last loads did.
type dataset struct {
	cfg  config.Dataset
	load sync.Mutex // one load of a dataset at a time

	// Guarded by datasets.mu.
	rows       int
	loadedAt   time.Time
	generation string
	digest     string
	lastError  string
	errorAt    time.Time
	loaded     bool
}

func newDatasets(p *storage.Provider, logw io.Writer, memLimit uint64) *datasets {
	return &datasets{p: p, log: lockedLog(logw), progress: logw, memLimit: memLimit, stop: make(chan struct{})}
}

// find returns the dataset called db.table (case-insensitive).
func (ds *datasets) find(name string) (*dataset, bool) {
	db, tbl, ok := strings.Cut(name, ".")
	if !ok {
		return nil, false
	}
	ds.mu.Lock()
	defer ds.mu.Unlock()
	for _, d := range ds.all {
		if strings.EqualFold(d.cfg.Database, db) && strings.EqualFold(d.cfg.Table, tbl) {
			return d, true
		}
	}
	return nil, false
}

// loaded is a table built by a load, not yet served.
type loaded struct {
	table  *storage.Table
	info   storage.LoadInfo
	source string // the generation's source description
	digest string
}

// loadInitial loads a dataset at start. It returns the description of its
// source for the load generation. A database dataset that fails is logged
// and left out (ok false, err nil); a file that fails stops the start.
func (ds *datasets) loadInitial(cfg config.Dataset) (source string, ok bool, err error) {
	d := &dataset{cfg: cfg}
	ds.mu.Lock()
	ds.all = append(ds.all, d)
	ds.mu.Unlock()
	db, found := ds.p.Lookup(cfg.Database)
	if !found {
		db = storage.NewDatabase(cfg.Database)
		if err := ds.p.AddDatabase(db); err != nil {
			return "", false, err
		}
	}
	if w := dsnFileWarning(cfg); w != "" {
		ds.log("%s", w)
	}
	source, err = generationSource(cfg)
	var l *loaded
	if err == nil {
		l, err = ds.build(context.Background(), cfg, source)
	}
	if err != nil {
		if cfg.Source == nil {
			return "", false, err
		}
		ds.failed(d, err, "dataset %s was NOT loaded: %v; the server serves the other datasets; fix the source, then run SELECT * FROM DP_RELOAD('%s') as an administrator%s",
			cfg.QualifiedName(), err, cfg.QualifiedName(), refreshNote(cfg))
		return source, false, nil
	}
	if err := db.AddTable(l.table); err != nil {
		return "", false, err
	}
	ds.succeeded(d, l, "")
	return l.source, true, nil
}

// dsnFileWarning warns when a dataset's DSN file, which holds a password,
// is readable or writable by other users than its owner.
func dsnFileWarning(cfg config.Dataset) string {
	if cfg.Source == nil || cfg.Source.DSNFile == "" {
		return ""
	}
	fi, err := os.Stat(cfg.Source.DSNFile)
	if err != nil || fi.Mode().Perm()&0o077 == 0 {
		return ""
	}
	return fmt.Sprintf("WARNING: dataset %s: the DSN file %s holds a password and other users may read it (mode %04o): chmod 600 it",
		cfg.QualifiedName(), cfg.Source.DSNFile, fi.Mode().Perm())
}

func refreshNote(cfg config.Dataset) string {
	if cfg.Refresh > 0 {
		return fmt.Sprintf(" (or wait for the next refresh, every %v)", cfg.Refresh)
	}
	return ""
}

// start records the governor, the generations of the initial loads, and
// starts the refresh loops.
func (ds *datasets) start(gov *governance.Governor) {
	ds.mu.Lock()
	ds.gov = gov
	all := slices.Clone(ds.all)
	for _, d := range all {
		if d.loaded {
			d.generation = gov.Generation(d.cfg.Database, d.cfg.Table)
		}
	}
	ds.mu.Unlock()
	for _, d := range all {
		if d.cfg.Refresh > 0 {
			ds.loops.Add(1)
			go ds.refreshLoop(d)
		}
	}
}

// started reports whether start was called (the server serves).
func (ds *datasets) started() bool {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	return ds.gov != nil
}

// close stops the refresh loops and waits for reloads running.
func (ds *datasets) close() {
	ds.mu.Lock()
	if ds.closing {
		ds.mu.Unlock()
		return
	}
	ds.closing = true
	close(ds.stop)
	ds.mu.Unlock()
	ds.loops.Wait()
	ds.loads.Wait()
}

func (ds *datasets) refreshLoop(d *dataset) {
	defer ds.loops.Done()
	t := time.NewTicker(d.cfg.Refresh)
	defer t.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-ds.stop
		cancel()
	}()
	for {
		select {
		case <-ds.stop:
			return
		case <-t.C:
			_ = ds.reload(ctx, d, "refresh") // logged and shown in DP_DATASETS
		}
	}
}

// reload loads d again and swaps the new table in; on failure the old one
// stays served. why is "refresh" or "DP_RELOAD by USER".
func (ds *datasets) reload(ctx context.Context, d *dataset, why string) error {
	ds.mu.Lock()
	if ds.closing {
		ds.mu.Unlock()
		return errors.New("the server is shutting down: nothing is reloaded")
	}
	ds.loads.Add(1)
	gov := ds.gov
	ds.mu.Unlock()
	defer ds.loads.Done()

	d.load.Lock()
	defer d.load.Unlock()
	cfg := d.cfg
	source, err := generationSource(cfg)
	var l *loaded
	if err == nil {
		l, err = ds.build(ctx, cfg, source)
	}
	if cfg.Protected() && (err == nil || source != "") {
		// Under generation: source a reload attempt is a new generation
		// whether or not it succeeds (the description, taken before the
		// rows were read, decides), so that whether releases stay
		// reusable never tells whether a load failed — which can depend
		// on one row (a value its column cannot hold).
		desc := source
		if err == nil {
			desc = l.source
		}
		if _, gerr := gov.Reloaded(cfg.Database, cfg.Table, desc); gerr != nil && err == nil {
			err = gerr
		}
		ds.mu.Lock()
		d.generation = gov.Generation(cfg.Database, cfg.Table)
		ds.mu.Unlock()
	}
	if err != nil {
		ds.mu.Lock()
		was := "nothing (it was never loaded)"
		if d.loaded {
			was = fmt.Sprintf("the snapshot loaded at %s (%d rows, %s)", d.loadedAt.UTC().Format(time.RFC3339), d.rows, cmpString(d.generation, "public"))
		}
		ds.mu.Unlock()
		ds.failed(d, err, "%s of %s failed: %v; still serving %s", why, cfg.QualifiedName(), err, was)
		return err
	}
	db, _ := ds.p.Lookup(cfg.Database)
	t := l.table
	if cfg.Protected() {
		t = t.WithRowCounts(storage.HiddenCounts).WithScanGuard(release.ScanGuard(gov, db.Name(), t.Name()))
	}
	db.ReplaceTable(t)
	ds.succeeded(d, l, gov.Generation(cfg.Database, cfg.Table))
	if cfg.Protected() && ds.swapped != nil && t.PushdownSource() == nil {
		ds.swapped(db.Name(), t.Name(), cfg.PrivacyUnit, t)
	}
	if used := memoryInUse(); ds.memLimit > 0 && used > ds.memLimit/10*8 {
		ds.log("WARNING: after the %s of %s the process holds %d MiB, more than 80%% of limits.max_memory_bytes (%d MiB): "+
			"analysts' statements may be stopped with error 1041, and the next reload may not fit; raise the limit or serve less data",
			why, cfg.QualifiedName(), used>>20, ds.memLimit>>20)
	}
	ds.log("%s of %s: %d rows in %.1fs, %s", why, cfg.QualifiedName(), l.info.Rows, l.info.Duration.Seconds(), cmpString(gov.Generation(cfg.Database, cfg.Table), "public"))
	return nil
}

func (ds *datasets) failed(d *dataset, err error, format string, args ...any) {
	ds.mu.Lock()
	d.lastError = err.Error()
	d.errorAt = time.Now()
	ds.mu.Unlock()
	ds.log("ERROR "+format, args...)
}

func (ds *datasets) succeeded(d *dataset, l *loaded, generation string) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	d.loaded = true
	d.rows = l.info.Rows
	d.loadedAt = time.Now()
	d.digest = l.digest
	d.generation = generation
	d.lastError = ""
	d.errorAt = time.Time{}
}

// generationSource describes a protected dataset's source for its load
// generation before its rows are read (loadSource), "" for a public one or
// under generation: content (build then derives it from the rows).
func generationSource(cfg config.Dataset) (string, error) {
	if !cfg.Protected() || cfg.Generation == config.GenerationContent {
		return "", nil
	}
	return loadSource(cfg)
}

// build loads a dataset into a new table (not served yet); its source
// description for the load generation is source, or under generation:
// content the digest of the rows.
func (ds *datasets) build(ctx context.Context, cfg config.Dataset, source string) (*loaded, error) {
	var (
		t    *storage.Table
		info storage.LoadInfo
		err  error
	)
	if cfg.Source != nil {
		t, info, err = ds.buildDB(ctx, cfg)
	} else {
		// Files loaded at start are checked once, after every dataset is
		// loaded (NewGoverned's warning), as before reloads existed.
		var check func(int64) error
		if ds.started() {
			check = ds.memoryCheck
		}
		t, info, err = buildFile(cfg, ds.progress, check)
	}
	if err != nil {
		return nil, err
	}
	l := &loaded{table: t, info: info, source: source, digest: storage.Digest(t)}
	if cfg.Protected() && cfg.Generation == config.GenerationContent {
		l.source = "content sha256 " + l.digest
	}
	cols := make([]string, len(info.Columns))
	for i, c := range info.Columns {
		cols[i] = c.Name + " " + c.Type.String()
	}
	what := "public"
	if cfg.Protected() {
		what = "protected, privacy unit " + cfg.PrivacyUnit
		if cfg.Pushdown() {
			what += "; push-down: its rows stay in the source, which each release reads"
		}
		if !slices.ContainsFunc(info.Columns, func(c storage.Column) bool { return strings.EqualFold(c.Name, cfg.PrivacyUnit) }) {
			return nil, fmt.Errorf("dataset %s: privacy unit %s is not a column of the source (it has %s): fix privacy_unit or the source", cfg.QualifiedName(), cfg.PrivacyUnit, strings.Join(cols, ", "))
		}
	}
	ds.log("loaded %s(%s) from %s: %d rows in %.1fs (%s)", cfg.QualifiedName(), strings.Join(cols, ", "), describe(cfg), info.Rows, info.Duration.Seconds(), what)
	return l, nil
}

// describe names a dataset's source without secrets.
func describe(cfg config.Dataset) string {
	if cfg.Source != nil {
		return cfg.Source.Describe()
	}
	return cfg.File
}

// loadSource describes where a dataset's rows come from, for its load
// generation under generation: source (the default), never reading a row:
// a file's configuration and identity (datasetSource); a database source's
// configuration (its DSN left out) and the time of this load — a database
// has no identity that changes only when an administrator acts, so every
// load of one is a new generation.
//
// Under generation: config the description is the configuration alone.
func loadSource(cfg config.Dataset) (string, error) {
	if cfg.Generation == config.GenerationConfig {
		js, err := json.Marshal(struct {
			D config.Dataset
			S *config.Source
		}{cfg, redactedSource(cfg.Source)})
		return "configuration " + string(js), err
	}
	if cfg.Source == nil {
		return datasetSource(cfg)
	}
	js, err := json.Marshal(struct {
		D config.Dataset
		S *config.Source
	}{cfg, redactedSource(cfg.Source)})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("dataset %s; database load at %s", js, time.Now().UTC().Format(time.RFC3339Nano)), nil
}

// redactedSource is what of a source describes its rows: the driver and the
// table or query, not where the DSN is read from.
func redactedSource(s *config.Source) *config.Source {
	if s == nil {
		return nil
	}
	return &config.Source{Driver: s.Driver, Table: s.Table, Query: s.Query}
}

// buildDB reads a database dataset.
func (ds *datasets) buildDB(ctx context.Context, cfg config.Dataset) (*storage.Table, storage.LoadInfo, error) {
	s := cfg.Source
	fail := func(err error) (*storage.Table, storage.LoadInfo, error) {
		return nil, storage.LoadInfo{}, fmt.Errorf("dataset %s: %w", cfg.QualifiedName(), err)
	}
	dsn, err := s.DSN()
	if err != nil {
		return fail(fmt.Errorf("%s: %w", s.Describe(), err))
	}
	var cols []storage.DBColumn
	for _, c := range cfg.Columns {
		t, err := StorageType(c.Type)
		if err != nil {
			return fail(fmt.Errorf("column %s: %w", c.Name, err))
		}
		cols = append(cols, storage.DBColumn{Name: c.Name, Source: c.Source, Type: t})
	}
	load := storage.LoadDB
	if cfg.Pushdown() {
		load = storage.LoadDBSchema // the schema only: the rows stay in the source
	}
	t, info, err := load(ctx, cfg.Table, storage.DBSource{Driver: s.Driver, DSN: dsn, Table: s.Table, Query: s.Query, Describe: s.Describe()},
		storage.DBLoadOptions{
			Columns:  cols,
			Progress: ds.progress,
			Label:    fmt.Sprintf("%s (%s)", cfg.QualifiedName(), s.Describe()),
			Comment:  tableComment(cfg),
			Check:    ds.memoryCheck,
		})
	if err != nil {
		return fail(err)
	}
	return t, info, nil
}

// memoryCheck stops a load that would take the process past its memory
// limit (limits.max_memory_bytes): while a dataset is reloaded the old
// snapshot is still served, so a reload needs room for both.
func (ds *datasets) memoryCheck(int64) error {
	if ds.memLimit == 0 {
		return nil
	}
	used := memoryInUse()
	if used <= ds.memLimit {
		return nil
	}
	runtime.GC()
	if used = memoryInUse(); used <= ds.memLimit {
		return nil
	}
	return fmt.Errorf("out of memory: the process holds %d MiB, more than limits.max_memory_bytes (%d MiB); "+
		"raise the limit (a reload needs room for the old and the new snapshot), or load fewer rows or columns (source.query, columns:)", used>>20, ds.memLimit>>20)
}

// buildFile reads a file dataset (as loadDataset did before reloads).
func buildFile(d config.Dataset, logw io.Writer, check func(int64) error) (*storage.Table, storage.LoadInfo, error) {
	specs := make([]storage.ColumnSpec, len(d.Columns))
	for i, c := range d.Columns {
		t, err := StorageType(c.Type)
		if err != nil {
			return nil, storage.LoadInfo{}, fmt.Errorf("dataset %s: column %s: %w", d.QualifiedName(), c.Name, err)
		}
		specs[i] = storage.ColumnSpec{Name: c.Name, Type: t, Typed: true}
	}
	src, err := tabfile.OpenSource(d.File, d.SourceOptions())
	if err != nil {
		return nil, storage.LoadInfo{}, fmt.Errorf("dataset %s: %w", d.QualifiedName(), err)
	}
	defer src.Close()
	t, info, err := storage.Load(d.Table, src, storage.LoadOptions{
		Columns:  specs,
		Header:   storage.HeaderNo, // tabfile skips the header row itself
		Progress: logw,
		Label:    fmt.Sprintf("%s (%s)", d.QualifiedName(), d.File),
		Comment:  tableComment(d),
		Check:    check,
	})
	if err != nil {
		return nil, storage.LoadInfo{}, fmt.Errorf("dataset %s: %w", d.QualifiedName(), err)
	}
	return t, info, nil
}

func tableComment(d config.Dataset) string {
	if d.Protected() {
		return fmt.Sprintf("dpsql: protected table, privacy unit %s: analysts obtain differentially private releases only", d.PrivacyUnit)
	}
	return "dpsql: public table"
}

func cmpString(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
