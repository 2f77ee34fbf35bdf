//go:build airlock_trampoline

package trampolinebin

import _ "embed"

// binary is trampolinecmd as `make build` compiled it just before this
// package (see the Makefile's build target).
//
//go:embed airlock-trampoline
var binary []byte

// Bytes returns the trampoline binary linked into this one.
func Bytes() []byte { return binary }
