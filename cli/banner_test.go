package cli

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/config"
)

// TestStdioBannerEntry (issue 24 item 3): the client entry the stdio
// banner prints starts the same server: the config by absolute path, a
// state directory the client would not find by itself (--state, or this
// shell's $AIRLOCK_STATE) and --context; in JSON, one record.
func TestStdioBannerEntry(t *testing.T) {
	exe, err := os.Executable()
	must(t, err)
	wd, err := os.Getwd()
	must(t, err)
	cases := []struct {
		name                string
		cfgPath, state, ctx string
		stateEnv            string
		want                []string
	}{
		{"the demo, default state", "", "", "", "", []string{"serve"}},
		{"a config by relative path", "conf/a.yaml", "", "", "", []string{"serve", "--config", filepath.Join(wd, "conf/a.yaml")}},
		{"--state", "", "/srv/airlock", "", "", []string{"serve", "--state", "/srv/airlock"}},
		{"$AIRLOCK_STATE", "", "", "", "/var/lib/airlock", []string{"serve", "--state", "/var/lib/airlock"}},
		{"--context", "", "", "h.abc", "", []string{"serve", "--context", "h.abc"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stateEnv(t)
			t.Setenv("AIRLOCK_STATE", tc.stateEnv)
			var text, js bytes.Buffer
			cfg := &config.Config{}
			banner{Streams: Streams{Err: &text}}.stdio(cfg, tc.cfgPath, tc.state, tc.ctx)
			_, entry, ok := strings.Cut(text.String(), "claude_desktop_config.json):  ")
			if !ok {
				t.Fatalf("no entry:\n%s", text.String())
			}
			entry, _, _ = strings.Cut(entry, "\n")
			var e DesktopEntry
			must(t, json.Unmarshal([]byte(entry), &e))
			if got := e.MCPServers["airlock"]; got.Command != exe || !slices.Equal(got.Args, tc.want) {
				t.Fatalf("entry %+v, want %s %q", got, exe, tc.want)
			}
			if !strings.Contains(text.String(), "npx @modelcontextprotocol/inspector -- "+exe+" "+strings.Join(tc.want, " ")) {
				t.Fatalf("inspector line:\n%s", text.String())
			}
			banner{Streams: Streams{Err: &js}, json: true, log: slog.New(slog.NewJSONHandler(&js, nil))}.stdio(cfg, tc.cfgPath, tc.state, tc.ctx)
			var rec map[string]any
			if lines := strings.Split(strings.TrimSpace(js.String()), "\n"); len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &rec) != nil || rec["claude_desktop"] != entry {
				t.Fatalf("JSON banner: %s", js.String())
			}
		})
	}
}
