package server

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-dev/airlock/internal/kit/violation"
)

func TestRunPipeline(t *testing.T) {
	f := newFixture(t, "runner")
	c := f.connect(t)
	res := callOK(t, c, "run_pipeline", map[string]any{"pipeline": "count_rows"})
	ev := structured(t, res)
	outs := ev["outputs"].([]any)
	if len(outs) != 1 || outs[0].(map[string]any)["name"] != "count.txt" || ev["exit_code"].(float64) != 0 {
		t.Fatalf("evidence: %v", ev)
	}
	if len(ev["snapshot_hash"].(string)) != 64 || !strings.Contains(text(res), "sha256 ") {
		t.Fatalf("no hashes: %s", text(res))
	}
	su := ev["source_usage"].(map[string]any)
	if su["integrity_verified"] != true || su["pools_used"].([]any)[0] != "delta" || su["files_accessed"].(float64) != 1 {
		t.Fatalf("source usage: %v", su)
	}
	mechs, _ := json.Marshal(ev["mechanisms"])
	for _, m := range []string{"namespaces", "landlock", "seccomp", "uid_drop"} {
		if !strings.Contains(string(mechs), m) {
			t.Errorf("mechanism %s not applied: %s", m, mechs)
		}
	}
	recs := f.auditRecords(t)
	last := recs[len(recs)-1]
	if last.Tool != "run_pipeline" || last.Capability != "pipeline.run:count_rows" || last.Tier != "act" || !strings.Contains(string(last.Extra), "snapshot_hash") {
		t.Fatalf("audit: %+v", last)
	}
	if prev := recs[len(recs)-2]; prev.Outcome != "started" || prev.Tool != "run_pipeline" {
		t.Fatalf("no started record before the run: %+v", prev)
	}
}

func TestRunPipelineRefusals(t *testing.T) {
	c := newFixture(t, "runner").connect(t)
	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{"unknown pipeline", map[string]any{"pipeline": "nope"}, "INVALID_ARGUMENTS"}, // not in the schema's enum
		{"input pool not bound", map[string]any{"pipeline": "over_gamma"}, "POOL_NOT_SELECTED"},
		{"input pool fails its manifest", map[string]any{"pipeline": "over_alpha"}, "INTEGRITY_FAILURE"},
		{"denied by policy", map[string]any{"pipeline": "danger_wipe"}, "POLICY_DENIED"},
		{"missing parameter", map[string]any{"pipeline": "greet"}, "INVALID_ARGUMENTS"},
		{"parameter breaks its pattern", map[string]any{"pipeline": "greet", "params": map[string]any{"name": "Robert'); DROP"}}, "INVALID_ARGUMENTS"},
		{"option injection", map[string]any{"pipeline": "greet", "params": map[string]any{"name": "-rf"}}, "INVALID_ARGUMENTS"},
		{"undeclared parameter", map[string]any{"pipeline": "greet", "params": map[string]any{"name": "ann", "extra": 1}}, "INVALID_ARGUMENTS"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := call(t, c, "run_pipeline", tc.args)
			if code(res) != tc.want {
				t.Fatalf("code %q, want %q: %s", code(res), tc.want, text(res))
			}
		})
	}
	if res := call(t, c, "run_pipeline", map[string]any{"pipeline": "greet", "params": map[string]any{"name": "ann"}}); res.IsError {
		t.Fatalf("valid parameter refused: %s", text(res))
	}
}

func TestRunPipelineBlockedInPlanning(t *testing.T) {
	c := newFixture(t, "planner").connect(t)
	if res := call(t, c, "run_pipeline", map[string]any{"pipeline": "count_rows"}); code(res) != "PHASE_BLOCKED" {
		t.Fatalf("got %s", text(res))
	}
}

