//go:build !cgo

package confine

const builtWithCgo = false
