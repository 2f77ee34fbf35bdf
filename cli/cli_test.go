package cli

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/airlock-dev/airlock/internal/operator/operator"
)

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := Run(context.Background(), args, Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	return out.String() + errb.String(), err
}

func TestPolicyCommands(t *testing.T) {
	example := filepath.Join("..", "testdata", "policy", "example.yaml")
	tests := []struct {
		name string
		args []string
		want string
		err  error
	}{
		{"check ok", []string{"policy", "check", example}, "OK", nil},
		{"test passes", []string{"policy", "test", example, filepath.Join("..", "testdata", "policy", "example_cases.yaml")}, "PASS", nil},
		{"test fails", []string{"policy", "test", example, filepath.Join("..", "testdata", "policy", "failing_cases.yaml")}, "FAIL", ErrFailed},
		{"explain", []string{"policy", "explain", example, "--policy", "base", "--call", `{"capability":"pool.read","args":{"pool":"sales"}}`}, "allow", nil},
		{"explain unknown policy", []string{"policy", "explain", example, "--policy", "nope", "--call", `{"capability":"pool.read"}`}, "", ErrUsage},
		{"schema", []string{"policy", "schema"}, `"policies"`, nil},
		{"no args", []string{"policy"}, "", ErrUsage},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := run(t, tc.args...)
			if tc.err == nil && err != nil || tc.err != nil && !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v\n%s", err, tc.err, out)
			}
			if !strings.Contains(out, tc.want) {
				t.Fatalf("output lacks %q:\n%s", tc.want, out)
			}
		})
	}
}

func TestPolicyCheckReportsLine(t *testing.T) {
	f := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(f, []byte("policies:\n  base:\n    allow: [pool.*]\n    rules:\n      - {id: r, capability: pool.read, when: 'url.hots == 1', effect: allow}\n"), 0o644)
	_, err := run(t, "policy", "check", f)
	if err == nil || !strings.Contains(err.Error(), "bad.yaml:5") {
		t.Fatalf("want file:line error, got %v", err)
	}
}

func TestConfigCheck(t *testing.T) {
	if out, err := run(t, "config", "check", filepath.Join("..", "internal", "config", "demo", "airlock.yaml")); err != nil || !strings.Contains(out, "OK") {
		t.Fatalf("%v %s", err, out)
	}
}

// TestPoolsManifestMatchesSha256sum: `airlock pools manifest` prints what
// `sha256sum -c` accepts.
func TestPoolsManifestMatchesSha256sum(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.csv"), []byte("x,y\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "sub", "b.txt"), []byte("hello\n"), 0o644)
	out, err := run(t, "pools", "manifest", dir)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(out), 0o644)
	cmd := exec.Command("sha256sum", "-c", "--strict", "SHA256SUMS")
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sha256sum -c: %v\n%s", err, b)
	}
}

// TestAuditVerifyCatchesEdit: the CLI exits with ErrFailed and names the
// first bad record after a record is edited in the SQLite file.
func TestAuditVerifyCatchesEdit(t *testing.T) {
	state := usedState(t)
	for range 3 {
		if _, err := run(t, "kill", "--state", state, "--reason", "drill"); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := run(t, "audit", "verify", "--state", state); err != nil || !strings.Contains(out, "OK: 3 records") {
		t.Fatalf("%v %s", err, out)
	}
	if out, err := run(t, "audit", "export", "--state", state); err != nil || strings.Count(out, "\n") != 3 {
		t.Fatalf("export: %v %q", err, out)
	}
	db, err := sql.Open("sqlite", filepath.Join(state, "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE audit_records SET args = CAST('{"nothing":"happened"}' AS BLOB) WHERE seq = 2`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	out, err := run(t, "audit", "verify", "--state", state)
	if !errors.Is(err, ErrFailed) || !strings.Contains(out, "record 2") {
		t.Fatalf("edit not caught: %v %s", err, out)
	}
	if ExitCode(err) != 1 {
		t.Fatalf("exit code %d", ExitCode(err))
	}
}

func TestUnknownCommand(t *testing.T) {
	if _, err := run(t, "frobnicate"); ExitCode(err) != 2 {
		t.Fatalf("err %v", err)
	}
}

// TestAuditTailShowsHeaderRuleAndReason: the table names its columns and
// carries the reason each record gives.
func TestAuditTailShowsHeaderRuleAndReason(t *testing.T) {
	state := usedState(t)
	if _, err := run(t, "kill", "--state", state, "--reason", "drill\nwith a newline"); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "audit", "tail", "--state", state)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("want a header and one row: %q", out)
	}
	for _, col := range []string{"SEQ", "TIME", "PRINCIPAL", "CAPABILITY", "DECISION", "OUTCOME", "VIOLATION", "RULE", "REASON"} {
		if !strings.Contains(lines[0], col) {
			t.Errorf("header lacks %s: %q", col, lines[0])
		}
	}
	if !strings.Contains(lines[1], "drill with a newline") {
		t.Errorf("row lacks the reason on one line: %q", lines[1])
	}
}

// TestAuditVerifyIncremental: after a successful verification, an
// incremental one checks only the records since its signed marker, still
// catches an edit among them and a marker whose record was changed, and a
// forged marker makes it a full check.
func TestAuditVerifyIncremental(t *testing.T) {
	state := usedState(t)
	kill := func(n int) {
		for range n {
			if _, err := run(t, "kill", "--state", state, "--reason", "drill"); err != nil {
				t.Fatal(err)
			}
		}
	}
	kill(3)
	// No marker yet: a full check, which leaves one.
	if out, err := run(t, "audit", "verify", "--incremental", "--state", state); err != nil || !strings.Contains(out, "OK: 3 records, hash chain intact,") {
		t.Fatalf("first: %v %s", err, out)
	}
	kill(2)
	out, err := run(t, "audit", "verify", "--incremental", "--state", state)
	if err != nil || !strings.Contains(out, "after the verified record 3 (2 new records checked") {
		t.Fatalf("incremental: %v %s", err, out)
	}
	kill(2)
	db, err := sql.Open("sqlite", filepath.Join(state, "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// An edit after the marker is caught.
	if _, err := db.Exec(`UPDATE audit_records SET args = CAST('{"nothing":"happened"}' AS BLOB) WHERE seq = 6`); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, "audit", "verify", "--incremental", "--state", state); !errors.Is(err, ErrFailed) || !strings.Contains(out, "record 6") {
		t.Fatalf("edit after the marker not caught: %v %s", err, out)
	}
	// The marked record itself replaced (hash and all): caught too.
	if _, err := db.Exec(`UPDATE audit_records SET args = CAST('{"x":1}' AS BLOB), hash = X'ff' WHERE seq = 5`); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, "audit", "verify", "--incremental", "--state", state); !errors.Is(err, ErrFailed) || !strings.Contains(out, "record 5") {
		t.Fatalf("marked record changed, not caught: %v %s", err, out)
	}
	// A forged marker (pointing past the damage) is not trusted: full check.
	mark := filepath.Join(state, operator.VerifiedFile)
	if err := os.WriteFile(mark, []byte("airlock-verified v1 7 "+strings.Repeat("0", 64)+" "+strings.Repeat("ab", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, "audit", "verify", "--incremental", "--state", state); !errors.Is(err, ErrFailed) || !strings.Contains(out, "record 5") {
		t.Fatalf("forged marker trusted: %v %s", err, out)
	}
}
