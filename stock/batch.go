package stock

import (
	"context"
	"fmt"
	"sync"
)

// Group commit for stock takes. One script call per buy spends most of a Redis core on the round trip,
// not on the script: buys of one shard that arrive while a take of that shard is on its way to Redis
// wait for it, and then go together, as one script call that decides each of them in order
// (take.lua). A buy that finds no take of its shard in flight goes at once, alone: nobody waits on a
// quiet sale, and under a crowd nobody waits more than one round trip before their batch leaves.
//
// There is no goroutine of its own: the buy that finds the shard idle sends the batch; when it comes
// back, that buy hands each waiter its answer and the next batch (those who arrived meanwhile) to the
// first of them, who sends it.

// MaxBatch is the most buyers in one take script call.
const MaxBatch = 128

// GroupCommit turns group commit on (the default) or off (every take its own script call).
func (l *Ledger) GroupCommit(on bool) { l.single = !on }

// BatchStats answers how many take script calls were made, and for how many takes.
func (l *Ledger) BatchStats() (calls, takes int64) { return l.calls.Load(), l.takes.Load() }

type shardKey struct {
	item  int64
	shard int
}

// takeReq is one buyer's take, waiting in its shard's batch.
type takeReq struct {
	userID        int64
	path, orderNo string
	loan          string
	answer, left  string
	err           error
	done          chan []*takeReq // closed: answered; sent a batch: send it (this buyer is in it)
}

type batcher struct {
	mu      sync.Mutex
	busy    bool       // a batch is on its way
	pending []*takeReq // who arrived meanwhile
}

func (l *Ledger) batcherOf(itemID int64, h int) *batcher {
	k := shardKey{itemID, h}
	if b, ok := l.batchers.Load(k); ok {
		return b.(*batcher)
	}
	b, _ := l.batchers.LoadOrStore(k, &batcher{})
	return b.(*batcher)
}

// take runs the take script for one buyer on shard h of the item, with the loan to credit first ("" for
// none), alone or in its shard's batch, and answers the script's answer for this buyer.
func (l *Ledger) take(ctx context.Context, itemID int64, h int, userID int64, path, orderNo, loan string) ([]string, error) {
	r := &takeReq{userID: userID, path: path, orderNo: orderNo, loan: loan}
	if l.single {
		l.takeBatch(ctx, itemID, h, []*takeReq{r})
		return r.result()
	}
	b := l.batcherOf(itemID, h)
	b.mu.Lock()
	if b.busy {
		r.done = make(chan []*takeReq, 1)
		b.pending = append(b.pending, r)
		b.mu.Unlock()
		batch, ok := <-r.done
		if !ok {
			return r.result()
		}
		l.send(ctx, itemID, h, b, batch)
		return r.result()
	}
	b.busy = true
	b.mu.Unlock()
	l.send(ctx, itemID, h, b, []*takeReq{r})
	return r.result()
}

func (r *takeReq) result() ([]string, error) {
	if r.err != nil {
		return nil, r.err
	}
	return []string{r.answer, r.left}, nil
}

// send runs one batch, answers its waiters, and hands the next batch to the first of those who arrived
// meanwhile (or marks the shard idle). The batch is not the sender's own request alone: it runs without
// the sender's cancellation (the Redis client's timeouts bound it), so that a buyer who leaves does not
// fail the others.
func (l *Ledger) send(ctx context.Context, itemID int64, h int, b *batcher, batch []*takeReq) {
	l.takeBatch(context.WithoutCancel(ctx), itemID, h, batch)
	b.mu.Lock()
	var next []*takeReq
	if len(b.pending) == 0 {
		b.busy = false
	} else {
		k := min(len(b.pending), MaxBatch)
		next = b.pending[:k:k]
		b.pending = append([]*takeReq(nil), b.pending[k:]...)
	}
	b.mu.Unlock()
	for _, r := range batch {
		if r.done != nil {
			close(r.done) // the sender's own too, had it waited: it reads no more
		}
	}
	if len(next) > 0 {
		next[0].done <- next
	}
}

// takeBatch runs the take script once for the batch's buyers, in order, and fills in each one's answer;
// a failed call fails every one of them (and took nothing: the script decides all before it writes).
func (l *Ledger) takeBatch(ctx context.Context, itemID int64, h int, batch []*takeReq) {
	k := ShardKeys(itemID, h)
	keys := make([]string, 0, 4+len(batch))
	keys = append(keys, k.Sale, k.Buyers, k.Stream, k.Received)
	args := make([]any, 0, 1+4*len(batch))
	args = append(args, l.now().UnixMilli())
	for _, r := range batch {
		keys = append(keys, k.Path(r.userID))
		args = append(args, r.userID, r.path, r.orderNo, r.loan)
	}
	l.calls.Add(1)
	l.takes.Add(int64(len(batch)))
	res, err := takeScript.Run(ctx, l.rdb, keys, args...).StringSlice()
	if err == nil && len(res) != 2*len(batch) {
		err = fmt.Errorf("%d answers for %d buyers", len(res), len(batch))
	}
	for i, r := range batch {
		if err != nil {
			r.err = fmt.Errorf("take: %w", err)
			continue
		}
		r.answer, r.left = res[2*i], res[2*i+1]
	}
}