// TestUndeclaredWriteIsDiscarded: a file the pipeline was not allowed to
// produce is a WRITE_ATTEMPT in the evidence and is not published.
func TestUndeclaredWriteIsDiscarded(t *testing.T) {
	c := newFixture(t, "runner").connect(t)
	res := callOK(t, c, "run_pipeline", map[string]any{"pipeline": "sneaky"})
	out := text(res)
	if !strings.Contains(out, `WRITE_ATTEMPT: "undeclared.txt"`) || !strings.Contains(out, "output declared.txt") {
		t.Fatalf("evidence: %s", out)
	}
	// stdout came from untrusted code: fenced.
	if !strings.Contains(out, "UNTRUSTED_EXTERNAL_CONTENT") || !strings.Contains(out, "done") {
		t.Fatalf("pipeline stdout not fenced: %s", out)
	}
}

// TestPipelineCannotReachTheNetwork: a listener on the host's loopback
// never sees a connection from inside the sandbox.
func TestPipelineCannotReachTheNetwork(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer ln.Close()
	c := newFixture(t, "runner").connect(t)
	port := ln.Addr().(*net.TCPAddr).Port
	res := callOK(t, c, "run_pipeline", map[string]any{"pipeline": "phone_home", "params": map[string]any{"port": port}})
	if ev := structured(t, res); ev["exit_code"].(float64) == 0 {
		t.Fatalf("the connection succeeded: %v", ev)
	}
	// Nothing accepts while the run lasts: a connection it made would wait
	// in the listener's backlog, so one look now decides (no sleep).
	ln.(*net.TCPListener).SetDeadline(time.Now())
	if conn, err := ln.Accept(); err == nil {
		conn.Close()
		t.Fatal("the listener got a connection from the sandbox")
	}
}

// TestPipelineProgress: a client that asks for progress gets notifications
// while the pipeline runs.
func TestPipelineProgress(t *testing.T) {
	c := newFixture(t, "runner").connect(t)
	var mu sync.Mutex
	var got []mcp.JSONRPCNotification
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/progress" {
			mu.Lock()
			got = append(got, n)
			mu.Unlock()
		}
	})
	req := mcp.CallToolRequest{}
	req.Params.Name = "run_pipeline"
	req.Params.Arguments = map[string]any{"pipeline": "slow"}
	req.Params.Meta = &mcp.Meta{ProgressToken: "tok-1"}
	res, err := c.CallTool(context.Background(), req)
	must(t, err)
	if res.IsError {
		t.Fatal(text(res))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) < 1 {
		t.Fatal("no progress notification during a 2.3 s run")
	}
	if tok := got[0].Params.AdditionalFields["progressToken"]; tok != "tok-1" {
		t.Fatalf("progress token %v", tok)
	}
}

