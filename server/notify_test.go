package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/execution/notify"
)

// TestWebhooksForPendingAndExpiredApprovals: a need that waits for an
// operator is announced to the webhook once (signed), not on every poll;
// when it runs out undecided the webhook hears that too, and the expiry is
// an audit record naming the declaration.
func TestWebhooksForPendingAndExpiredApprovals(t *testing.T) {
	var mu sync.Mutex
	var events []notify.Event
	var sigOK bool
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var e notify.Event
		_ = json.Unmarshal(b, &e)
		mu.Lock()
		events = append(events, e)
		sigOK = r.Header.Get(notify.SignatureHeader) == notify.Sign([]byte("s3cret-for-the-hook"), b)
		mu.Unlock()
	}))
	defer hook.Close()
	t.Setenv("AIRLOCK_TEST_HOOK_SECRET", "s3cret-for-the-hook")
	o := newOrigin(t)
	cfg := fmt.Sprintf(testConfig, "fetcher")
	cfg = strings.Replace(cfg, "comm:\n", "notifications:\n  webhooks: [{url: \""+hook.URL+"\", secret_env: AIRLOCK_TEST_HOOK_SECRET}]\ncomm:\n  declaration_ttl_seconds: 1\n", 1)
	f := newFixtureConfig(t, cfg)
	c := f.connect(t)
	res := call(t, c, "declare_need", need(o.URL+"/gated/report?access=1"))
	if res.IsError {
		t.Fatal(text(res))
	}
	id := structured(t, res)["declaration_id"].(string)
	call(t, c, "declare_need", map[string]any{"declaration_id": id}) // a poll: no second event
	wait := func(n int) []notify.Event {
		deadline := time.Now().Add(time.Minute) // a hang guard
		for {
			mu.Lock()
			got := append([]notify.Event(nil), events...)
			mu.Unlock()
			if len(got) >= n || time.Now().After(deadline) {
				return got
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	got := wait(1)
	if len(got) != 1 || got[0].Event != notify.ApprovalPending || got[0].DeclarationID != id || !strings.Contains(got[0].Target, "/gated/report") || !sigOK {
		t.Fatalf("pending event: %+v (signature ok %v)", got, sigOK)
	}
	time.Sleep(1100 * time.Millisecond)
	if n := f.r.ExpireDeclarations(context.Background()); n != 1 {
		t.Fatalf("expired %d", n)
	}
	got = wait(2)
	if len(got) != 2 || got[1].Event != notify.ApprovalExpired || got[1].DeclarationID != id {
		t.Fatalf("expiry event: %+v", got)
	}
	var audited bool
	for _, r := range f.auditRecords(t) {
		audited = audited || (r.Capability == "declaration.expire" && strings.Contains(string(r.Extra), id))
	}
	if !audited {
		t.Fatal("the expiry is not an audit record naming the declaration")
	}
}
