// Package syncbuf is a log sink for tests: a bytes.Buffer that a logger
// (or a subprocess's output copier) writes from its goroutines while the
// test reads it. Invariant: every method holds the one lock, so a read
// never races a write and sees whole writes only.
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer safe for concurrent writers and readers; the
// zero value is ready to use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p under the lock.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what has been written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Reset empties the buffer.
func (s *Buffer) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Reset()
}
