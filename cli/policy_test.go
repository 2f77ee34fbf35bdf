package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPolicyWorkbench: policy test's -v, --run, --json and --coverage
// outputs against golden files, and its exit statuses.
func TestPolicyWorkbench(t *testing.T) {
	const (
		example = "../testdata/policy/example.yaml"
		cases   = "../testdata/policy/example_cases.yaml"
		failing = "../testdata/policy/failing_cases.yaml"
	)
	tests := []struct {
		name   string
		args   []string
		golden string // "" = no golden
		err    error
	}{
		{"verbose", []string{"policy", "test", example, cases, "-v"}, "policy_test_verbose.golden", nil},
		{"run selects by name", []string{"policy", "test", "-v", "--run", "^the (analyst|researcher)", example, cases}, "policy_test_run.golden", nil},
		{"run matching nothing", []string{"policy", "test", example, cases, "--run", "no such case"}, "policy_test_run_none.golden", nil},
		{"coverage lists what no case hit", []string{"policy", "test", example, cases, "--coverage", "--run", "fetch"}, "policy_test_coverage.golden", nil},
		{"json with coverage", []string{"policy", "test", example, cases, "--json", "--coverage", "--run", "analyst"}, "policy_test_json.golden", nil},
		{"require-coverage fails on a gap", []string{"policy", "test", example, cases, "--require-coverage"}, "", ErrFailed},
		{"failing case, verbose", []string{"policy", "test", example, failing, "-v"}, "policy_test_failing.golden", ErrFailed},
		{"bad regexp", []string{"policy", "test", example, cases, "--run", "("}, "", ErrUsage},
		{"missing cases file", []string{"policy", "test", example}, "", ErrUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := run(t, tt.args...)
			if !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
				t.Fatalf("err = %v, want %v\n%s", err, tt.err, out)
			}
			if tt.golden != "" {
				goldenFile(t, tt.golden, []byte(out))
			}
		})
	}
}

// TestPolicyFmt: fmt rewrites a file into the golden canonical form that
// still checks, keeps its comments, is idempotent, and --check exits 1
// exactly when the file is not formatted. The input is the example policy
// as it was written before issue 24 item 7 (flow maps, quoted patterns,
// blank lines between policies); its canonical form is the shipped
// example, byte for byte.
func TestPolicyFmt(t *testing.T) {
	orig, err := os.ReadFile("testdata/policy_fmt.input.yaml")
	must(t, err)
	file := filepath.Join(t.TempDir(), "policy.yaml")
	must(t, os.WriteFile(file, orig, 0o640))
	if _, err := run(t, "policy", "fmt", "--check", file); !errors.Is(err, ErrFailed) {
		t.Fatalf("--check on an unformatted file: %v", err)
	}
	if b, _ := os.ReadFile(file); string(b) != string(orig) {
		t.Fatal("--check wrote the file")
	}
	if out, err := run(t, "policy", "fmt", file); err != nil {
		t.Fatalf("fmt: %v\n%s", err, out)
	}
	got, err := os.ReadFile(file)
	must(t, err)
	goldenFile(t, "policy_fmt.golden.yaml", got)
	if shipped, err := os.ReadFile("../testdata/policy/example.yaml"); err != nil || string(shipped) != string(got) {
		t.Errorf("the shipped example policy is not fmt's output for it (%v)", err)
	}
	for _, line := range strings.Split(string(orig), "\n") {
		if c := strings.TrimSpace(line); strings.HasPrefix(c, "#") && !strings.Contains(string(got), c) {
			t.Errorf("comment dropped: %q", c)
		}
	}
	if st, _ := os.Stat(file); st.Mode().Perm() != 0o640 {
		t.Errorf("fmt changed the mode to %v", st.Mode().Perm())
	}
	if out, err := run(t, "policy", "fmt", "--check", file); err != nil {
		t.Fatalf("--check after fmt: %v\n%s", err, out)
	}
	if out, err := run(t, "policy", "check", file); err != nil {
		t.Fatalf("the formatted file no longer checks: %v\n%s", err, out)
	}
	if _, err := run(t, "policy", "fmt", filepath.Join(t.TempDir(), "none.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}
