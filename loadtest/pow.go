package loadtest

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strconv"
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
	return fmt.Sprintf("%d proofs of work solved with a plain SHA-256 loop: %d tries, %.1f s of solver time (%.1f ms a solve, %.2f M tries a second)",
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

// SolvePow asks GET /api/altcha?query as u and solves the challenge with a plain SHA-256 loop
// (solveSHA256), as a scalper's server would: it answers the altcha field of a registration or a join, or retry when the
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
	if ch.Algorithm != string(altcha.SHA256) {
		return "", false, fmt.Errorf("altcha: the load tool solves SHA-256 only, not %q", ch.Algorithm)
	}
	n, err := solveSHA256(ctx, ch.Challenge, ch.Salt, ch.MaxNumber)
	c.pow.nanos.Add(int64(time.Since(start)))
	if c.solveSlots != nil {
		c.pow.cpu.Add(int64(threadCPU() - cpu))
	}
	if err != nil {
		return "", false, err
	}
	c.pow.solves.Add(1)
	c.pow.tries.Add(n + 1)
	p, err := json.Marshal(altcha.Payload{Algorithm: ch.Algorithm, Challenge: ch.Challenge, Number: n, Salt: ch.Salt, Signature: ch.Signature})
	if err != nil {
		return "", false, err
	}
	return base64.StdEncoding.EncodeToString(p), false, nil
}

// solveSHA256 answers the least n in 0..maxNumber whose SHA-256 of salt followed by n in decimal is
// challenge (hex), as ALTCHA's protocol asks. It is ALTCHA's SolveChallenge without its per-try
// formatting and hex encoding: about four times its tries a second, what a scalper's own solver would do.
func solveSHA256(ctx context.Context, challenge, salt string, maxNumber int64) (int64, error) {
	want, err := hex.DecodeString(challenge)
	if err != nil || len(want) != sha256.Size {
		return 0, fmt.Errorf("altcha: a challenge of %q is no SHA-256", challenge)
	}
	target := [sha256.Size]byte(want)
	buf := make([]byte, 0, len(salt)+20)
	buf = append(buf, salt...)
	for n := int64(0); n <= maxNumber; n++ {
		if n&0xffff == 0 && ctx.Err() != nil {
			return 0, ctx.Err()
		}
		if sha256.Sum256(strconv.AppendInt(buf, n, 10)) == target {
			return n, nil
		}
	}
	return 0, fmt.Errorf("altcha: no solution up to %d", maxNumber)
}

// joinQuery is GET /api/altcha's query for a join of itemID.
func joinQuery(itemID int64) string { return fmt.Sprintf("purpose=join&item_id=%d", itemID) }
