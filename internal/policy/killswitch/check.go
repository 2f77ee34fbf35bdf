package killswitch

import (
	"context"
	"errors"
)

// Probe reads a second source of the switch that [Switch.Check] folds in —
// the audit store's kill_switch setting, which every instance on a shared
// PostgreSQL store sees. It is called on every check, so it must be cheap,
// and it must report engaged together with any error.
type Probe func(ctx context.Context) (engaged bool, err error)

// View is the kill switch as one check read it.
type View struct {
	// File is the kill switch file's state (engaged if it is unreadable).
	File State
	// Store is the probe's answer (false without a probe).
	Store bool
	// Err says why the state could not be read; a View with an error is
	// engaged.
	Err error
}

// Engaged reports whether calls must be refused: by the file, by the
// store, or because either could not be read (fail closed).
func (v View) Engaged() bool { return v.Err != nil || v.File.Engaged || v.Store }

// Check reads the switch for one call: the file (one stat(2); parsed again
// only when it changed) and then probe, if any, on the caller's path.
// Nothing is cached that another goroutine must keep fresh, so a change
// that was complete before Check began — [Write] returned, the store's
// commit returned — is in its View, however loaded the machine is
// (TestCheckSeesEveryChangeBeforeIt; issue 26 item 7: a watcher's 10 ms
// poll, starved of CPU, served a call 72 ms after the trip).
func (s *Switch) Check(ctx context.Context, probe Probe) View {
	st, err := s.State()
	v := View{File: st, Err: err}
	if probe != nil {
		on, perr := probe(ctx)
		v.Store = on || perr != nil
		v.Err = errors.Join(v.Err, perr)
	}
	return v
}
