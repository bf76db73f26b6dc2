package app

import (
	"io"
	"sync"
	"time"
)

// logBuffer writes log lines through buffers that a goroutine of its own flushes every flushEvery (and
// when one is full, and at Close): a request's access log line costs a copy into memory, not a write to
// the terminal or the journal. A line is whole in the output, never split by another; at most
// flushEvery's lines are lost if the process is killed.
//
// The buffers are stripes, each with its lock: one buffer under one lock, taken by every request on both
// cores, was a tenth of a status poll's cost above a bare handler (the lock's word moving between the
// cores, and its waiters woken). An access line goes to its connection's stripe, so a connection's lines
// keep their order; lines of different stripes may be out of order by up to flushEvery.
type logBuffer struct {
	outMu   sync.Mutex // one write to out at a time
	out     io.Writer
	stripes [logStripes]logStripe
	stop    chan struct{}
	done    chan struct{}
}

type logStripe struct {
	mu sync.Mutex
	b  []byte
	_  [32]byte // a cache line of its own
}

const (
	logStripes    = 8
	logStripeSize = 16 << 10
	flushEvery    = 100 * time.Millisecond
)

func newLogBuffer(w io.Writer) *logBuffer {
	b := &logBuffer{out: w, stop: make(chan struct{}), done: make(chan struct{})}
	go b.flushing()
	return b
}

// Write writes p, a whole line (slog's lines: the first stripe).
func (b *logBuffer) Write(p []byte) (int, error) {
	b.WriteFrom(p, 0)
	return len(p), nil
}

// WriteFrom writes p, a whole line, through key's stripe.
func (b *logBuffer) WriteFrom(p []byte, key uint64) {
	s := &b.stripes[key%logStripes]
	s.mu.Lock()
	if len(s.b)+len(p) > logStripeSize {
		b.writeOut(s.b)
		s.b = s.b[:0]
	}
	if len(p) > logStripeSize {
		b.writeOut(p)
	} else {
		if s.b == nil {
			s.b = make([]byte, 0, logStripeSize)
		}
		s.b = append(s.b, p...)
	}
	s.mu.Unlock()
}

func (b *logBuffer) writeOut(p []byte) {
	if len(p) == 0 {
		return
	}
	b.outMu.Lock()
	_, _ = b.out.Write(p)
	b.outMu.Unlock()
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
	for i := range b.stripes {
		s := &b.stripes[i]
		s.mu.Lock()
		b.writeOut(s.b)
		s.b = s.b[:0]
		s.mu.Unlock()
	}
}

// Close flushes what is buffered and stops the flusher.
func (b *logBuffer) Close() error {
	close(b.stop)
	<-b.done
	return nil
}
