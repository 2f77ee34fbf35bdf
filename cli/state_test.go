package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	statedir "github.com/airlock-dev/airlock/internal/execution/state"
	"github.com/airlock-dev/airlock/internal/operator/operator"
	"github.com/airlock-dev/airlock/internal/testkit/mcptest"
)

// stateEnv clears every variable the state directory is resolved from and
// points HOME at a fresh directory.
func stateEnv(t *testing.T) (home string) {
	t.Helper()
	home = t.TempDir()
	t.Setenv("AIRLOCK_STATE", "")
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", home)
	return home
}

var ctxIDRE = regexp.MustCompile(`ctx_[0-9a-f]+`)

// TestOperatorFindsServesState: whichever way serve found its state
// directory (--state, $AIRLOCK_STATE, $XDG_STATE_HOME, the default under
// HOME), operator commands given the same flag or environment find the
// same store: the context serve created is listed, the chain verifies.
func TestOperatorFindsServesState(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, home string) (flags []string, want string)
	}{
		{"--state", func(t *testing.T, home string) ([]string, string) {
			return []string{"--state", filepath.Join(home, "s")}, filepath.Join(home, "s")
		}},
		{"$AIRLOCK_STATE", func(t *testing.T, home string) ([]string, string) {
			t.Setenv("AIRLOCK_STATE", filepath.Join(home, "env"))
			return nil, filepath.Join(home, "env")
		}},
		{"$XDG_STATE_HOME", func(t *testing.T, home string) ([]string, string) {
			t.Setenv("XDG_STATE_HOME", filepath.Join(home, "xdg"))
			return nil, filepath.Join(home, "xdg", "airlock")
		}},
		{"default", func(t *testing.T, home string) ([]string, string) {
			return nil, filepath.Join(home, ".local", "state", "airlock")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			flags, want := tt.setup(t, stateEnv(t))
			c := serveStdio(t, flags...)
			if res := callTool(t, c, "list_pools", nil); res.IsError {
				t.Fatal(mcptest.Text(res))
			}
			if _, err := os.Stat(filepath.Join(want, statedir.DBFile)); err != nil {
				t.Fatalf("serve did not put its store in %s: %v", want, err)
			}
			out, err := run(t, append([]string{"context", "list"}, flags...)...)
			if err != nil || !ctxIDRE.MatchString(out) {
				t.Fatalf("context list: %v\n%s", err, out)
			}
			if out, err := run(t, append([]string{"audit", "verify"}, flags...)...); err != nil {
				t.Fatalf("audit verify: %v\n%s", err, out)
			}
			if out, err := run(t, append([]string{"kill", "--status"}, flags...)...); err != nil || !strings.Contains(out, "engaged: false") {
				t.Fatalf("kill --status: %v\n%s", err, out)
			}
		})
	}
}

// TestOperatorRefusesUnusedState: an operator command pointed at a state
// directory no server has used (a typo in --state, a shell without serve's
// $AIRLOCK_STATE) is refused with ErrNoState, names the directory and
// where it came from, and writes nothing there. Before, `airlock kill`
// engaged a switch no server reads and reported success, and `phase` and
// `approvals approve` created a fresh store in the wrong place.
func TestOperatorRefusesUnusedState(t *testing.T) {
	commands := [][]string{
		{"kill", "--reason", "incident"}, {"kill", "--release"}, {"kill", "--status"},
		{"phase", "ctx_0123", "execution", "--reason", "r"},
		{"approvals", "list"}, {"approvals", "approve", "decl_x"}, {"approvals", "deny", "decl_x", "--reason", "r"},
		{"audit", "verify"}, {"audit", "tail"}, {"audit", "export"},
		{"context", "list"}, {"context", "show", "ctx_0123"}, {"context", "create", "--parent", "ctx_0123", "--reason", "r"},
		{"report", "sess"},
	}
	for _, viaEnv := range []bool{false, true} {
		for _, args := range commands {
			t.Run(fmt.Sprintf("env=%v/%s", viaEnv, strings.Join(args, " ")), func(t *testing.T) {
				stateEnv(t)
				dir := filepath.Join(t.TempDir(), "typo")
				must(t, os.Mkdir(dir, 0o700))
				from := "--state"
				if viaEnv {
					t.Setenv("AIRLOCK_STATE", dir)
					from = "$AIRLOCK_STATE"
				} else {
					args = append(args, "--state", dir)
				}
				_, err := run(t, args...)
				if !errors.Is(err, ErrNoState) {
					t.Fatalf("err = %v, want ErrNoState", err)
				}
				if !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), from) {
					t.Errorf("the refusal does not name %s and %s: %v", dir, from, err)
				}
				if ents, _ := os.ReadDir(dir); len(ents) != 0 {
					t.Fatalf("a refused command wrote %d entries into the unused state dir (first %s)", len(ents), ents[0].Name())
				}
			})
		}
	}
}

