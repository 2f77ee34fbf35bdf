// Package notify tells people outside the conversation that something waits
// for them: a webhook POST, or a command hook, when a declared need waits
// for an operator's approval, and when one expires undecided — so an
// approval nobody saw does not silently run out.
//
// One delivery discipline serves every [Sink]: webhooks ([Webhook], here)
// and command hooks (built by the runner, which runs them only in the
// sandbox: this package starts no process). Delivery is best effort and
// never on a call's path: each sink has its own bounded queue drained by
// its own goroutine (a full queue drops the event and logs it; a sink that
// hangs delays only itself), each attempt has a timeout and a few retries,
// every failure is logged and every outcome reported to
// [Options.OnOutcome] (metrics), and [Notifier.Close] gives up after
// [DrainTimeout] so a hanging receiver cannot hold a shutdown or a reload.
// Webhook redirects are not followed.
//
// The body — the same bytes for every sink — carries ids, the operation,
// the rule and a bounded, query-masked target — never the agent's
// justification text, never a credential — and a webhook's is signed
// (HMAC-SHA256 over the body, header Airlock-Signature: sha256=<hex>) when
// it names a secret.
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

// Sink is one receiver of events: a webhook, or a command hook the runner
// runs in the sandbox. Every sink gets its own bounded queue and goroutine
// from the [Notifier], so one that hangs delays only itself — never a call,
// never another sink. Deliver is called from that goroutine only, one
// delivery at a time; each attempt bounds itself (a webhook's 5 s, a
// hook's timeout) and must return soon after ctx ends, which Close does
// after DrainTimeout (a command sink's process is then killed).
type Sink interface {
	// Kind names the sink's class in logs and metrics ("webhook",
	// "command"): a bounded, server-chosen value.
	Kind() string
	// Wants reports whether the sink subscribed to event.
	Wants(event string) bool
	// Deliver hands over one event's JSON body (the same bytes to every
	// sink); an error is retried.
	Deliver(ctx context.Context, body []byte) error
}

// Outcomes of one event at one sink, reported to [Options.OnOutcome].
const (
	OutcomeDelivered = "delivered"
	OutcomeFailed    = "failed"  // every attempt failed
	OutcomeTimeout   = "timeout" // the last attempt ran out of time (a hook killed at its timeout)
	OutcomeDropped   = "dropped" // the sink's queue was full
)

// ErrTimeout marks a delivery that ran out of time: a command hook killed at
// its timeout. It is reported as OutcomeTimeout.
var ErrTimeout = errors.New("notification receiver timed out")

// Webhook is one configured receiver.
type Webhook struct {
	URL    string
	Events []string // empty: every event
	Secret []byte   // empty: unsigned
}

// webhookClient follows no redirect (a receiver cannot bounce the body to
// another host) and gives up after 5 s. It holds no state of its own.
var webhookClient = &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// Kind is "webhook".
func (h *Webhook) Kind() string { return "webhook" }

// Wants: an empty Events list hears every event.
func (h *Webhook) Wants(event string) bool {
	return len(h.Events) == 0 || slices.Contains(h.Events, event)
}

// SignatureHeader carries the body's HMAC-SHA256 under the webhook secret.
const SignatureHeader = "Airlock-Signature"

// Options configure a Notifier; nil means defaults.
type Options struct {
	Logger *slog.Logger
	// OnOutcome, when set, is told how each event ended at each sink
	// (metrics). It must not block.
	OnOutcome func(kind, outcome string)
}

// Notifier delivers events to sinks.
type Notifier struct {
	sinks     []*queue
	log       *slog.Logger
	onOutcome func(kind, outcome string)
	retries   int
	backoff   time.Duration
	once      sync.Once
	// ctx ends drainTimeout after Close: what is still in delivery is
	// cancelled (a hook is killed) and what is still queued is dropped, so
	// a hanging receiver cannot hold a shutdown or a reload.
	ctx          context.Context
	cancel       context.CancelFunc
	drainTimeout time.Duration
}