// TestCancelledPipelineIsItsOwnOutcome: a client that cancels a run is
// recorded as cancelled (CANCELLED), not as an internal error with a ref.
func TestCancelledPipelineIsItsOwnOutcome(t *testing.T) {
	f := newFixture(t, "runner")
	c := f.connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = "run_pipeline"
	req.Params.Arguments = map[string]any{"pipeline": "slow"}
	_, _ = c.CallTool(ctx, req)
	deadline := time.Now().Add(time.Minute) // a hang guard
	for {
		for _, r := range f.auditRecords(t) {
			if r.Tool == "run_pipeline" && r.Outcome != "started" {
				if r.Outcome != "cancelled" || r.Violation != string(violation.Cancelled) || r.ErrorRef != "" {
					t.Fatalf("cancelled run recorded as %s/%s ref %q", r.Outcome, r.Violation, r.ErrorRef)
				}
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the cancelled run was not recorded")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestHostilePipelinesEndToEnd: each hostile pipeline runs through the
// whole stack — runner, sandbox, workspace — and its containment shows in
// the evidence the agent gets and in the audit record. (The sandbox
// package's own suite covers more cases at the mechanism level.)
func TestHostilePipelinesEndToEnd(t *testing.T) {
	f := newFixture(t, "runner")
	c := f.connect(t)
	gamma := filepath.Join(f.dir, "pools", "gamma", "g.txt")
	deltaFile := filepath.Join(f.dir, "pools", "delta", "rows.csv")
	before, _ := os.ReadFile(deltaFile)
	tests := []struct {
		name, pipeline string
		params         map[string]any
		check          func(ev map[string]any, text string) string // returns a failure or ""
	}{
		{"read an unbound pool", "cat_file", map[string]any{"path": gamma}, exitNonZeroWithout("gamma-secret-content")},
		{"read /etc/shadow", "cat_file", map[string]any{"path": "/etc/shadow"}, exitNonZeroWithout("root:")},
		{"write into a pool", "overwrite", map[string]any{"path": deltaFile}, exitNonZeroWithout("")},
		{"fork bomb", "fork_bomb", nil, limitHit("procs")},
		{"memory bomb", "memory_bomb", nil, killedBy("memory")},
		{"endless loop", "spin", nil, killedBy("cpu_time")},
		{"output flood", "flood", nil, limitHit("output")},
		{"setsid escape", "escape_kill", nil, killedBy("wall_time")},
		// Issue 10 items 8-10: the pool holds exactly its manifest's files
		// (no .env, no SHA256SUMS), paths are the stable sandbox paths, and
		// 200 MB stop at the 16 MiB quota with a LIMIT_EXCEEDED record.
		{"manifest only, stable paths", "where", nil, func(ev map[string]any, text string) string {
			switch {
			case !strings.Contains(text, "/out\n/out /pools/delta\nrows.csv\n"):
				return "paths or pool listing not the stable ones"
			case strings.Contains(text, "delta-secret-env") || strings.Contains(text, "SHA256SUMS"):
				return "a file beside the manifest reached the pipeline"
			case strings.Contains(text, f.dir):
				return "a host path reached the agent"
			}
			return exitNonZeroWithout("")(ev, text)
		}},
		{"fill the disk", "fill_disk", nil, func(ev map[string]any, text string) string {
			if msg := limitHit("disk")(ev, text); msg != "" {
				return msg
			}
			if !strings.Contains(text, `LIMIT_EXCEEDED: "disk quota of 16777216 bytes`) || ev["disk_bytes"].(float64) > 16<<20 {
				return "quota not reported as LIMIT_EXCEEDED"
			}
			return ""
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := map[string]any{"pipeline": tc.pipeline}
			if tc.params != nil {
				args["params"] = tc.params
			}
			res := call(t, c, "run_pipeline", args)
			if res.IsError {
				t.Fatalf("refused instead of contained: %s", text(res))
			}
			ev := structured(t, res)
			if msg := tc.check(ev, text(res)); msg != "" {
				t.Fatalf("%s\nevidence: %v", msg, ev)
			}
			recs := f.auditRecords(t)
			last := recs[len(recs)-1]
			if last.Tool != "run_pipeline" || !strings.Contains(string(last.Extra), ev["run_id"].(string)) {
				t.Fatalf("evidence not in the audit record: %+v", last)
			}
		})
	}
	if after, _ := os.ReadFile(deltaFile); string(after) != string(before) {
		t.Fatalf("a pool file was changed: %q", after)
	}
}

func exitNonZeroWithout(secret string) func(map[string]any, string) string {
	return func(ev map[string]any, text string) string {
		if ev["exit_code"].(float64) == 0 {
			return "exited 0"
		}
		if secret != "" && strings.Contains(text, secret) {
			return "the secret reached the agent"
		}
		return ""
	}
}

func killedBy(reason string) func(map[string]any, string) string {
	return func(ev map[string]any, _ string) string {
		if ev["killed"] != true || ev["kill_reason"] != reason {
			return "not killed by " + reason
		}
		return ""
	}
}

func limitHit(limit string) func(map[string]any, string) string {
	return func(ev map[string]any, _ string) string {
		hit, _ := ev["limits_hit"].([]any)
		if !slices.Contains(hit, any(limit)) {
			return "limit " + limit + " not recorded"
		}
		return ""
	}
}
