package config

import (
	"strings"
	"testing"
	"time"
)

// fileDataset is the body of validConfig's file dataset demo.posts.
const fileDataset = `    file: posts.tsv.gz
    columns:
      - name: user_id
        type: bigint unsigned
      - name: text
        type: text
    privacy_unit: user_id
`

func TestParseSource(t *testing.T) {
	cfg := strings.Replace(validConfig, fileDataset, `    source: {driver: postgres, dsn_file: pg.dsn, table: public.posts}
    privacy_unit: user_id
    refresh: 15m
    generation: content
`, 1)
	c, err := Parse([]byte(cfg), "/etc/dpsql")
	if err != nil {
		t.Fatal(err)
	}
	d := c.Datasets[0]
	if d.Source == nil || d.Source.DSNFile != "/etc/dpsql/pg.dsn" || d.Refresh != 15*time.Minute || d.Generation != GenerationContent || d.File != "" {
		t.Errorf("dataset %+v, source %+v", d, d.Source)
	}
	if got := d.Source.Describe(); got != "postgres table public.posts" {
		t.Errorf("Describe: %q", got)
	}
	if c.Datasets[1].Generation != GenerationSource {
		t.Errorf("default generation %q", c.Datasets[1].Generation)
	}
}

func TestParseSourceErrors(t *testing.T) {
	for _, c := range []struct{ name, dataset, want string }{
		{"no driver", "source: {dsn_env: X, table: t}", "source.driver is required"},
		{"bad driver", "source: {driver: oracle, dsn_env: X, table: t}", `source.driver "oracle"`},
		{"no dsn", "source: {driver: mysql, table: t}", "needs dsn_env"},
		{"two dsns", "source: {driver: mysql, dsn_env: X, dsn_file: f, table: t}", "not both"},
		{"no table", "source: {driver: mysql, dsn_env: X}", "needs table"},
		{"table and query", "source: {driver: mysql, dsn_env: X, table: t, query: SELECT 1}", "table or query, not both"},
		{"bad table", "source: {driver: mysql, dsn_env: X, table: 't; DROP'}", "[schema.]table"},
		{"not a select", "source: {driver: mysql, dsn_env: X, query: DELETE FROM t}", "must be a SELECT"},
		{"file and source", "source: {driver: mysql, dsn_env: X, table: t}\n    file: x.tsv", "takes no file"},
		{"dsn in yaml", "source: {driver: mysql, dsn: 'u:p@tcp(h)/d', table: t}", `unknown key "dsn"`},
		{"refresh", "source: {driver: mysql, dsn_env: X, table: t}\n    refresh: 10ms", "at least 1s"},
		{"generation", "source: {driver: mysql, dsn_env: X, table: t}\n    generation: always", `generation "always"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := strings.Replace(validConfig, fileDataset, "    "+c.dataset+"\n    privacy_unit: user_id\n", 1)
			_, err := Parse([]byte(cfg), "/etc/dpsql")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want %q", err, c.want)
			}
		})
	}
}
