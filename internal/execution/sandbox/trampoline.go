//go:build linux

package sandbox

import "github.com/airlock-dev/airlock/internal/execution/sandbox/confine"

// TrampolineArg is the hidden subcommand (os.Args[1]) under which the server
// binary re-executes itself to become a sandbox trampoline (package confine).
const TrampolineArg = confine.TrampolineArg

// MaybeRunTrampoline must be the first thing main() calls: when the process
// was started as a sandbox trampoline it confines itself and execs the
// pipeline, and never returns; otherwise it returns at once. In the airlock
// binary it has already run by then, from package confine's init, before
// the heavy packages' initialisation (confine's invariant).
func MaybeRunTrampoline() { confine.MaybeRunTrampoline() }
