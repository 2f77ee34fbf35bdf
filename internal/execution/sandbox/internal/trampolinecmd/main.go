// Command trampolinecmd is a minimal binary that only serves as the sandbox
// trampoline. Tests build it with CGO_ENABLED=0 (the race-enabled test
// binary has cgo and cannot be the trampoline); the real server re-executes
// itself instead.
package main

import (
	"fmt"
	"os"

	"github.com/airlock-dev/airlock/internal/execution/sandbox"
)

func main() {
	sandbox.MaybeRunTrampoline()
	fmt.Fprintln(os.Stderr, "trampolinecmd: only runs as", sandbox.TrampolineArg)
	os.Exit(2)
}
