package config

import (
	"strings"
	"testing"
)

// TestParseMode: mode: pushdown is for protected database datasets, not
// with generation: content.
func TestParseMode(t *testing.T) {
	ok := strings.Replace(validConfig, fileDataset, "    source: {driver: mysql, dsn_env: X, table: t}\n    privacy_unit: user_id\n    mode: pushdown\n", 1)
	c, err := Parse([]byte(ok), "/etc/dpsql")
	if err != nil {
		t.Fatal(err)
	}
	if !c.Datasets[0].Pushdown() || c.Datasets[1].Pushdown() {
		t.Errorf("modes %q %q", c.Datasets[0].Mode, c.Datasets[1].Mode)
	}
	for _, b := range []struct{ name, dataset, want string }{
		{"file", fileDataset + "    mode: pushdown\n", "needs a database source"},
		{"public", "    source: {driver: mysql, dsn_env: X, table: t}\n    public: true\n    mode: pushdown\n", "for protected datasets"},
		{"content", "    source: {driver: mysql, dsn_env: X, table: t}\n    privacy_unit: user_id\n    generation: content\n    mode: pushdown\n", "generation: content needs the rows"},
		{"unknown", "    source: {driver: mysql, dsn_env: X, table: t}\n    privacy_unit: user_id\n    mode: lazy\n", `mode "lazy"`},
	} {
		t.Run(b.name, func(t *testing.T) {
			_, err := Parse([]byte(strings.Replace(validConfig, fileDataset, b.dataset, 1)), "/etc/dpsql")
			if err == nil || !strings.Contains(err.Error(), b.want) {
				t.Errorf("got %v, want %q", err, b.want)
			}
		})
	}
}
