// Package phasegate decides what a tier of tool may do in a session's phase
// (seed 002). The phase itself is kept on the session's context
// (contexts.Context.Phase, in the store); this package only judges it.
//
// A session is in planning (pure computation: reads of bound data and dry
// runs only) or execution (external I/O and actions allowed, still subject
// to policy). The phase is server-owned: it starts at the role's configured
// phase and only the server side — a person approving through elicitation,
// an operator, or the configuration — moves it. No tool argument can. Any
// phase or tier this package does not know is blocked: fail closed.
package phasegate

import (
	"errors"
	"fmt"
)

// The phases.
const (
	Planning  = "planning"
	Execution = "execution"
)

// Mode is how a permitted call may run.
type Mode int

// Modes.
const (
	// Blocked: the call may not run at all.
	Blocked Mode = iota
	// Run: the call runs normally.
	Run
	// DryRun: the call may be evaluated but must not do external I/O.
	DryRun
)

func (m Mode) String() string {
	switch m {
	case Run:
		return "run"
	case DryRun:
		return "dry_run"
	default:
		return "blocked"
	}
}

// Errors.
var (
	ErrUnknownPhase = errors.New("unknown phase")
	ErrUnknownTier  = errors.New("unknown tier")
	ErrNotInPhase   = errors.New("not allowed in this phase")
)

// Check returns how a call of tier may run in phase. Tiers are the toolkit's
// "read", "external" and "act".
//
//	phase \ tier   read   external   act
//	planning       run    dry run    blocked
//	execution      run    run        run
//	anything else  blocked (ErrUnknownPhase)
func Check(phase, tier string) (Mode, error) {
	if phase != Planning && phase != Execution {
		return Blocked, fmt.Errorf("phase %q: %w", phase, ErrUnknownPhase)
	}
	switch tier {
	case "read":
		return Run, nil
	case "external":
		if phase == Planning {
			return DryRun, nil
		}
		return Run, nil
	case "act":
		if phase == Planning {
			return Blocked, fmt.Errorf("tier act in phase planning: %w", ErrNotInPhase)
		}
		return Run, nil
	default:
		return Blocked, fmt.Errorf("tier %q: %w", tier, ErrUnknownTier)
	}
}
