// Command trampolinecmd is a minimal binary that only serves as the sandbox
// trampoline. `make build` compiles it and embeds it into the airlock
// binary (package trampolinebin: it starts in well under half the
// airlock binary's CPU); tests build it with CGO_ENABLED=0 (the race-enabled test
// binary has cgo and cannot be the trampoline).
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
