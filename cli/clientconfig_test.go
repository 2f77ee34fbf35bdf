package cli

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestClientConfig: each client's entry starts this binary's serve with
// absolute paths to it, the configuration and the state directory — the
// state directory always explicit, resolved from --state or the operator's
// environment, since a stdio client drops that environment (issue 24 item
// 4). claude, cursor and vscode print valid JSON in their client's shape;
// inspector a command line a POSIX shell splits into exactly that argv.
func TestClientConfig(t *testing.T) {
	bin, err := os.Executable()
	must(t, err)
	bin, err = filepath.EvalSymlinks(bin)
	must(t, err)
	demo := mustRead(t, filepath.Join("..", "internal", "config", "demo", "airlock.yaml"))
	dir := t.TempDir()
	t.Chdir(dir)
	cfg := filepath.Join(dir, "my cfg.yaml") // a space: must stay one word
	must(t, os.WriteFile(cfg, demo, 0o644))
	t.Setenv("AIRLOCK_STATE", "env-state") // relative: resolved against the working directory
	t.Setenv("XDG_STATE_HOME", "")
	withCfg := []string{bin, "serve", "--config", cfg}
	tests := []struct {
		name string
		args []string
		key  string // the server map's key in the JSON
		typ  string
		want []string
	}{
		{"claude, state from the flag", []string{"claude", "--config", "my cfg.yaml", "--state", "st"}, "mcpServers", "", append(withCfg, "--state", filepath.Join(dir, "st"))},
		{"cursor, state from $AIRLOCK_STATE", []string{"cursor", "--config", cfg}, "mcpServers", "", append(withCfg, "--state", filepath.Join(dir, "env-state"))},
		{"vscode, the demo", []string{"vscode"}, "servers", "stdio", []string{bin, "serve", "--state", filepath.Join(dir, "env-state")}},
		{"inspector", []string{"inspector", "--config", "my cfg.yaml", "--state", "st"}, "", "", append([]string{"npx", "-y", InspectorPackage, "--"}, append(withCfg, "--state", filepath.Join(dir, "st"))...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := run(t, append([]string{"client-config"}, tt.args...)...)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			var argv []string
			if tt.key == "" {
				argv = shellWords(t, out)
			} else {
				var doc map[string]map[string]struct {
					Type    string   `json:"type"`
					Command string   `json:"command"`
					Args    []string `json:"args"`
				}
				if err := json.Unmarshal([]byte(out), &doc); err != nil {
					t.Fatalf("not JSON: %v\n%s", err, out)
				}
				e, ok := doc[tt.key]["airlock"]
				if len(doc) != 1 || !ok || e.Type != tt.typ {
					t.Fatalf("want {%q: {\"airlock\": {type %q …}}}, got\n%s", tt.key, tt.typ, out)
				}
				argv = append([]string{e.Command}, e.Args...)
			}
			if !slices.Equal(argv, tt.want) {
				t.Fatalf("argv\n got %q\nwant %q", argv, tt.want)
			}
		})
	}
	bad := filepath.Join(dir, "bad.yaml")
	must(t, os.WriteFile(bad, []byte("pools: nope\n"), 0o644))
	for _, args := range [][]string{{"claude", "--config", bad}, {"claude", "--config", filepath.Join(dir, "none.yaml")}} {
		if out, err := run(t, append([]string{"client-config"}, args...)...); err == nil || strings.Contains(out, "mcpServers") {
			t.Errorf("client-config %q printed an entry whose server cannot start: %v\n%s", args, err, out)
		}
	}
	for _, args := range [][]string{{}, {"emacs"}, {"claude", "extra"}} {
		if _, err := run(t, append([]string{"client-config"}, args...)...); !errors.Is(err, ErrUsage) {
			t.Errorf("client-config %q: %v, want a usage error", args, err)
		}
	}
}

// TestClientConfigInspectorVersion: the inspector client-config names is
// the one e2e pins (and make inspect runs).
func TestClientConfigInspectorVersion(t *testing.T) {
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	must(t, json.Unmarshal(mustRead(t, filepath.Join("..", "e2e", "package.json")), &pkg))
	name, version, _ := strings.Cut(strings.TrimPrefix(InspectorPackage, "@"), "@")
	if got := pkg.Dependencies["@"+name]; got != version {
		t.Fatalf("client-config names %s, e2e/package.json pins %q", InspectorPackage, got)
	}
}

// shellWords splits line as sh does.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	out, err := exec.Command("sh", "-c", "set -- "+strings.TrimSpace(line)+`; for a; do printf '%s\0' "$a"; done`).Output()
	must(t, err)
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	must(t, err)
	return b
}
