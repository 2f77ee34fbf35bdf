package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-dev/airlock/internal/execution/runner"
	"github.com/airlock-dev/airlock/internal/testkit/syncbuf"
)

// TestLogNotificationsAtTheClientsLevel: a pipeline run is announced as
// an info log message once the client asks for info; refusals as
// warnings; nothing below the level set.
func TestLogNotificationsAtTheClientsLevel(t *testing.T) {
	c := newFixture(t, "runner").connect(t)
	var mu sync.Mutex
	var got []map[string]any
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/message" {
			mu.Lock()
			got = append(got, n.Params.AdditionalFields)
			mu.Unlock()
		}
	})
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(got) }
	req := mcp.SetLevelRequest{}
	req.Params.Level = mcp.LoggingLevelWarning
	//lint:ignore SA1019 logging/setLevel is deprecated in 2026-07-28 but still served under the legacy revision this fixture speaks (mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	must(t, c.SetLevel(context.Background(), req))
	// No sleep to see nothing come: messages arrive in order on the one
	// stream, so an info message sent here would be got[0] below, before
	// the warning the next call causes.
	call(t, c, "run_pipeline", map[string]any{"pipeline": "count_rows"})
	call(t, c, "run_pipeline", map[string]any{"pipeline": "danger_wipe"}) // denied by policy
	req.Params.Level = mcp.LoggingLevelInfo
	//lint:ignore SA1019 as above
	must(t, c.SetLevel(context.Background(), req))
	call(t, c, "run_pipeline", map[string]any{"pipeline": "count_rows"})
	deadline := time.Now().Add(time.Minute) // a hang guard
	for count() < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || fmt.Sprint(got[0]["level"]) != "warning" || fmt.Sprint(got[1]["level"]) != "info" {
		t.Fatalf("messages: %v", got)
	}
	data, _ := got[1]["data"].(map[string]any)
	if data["event"] != "pipeline.run" || data["pipeline"] != "count_rows" || data["output_pool"] == nil {
		t.Fatalf("info message data: %v", data)
	}
}

// TestCallIDOnEveryLineTheCallCauses (issue 12 item 4): a pipeline run
// logs the runner's call line and the sandbox's own lines (at debug);
// every one of them carries the same call id, and no other call's.
func TestCallIDOnEveryLineTheCallCauses(t *testing.T) {
	f := newFixture(t, "runner")
	var log syncbuf.Buffer
	logger := slog.New(slog.NewJSONHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	r, err := runner.New(f.cfg, f.state, &runner.Options{SandboxTrampoline: trampoline, Logger: logger})
	must(t, err)
	t.Cleanup(func() { r.Close() })
	s, err := r.OpenSession(context.Background(), runner.SessionParams{Principal: "local", Role: "runner", Transport: "inprocess"})
	must(t, err)
	for _, p := range []string{"count_rows", "count_rows"} {
		if resp := s.Run(context.Background(), runner.Call{Tool: "run_pipeline", Args: json.RawMessage(`{"pipeline":"` + p + `"}`)}); resp.IsError {
			t.Fatalf("run_pipeline: %s", resp.Text)
		}
	}
	byCall := map[string][]string{} // call id → messages
	selfTests := map[any]bool{}     // run ids of the sandbox's self-test
	sc := bufio.NewScanner(strings.NewReader(log.String()))
	for sc.Scan() {
		var line map[string]any
		must(t, json.Unmarshal(sc.Bytes(), &line))
		msg, _ := line["msg"].(string)
		id, _ := line["call"].(string)
		// The sandbox's self-test at start is a dry run outside any call.
		if dry, _ := line["dry_run"].(bool); dry && id == "" {
			selfTests[line["run"]] = true
		}
		if strings.HasPrefix(msg, "sandbox: run") && id == "" && !selfTests[line["run"]] {
			t.Errorf("sandbox line without a call id: %s", sc.Text())
		}
		if id != "" {
			byCall[id] = append(byCall[id], msg)
		}
	}
	if len(byCall) != 2 {
		t.Fatalf("%d call ids in the log, want 2:\n%s", len(byCall), log.String())
	}
	for id, msgs := range byCall {
		joined := strings.Join(msgs, "|")
		if strings.Count(joined, "sandbox: run starting") != 1 || strings.Count(joined, "sandbox: run ended") != 1 || msgs[len(msgs)-1] != "call" {
			t.Errorf("call %s logged %q, want its own sandbox start and end, then its call line", id, msgs)
		}
	}
}

// countMarshal counts its encodings.
type countMarshal struct{ n *int }

func (c countMarshal) MarshalJSON() ([]byte, error) { *c.n++; return []byte(`{"big":true}`), nil }

// TestOutcomeEncodesOnlyItsKeys: a declaration's log message carries its
// id, state, decider and operation as the client reads them (typed
// strings as JSON strings) and never encodes the rest of the result (an
// executed need's untrusted details, issue 23).
func TestOutcomeEncodesOnlyItsKeys(t *testing.T) {
	type state string
	var n int
	tests := []struct {
		name, tool string
		structured any
		level      mcp.LoggingLevel
		want       map[string]any
	}{
		{"executed need", "declare_need", map[string]any{"declaration_id": "d1", "state": state("executed"), "operation": state("comm.mcp"),
			"untrusted_details": countMarshal{&n}}, mcp.LoggingLevelInfo,
			map[string]any{"declaration_id": "d1", "state": "executed", "operation": "comm.mcp"}},
		{"approved need", "declare_need", map[string]any{"declaration_id": "d2", "state": "approved", "decided_by": "policy", "reason": countMarshal{&n}},
			mcp.LoggingLevelNotice, map[string]any{"declaration_id": "d2", "state": "approved", "decided_by": "policy"}},
		{"a run's evidence (a struct)", "run_pipeline", struct {
			RunID string `json:"run_id"`
			Exit  int    `json:"exit_code"`
		}{"r1", 0}, mcp.LoggingLevelInfo, map[string]any{"run_id": "r1", "exit_code": float64(0)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			level, data := outcome(tt.tool, &runner.Response{Structured: tt.structured, AuditSeq: 7})
			if level != tt.level {
				t.Errorf("level %s, want %s", level, tt.level)
			}
			for k, v := range tt.want {
				if data[k] != v {
					t.Errorf("%s = %#v, want %#v (%v)", k, data[k], v, data)
				}
			}
			if n != 0 {
				t.Fatalf("the rest of the result was encoded %d times", n)
			}
		})
	}
}
