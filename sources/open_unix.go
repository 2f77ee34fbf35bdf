//go:build unix

package sources

import "syscall"

// openNonblock keeps an open of a FIFO or device from blocking; it has no
// effect on regular files.
const openNonblock = syscall.O_NONBLOCK
