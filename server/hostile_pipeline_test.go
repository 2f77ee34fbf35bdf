package server

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

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
