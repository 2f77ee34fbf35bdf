package upstream

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/execution/sandbox"
)

// stderrSecret is a value of the upstream process's environment (a
// brokered credential or a configured one): random-looking, so no stderr
// holds a piece of it by chance.
const stderrSecret = "Zx7Qp2LmN9vK4wT8nR3yB6cJ"

// secretPiece reports whether s holds 8 or more consecutive bytes of
// stderrSecret.
func secretPiece(s []byte) bool {
	for i := 0; i+8 <= len(stderrSecret); i++ {
		if bytes.Contains(s, []byte(stderrSecret[i:i+8])) {
			return true
		}
	}
	return false
}

// tailModel is what stderrTail keeps of a stream without a line of 32 KiB
// or more: its lines as bufio.ScanLines splits them, each with the values
// of env (8 bytes or more) replaced and then cut to stderrLineBytes, the
// last stderrLines of them.
func tailModel(stream []byte, env []string) []string {
	var pairs []string
	for _, kv := range env {
		if _, v, _ := strings.Cut(kv, "="); len(v) >= 8 {
			pairs = append(pairs, v, "[value of its environment]")
		}
	}
	scrub := strings.NewReplacer(pairs...)
	var lines []string
	for len(stream) > 0 {
		line, rest, found := bytes.Cut(stream, []byte("\n"))
		if !found && len(line) == 0 {
			break
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		l := scrub.Replace(string(line))
		lines = append(lines, l[:min(len(l), stderrLineBytes)])
		stream = rest
	}
	return lines[max(0, len(lines)-stderrLines):]
}

// FuzzStderrScrub: a stdio upstream's process writes what it likes to
// stderr, and the last lines of it go into the audit record of its exit
// (upstream.exited). For any output around one occurrence of a value of
// its environment, at any offset (pad bytes before it, so a long line or
// a 32 KiB piece can cut through it):
//   - no recorded line holds any 8-byte piece of the value: it is
//     replaced whole wherever it occurs, cut or not (SECURITY.md: "every
//     value of its environment of 8+ bytes replaced");
//   - at most stderrLines lines of at most stderrLineBytes are kept, and
//     for lines under 32 KiB exactly the stream's last ones, each
//     scrubbed, then cut.
func FuzzStderrScrub(f *testing.F) {
	for _, s := range []struct {
		pad            uint16
		before, after  string
		endWithNewline bool
	}{
		{0, "Traceback (most recent call last):\n  File \"server.py\", line 3\nKeyError: token=", "\n", true},
		{0, "", "", false},
		{120, "config: {'url': 'https://api.example', 'headers': {'Authorization': 'Bearer ", "'}}\nexiting\n", true},
		{300, "panic: ", " rejected\r\ngoroutine 1 [running]:\n", true},
		{0, strings.Repeat("line\n", 30), "\n", false},
		{2000, "", "", true},
		{40000, "\n", "tail\n", false},
	} {
		f.Add(s.pad, []byte(s.before), []byte(s.after), s.endWithNewline)
	}
	env := []string{"UPSTREAM_TOKEN=" + stderrSecret, "SHORT=abc", "PATH=/usr/bin:/bin", "EMPTY="}
	f.Fuzz(func(t *testing.T, pad uint16, before, after []byte, newline bool) {
		if secretPiece(before) || secretPiece(after) {
			return // the output's own bytes, not an occurrence of the value
		}
		stream := slices.Concat(bytes.Repeat([]byte{'x'}, int(pad)), before, []byte(stderrSecret), after)
		if newline {
			stream = append(stream, '\n')
		}
		tail, w, err := newStderrTail()
		if err != nil {
			t.Fatal(err)
		}
		tail.drain(env)
		go func() {
			_, _ = w.Write(stream)
			_ = w.Close()
		}()
		tail.wait()
		kept := tail.lines()
		if len(kept) > stderrLines {
			t.Fatalf("%d lines kept", len(kept))
		}
		for _, l := range kept {
			if len(l) > stderrLineBytes {
				t.Fatalf("a line of %d bytes kept", len(l))
			}
		}
		longest := 0
		for _, l := range bytes.Split(stream, []byte("\n")) {
			longest = max(longest, len(l))
		}
		if longest < 32<<10 {
			if want := tailModel(stream, env); !slices.Equal(kept, want) {
				t.Fatalf("kept %q, want the stream's last lines %q", kept, want)
			}
		}
		x := exitOf(&sandbox.Result{ExitCode: 1}, nil, tail)
		if x == nil || x.Status != "exit 1" {
			t.Fatalf("exit %+v", x)
		}
		for i, l := range x.Stderr {
			if secretPiece([]byte(l)) {
				t.Fatalf("pad %d: recorded line %d holds a piece of the environment's value: %q", pad, i, l)
			}
		}
	})
}
