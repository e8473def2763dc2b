package config

import (
	"strings"
	"testing"

	"github.com/dpsql/dpsql/sqlext/setunion"
)

// dpConfig is validConfig with a numeric column and dp: sections.
var dpConfig = strings.Replace(validConfig, `      - name: text
        type: text
    privacy_unit: user_id
`, `      - name: text
        type: text
      - name: amount
        type: double
        dp: {bounds: [0, 100]}
      - name: country
        type: varchar(2)
        dp: {max_groups_contributed: 1, max_rows_per_group: 20}
    privacy_unit: user_id
    dp:
      epsilon: 0.5
      delta: 1e-7
      noise: laplace
      noise_after_bounds: false
      max_groups_contributed: 3
      max_rows_per_group: 2
`, 1)

func TestParseDP(t *testing.T) {
	c, err := Parse([]byte(dpConfig), "/etc/dpsql")
	if err != nil {
		t.Fatal(err)
	}
	d := c.Datasets[0]
	if d.DP == nil || *d.DP.Epsilon != 0.5 || *d.DP.MaxGroupsContributed != 3 || d.DP.Noise != "laplace" || d.DP.NoiseAfterBounds == nil || *d.DP.NoiseAfterBounds {
		t.Errorf("table dp %+v", d.DP)
	}
	if b := d.Columns[2].DP.BoundsText(); b != "0,100" {
		t.Errorf("amount bounds %q", b)
	}
	if cd := d.Columns[3].DP; *cd.MaxGroupsContributed != 1 || *cd.MaxRowsPerGroup != 20 {
		t.Errorf("country dp %+v", cd)
	}
}

// TestParseDPErrors: each wrong dp: setting is an error naming the
// dataset, the column and what to write instead.
func TestParseDPErrors(t *testing.T) {
	for _, c := range []struct{ old, new_, want string }{
		{"bounds: [0, 100]", "bounds: [100, 0]", `config:14: dataset demo.posts, column "amount": bounds [100, 0]: lower is above upper; swap them`},
		{"bounds: [0, 100]", "bounds: [1]", `column "amount": bounds must be [lower, upper]`},
		{"bounds: [0, 100]", "bounds: [0, .inf]", `column "amount": bounds must be finite numbers`},
		{"{max_groups_contributed: 1, max_rows_per_group: 20}", "{bounds: [0, 1]}", `column "country": bounds clamp the numeric values of SUM, AVG, VARIANCE and STDDEV, and the column is VARCHAR(2)`},
		{"{max_groups_contributed: 1, max_rows_per_group: 20}", "{max_groups_contributed: 0}", `column "country": dp: max_groups_contributed must be an integer from 1 to`},
		{"{max_groups_contributed: 1, max_rows_per_group: 20}", "{}", `column "country": dp: is empty`},
		{"{max_groups_contributed: 1, max_rows_per_group: 20}", "{max_rows: 20}", `unknown key "max_rows" (allowed here: bounds, max_groups_contributed, max_rows_per_group)`},
		{"      epsilon: 0.5\n", "      epsilon: 0\n", `config:20: dataset demo.posts: dp: epsilon must be a finite number greater than 0`},
		{"      delta: 1e-7\n", "      delta: 1\n", `dataset demo.posts: dp: delta must be greater than 0 and less than 1`},
		{"      noise: laplace\n", "      noise: pink\n", `dataset demo.posts: dp: unknown noise "pink": use laplace, gaussian or auto`},
		{"      noise: laplace\n", "      mechanism: magic\n", `dataset demo.posts: dp: unknown mechanism "magic"`},
		{"      max_rows_per_group: 2\n", "      max_rows_per_group: -2\n", `dataset demo.posts: dp: max_rows_per_group must be an integer from 1 to`},
		{"      max_rows_per_group: 2\n", "      max_rows: 2\n", `unknown key "max_rows" (allowed here: epsilon, delta, mechanism, noise, max_groups_contributed, max_rows_per_group, noise_after_bounds)`},
		{"    public: true\n", "    public: true\n    dp: {epsilon: 1}\n", `dataset demo.pages: dp: applies to protected tables (privacy_unit); a public table has no private releases, remove it`},
	} {
		if !strings.Contains(dpConfig, c.old) {
			t.Fatalf("%q not in the config", c.old)
		}
		_, err := Parse([]byte(strings.Replace(dpConfig, c.old, c.new_, 1)), "/etc/dpsql")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s → %s:\ngot  %v\nwant %q", c.old, c.new_, err, c.want)
		}
	}
}

// TestDefaultsSection: the defaults: section is parsed by the set-union
// options' own parser (setunion.Options.Set), so it takes what
// DP_SET_UNION's options string takes, alpha: default included.
func TestDefaultsSection(t *testing.T) {
	cfg := strings.Replace(validConfig, "data_dir: /var/lib/dpsql\n",
		"data_dir: /var/lib/dpsql\ndefaults:\n  mechanism: Policy_Gaussian_L2\n  epsilon: 0.5\n  delta: 1e-7\n  max_items: 40\n  alpha: default\n  rounds: 2\n", 1)
	c, err := Parse([]byte(cfg), "/etc/dpsql")
	if err != nil {
		t.Fatal(err)
	}
	o := c.Defaults.Options()
	want := setunion.Defaults()
	want.Mechanism, want.Epsilon, want.Delta, want.MaxItems, want.Rounds = setunion.PolicyGaussianL2, 0.5, 1e-7, 40, 2
	if o.Mechanism != want.Mechanism || o.Epsilon != want.Epsilon || o.Delta != want.Delta || o.MaxItems != want.MaxItems || o.Alpha != nil || o.Rounds != want.Rounds {
		t.Fatalf("defaults %+v, want %+v", o, want)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
}
