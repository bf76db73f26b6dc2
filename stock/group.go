package stock

import (
	"context"
	"sync"
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

// MaxBatch is the most requests in one script call.
const MaxBatch = 128

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
// once w is answered.
func (g *group[R]) do(ctx context.Context, w *waiting[R], send func(context.Context, []*waiting[R])) {
	g.mu.Lock()
	if g.busy {
		w.done = make(chan []*waiting[R], 1)
		g.pending = append(g.pending, w)
		g.mu.Unlock()
		if batch, lead := <-w.done; lead {
			g.run(ctx, batch, send)
		}
		return
	}
	g.busy = true
	g.mu.Unlock()
	g.run(ctx, []*waiting[R]{w}, send)
}

// run sends one batch, answers its waiters, and hands the next batch to the first of those who arrived
// meanwhile (or marks the group idle). The batch is not the sender's request alone: it runs without the
// sender's cancellation (the Redis client's timeouts bound it), so that a buyer who leaves does not fail
// the others.
func (g *group[R]) run(ctx context.Context, batch []*waiting[R], send func(context.Context, []*waiting[R])) {
	send(context.WithoutCancel(ctx), batch)
	g.mu.Lock()
	var next []*waiting[R]
	if len(g.pending) == 0 {
		g.busy = false
	} else {
		k := min(len(g.pending), MaxBatch)
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
