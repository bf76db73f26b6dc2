package app

import (
	"bufio"
	"io"
	"sync"
	"time"
)

// logBuffer writes log lines through a buffer that a goroutine of its own flushes every flushEvery (and
// when it is full, and at Close): a request's access log line costs a copy into memory, not a write to
// the terminal or the journal. A line is whole in the output, never split by another; at most
// flushEvery's lines are lost if the process is killed.
type logBuffer struct {
	mu   sync.Mutex
	w    *bufio.Writer
	stop chan struct{}
	done chan struct{}
}

const (
	logBufferSize = 64 << 10
	flushEvery    = 100 * time.Millisecond
)

func newLogBuffer(w io.Writer) *logBuffer {
	b := &logBuffer{w: bufio.NewWriterSize(w, logBufferSize), stop: make(chan struct{}), done: make(chan struct{})}
	go b.flushing()
	return b
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.w.Write(p)
}

func (b *logBuffer) flushing() {
	defer close(b.done)
	t := time.NewTicker(flushEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			b.flush()
		case <-b.stop:
			b.flush()
			return
		}
	}
}

func (b *logBuffer) flush() {
	b.mu.Lock()
	defer b.mu.Unlock()
	_ = b.w.Flush()
}

// Close flushes what is buffered and stops the flusher.
func (b *logBuffer) Close() error {
	close(b.stop)
	<-b.done
	return nil
}
