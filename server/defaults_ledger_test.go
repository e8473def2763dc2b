package server

import (
	"strings"
	"testing"

	"github.com/dpsql/dpsql/dpvars"
	"github.com/dpsql/dpsql/server/config"
)

// TestNoiseAfterBoundsFollowsLedger: a deployment whose ledger adds up by
// basic composition gives every protected table dp_noise_after_bounds ON
// (the Laplace branch costs it nothing); the zCDP ledger (the default)
// leaves the variable's own default, OFF; a table's explicit value wins
// either way. Only the basic ledger's tables say BasicLedger (a release there
// may select keys with single_item at Δ0 = 1; a zCDP account refuses it).
func TestNoiseAfterBoundsFollowsLedger(t *testing.T) {
	off := false
	for _, c := range []struct {
		method string
		dp     *config.TableDP
		want   any // nil: not set by the table
	}{
		{"", nil, nil},
		{"zcdp", nil, nil},
		{"basic", nil, true},
		{"BASIC", nil, true},
		{"basic", &config.TableDP{NoiseAfterBounds: &off}, false},
	} {
		cfg := &config.Config{Accounting: config.Accounting{Method: c.method}}
		cfg.Datasets = []config.Dataset{{Database: "db", Table: "t", PrivacyUnit: "uid", DP: c.dp}}
		td := tableDefaults(cfg)("db", "t")
		var got any
		if td != nil {
			got = td.Vars[dpvars.VarNoiseAfterBounds]
		}
		if got != c.want {
			t.Errorf("method %q, dp %v: dp_noise_after_bounds %v, want %v", c.method, c.dp, got, c.want)
		}
		if basic := td != nil && td.BasicLedger; basic != strings.EqualFold(c.method, "basic") {
			t.Errorf("method %q: BasicLedger %v", c.method, basic)
		}
	}
}
