package config_test

import (
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/config"
)

// TestConfigSharedNeedsStateless: warm sessions default to one per
// context, announced pin checks for stdio and every call for HTTP; a
// shared session, which would show one caller's upstream state to every
// other, is refused unless the upstream is declared stateless, and a
// wrong scope, pin check or bound is refused with its YAML path.
func TestConfigSharedNeedsStateless(t *testing.T) {
	cfg, err := config.Parse("airlock.yaml", []byte(base+`upstream_sessions: {max: 16, max_per_principal: 2}
upstreams:
  - {id: mem, command: [node]}
  - {id: remote, url: https://mcp.example.com/mcp}
  - {id: clock, command: [node], sessions: shared, stateless: true, idle_timeout_seconds: 30, pin_check_interval_seconds: 5, pin_check: every_call}
`), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mem, _ := cfg.Upstream("mem")
	remote, _ := cfg.Upstream("remote")
	clock, _ := cfg.Upstream("clock")
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"default scope", mem.SessionScope(), config.SessionsContext},
		{"default idle", mem.IdleTimeout(), config.DefaultUpstreamIdle},
		{"default interval", mem.PinCheckInterval(), config.DefaultUpstreamPinCheck},
		{"stdio pin check", mem.PinCheckMode(), config.PinCheckAnnounced},
		{"http pin check", remote.PinCheckMode(), config.PinCheckEveryCall},
		{"shared", clock.SessionScope(), config.SessionsShared},
		{"idle", clock.IdleTimeout(), 30 * time.Second},
		{"interval", clock.PinCheckInterval(), 5 * time.Second},
		{"pin check set", clock.PinCheckMode(), config.PinCheckEveryCall},
		{"bounds", cfg.UpstreamSessions, config.UpstreamSessions{Max: 16, MaxPerPrincipal: 2}},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
	wantRefusals(t, "upstreams:\n", []refusal{
		{"shared without stateless", "  - {id: x, command: [node], sessions: shared}\n", "declare stateless: true"},
		{"unknown scope", "  - {id: x, command: [node], sessions: global}\n", "sessions"},
		{"unknown pin check", "  - {id: x, command: [node], pin_check: never}\n", "pin_check"},
		{"negative idle", "  - {id: x, command: [node], idle_timeout_seconds: -1}\n", "idle_timeout_seconds"},
	})
}
