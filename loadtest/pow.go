package loadtest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"

	altcha "github.com/altcha-org/altcha-lib-go"
)

// PowSpent is what the load tool's shoppers paid for the proofs of work their registrations and joins
// carry: solves, the numbers tried, and the time the solver ran (one goroutine each, busy all along: a
// core's time, or more on a machine whose cores are all taken).
type PowSpent struct {
	Solves int64
	Tries  int64
	Took   time.Duration
	// CPU is the solver's own CPU time, read from the thread each solve ran on (with SolveOn; 0 without).
	CPU time.Duration
}

func (p PowSpent) String() string {
	if p.Solves == 0 {
		return "no proofs of work solved"
	}
	took := p.Took
	if p.CPU > 0 {
		took = p.CPU
	}
	return fmt.Sprintf("%d proofs of work solved with ALTCHA's Go library: %d tries, %.1f s of solver time (%.1f ms a solve, %.2f M tries a second)",
		p.Solves, p.Tries, took.Seconds(), took.Seconds()*1000/float64(p.Solves), float64(p.Tries)/max(took.Seconds(), 1e-9)/1e6)
}

// powCounts are a client's PowSpent, counted as they happen.
type powCounts struct{ solves, tries, nanos, cpu atomic.Int64 }

// Pow answers what this client's shoppers paid for their proofs of work so far.
func (c *Client) Pow() PowSpent {
	return PowSpent{Solves: c.pow.solves.Load(), Tries: c.pow.tries.Load(), Took: time.Duration(c.pow.nanos.Load()),
		CPU: time.Duration(c.pow.cpu.Load())}
}

// SolveOn makes the client solve at most n proofs of work at once, each on an OS thread of its own
// whose CPU time is read before and after (PowSpent.CPU): what the solving cost, apart from everything
// else the load tool does on the same cores. A solve waits for its turn before it asks its challenge, so
// the wait does not eat the challenge's time to live.
func (c *Client) SolveOn(n int) { c.solveSlots = make(chan struct{}, max(n, 1)) }

// threadCPU answers the CPU time the calling OS thread has used (Linux's RUSAGE_THREAD).
func threadCPU() time.Duration {
	const rusageThread = 1
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// SolvePow asks GET /api/altcha?query as u and solves the challenge with ALTCHA's Go library, as a
// scalper's server would: it answers the altcha field of a registration or a join, or retry when the
// server said too many at once.
func (c *Client) SolvePow(ctx context.Context, u *User, query string) (altchaField string, retry bool, err error) {
	if c.solveSlots != nil {
		select {
		case c.solveSlots <- struct{}{}:
		case <-ctx.Done():
			return "", false, ctx.Err()
		}
		defer func() { <-c.solveSlots }()
	}
	a, err := c.Do(ctx, http.MethodGet, "/api/altcha?"+query, nil, u)
	if err != nil {
		return "", false, err
	}
	if a.Status == http.StatusTooManyRequests {
		return "", true, nil
	}
	if a.Status != http.StatusOK {
		return "", false, fmt.Errorf("altcha: %d %s", a.Status, a.Body)
	}
	var ch struct {
		Algorithm, Challenge, Salt, Signature string
		MaxNumber                             int64 `json:"maxnumber"`
	}
	if err := jsonUnmarshal(a.Body, &ch); err != nil {
		return "", false, err
	}
	if c.solveSlots != nil {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	start, cpu := time.Now(), threadCPU()
	s, err := altcha.SolveChallenge(ch.Challenge, ch.Salt, altcha.Algorithm(ch.Algorithm), int(ch.MaxNumber), 0, ctx.Done())
	c.pow.nanos.Add(int64(time.Since(start)))
	if c.solveSlots != nil {
		c.pow.cpu.Add(int64(threadCPU() - cpu))
	}
	if err != nil {
		return "", false, err
	}
	if s == nil {
		if ctx.Err() != nil {
			return "", false, ctx.Err()
		}
		return "", false, fmt.Errorf("altcha: no solution up to %d", ch.MaxNumber)
	}
	c.pow.solves.Add(1)
	c.pow.tries.Add(int64(s.Number) + 1)
	p, err := json.Marshal(altcha.Payload{Algorithm: ch.Algorithm, Challenge: ch.Challenge, Number: int64(s.Number), Salt: ch.Salt, Signature: ch.Signature})
	if err != nil {
		return "", false, err
	}
	return base64.StdEncoding.EncodeToString(p), false, nil
}

// joinQuery is GET /api/altcha's query for a join of itemID.
func joinQuery(itemID int64) string { return fmt.Sprintf("purpose=join&item_id=%d", itemID) }
