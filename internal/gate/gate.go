// Package gate bounds costly work that anyone can ask for (drawing captchas, hashing passwords) to a few
// cores at once, so that a flood of it cannot starve the buy endpoint: a caller waits a moment for a turn,
// then is told to come back (429).
package gate

import (
	"context"
	"errors"
	"time"

	"golang.org/x/sync/semaphore"

	"seckill/errs"
)

// Gate lets at most n callers work at once; the others wait up to a bound.
type Gate struct {
	sem   *semaphore.Weighted
	turns int
	wait  time.Duration
}

// New returns a gate for n callers at once (at least 1) that makes others wait at most wait.
func New(n int, wait time.Duration) *Gate {
	n = max(n, 1)
	return &Gate{sem: semaphore.NewWeighted(int64(n)), turns: n, wait: wait}
}

// Turns is how many callers may work at once.
func (g *Gate) Turns() int { return g.turns }

// DoInLine runs fn in a turn, waiting for one as long as ctx lasts: for background work that is in no
// hurry (drawing captchas ahead of need), which then takes no more than the gate's share of the cores.
func (g *Gate) DoInLine(ctx context.Context, fn func()) error {
	if err := g.sem.Acquire(ctx, 1); err != nil {
		return err
	}
	defer g.sem.Release(1)
	fn()
	return nil
}

// Do runs fn in a turn. It answers errs.RateLimited when no turn came within the gate's wait, and ctx's
// error when ctx ended first.
func (g *Gate) Do(ctx context.Context, fn func()) error { return g.DoWithin(ctx, g.wait, fn) }

// DoWithin is Do with a wait of its own, for work whose callers should give up sooner.
func (g *Gate) DoWithin(ctx context.Context, wait time.Duration, fn func()) error {
	if !g.sem.TryAcquire(1) {
		wctx, cancel := context.WithTimeout(ctx, wait)
		err := g.sem.Acquire(wctx, 1)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, context.DeadlineExceeded) {
				return errs.Limited(time.Second)
			}
			return err
		}
	}
	defer g.sem.Release(1)
	fn()
	return nil
}
