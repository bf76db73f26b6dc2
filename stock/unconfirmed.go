package stock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// An unconfirmed buyer (issue 36) was told their take is on the Redis master, not known to be on a
// replica. If the master is lost before its replica had it, the promoted replica knows nothing of them:
// no mark, no result, no order message, and their result would read none for ever. What they were told
// is not in Redis then, so the ledger that told them keeps it, in memory: each unconfirmed take, until
// its buyer's result settles. Once the take is old enough that no order consumer can still be writing it
// (UnconfirmedGrace), a take whose buyer Redis no longer knows and whose order PostgreSQL does not hold
// is lost: the ledger writes its buyer a final result (failed, reason ResultLost), which the result poll
// reads in its one round trip as it reads any other.
//
// Memory and not PostgreSQL: an unconfirmed take is written where the buy is answered, without a round
// trip more, and is rare (a replica behind). What it does not survive is the loss of this process and of
// the Redis master together: its buyers then read none, as before (said in docs/api.md).

// ResultLost is the reason of a failed result whose take was lost with a Redis master before a replica
// had it: nothing was taken from the buyer, and they may buy again.
const ResultLost = "lost"

// lostPrefix is the results hash's value of a lost take: "lost:" and its order number.
const lostPrefix = ResultLost + ":"

// lostMessage is a lost result's message: every failed result has one (the API's contract), as the
// order consumer's failures say theirs.
const lostMessage = "lost with a Redis failover: nothing was taken, you may buy again"

// UnconfirmedGrace is how old an unconfirmed take must be before it may be found lost: an order consumer
// that read its message from the old master before it died has long written its order by then.
const UnconfirmedGrace = 30 * time.Second

// maxUnconfirmed bounds the takes remembered: beyond it the oldest is forgotten (its buyer reads none if
// it was lost), and counted.
const maxUnconfirmed = 100_000

type unconfirmedKey struct{ item, user int64 }

type unconfirmedTake struct {
	orderNo string
	at      time.Time
}

// unconfirmedTakes are the takes this ledger answered unconfirmed and whose results have not settled.
type unconfirmedTakes struct {
	mu     sync.Mutex
	m      map[unconfirmedKey]unconfirmedTake
	told   atomic.Int64 // buyers answered unconfirmed
	lost   atomic.Int64 // of them, found lost
	forgot atomic.Int64 // forgotten beyond maxUnconfirmed
}

func (u *unconfirmedTakes) add(itemID, userID int64, orderNo string, at time.Time) {
	u.told.Add(1)
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.m == nil {
		u.m = map[unconfirmedKey]unconfirmedTake{}
	}
	if len(u.m) >= maxUnconfirmed {
		var oldest unconfirmedKey
		first := true
		for k, t := range u.m {
			if first || t.at.Before(u.m[oldest].at) {
				oldest, first = k, false
			}
		}
		delete(u.m, oldest)
		u.forgot.Add(1)
	}
	u.m[unconfirmedKey{itemID, userID}] = unconfirmedTake{orderNo: orderNo, at: at}
}

// UnconfirmedStats answers how many buyers this ledger answered unconfirmed, how many of them are not
// settled yet, and how many were found lost.
func (l *Ledger) UnconfirmedStats() (told, open, lost int64) {
	l.unconfirmed.mu.Lock()
	open = int64(len(l.unconfirmed.m))
	l.unconfirmed.mu.Unlock()
	return l.unconfirmed.told.Load(), open, l.unconfirmed.lost.Load()
}

// OrderExists answers whether PostgreSQL holds the order numbered orderNo.
type OrderExists func(ctx context.Context, orderNo string) (bool, error)

// SettleUnconfirmed looks at the unconfirmed takes at least UnconfirmedGrace old: a take whose buyer the
// failover's replay told lost is lost; a take whose buyer has another result, or is still marked (the
// order consumer settles it), is forgotten or kept as it should; a take Redis no longer knows is lost
// unless exists finds its order, and its buyer gets the lost result (or success, for an order
// PostgreSQL holds). It answers how many were found lost and settled otherwise.
func (l *Ledger) SettleUnconfirmed(ctx context.Context, exists OrderExists) (lost, settled int, err error) {
	now := l.now()
	type due struct {
		k unconfirmedKey
		t unconfirmedTake
	}
	var dues []due
	l.unconfirmed.mu.Lock()
	for k, t := range l.unconfirmed.m {
		if now.Sub(t.at) >= UnconfirmedGrace {
			dues = append(dues, due{k, t})
		}
	}
	l.unconfirmed.mu.Unlock()
	var failed []error
	for _, d := range dues {
		outcome, e := l.settleOne(ctx, d.k.item, d.k.user, d.t.orderNo, exists)
		if e != nil {
			failed = append(failed, fmt.Errorf("unconfirmed take %s: %w", d.t.orderNo, e))
			continue
		}
		switch outcome {
		case takeKept:
			continue
		case takeLost:
			lost++
			l.unconfirmed.lost.Add(1)
		default:
			settled++
		}
		l.unconfirmed.mu.Lock()
		if cur, ok := l.unconfirmed.m[d.k]; ok && cur.orderNo == d.t.orderNo {
			delete(l.unconfirmed.m, d.k)
		}
		l.unconfirmed.mu.Unlock()
	}
	return lost, settled, errors.Join(failed...)
}

type takeOutcome int

const (
	takeKept    takeOutcome = iota // still queued: the order consumer settles it
	takeSettled                    // the buyer has a result (or an order PostgreSQL holds)
	takeLost                       // Redis lost it and no order was made
)

// settleOne decides one unconfirmed take on the buyer's home shard of the master Redis has now.
func (l *Ledger) settleOne(ctx context.Context, itemID, userID int64, orderNo string, exists OrderExists) (takeOutcome, error) {
	n, err := l.Shards(ctx, itemID)
	if err != nil {
		return takeKept, err
	}
	k := ShardKeys(itemID, HomeShard(userID, n))
	uid := strconv.FormatInt(userID, 10)
	raw, marked, err := l.buyer(ctx, k, uid)
	if err != nil {
		return takeKept, fmt.Errorf("read the buyer: %w", err)
	}
	settled := decodeResult(raw)
	switch {
	case raw == lostPrefix+orderNo:
		// The replay after the failover found no unit to take this take again and told its buyer
		// (journal.go): lost, as if found so here. Another order's lost result is an older buy's.
		return takeLost, nil
	case settled.Status != "":
		return takeSettled, nil
	case marked:
		return takeKept, nil
	}
	// Redis knows nothing of the buyer: the take went with a master. PostgreSQL says whether its order
	// was made all the same (read from the stream before the master was lost).
	made, err := exists(ctx, orderNo)
	if err != nil {
		return takeKept, fmt.Errorf("look for the order: %w", err)
	}
	value, outcome := lostPrefix+orderNo, takeLost
	if made {
		value, outcome = SuccessValue(orderNo), takeSettled
	}
	// HSETNX: a result written meanwhile (a new buy of the same buyer, settled) is the newer truth.
	if err := l.rdb.HSetNX(ctx, k.Results, uid, value).Err(); err != nil {
		return takeKept, fmt.Errorf("write the result: %w", err)
	}
	return outcome, nil
}
