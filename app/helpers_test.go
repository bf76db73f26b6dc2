package app

import (
	"io"
	"sync"
)

// safeWriter lets a server goroutine log into a buffer the test reads.
type safeWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *safeWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
