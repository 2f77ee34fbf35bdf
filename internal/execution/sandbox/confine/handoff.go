//go:build linux

package confine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// The run's descriptors arrive with its spec, not at the trampoline's
// start: the trampoline may be started before its run exists (package
// sandbox keeps one started in advance, a "spare"), so it starts holding
// nothing of any run — its stdin, stdout and stderr are /dev/null, ScratchFD
// is a /dev/null placeholder — and fd 3 is a Unix stream socket. The parent
// sends one byte carrying, as SCM_RIGHTS, exactly [HandoffFiles]
// descriptors, in this order: the run's quota tmpfs (moved to ScratchFD),
// stdin, stdout and stderr (moved to 0, 1, 2); then the JSON spec; then it
// closes its end (EOF ends the spec).
//
// Before waiting, the trampoline sends one byte, [ReadyByte], on the same
// socket: it is past its start (Go's initialisation, the run-independent
// work of runTrampoline, warmUp), so a spare the parent has seen ready is
// one a run does not wait for.
//
// A parent that closes the socket without sending (the server abandons or
// stops the spare, or dies) makes the trampoline exit with ExitSetupFailed
// having run nothing (sandbox TestSpareAbandonedRunsNothing).

// StagePrepare is the failing stage of the work a trampoline does before
// a run is handed over; like "namespaces" and "build" it means the run's
// spec never reached it.
const StagePrepare = "prepare"

// BeforeHandoff reports whether a failing stage lies before the handoff:
// the trampoline failed without ever holding the run (package sandbox then
// starts a fresh one for the run instead of failing it).
func BeforeHandoff(stage string) bool {
	return stage == "namespaces" || stage == "build" || stage == StagePrepare
}

// HandoffFiles is how many descriptors the parent passes with the spec.
const HandoffFiles = 4

// handoffTargets are where the passed descriptors go, in order.
var handoffTargets = [HandoffFiles]int{ScratchFD, 0, 1, 2}

// ErrNoRun is the trampoline's refusal when its spec channel closed before
// a run was handed over: it was a spare nobody took.
var ErrNoRun = errors.New("spec channel closed before a run was handed over")

// receiveRun takes the run's descriptors from the spec socket and moves
// them into place. The originals are received close-on-exec and closed
// here; the targets 0-2 are inherited by the pipeline, ScratchFD is made
// close-on-exec by the caller.
func receiveRun(sock int) error {
	var b [1]byte
	oob := make([]byte, unix.CmsgSpace(HandoffFiles*4))
	n, oobn, flags, _, err := unix.Recvmsg(sock, b[:], oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return fmt.Errorf("receiving the run's descriptors: %w", err)
	}
	if n == 0 {
		return ErrNoRun
	}
	var fds []int
	msgs, perr := unix.ParseSocketControlMessage(oob[:oobn])
	for _, m := range msgs {
		got, err := unix.ParseUnixRights(&m)
		if err == nil {
			fds = append(fds, got...)
		}
	}
	// Close whatever arrived on every refusal: nothing the parent passed
	// stays open in a trampoline that will not run.
	if perr != nil || flags&unix.MSG_CTRUNC != 0 || len(fds) != HandoffFiles {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return fmt.Errorf("expected %d descriptors with the spec, got %d", HandoffFiles, len(fds))
	}
	for i, fd := range fds {
		if fd == handoffTargets[i] { // cannot happen: 0-5 are open at start
			return fmt.Errorf("descriptor %d received in place", fd)
		}
		if err := unix.Dup3(fd, handoffTargets[i], 0); err != nil {
			return fmt.Errorf("placing descriptor %d: %w", handoffTargets[i], err)
		}
		unix.Close(fd)
	}
	return nil
}

// ReadyByte is what the trampoline sends on the spec socket once it waits
// for its run.
const ReadyByte = 'S'

// sayReady tells the parent the trampoline waits for its run. A parent
// gone already is not an error here: receiveRun sees it.
func sayReady(sock int) {
	unix.Sendmsg(sock, []byte{ReadyByte}, nil, nil, unix.MSG_NOSIGNAL)
}

// SendRun is the parent's side of the handoff on the socket fd sock: one
// byte carrying files (len HandoffFiles, in handoffTargets' order).
func SendRun(sock int, files [HandoffFiles]int) error {
	return unix.Sendmsg(sock, []byte{'R'}, unix.UnixRights(files[:]...), nil, unix.MSG_NOSIGNAL)
}

// warmUp runs, while the trampoline waits for its run, the run-independent
// first uses that would otherwise delay the run after the handoff: the
// JSON decoder's and encoder's per-type set-up and the first touch of
// their code, through a decode of a complete sample spec (nothing of it is
// kept or applied). It reads and changes nothing outside this process.
func warmUp() {
	sample := Spec{
		Version: WireVersion, Argv: []string{"/bin/true"}, Env: []string{"A=b"}, Dir: OutDir,
		UID: 65534, GID: 65534, Hostname: "airlock", Stage: "/stage",
		Rules:   []Rule{{Path: "/usr", Access: AccessReadExec, Optional: true}},
		Rlimits: Rlimits{CPUSeconds: 1, NoFile: 16, FSize: 1, NProc: 1},
		Pools:   []Pool{{ID: "p", Dir: "/p", Files: []string{"f"}}},
		Binds:   []string{"/opt/x"}, Temp: true, ConnectPorts: []int{1},
	}
	if b, err := json.Marshal(sample); err == nil {
		DecodeSpec(bytes.NewReader(b))
	}
	json.Marshal(Status{OK: true, Mechanisms: []string{"x"}})
}
