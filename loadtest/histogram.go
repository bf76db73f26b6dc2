package loadtest

import (
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Bucket is the width of the latency-over-time chart's steps: a run of a few seconds still shows its shape.
const Bucket = 100 * time.Millisecond

// Latencies records request latencies (microseconds, 1 µs to 60 s, 3 significant figures) overall and
// per Bucket of the run, for the report's percentiles and its latency-over-time chart.
type Latencies struct {
	mu      sync.Mutex
	start   time.Time
	all     *hdrhistogram.Histogram
	seconds []*hdrhistogram.Histogram
}

// NewLatencies starts recording at start.
func NewLatencies(start time.Time) *Latencies {
	return &Latencies{start: start, all: newHist()}
}

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, 60_000_000, 3) }

// Record adds one request that ended at end after d.
func (l *Latencies) Record(end time.Time, d time.Duration) {
	us := max(d.Microseconds(), 1)
	sec := int(end.Sub(l.start) / Bucket)
	l.mu.Lock()
	defer l.mu.Unlock()
	_ = l.all.RecordValue(us)
	for len(l.seconds) <= sec {
		l.seconds = append(l.seconds, newHist())
	}
	_ = l.seconds[sec].RecordValue(us)
}

// Summary is the percentiles of a set of latencies.
type Summary struct {
	Count                    int64
	P50, P90, P99, P999, Max time.Duration
}

func summarize(h *hdrhistogram.Histogram) Summary {
	q := func(p float64) time.Duration { return time.Duration(h.ValueAtQuantile(p)) * time.Microsecond }
	return Summary{Count: h.TotalCount(), P50: q(50), P90: q(90), P99: q(99), P999: q(99.9), Max: time.Duration(h.Max()) * time.Microsecond}
}

// Summary answers the percentiles over the whole run.
func (l *Latencies) Summary() Summary {
	l.mu.Lock()
	defer l.mu.Unlock()
	return summarize(l.all)
}

// PerSecond answers the percentiles of each Bucket of the run.
func (l *Latencies) PerSecond() []Summary {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Summary, len(l.seconds))
	for i, h := range l.seconds {
		out[i] = summarize(h)
	}
	return out
}