// TestPhaseRefusesUnknownOrAmbiguousIDs: `airlock phase` changes only the
// context an exact id names (a context id, or a session onto it); a
// prefix, a name, or an id that is both a context and a session onto
// another context is refused, audited as a deny, and changes nothing.
func TestPhaseRefusesUnknownOrAmbiguousIDs(t *testing.T) {
	state, out := servedState(t)
	parent := ctxIDRE.FindString(out)
	sessOut := mustRun(t, "context", "show", parent, "--state", state)
	m := regexp.MustCompile(`session:\s+(\S+)`).FindStringSubmatch(sessOut)
	if parent == "" || m == nil {
		t.Fatalf("no context or session:\n%s\n%s", out, sessOut)
	}
	session := m[1]
	child := ctxIDRE.FindString(mustRun(t, "context", "create", "--parent", parent, "--reason", "child", "--state", state))
	// A session row whose id is the child's context id, onto the parent.
	rawSQL(t, state, fmt.Sprintf(`INSERT INTO transport_sessions (id, context_id, principal, transport, elicitation, created_at, last_seen, close_reason)
		SELECT '%s', context_id, principal, transport, elicitation, created_at, last_seen, close_reason FROM transport_sessions WHERE id = '%s'`, child, session))

	tests := []struct {
		name, id, phase string
		want            error
	}{
		{"a prefix of a context id", parent[:12], "planning", operator.ErrNoSuchContext},
		{"a context id with a suffix", parent + "0", "planning", operator.ErrNoSuchContext},
		{"a principal name", "local", "planning", operator.ErrNoSuchContext},
		{"a prefix of a session id", session[:len(session)/2], "planning", operator.ErrNoSuchContext},
		{"a context and a session onto another", child, "planning", operator.ErrAmbiguousID},
		{"an unknown phase", parent, "production", nil},
		{"the exact context id", parent, "planning", nil},
		{"the exact session id", session, "execution", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := mustRun(t, "context", "list", "--state", state)
			out, err := run(t, "phase", tt.id, tt.phase, "--reason", "test", "--state", state)
			after := mustRun(t, "context", "list", "--state", state)
			switch {
			case tt.want != nil:
				if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), "--state "+state) {
					t.Fatalf("err = %v, want %v with the --state hint", err, tt.want)
				}
				if before != after {
					t.Fatalf("a refused phase order changed a context:\n%s\n%s", before, after)
				}
				tail := mustRun(t, "audit", "tail", "-n", "1", "--json", "--state", state)
				if !strings.Contains(tail, `"operator.phase"`) || !strings.Contains(tail, `"deny"`) {
					t.Fatalf("the refusal is not audited as a deny: %s", tail)
				}
			case tt.phase == "production":
				if err == nil || before != after {
					t.Fatalf("unknown phase accepted: %v %s", err, out)
				}
			default:
				if err != nil || !strings.Contains(out, "phase "+tt.phase) {
					t.Fatalf("phase %s: %v %s", tt.id, err, out)
				}
			}
		})
	}
}

// usedState is a state directory holding a store, as one a server has
// run with (operator commands refuse any other).
func usedState(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	op, err := operator.Open(dir, false)
	must(t, err)
	must(t, op.Close())
	return dir
}
