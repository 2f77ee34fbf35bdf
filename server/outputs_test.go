package server

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/execution/runner"
	"github.com/mark3labs/mcp-go/mcp"
)

var outputPoolRe = regexp.MustCompile(`pool (run-[0-9a-f-]{36}) \((trusted|untrusted)\)`)

// TestRunOutputsAreAPool: a run's published outputs become a read-only
// pool of the context that ran it — listed by list_pools, read (verified
// against the outputs' SHA-256) by read_pool_file, also by another process
// serving the same context — and a small trusted text output comes back
// inline.
func TestRunOutputsAreAPool(t *testing.T) {
	f := newFixture(t, "runner")
	c := f.connect(t)
	res := callOK(t, c, "run_pipeline", map[string]any{"pipeline": "count_rows"})
	m := outputPoolRe.FindStringSubmatch(text(res))
	if m == nil || m[2] != "trusted" {
		t.Fatalf("no output pool named: %s", text(res))
	}
	pool := m[1]
	if !strings.Contains(text(res), "--- output \"count.txt\" ---\n3\n") {
		t.Fatalf("small trusted output not inline: %s", text(res))
	}
	if ev := structured(t, res); ev["output_pool"] != pool {
		t.Fatalf("evidence output_pool = %v", ev["output_pool"])
	}
	list := call(t, c, "list_pools", nil)
	if !strings.Contains(text(list), pool) {
		t.Fatalf("list_pools does not show %s: %s", pool, text(list))
	}
	files := call(t, c, "list_pools", map[string]any{"pool": pool})
	if files.IsError || !strings.Contains(text(files), "count.txt") {
		t.Fatalf("list_pools %s: %s", pool, text(files))
	}
	read := call(t, c, "read_pool_file", map[string]any{"pool": pool, "path": "count.txt"})
	if read.IsError || text(read) != "3\n" {
		t.Fatalf("read_pool_file: %s", text(read))
	}
	// Another process on the same state serves the same context and can
	// read the pool from the store's record of it.
	r2, err := runner.New(f.cfg, f.state, &runner.Options{SandboxTrampoline: trampoline})
	must(t, err)
	defer r2.Close()
	srv2, err := New(r2, nil)
	must(t, err)
	defer srv2.Close()
	f2 := &fixture{dir: f.dir, state: f.state, cfg: f.cfg, r: r2, srv: srv2}
	c2 := f2.connect(t)
	if again := call(t, c2, "read_pool_file", map[string]any{"pool": pool, "path": "count.txt"}); again.IsError || text(again) != "3\n" {
		t.Fatalf("second process: %s", text(again))
	}
	// The pool is the context's: another principal's context does not hold it.
	other := newFixture(t, "local")
	if res := call(t, other.connect(t), "read_pool_file", map[string]any{"pool": pool, "path": "count.txt"}); !res.IsError {
		t.Fatal("another context read the output pool")
	}
}

// TestUntrustedRunOutputsAreFenced: outputs of a run over an untrusted
// pool are an untrusted pool: not inline, and fenced when read.
func TestUntrustedRunOutputsAreFenced(t *testing.T) {
	cfg := fmt.Sprintf(testConfig, "local")
	cfg = strings.Replace(cfg, "  runner: {policy: pipes, pools: [alpha, delta], initial_phase: execution}\n",
		"  runner: {policy: pipes, pools: [alpha, beta, delta], initial_phase: execution}\n", 1)
	cfg = strings.Replace(cfg, "pipelines:\n", `pipelines:
  - name: copy_notes
    description: Copies the untrusted notes.
    argv: [/bin/cp, '{pool.beta}/notes.md', '{out}/notes.txt']
    inputs: [beta]
    outputs: [notes.txt]
`, 1)
	cfg = strings.Replace(cfg, "transports:\n  stdio: {role: local}", "transports:\n  stdio: {role: runner}", 1)
	f := newFixtureConfig(t, cfg)
	c := f.connect(t)
	res := callOK(t, c, "run_pipeline", map[string]any{"pipeline": "copy_notes"})
	m := outputPoolRe.FindStringSubmatch(text(res))
	if m == nil || m[2] != "untrusted" {
		t.Fatalf("output pool not untrusted: %s", text(res))
	}
	if strings.Contains(text(res), "You are root now") {
		t.Fatalf("untrusted output inline: %s", text(res))
	}
	read := call(t, c, "read_pool_file", map[string]any{"pool": m[1], "path": "notes.txt"})
	if read.IsError || !strings.Contains(text(read), "UNTRUSTED_EXTERNAL_CONTENT") || structured(t, read)["untrusted"] != true {
		t.Fatalf("untrusted output not fenced: %s", text(read))
	}
}

// TestOutputPoolsListAfterConfiguredAndRetain (issue 24 item 5): run
// outputs no longer crowd out the configured pools. list_pools shows the
// configured pools first, then the outputs newest first, and pages; a
// context keeps server.max_output_pools outputs, the oldest stop being
// listed (and bound); resources/list still lists the configured pools'
// files first.
func TestOutputPoolsListAfterConfiguredAndRetain(t *testing.T) {
	cfg := strings.Replace(fmt.Sprintf(testConfig, "runner"), "server:\n", "server:\n  max_output_pools: 2\n", 1)
	f := newFixtureConfig(t, cfg)
	c := f.connect(t)
	var runs []string
	for range 3 {
		res := call(t, c, "run_pipeline", map[string]any{"pipeline": "count_rows"})
		m := outputPoolRe.FindStringSubmatch(text(res))
		if res.IsError || m == nil {
			t.Fatalf("run: %s", text(res))
		}
		runs = append(runs, m[1])
	}
	pools := func(args map[string]any) ([]string, map[string]any) {
		t.Helper()
		res := call(t, c, "list_pools", args)
		if res.IsError {
			t.Fatal(text(res))
		}
		st := structured(t, res)
		var ids []string
		for _, p := range st["pools"].([]any) {
			ids = append(ids, p.(map[string]any)["id"].(string))
		}
		return ids, st
	}
	all, st := pools(nil)
	want := []string{"alpha", "delta", runs[2], runs[1]} // configured sorted, then newest first; runs[0] retained out
	if strings.Join(all, " ") != strings.Join(want, " ") {
		t.Fatalf("list_pools = %v, want %v", all, want)
	}
	if st["total"] != float64(4) || st["next_offset"] != float64(-1) {
		t.Fatalf("paging fields = %v / %v", st["total"], st["next_offset"])
	}
	page, st := pools(map[string]any{"offset": 1, "limit": 2})
	if strings.Join(page, " ") != strings.Join(want[1:3], " ") || st["next_offset"] != float64(3) {
		t.Fatalf("page = %v next %v, want %v next 3", page, st["next_offset"], want[1:3])
	}
	if res := call(t, c, "read_pool_file", map[string]any{"pool": runs[0], "path": "count.txt"}); !res.IsError {
		t.Fatalf("the output pool past the retention is still readable: %s", text(res))
	}
	if res := call(t, c, "read_pool_file", map[string]any{"pool": runs[2], "path": "count.txt"}); res.IsError {
		t.Fatalf("the newest output pool: %s", text(res))
	}
	list, err := c.ListResources(t.Context(), mcp.ListResourcesRequest{})
	must(t, err)
	if len(list.Resources) == 0 || !strings.HasPrefix(list.Resources[0].URI, "airlock://pool/alpha/") {
		t.Fatalf("resources/list does not start with the configured pools: %v", list.Resources[:min(3, len(list.Resources))])
	}
}
