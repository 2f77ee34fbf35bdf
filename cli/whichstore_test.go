package cli

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestAuditVerifyNamesItsStore: audit verify says which store, witness and
// state directory it checked and where the directory came from, so a
// verdict about another state directory than the server's shows as such;
// a witness from another state directory is named as that, not only as
// "signature does not match" (issue 24 item 4).
func TestAuditVerifyNamesItsStore(t *testing.T) {
	a, _ := servedState(t)
	b, _ := servedState(t)
	tests := []struct {
		name string
		args []string
		env  string
		want []string
		err  error
	}{
		{"--state", []string{"--state", a}, "", []string{"audit trail OK",
			"checked: store " + filepath.Join(a, "airlock.db") + " (state directory " + a + ", from --state), witness " + filepath.Join(a, "witness.log")}, nil},
		{"$AIRLOCK_STATE", nil, b, []string{"audit trail OK",
			"checked: store " + filepath.Join(b, "airlock.db") + " (state directory " + b + ", from $AIRLOCK_STATE)"}, nil},
		{"another state directory's witness", []string{"--state", a, "--witness", filepath.Join(b, "witness.log")}, "", []string{"audit trail BROKEN in its witness",
			"is not signed with this state directory's key (" + filepath.Join(a, "witness.key") + "), so " + filepath.Join(b, "witness.log") + " is another state directory's witness",
			"checked: store " + filepath.Join(a, "airlock.db")}, ErrFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("AIRLOCK_STATE", tt.env)
			out, err := run(t, append([]string{"audit", "verify"}, tt.args...)...)
			if tt.err == nil && err != nil || tt.err != nil && !errors.Is(err, tt.err) {
				t.Fatalf("err %v, want %v\n%s", err, tt.err, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestInitPassesState: the next steps init prints pass --state to serve and
// to client-config — the flag's directory, else the one the operator's
// environment resolves to — since a client will not pass that environment
// on (issue 24 item 4).
func TestInitPassesState(t *testing.T) {
	stateEnv(t)
	for _, tt := range []struct {
		name, env string
		flags     []string
		want      string
	}{
		{"--state", "", []string{"--state", "/srv/airlock state"}, "'/srv/airlock state'"},
		{"$AIRLOCK_STATE", "/var/lib/airlock", nil, "/var/lib/airlock"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("AIRLOCK_STATE", tt.env)
			root := initTree(t)
			cfg := filepath.Join(root, "airlock.yaml")
			out, err := run(t, append([]string{"init", "--config", cfg, filepath.Join(root, "docs")}, tt.flags...)...)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			for _, w := range []string{"airlock serve --config " + cfg + " --state " + tt.want + "\n", "airlock client-config claude --config " + cfg + " --state " + tt.want + " "} {
				if !strings.Contains(out, w) {
					t.Errorf("init output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}
