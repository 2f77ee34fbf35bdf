package config

import (
	"fmt"
	"net/url"
	"slices"
)

// Notify configures notifications (package notify).
type Notify struct {
	Webhooks []WebhookConfig `json:"webhooks,omitempty" jsonschema:"description=Receivers of a JSON POST per event."`
}

// WebhookConfig is one webhook receiver.
type WebhookConfig struct {
	URL       string   `json:"url" jsonschema:"description=http(s) URL the event is POSTed to (an operator's endpoint: chat bridge\\, pager\\, ticket system)."`
	Events    []string `json:"events,omitempty" jsonschema:"description=approval.pending and/or approval.expired (default both)."`
	SecretEnv string   `json:"secret_env,omitempty" jsonschema:"description=Environment variable holding the HMAC secret; each body is then signed in the Airlock-Signature header (sha256=<hex>)."`
}

// NotifyEvents are the events a webhook may name.
var NotifyEvents = []string{"approval.pending", "approval.expired"}

func (c *Config) checkNotify() error {
	for i, w := range c.Notify.Webhooks {
		at := fmt.Sprintf("$.notifications.webhooks[%d]", i)
		u, err := url.Parse(w.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			return c.at(at+".url", fmt.Errorf("webhook URL %q: want http(s)://host/… without credentials: %w", w.URL, ErrInvalid))
		}
		for j, e := range w.Events {
			if !slices.Contains(NotifyEvents, e) {
				return c.at(fmt.Sprintf("%s.events[%d]", at, j), fmt.Errorf("event %q (want one of %v): %w", e, NotifyEvents, ErrInvalid))
			}
		}
	}
	return nil
}
