package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-dev/airlock/internal/testkit/gobuild"
)

// airlockBinary builds the airlock binary once per test process (into
// binDir), for tests that run it as its own process.
func airlockBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(binDir, "airlock")
	buildAirlock.Do(func() { gobuild.Build(t, bin, "..") })
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("the airlock binary was not built: %v", err)
	}
	return bin
}

var buildAirlock sync.Once

// serveProcess is `airlock serve` over stdio as its own process.
type serveProcess struct {
	cmd *exec.Cmd
	c   *client.Client
	in  io.WriteCloser
}

func startServe(t *testing.T, bin, cfg, state string) *serveProcess {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--config", cfg, "--state", state)
	in, err := cmd.StdinPipe()
	must(t, err)
	out, err := cmd.StdoutPipe()
	must(t, err)
	cmd.Stderr = os.Stderr
	must(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	c := client.NewClient(transport.NewIO(out, in, io.NopCloser(strings.NewReader(""))))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard
	defer cancel()
	must(t, c.Start(ctx))
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return &serveProcess{cmd: cmd, c: c, in: in}
}

// TestPipelineInterruptedBySIGKILL (issue 26 item 8): a real `airlock
// serve` is SIGKILLed while a pipeline runs (it waits on a FIFO, whose
// opening tells the test it is under way: no sleep). The trail then holds
// only the run's started record. At the next start the server records the
// run as interrupted — naming it, in the hash chain, which `airlock audit
// verify` still passes — and removes the run's workspace and mark.
func TestPipelineInterruptedBySIGKILL(t *testing.T) {
	bin := airlockBinary(t)
	f, gate := gatedFixture(t)
	cfg := filepath.Join(f.dir, "airlock.yaml")
	state := filepath.Join(f.dir, "state-of-the-process") // not the fixture's own runner's
	s := startServe(t, bin, cfg, state)

	w, _ := startGatedRun(t, s.c, gate) // its answer never comes: the server dies first
	marks, _ := filepath.Glob(filepath.Join(state, "runs", "run_*.run"))
	if len(marks) != 1 {
		t.Fatalf("marks of the running run: %v", marks)
	}
	runID := strings.TrimSuffix(filepath.Base(marks[0]), ".run")
	if _, err := os.Stat(filepath.Join(state, "runs", runID)); err != nil {
		t.Fatalf("the running run's workspace: %v", err)
	}

	must(t, s.cmd.Process.Signal(syscall.SIGKILL))
	s.cmd.Wait()
	w.Close() // whatever of the run outlived the server may end

	if recs := exportRecords(t, bin, state); interrupted(recs, runID) != nil || !startedOnly(recs) {
		t.Fatalf("before the restart the trail should hold the started record alone:\n%v", recs)
	}

	again := startServe(t, bin, cfg, state) // its start recovers the run
	again.in.Close()                        // stdin's end: serve stops cleanly
	again.cmd.Wait()

	recs := exportRecords(t, bin, state)
	r := interrupted(recs, runID)
	if r == nil {
		t.Fatalf("no interrupted record for %s:\n%v", runID, recs)
	}
	if r["outcome"] != "interrupted" || !strings.Contains(fmt.Sprint(r["extra"]), "read_then_wait") {
		t.Fatalf("the interrupted record: %v", r)
	}
	if out, err := exec.Command(bin, "audit", "verify", "--state", state).CombinedOutput(); err != nil {
		t.Fatalf("audit verify after the recovery: %v\n%s", err, out)
	}
	for _, p := range []string{filepath.Join(state, "runs", runID), marks[0]} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s is left after the recovery", p)
		}
	}
}

// exportRecords reads state's whole trail through `airlock audit export`.
func exportRecords(t *testing.T, bin, state string) []map[string]any {
	t.Helper()
	out, err := exec.Command(bin, "audit", "export", "--state", state).Output()
	must(t, err)
	var recs []map[string]any
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r map[string]any
		must(t, json.Unmarshal(sc.Bytes(), &r))
		recs = append(recs, r)
	}
	return recs
}

// interrupted is the pipeline.interrupted record of run id, or nil.
func interrupted(recs []map[string]any, id string) map[string]any {
	for _, r := range recs {
		if extra, _ := r["extra"].(map[string]any); r["capability"] == "pipeline.interrupted" && extra["run_id"] == id {
			return r
		}
	}
	return nil
}

// startedOnly reports whether the trail's run_pipeline records are one
// started record and no ending.
func startedOnly(recs []map[string]any) bool {
	var started, ended int
	for _, r := range recs {
		if r["tool"] == "run_pipeline" {
			if r["outcome"] == "started" {
				started++
			} else {
				ended++
			}
		}
	}
	return started == 1 && ended == 0
}
