//go:build linux

package sandbox

import "io"

// SpareSettled waits until no spare is being started and reports the pid
// of the ready one (0: none). Tests and benchmarks use it to know which
// spare the next run takes, never to time anything.
func (s *Sandbox) SpareSettled() int {
	sp := &s.spares
	for {
		sp.mu.Lock()
		ch, l := sp.filling, sp.ready
		sp.mu.Unlock()
		if ch == nil {
			if l == nil {
				return 0
			}
			return l.cmd.Process.Pid
		}
		<-ch
	}
}

// AbandonSpare takes the ready spare out of the slot (waiting for one),
// closes its spec socket without handing it a run, and returns its exit
// status and what it wrote on its status pipe.
func (s *Sandbox) AbandonSpare() (exit int, status string) {
	s.SpareSettled()
	sp := &s.spares
	sp.mu.Lock()
	l := sp.ready
	sp.ready = nil
	sp.mu.Unlock()
	if l == nil {
		return -1, "no spare"
	}
	l.sock.Close()
	b, _ := io.ReadAll(l.statusR)
	l.cmd.Wait()
	l.statusR.Close()
	return l.cmd.ProcessState.ExitCode(), string(b)
}

// UseEmbedded makes b the embedded trampoline and self the binary's own
// path for the Sandboxes New makes until restore is called; the process's
// memfd is made anew from b.
func UseEmbedded(b []byte, self func() (string, error)) (restore func()) {
	prevB, prevSelf := embeddedBinary, selfExecutable
	embeddedBinary, selfExecutable = func() []byte { return b }, self
	forget := func() {
		embedded.Lock()
		defer embedded.Unlock()
		if embedded.file != nil {
			embedded.file.Close()
		}
		embedded.file = nil
	}
	forget()
	return func() {
		forget()
		embeddedBinary, selfExecutable = prevB, prevSelf
	}
}

// TrampolineOf is the binary s starts as its trampoline.
func (s *Sandbox) TrampolineOf() string { return s.trampoline }

// SealedMemfd is sealedMemfd, for its test.
var SealedMemfd = sealedMemfd
