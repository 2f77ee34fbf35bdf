//go:build !airlock_trampoline

package trampolinebin

// Bytes returns nil: this binary was built without the trampoline (no
// airlock_trampoline tag), and the sandbox re-executes the binary itself.
func Bytes() []byte { return nil }
