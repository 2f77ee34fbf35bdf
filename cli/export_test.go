package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/testkit/childtest"
	"github.com/airlock-dev/airlock/internal/testkit/syncbuf"
)

// cliEnv makes the test binary a helper process running `airlock` with
// the unit-separator (0x1f) separated arguments it holds (as main does: SIGINT and SIGTERM
// cancel the command's context). "append STATE N STOP" instead engages and
// releases the kill switch at least N times and until the file STOP exists:
// 2N or more audit records from another process. It stops on the test's
// word, not after a count, so that however the load slows the exporters
// down, the chain is still growing while each of them is stopped
// mid-stream (a fixed count could run out first on a loaded machine).
const cliEnv = "AIRLOCK_TEST_CLI"

func helperCLI(spec string) int {
	args := strings.Split(spec, "\x1f")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	io := Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}
	if args[0] == "append" {
		var n int
		fmt.Sscan(args[2], &n)
		for i := 0; ; i++ {
			if _, err := os.Stat(args[3]); i >= n && err == nil {
				break
			}
			for _, a := range [][]string{{"kill", "--reason", fmt.Sprint("drill ", i)}, {"kill", "--release", "--reason", "ok"}} {
				if err := Run(ctx, append(a, "--state", args[1]), Streams{In: os.Stdin, Out: io.Err, Err: io.Err}); err != nil {
					fmt.Fprintln(os.Stderr, "append:", err)
					return 1
				}
			}
		}
		return 0
	}
	if err := Run(ctx, args, io); err != nil {
		fmt.Fprintln(os.Stderr, "airlock:", err)
		return ExitCode(err)
	}
	return 0
}

// helper starts this test binary as `airlock ARGS...` (or the appender).
func helper(t *testing.T, stdout io.Writer, args ...string) *exec.Cmd {
	t.Helper()
	cmd := childtest.Command("^$", cliEnv+"="+strings.Join(args, "\x1f"))
	cmd.Stdout, cmd.Stderr = stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// completeLines is what a consumer keeps of an export's output: the
// whole lines (a process killed mid-write may leave a torn last one).
func completeLines(s string) []string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return strings.SplitAfter(s[:i+1], "\n")[:strings.Count(s[:i+1], "\n")]
	}
	return nil
}

func lastSeq(t *testing.T, lines []string) int64 {
	t.Helper()
	if len(lines) == 0 {
		return 0
	}
	var r struct{ Seq int64 }
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
		t.Fatalf("export line %q: %v", lines[len(lines)-1], err)
	}
	return r.Seq
}

// waitLines waits until out holds more than n complete lines.
func waitLines(t *testing.T, out *syncbuf.Buffer, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for len(completeLines(out.String())) <= n {
		if time.Now().After(deadline) {
			t.Fatalf("export printed %d lines, waiting for more than %d", len(completeLines(out.String())), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestAuditExportResumes (issue 12 item 6): while another process appends
// to the chain, `audit export --follow` is stopped mid-stream three times
// and restarted — by SIGKILL, resuming with --from (last seq seen + 1),
// and by SIGTERM, resuming from its --cursor file — and the concatenated
// output is exactly the chain's records, in order, each once, byte for
// byte what a one-shot export prints.
func TestAuditExportResumes(t *testing.T) {
	for _, mode := range []string{"from+SIGKILL", "cursor+SIGTERM"} {
		t.Run(mode, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "state")
			// A server has run on the state directory (the store and witness exist).
			if err := Run(t.Context(), []string{"serve", "--state", state}, Streams{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard}); err != nil {
				t.Fatal(err)
			}
			cursor := filepath.Join(t.TempDir(), "siem.cursor")
			stop := filepath.Join(t.TempDir(), "stop")
			// The appender runs until the stop file exists (at least 6
			// rounds): the volume is the exports' 3×8 lines, not a count
			// that takes minutes on a loaded machine with -race.
			appender := helper(t, io.Discard, "append", state, "6", stop)
			var got []string
			export := func(follow bool) {
				var out syncbuf.Buffer
				args := []string{"audit", "export", "--state", state, "--format", "jsonl", "--poll", "10ms"}
				if mode == "cursor+SIGTERM" {
					args = append(args, "--cursor", cursor)
				} else {
					args = append(args, "--from", fmt.Sprint(lastSeq(t, got)+1))
				}
				if !follow {
					cmd := helper(t, &out, args...)
					if err := cmd.Wait(); err != nil {
						t.Fatalf("export: %v", err)
					}
					got = append(got, completeLines(out.String())...)
					return
				}
				cmd := helper(t, &out, append(args, "--follow")...)
				waitLines(t, &out, 8) // mid-stream: the appender is still going
				if mode == "cursor+SIGTERM" {
					cmd.Process.Signal(syscall.SIGTERM)
				} else {
					cmd.Process.Kill()
				}
				cmd.Wait()
				got = append(got, completeLines(out.String())...)
			}
			for range 3 {
				export(true)
			}
			must(t, os.WriteFile(stop, nil, 0o600))
			if err := appender.Wait(); err != nil {
				t.Fatalf("appender: %v", err)
			}
			export(false) // the rest, then the command ends
			var want bytes.Buffer
			if err := Run(t.Context(), []string{"audit", "export", "--state", state}, Streams{Out: &want, Err: io.Discard}); err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(want.String(), "\n"); n < 3*8 {
				t.Fatalf("the chain has %d records, want ≥ 24 (three exports stopped after 8 lines each)", n)
			}
			if strings.Join(got, "") != want.String() {
				sc := bufio.NewScanner(strings.NewReader(strings.Join(got, "")))
				var seqs []string
				for sc.Scan() {
					var r struct{ Seq int64 }
					json.Unmarshal(sc.Bytes(), &r)
					seqs = append(seqs, fmt.Sprint(r.Seq))
				}
				t.Fatalf("resumed export differs from the chain (%d lines vs %d); seqs: %s", len(got), strings.Count(want.String(), "\n"), strings.Join(seqs, " "))
			}
		})
	}
}

// TestAuditExportRefusals: a bad format, a corrupt cursor, a cursor and a
// --from that disagree are usage errors or typed failures, and print nothing.
func TestAuditExportRefusals(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	if err := Run(t.Context(), []string{"serve", "--state", state}, Streams{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	torn, good := filepath.Join(dir, "torn"), filepath.Join(dir, "good")
	must(t, os.WriteFile(torn, []byte("next_seq 1"), 0o600))
	must(t, os.WriteFile(good, []byte("next_seq 5\n"), 0o600))
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"format", []string{"--format", "csv"}, "want jsonl"},
		{"negative from", []string{"--from", "-1"}, "--from"},
		{"torn cursor", []string{"--cursor", torn}, "malformed export cursor"},
		{"disagreeing", []string{"--cursor", good, "--from", "2"}, "disagree"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := Run(t.Context(), append([]string{"audit", "export", "--state", state}, tt.args...), Streams{Out: &out, Err: io.Discard})
			if err == nil || !strings.Contains(err.Error(), tt.want) || out.Len() != 0 {
				t.Fatalf("err = %v, output %q; want an error naming %q and no output", err, out.String(), tt.want)
			}
		})
	}
}
