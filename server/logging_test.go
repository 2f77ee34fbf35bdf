package server

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestLogNotificationsAtTheClientsLevel: a pipeline run is announced as
// an info log message once the client asks for info; refusals as
// warnings; nothing below the level set.
func TestLogNotificationsAtTheClientsLevel(t *testing.T) {
	f := newFixture(t, "runner")
	c := f.connect(t)
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
