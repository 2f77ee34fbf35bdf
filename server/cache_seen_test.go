package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	statedir "github.com/airlock-dev/airlock/internal/execution/state"
	"github.com/airlock-dev/airlock/internal/operator/operator"
	"github.com/airlock-dev/airlock/internal/policy/contexts"
	"github.com/airlock-dev/airlock/store/pgtest"
)

// TestCachedStateSeenByTheNextCall (issue 27): the session and context
// rows a call needs are served from memory, yet what another process (on
// SQLite: another handle on the file; on PostgreSQL: another instance and
// an operator on the database) changed before a call began is honoured by
// that call — a phase change, the kill switch, a context narrowed, a
// session closed. Every step is the very next call after the change has
// returned; nothing waits. Each sub-test first warms the caches with
// calls on the same session.
func TestCachedStateSeenByTheNextCall(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			cfg := fmt.Sprintf(testConfig, "local")
			if backend == "postgres" {
				dsn := pgtest.DSN(t)
				t.Setenv(statedir.StoreEnv, dsn)
				cfg += "store: " + dsn + "\n"
			}
			w1 := webFixtureConfig(t, cfg)
			w2 := w1.second(t) // another process (instance) on the same store
			o := newOrigin(t)
			c := w1.legacyClient(t, "web-operator", nil)
			sid := c.GetSessionId()
			cx := defaultOf("web-operator")
			read := map[string]any{"pool": "alpha", "path": "hello.txt"}
			warm := func() {
				t.Helper()
				for range 2 {
					callOK(t, c, "read_pool_file", read)
				}
			}
			ctx := context.Background()
			other := func() *operator.API { // an operator's process beside w2
				op, err := operator.Open(w2.state, false)
				must(t, err)
				t.Cleanup(func() { op.Close() })
				return op
			}()

			warm()
			_, err := other.SetPhase(ctx, cx, contexts.PhasePlanning, "tester", "hold external I/O")
			must(t, err)
			// In planning a need is declared, not run: nothing is fetched.
			if res := call(t, c, "declare_need", need(o.URL+"/page")); !strings.Contains(text(res), "planning phase") || o.hits.Load() != 0 {
				t.Fatalf("declare_need after the move to planning: %d fetches, %s", o.hits.Load(), text(res))
			}

			warm()
			must(t, other.SetKillSwitch(ctx, true, "tester", "drill"))
			wantCode(t, call(t, c, "read_pool_file", read), "KILL_SWITCH_ENGAGED")
			must(t, other.SetKillSwitch(ctx, false, "tester", "drill over"))

			warm()
			db, err := statedir.OpenStore(statedir.StoreLocation(w2.cfg.Store, w2.state), nil)
			must(t, err)
			_, err = db.UpdateContext(ctx, cx, func(c *contexts.Context) error { c.Pools = []string{}; return nil })
			db.Close()
			must(t, err)
			if res := call(t, c, "read_pool_file", read); !res.IsError {
				t.Fatalf("read from a pool the context no longer binds: %s", text(res))
			}

			if r := w2.deleteSession(t, "web-operator", sid); r.status >= 300 {
				t.Fatalf("DELETE on the other instance: HTTP %d: %s", r.status, r.body)
			}
			if r := w1.legacyCall(t, "web-operator", sid, "list_pools", nil); r.status != http.StatusNotFound {
				t.Fatalf("the session closed on the other instance, next call here: HTTP %d: %s", r.status, r.body)
			}
			w1.verifyAudit(t)
		})
	}
}

// TestCallSeesItsOwnWrite: a sessionless request whose role's pools a
// reload widened rebinds its default context (a write) and then runs in
// it; the request's one probe of the store (package percall) was made
// before that write, so the write must make the call's next read probe
// again — else the call runs in the context as it was before its own
// rebind and refuses the newly bound pool.
func TestCallSeesItsOwnWrite(t *testing.T) {
	w := webFixture(t)
	beta := map[string]any{"pool": "beta", "path": "notes.md"}
	if res := w.modernCall(t, "agent", map[string]string{"Mcp-Param-Pool": "beta"}, false, "read_pool_file", beta, nil).result(t); code(res) != "POOL_NOT_SELECTED" {
		t.Fatalf("before the reload: %q %s", code(res), text(res))
	}
	w.reconfigure(t, func(cfg string) string {
		return strings.Replace(cfg, "  agent:\n    policy: base\n    pools: [alpha]\n", "  agent:\n    policy: base\n    pools: [alpha, beta]\n", 1)
	})
	if res := w.modernCall(t, "agent", map[string]string{"Mcp-Param-Pool": "beta"}, false, "read_pool_file", beta, nil).result(t); res.IsError {
		t.Fatalf("the first call after the reload, in the rebound context: %s", text(res))
	}
}
