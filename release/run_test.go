package release

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
)

// seqGov records the steps of Run in the order they happen: it charges,
// defers charges and stores releases like the governed server.
type seqGov struct {
	plainGov
	log    *[]string
	data   []byte
	refuse bool
}

func (g *seqGov) note(s string) { *g.log = append(*g.log, s) }

func (g *seqGov) reuse() *Reuse {
	if g.data != nil {
		return &Reuse{Data: g.data, At: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), Seq: 7}
	}
	return &Reuse{Store: func(d []byte) error { g.data = d; g.note("keep"); return nil }, End: func() { g.note("done") }}
}

func (g *seqGov) charge() error {
	if g.refuse {
		g.note("refused")
		return errors.New("over budget")
	}
	g.note("charge")
	return nil
}

func (g *seqGov) ChargeOrReuse(_ *sql.Context, _ []Request) (*Reuse, error) {
	if g.data != nil {
		g.note("reuse")
		return g.reuse(), nil
	}
	if err := g.charge(); err != nil {
		return nil, err
	}
	return g.reuse(), nil
}

func (g *seqGov) ReuseOrDefer(_ *sql.Context, _ []Request) (*Reuse, func() error, error) {
	if g.data != nil {
		g.note("reuse")
		return g.reuse(), nil, nil
	}
	g.note("lookup")
	return g.reuse(), g.charge, nil
}

// runSteps are Steps that record their own steps in log; read fails with
// readErr (after cancel, if set, is called).
func runSteps(g *seqGov, readFirst bool, readErr error, cancel func()) Steps {
	out := Released{Sets: [][]string{{"a", "b"}}}
	return Steps{
		What: "test release", Gov: g, Requests: []Request{{Function: "SELECT DISTINCT"}}, ReadFirst: readFirst,
		Read: func(*sql.Context) error {
			g.note("read")
			if cancel != nil {
				cancel()
			}
			return readErr
		},
		ReadFailed: func(err error) error { return errors.New("the source failed") },
		Mechanism: func(*sql.Context) (Released, error) {
			g.note("mechanism")
			return out, nil
		},
		Check: func(r Released) error {
			if len(r.Sets) != 1 {
				return ErrWrongShape
			}
			return nil
		},
	}
}

// TestRunOrder: the order of docs/privacy.md §12 and §17 for every kind of
// release — a scanning release is charged before it reads; a push-down
// release reads completely first, charges nothing when its source fails,
// and is charged when the analyst's limits stop it; a stored release is
// returned without reading; a new one is kept, then ended.
func TestRunOrder(t *testing.T) {
	errRead := errors.New("read failed")
	for _, tc := range []struct {
		name      string
		readFirst bool
		refuse    bool
		readErr   error
		cancel    bool
		wantErr   string
		want      []string
	}{
		{name: "scan", want: []string{"charge", "read", "mechanism", "keep", "done"}},
		{name: "scan refused", refuse: true, wantErr: "over budget", want: []string{"refused"}},
		{name: "scan fails", readErr: errRead, wantErr: "read failed", want: []string{"charge", "read", "done"}},
		{name: "push-down", readFirst: true, want: []string{"lookup", "read", "charge", "mechanism", "keep", "done"}},
		{name: "push-down refused after the read", readFirst: true, refuse: true, wantErr: "over budget", want: []string{"lookup", "read", "refused", "done"}},
		{name: "push-down source fails", readFirst: true, readErr: errRead, wantErr: "the source failed", want: []string{"lookup", "read", "done"}},
		{name: "push-down stopped by the analyst", readFirst: true, readErr: errRead, cancel: true, wantErr: context.Canceled.Error(), want: []string{"lookup", "read", "charge", "done"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log []string
			g := &seqGov{log: &log, refuse: tc.refuse}
			cctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ctx := sql.NewContext(cctx)
			var stop func()
			if tc.cancel {
				stop = cancel
			}
			got, err := Run(ctx, runSteps(g, tc.readFirst, tc.readErr, stop))
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Errorf("error %v, want %q", err, tc.wantErr)
				}
			} else if err != nil || len(got.Sets) != 1 {
				t.Errorf("%+v, %v", got, err)
			}
			if !reflect.DeepEqual(log, tc.want) {
				t.Errorf("steps %q, want %q", log, tc.want)
			}
			if tc.wantErr != "" || tc.refuse {
				return
			}
			// Again: the stored release, nothing read.
			log = nil
			again, err := Run(ctx, runSteps(g, tc.readFirst, nil, nil))
			if err != nil || !reflect.DeepEqual(again, got) || !reflect.DeepEqual(log, []string{"reuse"}) {
				t.Errorf("reused %+v, %v, steps %q", again, err, log)
			}
		})
	}
}

// TestRunUngoverned: a nil Gov reads and releases, charges and keeps
// nothing.
func TestRunUngoverned(t *testing.T) {
	var log []string
	g := &seqGov{log: &log}
	s := runSteps(g, false, nil, nil)
	s.Gov = nil
	if _, err := Run(sql.NewEmptyContext(), s); err != nil || !reflect.DeepEqual(log, []string{"read", "mechanism"}) {
		t.Errorf("%v, steps %q", err, log)
	}
}

// TestRunStoredWrongShape: a stored release of another shape is an error
// that says what to do, and nothing is read.
func TestRunStoredWrongShape(t *testing.T) {
	var log []string
	g := &seqGov{log: &log}
	g.data, _ = Released{Sets: [][]string{{"a"}, {"b"}}}.MarshalBinary()
	_, err := Run(sql.NewEmptyContext(), runSteps(g, false, nil, nil))
	if err == nil || !strings.Contains(err.Error(), "test release: the stored release of 2025-01-02T03:04:05Z (audit record 7) cannot be read (wrong shape); SET dp_reuse = OFF") {
		t.Errorf("error %v", err)
	}
	if !reflect.DeepEqual(log, []string{"reuse"}) {
		t.Errorf("steps %q", log)
	}
}
