// Package trampolinebin carries the sandbox's trampoline as a binary of its
// own, when the airlock binary was built with it (`make build`).
//
// # Invariant
//
// What it carries is the program in ../internal/trampolinecmd — the
// confine package and nothing else of Airlock — compiled from the same
// tree in the same make recipe as the binary that embeds it, so a spare
// trampoline confines a run exactly as the server's own code would. A
// binary built without the build tag airlock_trampoline (plain `go build`,
// `go install`) carries nothing, and the sandbox re-executes the server
// binary itself, as it always did.
//
// # Why
//
// Every pipeline run, warm stdio upstream and command hook starts a
// trampoline, and a run that finds no spare ready waits for one to start.
// The airlock binary (48 MB, ~93 packages initialised before the
// trampoline's own, its itab table) takes ~18–22 ms of CPU to reach the
// trampoline; the minimal binary ~7–11 ms, against ~6 ms for an empty
// Go program on the same machine (`perf stat`, BENCHMARKS.md, issue 27).
// The sandbox runs these bytes from a sealed memfd (sandbox/embedded.go):
// nothing can change them once the server has started.
package trampolinebin
