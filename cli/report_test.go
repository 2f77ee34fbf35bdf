package cli

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/execution/runner"
	"github.com/airlock-dev/airlock/internal/testkit/testpool"
)

func TestReportSourcesUsed(t *testing.T) {
	dir := t.TempDir()
	testpool.Write(t, filepath.Join(dir, "p"), map[string]string{"a.txt": "a\n"})
	cfg, err := config.Parse("r.yaml", []byte("pools: [{id: p, description: d, path: p, trust: trusted}, {id: q, description: d, path: p}]\npolicies: {base: {allow: [pool.*]}}\nroles: {local: {policy: base, pools: [p, q]}}\n"), dir)
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	r, err := runner.New(cfg, state, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := r.OpenSession(ctx, runner.SessionParams{Principal: "ann", Role: "local", Transport: "stdio"})
	if err != nil {
		t.Fatal(err)
	}
	s.Run(ctx, runner.Call{Tool: "read_pool_file", Args: json.RawMessage(`{"pool":"p","path":"a.txt"}`)})
	s.Run(ctx, runner.Call{Tool: "read_pool_file", Args: json.RawMessage(`{"pool":"p","path":"a.txt"}`)})
	s.Run(ctx, runner.Call{Tool: "read_pool_file", Args: json.RawMessage(`{"pool":"p","path":"../x"}`)})
	r.CloseSession(ctx, s.ID(), "test done")
	r.Close()

	out, err := run(t, "report", s.ID()[:8], "--state", state)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{
		"## Sources Used", "| Context ID | " + s.ContextID() + " |", "| Pools Bound | p, q |", "| Pools Used | p |",
		"| Files Accessed | 1 |", "| Integrity Verified | ✅ Yes |", "| Violations | 1 |", "Principal ann",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if _, err := run(t, "report", "nope", "--state", state); !errors.Is(err, ErrFailed) {
		t.Fatalf("unknown session: %v", err)
	}
}
