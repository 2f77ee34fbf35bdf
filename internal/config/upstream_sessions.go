package config

import (
	"fmt"
	"time"
)

// Warm upstream sessions (issue 23 item 1): who shares one, how long an
// unused one lives, when its tool list is listed again, and how many a
// process and a principal may hold. The defaults are applied at use (the
// methods below), so a config written before them means the same.

// UpstreamSessions bounds the warm sessions of one Airlock process.
type UpstreamSessions struct {
	Max             int `json:"max,omitempty" jsonschema:"minimum=0,maximum=4096,description=Warm upstream sessions one Airlock process keeps (default 64); at the bound the least recently used idle one is stopped\\, and with none idle a call is UPSTREAM_UNAVAILABLE."`
	MaxPerPrincipal int `json:"max_per_principal,omitempty" jsonschema:"minimum=0,maximum=4096,description=Warm upstream sessions one principal's calls keep (default 8)."`
}

// Session scopes of an upstream (Upstream.Sessions).
const (
	SessionsContext   = "context"
	SessionsPrincipal = "principal"
	SessionsShared    = "shared"
)

// When a warm session's tools are listed again (Upstream.PinCheck).
const (
	PinCheckEveryCall = "every_call"
	PinCheckAnnounced = "announced"
)

// PinCheckMode is when u's warm sessions list their tools again: set, or
// announced for a stdio upstream (its notifications come on the pipe its
// answers come on, in order) and every_call for an HTTP one (a
// notification outside a request's stream has no order with the next
// call).
func (u Upstream) PinCheckMode() string {
	switch {
	case u.PinCheck != "":
		return u.PinCheck
	case u.Stdio():
		return PinCheckAnnounced
	}
	return PinCheckEveryCall
}

// Defaults of the warm sessions.
const (
	DefaultUpstreamIdle     = 5 * time.Minute
	DefaultUpstreamPinCheck = time.Minute
)

// SessionScope is who shares one warm session of u (default context).
func (u Upstream) SessionScope() string {
	if u.Sessions == "" {
		return SessionsContext
	}
	return u.Sessions
}

// IdleTimeout is how long a warm session of u may stay unused.
func (u Upstream) IdleTimeout() time.Duration {
	if u.IdleTimeoutSeconds <= 0 {
		return DefaultUpstreamIdle
	}
	return time.Duration(u.IdleTimeoutSeconds) * time.Second
}

// PinCheckInterval is the age after which a warm session's listing is
// redone before a call, notification or not.
func (u Upstream) PinCheckInterval() time.Duration {
	if u.PinCheckIntervalSeconds <= 0 {
		return DefaultUpstreamPinCheck
	}
	return time.Duration(u.PinCheckIntervalSeconds) * time.Second
}

// checkUpstreamSessions: a shared session would show one caller's upstream
// state to every other, so it is refused unless the operator declared the
// upstream stateless (TestConfigSharedNeedsStateless).
func (c *Config) checkUpstreamSessions() error {
	if s := c.UpstreamSessions; s.Max < 0 || s.MaxPerPrincipal < 0 {
		return c.at("$.upstream_sessions", fmt.Errorf("negative bound: %w", ErrInvalid))
	}
	for i, u := range c.Upstreams {
		at := func(field string, err error) error {
			return c.at(fmt.Sprintf("$.upstreams[%d]%s", i, field), err)
		}
		switch u.SessionScope() {
		case SessionsContext, SessionsPrincipal:
		case SessionsShared:
			if !u.Stateless {
				return at(".sessions", fmt.Errorf("upstream %q: sessions: shared would show one caller's upstream state to another; declare stateless: true if it keeps none: %w", u.ID, ErrInvalid))
			}
		default:
			return at(".sessions", fmt.Errorf("upstream %q: sessions %q (want context, principal or shared): %w", u.ID, u.Sessions, ErrInvalid))
		}
		if m := u.PinCheckMode(); m != PinCheckEveryCall && m != PinCheckAnnounced {
			return at(".pin_check", fmt.Errorf("upstream %q: pin_check %q (want every_call or announced): %w", u.ID, u.PinCheck, ErrInvalid))
		}
		if u.IdleTimeoutSeconds < 0 || u.PinCheckIntervalSeconds < 0 {
			return at("", fmt.Errorf("upstream %q: negative idle_timeout_seconds or pin_check_interval_seconds: %w", u.ID, ErrInvalid))
		}
	}
	return nil
}
