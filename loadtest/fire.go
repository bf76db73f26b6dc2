package loadtest

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// Request is one request of a load.
type Request struct {
	Method, Path string
	User         *User // nil: anonymous
	Who          int   // the user's index, for the audit
	// Header holds headers of the request's own: a status poll's signed place (X-Line-Place), as the
	// waiting room's page sends it.
	Header map[string]string
}

// Result is a load's outcome.
type Result struct {
	Requests  int
	Errors    int // transport errors: no answer at all
	Elapsed   time.Duration
	Kinds     map[string]int
	Latency   Summary
	PerSecond []Summary
	Queued    map[int]int // user index → 202 queued answers: promises
	// User index → 202 unconfirmed answers: taken, not known to be on a Redis replica; each ends as an
	// order or as a result that says it did not go through (AuditSale).
	Unconfirmed map[int]int
	Lost        map[int]int // user index → answers lost: none at all, or a proxy's 502/504
	// When answers failed (no answer, or a 5xx): the first and the last, and the first good answer after
	// the last (zero when none failed): how long a fault was felt by the clients.
	FirstFailed, LastFailed, GoodAgain time.Time
}

// Throughput answers requests per second.
func (r *Result) Throughput() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Elapsed.Seconds()
}

// KindsSorted lists answer kinds, most first.
func (r *Result) KindsSorted() []string {
	out := make([]string, 0, len(r.Kinds))
	for k := range r.Kinds {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		return r.Kinds[out[i]] > r.Kinds[out[j]] || r.Kinds[out[i]] == r.Kinds[out[j]] && out[i] < out[j]
	})
	return out
}

// Fire sends reqs over conns concurrent connections, as fast as the server answers, and calls
// progress now and then with how many are done.
func (c *Client) Fire(ctx context.Context, reqs []Request, conns int, progress func(done int)) *Result {
	start := time.Now()
	lat := NewLatencies(start)
	res := &Result{Requests: len(reqs), Kinds: map[string]int{}, Queued: map[int]int{}, Unconfirmed: map[int]int{}, Lost: map[int]int{}}
	var mu sync.Mutex
	var next, done atomic.Int64
	var failMu sync.Mutex
	var goodAfter []time.Time // good answers' times, kept only after a failure (to find the first after the last)
	failed := func(at time.Time) {
		failMu.Lock()
		if res.FirstFailed.IsZero() || at.Before(res.FirstFailed) {
			res.FirstFailed = at
		}
		if at.After(res.LastFailed) {
			res.LastFailed = at
		}
		failMu.Unlock()
	}
	good := func(at time.Time) {
		failMu.Lock()
		if !res.LastFailed.IsZero() && at.After(res.LastFailed) {
			goodAfter = append(goodAfter, at)
		}
		failMu.Unlock()
	}
	var wg sync.WaitGroup
	for range min(conns, max(len(reqs), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			kinds := map[string]int{}
			queued, unconfirmed, lost := map[int]int{}, map[int]int{}, map[int]int{}
			errs := 0
			for {
				i := int(next.Add(1)) - 1
				if i >= len(reqs) || ctx.Err() != nil {
					break
				}
				r := reqs[i]
				t0 := time.Now()
				a, err := c.DoHeader(ctx, r.Method, r.Path, nil, r.User, r.Header)
				t1 := time.Now()
				lat.Record(t1, t1.Sub(t0))
				if err != nil || a.Status >= 500 {
					failed(t1)
				} else {
					good(t1)
				}
				if err != nil {
					errs++
					lost[r.Who]++
				} else {
					kinds[a.Kind()]++
					switch {
					case a.Unconfirmed():
						unconfirmed[r.Who]++
					case a.Status == http.StatusAccepted:
						queued[r.Who]++
					case a.Status == http.StatusBadGateway || a.Status == http.StatusGatewayTimeout:
						lost[r.Who]++
					}
				}
				if n := done.Add(1); progress != nil { // (the bar draws at its own steps)
					progress(int(n))
				}
			}
			mu.Lock()
			for k, n := range kinds {
				res.Kinds[k] += n
			}
			for k, n := range queued {
				res.Queued[k] += n
			}
			for k, n := range unconfirmed {
				res.Unconfirmed[k] += n
			}
			for k, n := range lost {
				res.Lost[k] += n
			}
			res.Errors += errs
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, at := range goodAfter {
		if at.After(res.LastFailed) && (res.GoodAgain.IsZero() || at.Before(res.GoodAgain)) {
			res.GoodAgain = at
		}
	}
	res.Elapsed = time.Since(start)
	res.Latency = lat.Summary()
	res.PerSecond = lat.PerSecond()
	return res
}
