//go:build linux

package sandbox_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/execution/sandbox"
)

// TestStdioPipes: with StdinFile and StdoutFile the confined process talks
// to its caller while it runs (an upstream MCP server over stdio): a line
// written in comes back out before the process ends, the caller's context
// ends it, and Result.Stdout stays empty.
func TestStdioPipes(t *testing.T) {
	s := newSandbox(t)
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type ran struct {
		res *sandbox.Result
		err error
	}
	done := make(chan ran, 1)
	go func() {
		res, err := s.Run(ctx, sandbox.Spec{Argv: []string{"/bin/cat"}, StdinFile: inR, StdoutFile: outW,
			Limits: sandbox.Limits{Wall: 20 * time.Second}})
		inR.Close()
		outW.Close()
		done <- ran{res, err}
	}()
	if _, err := io.WriteString(inW, "ping\n"); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil || line != "ping\n" {
		t.Fatalf("read %q, %v", line, err)
	}
	cancel() // the caller ends the session
	select {
	case r := <-done:
		if r.res == nil || len(r.res.Stdout) != 0 || r.res.KillReason != sandbox.KillCanceled {
			t.Fatalf("result %+v, err %v", r.res, r.err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the run did not end when its context did")
	}
	inW.Close()
	outR.Close()
}
