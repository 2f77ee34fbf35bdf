package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/testkit/mcptest"
	"github.com/airlock-dev/airlock/internal/testkit/syncbuf"
)

// TestServeLogsOneJSONLinePerCall (issue 12 item 4): `serve --log-format
// json` writes only JSON objects, one info line "call" per tool call with
// its id, context, tool, decision, rule, outcome, violation and duration,
// each call's id distinct — and no argument value the agent sent appears
// anywhere in the log (an agent-chosen path, an unknown argument's name
// and value).
func TestServeLogsOneJSONLinePerCall(t *testing.T) {
	const marker = "ARGMARKER-7f3c" // in arguments only; must never be logged
	var log syncbuf.Buffer
	state := filepath.Join(t.TempDir(), "state")
	c := serveStdioLog(t, &log, "--state", state, "--log-format", "json")
	callTool(t, c, "list_pools", nil)
	callTool(t, c, "read_pool_file", map[string]any{"pool": "sales", "path": "README.md"})
	if res := callTool(t, c, "read_pool_file", map[string]any{"pool": "sales", "path": marker + "/x.md"}); !res.IsError {
		t.Fatalf("reading a missing file succeeded: %s", mcptest.Text(res))
	}
	callTool(t, c, "read_pool_file", map[string]any{"pool": "sales", "path": "README.md", "extra_" + marker: marker})

	var calls []map[string]any
	deadline := time.Now().Add(time.Minute) // a hang guard: the lines follow the answers
	for len(calls) < 4 && time.Now().Before(deadline) {
		calls = calls[:0]
		sc := bufio.NewScanner(strings.NewReader(log.String()))
		for sc.Scan() {
			var line map[string]any
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
				t.Fatalf("log line is not JSON: %q: %v", sc.Text(), err)
			}
			if line["msg"] == "call" {
				calls = append(calls, line)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if strings.Contains(log.String(), marker) {
		t.Fatalf("an argument value reached the log:\n%s", log.String())
	}
	want := []struct{ tool, outcome, violation, decision string }{
		{"list_pools", "ok", "", "allow"},
		{"read_pool_file", "ok", "", "allow"},
		{"read_pool_file", "violation", "INTEGRITY_FAILURE", "allow"},
		{"read_pool_file", "violation", "INVALID_ARGUMENTS", ""},
	}
	if len(calls) != len(want) {
		t.Fatalf("%d call lines, want %d:\n%s", len(calls), len(want), log.String())
	}
	ids := map[string]bool{}
	for i, w := range want {
		l := calls[i]
		id, _ := l["call"].(string)
		if !strings.HasPrefix(id, "c_") || ids[id] {
			t.Errorf("call %d: id %q missing or repeated", i, id)
		}
		ids[id] = true
		if l["level"] != "INFO" || l["tool"] != w.tool || l["outcome"] != w.outcome || l["decision"] != w.decision {
			t.Errorf("call %d: %v, want %+v", i, l, w)
		}
		if v, _ := l["violation"].(string); v != w.violation {
			t.Errorf("call %d: violation %q, want %q", i, v, w.violation)
		}
		if _, ok := l["duration_ms"].(float64); !ok {
			t.Errorf("call %d: no duration_ms: %v", i, l)
		}
		if l["context"] == "" || l["context"] == nil || l["session"] == nil {
			t.Errorf("call %d: no context/session: %v", i, l)
		}
		if seq, _ := l["audit_seq"].(float64); seq <= 0 {
			t.Errorf("call %d: no audit_seq: %v", i, l)
		}
		if w.decision == "allow" && l["rule"] == "" {
			t.Errorf("call %d: allowed without a rule: %v", i, l)
		}
	}
}

func TestServeRefusesAnUnknownLogFormat(t *testing.T) {
	err := Run(t.Context(), []string{"serve", "--state", t.TempDir(), "--log-format", "xml"}, Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &bytes.Buffer{}})
	if !errors.Is(err, ErrUsage) {
		t.Fatalf("--log-format xml: %v, want ErrUsage", err)
	}
}
