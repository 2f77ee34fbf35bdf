//go:build !unix

package sources

// openNonblock is zero where O_NONBLOCK does not exist.
const openNonblock = 0