// queue is one sink's bounded queue and the goroutine draining it.
type queue struct {
	sink Sink
	ch   chan Event
	done chan struct{}
}

// queueSize bounds events waiting for delivery, per sink.
const queueSize = 256

// NewSinks starts a notifier for any sinks (webhooks and command hooks:
// one queue and retry discipline for both). Close stops it after
// delivering what is queued.
func NewSinks(sinks []Sink, opts *Options) *Notifier {
	if opts == nil {
		opts = &Options{}
	}
	n := &Notifier{log: opts.Logger, onOutcome: opts.OnOutcome, retries: 3, backoff: time.Second, drainTimeout: DrainTimeout}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	if n.log == nil {
		n.log = slog.New(slog.DiscardHandler)
	}
	for _, s := range sinks {
		q := &queue{sink: s, ch: make(chan Event, queueSize), done: make(chan struct{})}
		n.sinks = append(n.sinks, q)
		go n.run(q)
	}
	return n
}

// Send queues e for every sink that wants it; it never blocks. A nil
// Notifier drops everything.
func (n *Notifier) Send(e Event) {
	if n == nil {
		return
	}
	for _, q := range n.sinks {
		if !q.sink.Wants(e.Event) {
			continue
		}
		select {
		case q.ch <- e:
		default:
			n.log.Warn("notification dropped: the queue is full", "sink", q.sink.Kind(), "event", e.Event, "declaration", e.DeclarationID)
			n.outcome(q.sink, OutcomeDropped)
		}
	}
}

// DrainTimeout bounds Close: what is not delivered by then is given up.
const DrainTimeout = 10 * time.Second

// Close delivers what is queued, for at most DrainTimeout, and stops.
// Later events are dropped (logged and reported as OutcomeDropped); a
// delivery under way is cancelled.
func (n *Notifier) Close() {
	if n == nil {
		return
	}
	n.once.Do(func() {
		for _, q := range n.sinks {
			close(q.ch)
		}
		time.AfterFunc(n.drainTimeout, n.cancel)
	})
	for _, q := range n.sinks {
		<-q.done
	}
	n.cancel()
}

func (n *Notifier) outcome(s Sink, outcome string) {
	if n.onOutcome != nil {
		n.onOutcome(s.Kind(), outcome)
	}
}

func (n *Notifier) run(q *queue) {
	defer close(q.done)
	for e := range q.ch {
		if n.ctx.Err() != nil {
			n.log.Warn("notification dropped: shutting down", "sink", q.sink.Kind(), "event", e.Event, "declaration", e.DeclarationID)
			n.outcome(q.sink, OutcomeDropped)
			continue
		}
		body, err := json.Marshal(e)
		if err != nil {
			continue
		}
		err = n.deliver(q.sink, body)
		switch {
		case err == nil:
			n.outcome(q.sink, OutcomeDelivered)
		case errors.Is(err, ErrTimeout):
			n.log.Warn(q.sink.Kind()+" not delivered", "event", e.Event, "declaration", e.DeclarationID, "err", err)
			n.outcome(q.sink, OutcomeTimeout)
		default:
			n.log.Warn(q.sink.Kind()+" not delivered", "event", e.Event, "declaration", e.DeclarationID, "err", err)
			n.outcome(q.sink, OutcomeFailed)
		}
	}
}

// ErrStatus reports a receiver that answered with a non-2xx status.
var ErrStatus = errors.New("webhook answered with an error status")

// deliver tries a sink n.retries times, backing off between attempts.
func (n *Notifier) deliver(s Sink, body []byte) error {
	var err error
	for attempt := range n.retries {
		if attempt > 0 {
			select {
			case <-time.After(n.backoff << (attempt - 1)):
			case <-n.ctx.Done():
				return errors.Join(err, n.ctx.Err())
			}
		}
		if err = s.Deliver(n.ctx, body); err == nil {
			return nil
		}
	}
	return err
}

// Deliver POSTs body, signed when the webhook has a secret; each attempt
// has 5 s.
func (h *Webhook) Deliver(ctx context.Context, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
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
	resp, err := webhookClient.Do(req)
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
