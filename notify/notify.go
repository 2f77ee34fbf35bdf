// Package notify tells people outside the conversation that something waits
// for them: a webhook POST when a declared need waits for an operator's
// approval, and when one expires undecided — so an approval nobody saw does
// not silently run out.
//
// Delivery is best effort and never on a call's path: events go to a
// bounded queue drained by one goroutine (a full queue drops the event and
// logs it), each POST has a timeout and a few retries, redirects are not
// followed. The body carries ids, the operation, the rule and a bounded,
// query-masked target — never the agent's justification text, never a
// credential — and is signed (HMAC-SHA256 over the body, header
// Airlock-Signature: sha256=<hex>) when the webhook names a secret.
package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"
)

// The events a webhook can subscribe to.
const (
	ApprovalPending = "approval.pending"
	ApprovalExpired = "approval.expired"
)

// Event is one notification.
type Event struct {
	Event         string    `json:"event"`
	Time          time.Time `json:"time"`
	DeclarationID string    `json:"declaration_id"`
	ContextID     string    `json:"context_id,omitempty"`
	Principal     string    `json:"principal,omitempty"`
	Operation     string    `json:"operation,omitempty"`
	Target        string    `json:"target,omitempty"` // bounded, credentials masked
	RuleID        string    `json:"rule_id,omitempty"`
	ExpiresAt     time.Time `json:"expires_at,omitzero"`
	// Hint is what an operator runs to decide.
	Hint string `json:"hint,omitempty"`
}

// Webhook is one configured receiver.
type Webhook struct {
	URL    string
	Events []string // empty: every event
	Secret []byte   // empty: unsigned
}

// SignatureHeader carries the body's HMAC-SHA256 under the webhook secret.
const SignatureHeader = "Airlock-Signature"

// Notifier delivers events to webhooks.
type Notifier struct {
	hooks   []Webhook
	log     *slog.Logger
	client  *http.Client
	queue   chan Event
	retries int
	backoff time.Duration
	done    chan struct{}
	once    sync.Once
}

// queueSize bounds events waiting for delivery.
const queueSize = 256

// New starts a notifier; Close stops it after delivering what is queued.
func New(hooks []Webhook, log *slog.Logger) *Notifier {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	n := &Notifier{hooks: hooks, log: log, queue: make(chan Event, queueSize), retries: 3, backoff: time.Second, done: make(chan struct{}),
		client: &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	go n.run()
	return n
}

// Send queues e; it never blocks. A nil Notifier drops everything.
func (n *Notifier) Send(e Event) {
	if n == nil || len(n.hooks) == 0 {
		return
	}
	select {
	case n.queue <- e:
	default:
		n.log.Warn("notification dropped: the queue is full", "event", e.Event, "declaration", e.DeclarationID)
	}
}

// Close delivers what is queued and stops.
func (n *Notifier) Close() {
	if n == nil {
		return
	}
	n.once.Do(func() { close(n.queue) })
	<-n.done
}

func (n *Notifier) run() {
	defer close(n.done)
	for e := range n.queue {
		body, err := json.Marshal(e)
		if err != nil {
			continue
		}
		for _, h := range n.hooks {
			if len(h.Events) > 0 && !slices.Contains(h.Events, e.Event) {
				continue
			}
			if err := n.deliver(h, body); err != nil {
				n.log.Warn("webhook not delivered", "event", e.Event, "declaration", e.DeclarationID, "err", err)
			}
		}
	}
}

// ErrStatus reports a receiver that answered with a non-2xx status.
var ErrStatus = errors.New("webhook answered with an error status")

func (n *Notifier) deliver(h Webhook, body []byte) error {
	var err error
	for attempt := range n.retries {
		if attempt > 0 {
			time.Sleep(n.backoff << (attempt - 1))
		}
		if err = n.post(h, body); err == nil {
			return nil
		}
	}
	return err
}

func (n *Notifier) post(h Webhook, body []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "airlock-notify")
	if len(h.Secret) > 0 {
		req.Header.Set(SignatureHeader, Sign(h.Secret, body))
	}
	resp, err := n.client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%w: %d", ErrStatus, resp.StatusCode)
	}
	return nil
}

// Sign is the Airlock-Signature value of body under secret, for receivers
// to recompute.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}
