package config

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Notify configures notifications (package notify).
type Notify struct {
	Webhooks []WebhookConfig `json:"webhooks,omitempty" jsonschema:"description=Receivers of a JSON POST per event."`
	Commands []CommandHook   `json:"commands,omitempty" jsonschema:"description=Programs run in the pipeline sandbox per event\\, the event's JSON body on stdin."`
}

// WebhookConfig is one webhook receiver.
type WebhookConfig struct {
	URL       string   `json:"url" jsonschema:"description=http(s) URL the event is POSTed to (an operator's endpoint: chat bridge\\, pager\\, ticket system)."`
	Events    []string `json:"events,omitempty" jsonschema:"description=approval.pending and/or approval.expired (default both)."`
	SecretEnv string   `json:"secret_env,omitempty" jsonschema:"description=Environment variable holding the HMAC secret; each body is then signed in the Airlock-Signature header (sha256=<hex>)."`
}

// CommandHook is one command hook: a program run inside the pipeline
// sandbox for each event it hears (nothing executes outside the boundary),
// with the event's JSON body — the webhook's body — on stdin.
type CommandHook struct {
	ID        string                 `json:"id" jsonschema:"description=Names the hook in logs: 1-32 of [a-z0-9_-]."`
	Argv      []string               `json:"argv" jsonschema:"description=The argument vector (never a shell string); the program is an absolute path that exists when the configuration is loaded."`
	Events    []string               `json:"events,omitempty" jsonschema:"description=approval.pending and/or approval.expired (default both)."`
	TimeoutMS int64                  `json:"timeout_ms,omitempty" jsonschema:"minimum=0,maximum=300000,description=Each attempt is killed after this long (default 10000)."`
	Env       map[string]TokenSource `json:"env,omitempty" jsonschema:"description=Environment variables for the hook\\, each read from an env variable or a file of Airlock's host. Nothing else of Airlock's environment is passed."`
	ReadOnly  []string               `json:"read_only,omitempty" jsonschema:"description=Host files or directories the hook needs (its script) besides the system directories\\, bound read-only at the same path inside the sandbox; relative to the config file."`
}

// Command hook bounds.
const (
	DefaultHookTimeoutMS = 10000
	MaxHookTimeoutMS     = 300000
)

// NotifyEvents are the events a webhook may name.
var NotifyEvents = []string{"approval.pending", "approval.expired"}

func (c *Config) resolveNotifyPaths() {
	for i := range c.Notify.Commands {
		h := &c.Notify.Commands[i]
		if h.TimeoutMS == 0 {
			h.TimeoutMS = DefaultHookTimeoutMS
		}
		c.relList(h.ReadOnly)
		c.relTokenFiles(h.Env)
	}
}

func (c *Config) checkNotify() error {
	for i, w := range c.Notify.Webhooks {
		at := fmt.Sprintf("$.notifications.webhooks[%d]", i)
		u, err := url.Parse(w.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			return c.at(at+".url", fmt.Errorf("webhook URL %q: want http(s)://host/… without credentials: %w", w.URL, ErrInvalid))
		}
		if err := c.checkEvents(at, w.Events); err != nil {
			return err
		}
	}
	seen := map[string]bool{}
	for i, h := range c.Notify.Commands {
		at := fmt.Sprintf("$.notifications.commands[%d]", i)
		if err := checkName(seen, UpstreamIDRE, "command hook id", h.ID); err != nil {
			return c.at(at+".id", err)
		}
		if err := checkHookArgv(h.Argv); err != nil {
			return c.at(at+".argv", fmt.Errorf("command hook %q: %w", h.ID, err))
		}
		if err := c.checkEvents(at, h.Events); err != nil {
			return err
		}
		if h.TimeoutMS < 0 || h.TimeoutMS > MaxHookTimeoutMS {
			return c.at(at+".timeout_ms", fmt.Errorf("timeout %d ms (want 1-%d): %w", h.TimeoutMS, MaxHookTimeoutMS, ErrInvalid))
		}
		for name, t := range h.Env {
			// The sandbox sets HOME, TMPDIR and PATH; a hook may not replace them.
			if !envNameRE.MatchString(name) || reservedEnv(name) {
				return c.at(at+".env."+name, fmt.Errorf("%q is not a variable a hook may set: %w", name, ErrInvalid))
			}
			if err := t.check(); err != nil {
				return c.at(at+".env."+name, err)
			}
		}
		for j, p := range h.ReadOnly {
			// A path the sandbox could not bind would fail every delivery.
			if _, err := os.Stat(p); err != nil || !filepath.IsAbs(p) {
				return c.at(fmt.Sprintf("%s.read_only[%d]", at, j), fmt.Errorf("path %q is not an absolute path that exists: %w", p, ErrInvalid))
			}
		}
	}
	return nil
}

func (c *Config) checkEvents(at string, events []string) error {
	for j, e := range events {
		if !slices.Contains(NotifyEvents, e) {
			return c.at(fmt.Sprintf("%s.events[%d]", at, j), fmt.Errorf("event %q (want one of %v): %w", e, NotifyEvents, ErrInvalid))
		}
	}
	return nil
}

// checkHookArgv refuses a program the sandbox could not run as the operator
// meant: a relative name (looked up in which PATH? resolved against which
// directory?), a file that is missing or not an executable regular file —
// caught at `config check`, not at the first approval nobody then hears of.
func checkHookArgv(argv []string) error {
	if len(argv) == 0 || strings.IndexByte(strings.Join(argv, ""), 0) >= 0 {
		return fmt.Errorf("empty argv or NUL byte: %w", ErrInvalid)
	}
	prog := argv[0]
	if !filepath.IsAbs(prog) || filepath.Clean(prog) != prog {
		return fmt.Errorf("program %q is not an absolute, clean path: %w", prog, ErrInvalid)
	}
	fi, err := os.Stat(prog)
	if err != nil {
		return fmt.Errorf("program %q: %w: %w", prog, err, ErrInvalid)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("program %q is not an executable file: %w", prog, ErrInvalid)
	}
	return nil
}
