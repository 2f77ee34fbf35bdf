//go:build linux

package confine

import (
	"errors"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// refusedHandoffs are handoffs the trampoline must refuse: files is how
// many descriptors come with the byte (-1: the channel closes instead).
var refusedHandoffs = []struct {
	name  string
	files int
	want  error
}{
	{"closed before a run", -1, ErrNoRun},
	{"no descriptors", 0, nil},
	{"too few", HandoffFiles - 1, nil},
	{"too many", HandoffFiles + 1, nil},
}

// TestReceiveRunRefuses: the trampoline takes a run only as exactly
// HandoffFiles descriptors with one byte; a closed channel is ErrNoRun (a
// spare nobody took), a wrong count is refused, and every descriptor that
// arrived with a refused handoff is closed, none kept for the pipeline.
func TestReceiveRunRefuses(t *testing.T) {
	for _, tc := range refusedHandoffs {
		t.Run(tc.name, func(t *testing.T) {
			fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(fds[1])
			var sent []*os.File
			for range max(tc.files, 0) {
				f, err := os.Open(os.DevNull)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				sent = append(sent, f)
			}
			if tc.files < 0 {
				unix.Close(fds[0])
			} else {
				var raw []int
				for _, f := range sent {
					raw = append(raw, int(f.Fd()))
				}
				var oob []byte
				if len(raw) > 0 {
					oob = unix.UnixRights(raw...)
				}
				if err := unix.Sendmsg(fds[0], []byte{'R'}, oob, nil, 0); err != nil {
					t.Fatal(err)
				}
				unix.Close(fds[0])
			}
			before := openFDs(t)
			err = receiveRun(fds[1])
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("receiveRun: %v, want a refusal (%v)", err, tc.want)
			}
			if after := openFDs(t); after != before {
				t.Errorf("%d descriptors open after the refusal, %d before: a received one was kept", after, before)
			}
		})
	}
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}
