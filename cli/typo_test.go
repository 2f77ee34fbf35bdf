package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigCheckSuggestsTheKeyMeant (issue 24 item 9): `airlock config
// check` answers a misspelt key of the configuration — a top-level section
// included — with its file:line and the key it probably meant.
func TestConfigCheckSuggestsTheKeyMeant(t *testing.T) {
	for _, tc := range []struct{ name, from, to, want string }{
		{"top-level section", "pools:\n", "pool:\n", `airlock.yaml:1:1: unknown field "pool" (did you mean "pools"?)`},
		{"top-level section, last", "pipelines:\n", "pipeline:\n", `(did you mean "pipelines"?)`},
		{"a role's key", "local: {policy: base", "local: {polcy: base", `(did you mean "policy"?)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			must(t, os.MkdirAll(filepath.Join(dir, "pools", "sales"), 0o755))
			must(t, os.WriteFile(filepath.Join(dir, "pools", "sales", "SHA256SUMS"), nil, 0o644))
			cfg := filepath.Join(dir, "airlock.yaml")
			must(t, os.WriteFile(cfg, []byte(strings.Replace(goodConfig, tc.from, tc.to, 1)), 0o644))
			_, err := run(t, "config", "check", cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("config check: %v, want %q", err, tc.want)
			}
		})
	}
}
