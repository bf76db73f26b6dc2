package stock

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// BatchBuyer is one buyer of a batch, for the tests that compare a batch with one take at a time.
type BatchBuyer struct {
	UserID              int64
	Path, OrderNo, Loan string
}

// TakeBatch runs the take script once for the buyers, in order, on shard h: each buyer's answer and
// stock left ("" unless queued), or the batch's error.
func (l *Ledger) TakeBatch(ctx context.Context, itemID int64, h int, buyers []BatchBuyer) ([][2]string, error) {
	reqs := make([]*waiting[takeReq], len(buyers))
	for i, b := range buyers {
		reqs[i] = &waiting[takeReq]{req: takeReq{userID: b.UserID, path: b.Path, orderNo: b.OrderNo, loan: b.Loan}}
	}
	l.takeBatch(ctx, itemID, h, reqs)
	out := make([][2]string, len(reqs))
	for i, w := range reqs {
		r := &w.req
		if r.err != nil {
			return nil, r.err
		}
		out[i] = [2]string{r.answer, r.left}
	}
	return out, nil
}

// IssueBatch runs the path script once for the users, in order, on shard h: each one's answer.
func (l *Ledger) IssueBatch(ctx context.Context, itemID int64, h int, users []int64, tokens []string) ([]string, error) {
	reqs := make([]*waiting[pathReq], len(users))
	for i, u := range users {
		reqs[i] = &waiting[pathReq]{req: pathReq{userID: u, token: tokens[i]}}
	}
	l.pathBatch(ctx, itemID, h, reqs)
	out := make([]string, len(reqs))
	for i, w := range reqs {
		if w.req.err != nil {
			return nil, w.req.err
		}
		out[i] = w.req.answer
	}
	return out, nil
}

// Script is a script with the message's names filled in, as the ledger's own are.
func Script(src string) *redis.Script { return lua(src) }

// Groups is how many batch groups the ledger keeps, of takes and of paths.
func (l *Ledger) Groups() int {
	n := 0
	count := func(any, any) bool { n++; return true }
	l.takeGroups.m.Range(count)
	l.pathGroups.m.Range(count)
	return n
}

// LoadTake loads the take script (as the ledger sends it) on a server, before counting its commands.
func LoadTake(ctx context.Context, rdb redis.Scripter) error { return takeScript.Load(ctx, rdb).Err() }

// ReplayOnto replays from's journal on to's client, as a failover's check replays the shop's ledger's
// journal on the books' ledger.
func ReplayOnto(ctx context.Context, from, to *Ledger, books Books) (Replayed, error) {
	return to.replay(ctx, &from.journal, books, 0)
}

// JournalKeep is how long before a hold began a take is replayed.
const JournalKeep = journalKeep

// CheckHeldFor runs the failover's check of the books (and its replay of the shop's journal) as it runs
// in a hold that began held ago, by the wall clock.
func (f *Failover) CheckHeldFor(ctx context.Context, held time.Duration) error {
	f.since.Store(time.Now().Add(-held).UnixNano())
	return f.check(ctx)
}
