package stock

import (
	"context"
	"sync"
	"time"
)

// Group commit: one script call per request spends most of a Redis core on the round trip, not on the
// script. The calls of one stock shard that arrive while one of them is on its way to Redis wait for it,
// and then go together, as one script call that decides each of them in order. A call that finds its
// shard idle goes at once, alone: nobody waits on a quiet sale, and under a crowd nobody waits more
// than one round trip before their batch leaves.
//
// There is no goroutine of its own: the call that finds the shard idle sends the batch; when it comes
// back, that caller hands each waiter its answer and the next batch (those who arrived meanwhile) to the
// first of them, who sends it.

// maxBatch is the most requests in one script call.
const maxBatch = 128

// waiting is one request in a group: its own fields, and how it is told that it was answered (the
// channel closed) or that it is to send the next batch (the batch sent on it).
type waiting[R any] struct {
	req  R
	done chan []*waiting[R]
}

// group gathers the requests of one shard.
type group[R any] struct {
	mu      sync.Mutex
	busy    bool          // a batch is on its way
	pending []*waiting[R] // who arrived meanwhile
}

// do runs w in a batch of its group, with send (which fills in each request's answer), and returns
// once w is answered; or, if ctx ends while w still waits for a batch to leave, at once with ctx's
// error (nothing was sent for it).
func (g *group[R]) do(ctx context.Context, w *waiting[R], send func(context.Context, []*waiting[R])) error {
	g.mu.Lock()
	if g.busy {
		w.done = make(chan []*waiting[R], 1)
		g.pending = append(g.pending, w)
		g.mu.Unlock()
		select {
		case batch, lead := <-w.done:
			if lead {
				g.run(ctx, batch, send)
			}
			return nil
		case <-ctx.Done():
			if g.leave(w) {
				return ctx.Err()
			}
			// Already in a batch on its way: its answer comes (the batch has a deadline of its own).
			if batch, lead := <-w.done; lead {
				g.run(ctx, batch, send)
			}
			return nil
		}
	}
	g.busy = true
	g.mu.Unlock()
	g.run(ctx, []*waiting[R]{w}, send)
	return nil
}

// leave takes w out of those waiting, if it is still there.
func (g *group[R]) leave(w *waiting[R]) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, p := range g.pending {
		if p == w {
			g.pending = append(g.pending[:i], g.pending[i+1:]...)
			return true
		}
	}
	return false
}

// run sends one batch, answers its waiters, and hands the next batch to the first of those who arrived
// meanwhile (or marks the group idle), even if send panics. The batch is not the sender's request
// alone: it is not cancelled with the sender's (a buyer who leaves does not fail the others), but keeps
// the sender's deadline, or batchDeadline.
func (g *group[R]) run(ctx context.Context, batch []*waiting[R], send func(context.Context, []*waiting[R])) {
	defer g.next(batch)
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(batchDeadline)
	}
	bctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	defer cancel()
	send(bctx, batch)
}

// batchDeadline bounds a batch whose sender's context has no deadline.
const batchDeadline = 15 * time.Second

// next answers a sent batch's waiters and hands the next batch on.
func (g *group[R]) next(batch []*waiting[R]) {
	g.mu.Lock()
	var next []*waiting[R]
	if len(g.pending) == 0 {
		g.busy = false
	} else {
		k := min(len(g.pending), maxBatch)
		next = g.pending[:k:k]
		g.pending = append([]*waiting[R](nil), g.pending[k:]...)
	}
	g.mu.Unlock()
	for _, w := range batch {
		if w.done != nil {
			close(w.done) // the sender's own too, had it waited: it reads no more
		}
	}
	if len(next) > 0 {
		next[0].done <- next
	}
}

// groups are a ledger's groups of one kind of call, one per shard.
type groups[R any] struct{ m sync.Map } // shardKey → *group[R]

func (gs *groups[R]) of(itemID int64, h int) *group[R] {
	k := shardKey{itemID, h}
	if g, ok := gs.m.Load(k); ok {
		return g.(*group[R])
	}
	g, _ := gs.m.LoadOrStore(k, &group[R]{})
	return g.(*group[R])
}

type shardKey struct {
	item  int64
	shard int
}
