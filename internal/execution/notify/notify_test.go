package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type receiver struct {
	mu     sync.Mutex
	bodies [][]byte
	sigs   []string
	fail   atomic.Int32 // answer 500 this many times first
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if rc.fail.Load() > 0 {
		rc.fail.Add(-1)
		http.Error(w, "try later", http.StatusInternalServerError)
		return
	}
	b, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.bodies = append(rc.bodies, b)
	rc.sigs = append(rc.sigs, r.Header.Get(SignatureHeader))
	rc.mu.Unlock()
}

func TestDeliverSignedFilteredRetried(t *testing.T) {
	all, pendingOnly := &receiver{}, &receiver{}
	all.fail.Store(2) // delivered on the third attempt
	sa, sp := httptest.NewServer(all), httptest.NewServer(pendingOnly)
	defer sa.Close()
	defer sp.Close()
	secret := []byte("webhook-secret")
	n := newWebhooks([]Webhook{{URL: sa.URL, Secret: secret}, {URL: sp.URL, Events: []string{ApprovalPending}}})
	n.backoff = 10 * time.Millisecond
	n.Send(Event{Event: ApprovalPending, DeclarationID: "d1", Target: `"https://example.com/x"`})
	n.Send(Event{Event: ApprovalExpired, DeclarationID: "d1"})
	n.Close()
	if len(all.bodies) != 2 || len(pendingOnly.bodies) != 1 {
		t.Fatalf("delivered %d and %d, want 2 and 1", len(all.bodies), len(pendingOnly.bodies))
	}
	for i, b := range all.bodies {
		if all.sigs[i] != Sign(secret, b) {
			t.Fatalf("signature %q does not verify", all.sigs[i])
		}
	}
	if pendingOnly.sigs[0] != "" {
		t.Fatal("a webhook without a secret got a signature")
	}
	var e Event
	if err := json.Unmarshal(pendingOnly.bodies[0], &e); err != nil || e.Event != ApprovalPending || e.DeclarationID != "d1" {
		t.Fatalf("body: %s (%v)", pendingOnly.bodies[0], err)
	}
}

func TestSendNeverBlocks(t *testing.T) {
	block := make(chan struct{})
	s := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-block }))
	defer s.Close()
	n := newWebhooks([]Webhook{{URL: s.URL}})
	n.retries = 1
	returnsWhileStuck(t, "Send", func() {
		for range queueSize * 3 {
			n.Send(Event{Event: ApprovalPending})
		}
	})
	close(block)
	n.Close()
	var none *Notifier
	none.Send(Event{Event: ApprovalPending}) // nil: a no-op
	none.Close()
}

func TestNoRedirects(t *testing.T) {
	var hit atomic.Bool
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hit.Store(true) }))
	defer target.Close()
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL, http.StatusTemporaryRedirect)
	}))
	defer redirect.Close()
	n := newWebhooks([]Webhook{{URL: redirect.URL}})
	n.retries = 1
	n.Send(Event{Event: ApprovalPending})
	n.Close()
	if hit.Load() {
		t.Fatal("a redirect was followed")
	}
}

// stuckSink is a sink whose deliveries wait until released, then time out:
// a hook that hangs until the sandbox kills it.
type stuckSink struct {
	release chan struct{}
	calls   atomic.Int32
}

func (s *stuckSink) Kind() string        { return "command" }
func (s *stuckSink) Wants(e string) bool { return e == ApprovalPending }
func (s *stuckSink) Deliver(ctx context.Context, _ []byte) error {
	s.calls.Add(1)
	select {
	case <-s.release:
		return fmt.Errorf("killed: %w", ErrTimeout)
	case <-ctx.Done(): // the notifier gave up: the sandbox kills the hook
		return fmt.Errorf("killed: %w", ctx.Err())
	}
}

// TestSinksDoNotWaitForEachOther: each sink has its own queue, so a hook
// that hangs delays neither a webhook nor Send; every outcome — delivered,
// timed out, dropped — is reported once per event and sink.
func TestSinksDoNotWaitForEachOther(t *testing.T) {
	rc := &receiver{}
	s := httptest.NewServer(rc)
	defer s.Close()
	stuck := &stuckSink{release: make(chan struct{})}
	var mu sync.Mutex
	outcomes := map[string]int{}
	n := NewSinks([]Sink{stuck, &Webhook{URL: s.URL, Events: []string{ApprovalExpired}}}, &Options{OnOutcome: func(kind, outcome string) {
		mu.Lock()
		outcomes[kind+"/"+outcome]++
		mu.Unlock()
	}})
	n.retries, n.backoff = 2, time.Millisecond
	n.Send(Event{Event: ApprovalPending, DeclarationID: "d"})
	for stuck.calls.Load() == 0 { // in delivery: now the queue is empty
		time.Sleep(time.Millisecond)
	}
	for range queueSize + 1 { // queueSize queued, one dropped
		n.Send(Event{Event: ApprovalPending, DeclarationID: "d"})
	}
	n.Send(Event{Event: ApprovalExpired, DeclarationID: "d"}) // not the stuck sink's event
	deadline := time.Now().Add(30 * time.Second)              // a hang guard
	for {
		rc.mu.Lock()
		got := len(rc.bodies)
		rc.mu.Unlock()
		if got == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the webhook did not get its event while a hook hung")
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(stuck.release)
	n.Close()
	want := map[string]int{"webhook/delivered": 1, "command/timeout": queueSize + 1, "command/dropped": 1}
	if fmt.Sprint(outcomes) != fmt.Sprint(want) {
		t.Fatalf("outcomes %v, want %v", outcomes, want)
	}
	if c := stuck.calls.Load(); c != 2*(queueSize+1) {
		t.Fatalf("%d attempts, want 2 per delivered event", c)
	}
}

// TestCloseIsBounded: a receiver that hangs cannot hold a shutdown or a
// reload: Close cancels the delivery under way after the drain timeout and
// drops what is still queued, each reported.
func TestCloseIsBounded(t *testing.T) {
	stuck := &stuckSink{release: make(chan struct{})}
	defer close(stuck.release)
	var mu sync.Mutex
	outcomes := map[string]int{}
	n := NewSinks([]Sink{stuck}, &Options{OnOutcome: func(kind, outcome string) {
		mu.Lock()
		outcomes[kind+"/"+outcome]++
		mu.Unlock()
	}})
	n.drainTimeout = 100 * time.Millisecond
	for range 3 {
		n.Send(Event{Event: ApprovalPending, DeclarationID: "d"})
	}
	for stuck.calls.Load() == 0 { // the first is in delivery, two queued: not left to the scheduler
		time.Sleep(time.Millisecond)
	}
	returnsWhileStuck(t, "Close", n.Close)
	if want := map[string]int{"command/failed": 1, "command/dropped": 2}; fmt.Sprint(outcomes) != fmt.Sprint(want) {
		t.Fatalf("outcomes %v, want %v", outcomes, want)
	}
}

// newWebhooks starts a notifier for webhooks only (the binary builds its
// sinks, webhooks and command hooks, in the runner and calls NewSinks).
func newWebhooks(hooks []Webhook) *Notifier {
	sinks := make([]Sink, len(hooks))
	for i := range hooks {
		sinks[i] = &hooks[i]
	}
	return NewSinks(sinks, nil)
}

// returnsWhileStuck fails unless f returns while the receiver it may wait
// on is still stuck (it is released only after this returns): the verdict
// is that f returned at all, not how fast. The half minute is a hang guard.
func returnsWhileStuck(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { f(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s waits on a receiver that hangs", what)
	}
}
