package loadtest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
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
}

func (p PowSpent) String() string {
	if p.Solves == 0 {
		return "no proofs of work solved"
	}
	return fmt.Sprintf("%d proofs of work solved with ALTCHA's Go library: %d tries, %.1f s of solver time (%.1f ms a solve, %.2f M tries a second)",
		p.Solves, p.Tries, p.Took.Seconds(), p.Took.Seconds()*1000/float64(p.Solves), float64(p.Tries)/max(p.Took.Seconds(), 1e-9)/1e6)
}

// powCounts are a client's PowSpent, counted as they happen.
type powCounts struct{ solves, tries, nanos atomic.Int64 }

// Pow answers what this client's shoppers paid for their proofs of work so far.
func (c *Client) Pow() PowSpent {
	return PowSpent{Solves: c.pow.solves.Load(), Tries: c.pow.tries.Load(), Took: time.Duration(c.pow.nanos.Load())}
}

// SolvePow asks GET /api/altcha?query as u and solves the challenge with ALTCHA's Go library, as a
// scalper's server would: it answers the altcha field of a registration or a join, or retry when the
// server said too many at once.
func (c *Client) SolvePow(ctx context.Context, u *User, query string) (altchaField string, retry bool, err error) {
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
	start := time.Now()
	s, err := altcha.SolveChallenge(ch.Challenge, ch.Salt, altcha.Algorithm(ch.Algorithm), int(ch.MaxNumber), 0, ctx.Done())
	c.pow.nanos.Add(int64(time.Since(start)))
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
