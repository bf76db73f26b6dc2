package stock

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"sync"
	"time"

	"seckill/errs"
)

// Redis replicates asynchronously, and WAIT does not make it a consistent store: a master cut off from
// the sentinels keeps answering until it notices, and a replica that reconnects to it for a moment
// after the partition heals acknowledges its writes, then follows the new master and drops them. The
// chaos run's partition lost buyers answered 202 queued so, with WAIT, in 2 rounds of 7. So each
// instance keeps a journal of the takes it answered (queued or unconfirmed) for a while, and after a
// failover, while its buys are held, takes again on the new master every journalled unit the new master
// does not have (Replay): a promise made on the old master is kept on the new one. What the journal cannot
// save is an instance that dies with the master (its journal is in its memory): two faults at once.

// journalKeep is how long before a failover's hold began a take is replayed: longer than a failover takes
// to be seen (Sentinel's down-after-milliseconds, the promotion: a few seconds) with room to spare. It
// is counted from the hold's beginning, not from the replay, as a hold may last minutes.
const journalKeep = 2 * time.Minute

// journalSize bounds the journal. Only takes that got a unit are journalled, so a sale adds at most its
// stock: 65,536 entries (about 4 MB) is more units than the shop sells in journalKeep.
const journalSize = 1 << 16

// taken is one take the shop answered.
type taken struct {
	itemID, userID int64
	shard          int
	orderNo        string
	at             time.Time
}

// journal is a ring of the latest takes, oldest overwritten first.
type journal struct {
	mu    sync.Mutex
	ring  []taken
	next  int
	count int
}

// add journals a take.
func (j *journal) add(t taken) {
	j.mu.Lock()
	if j.ring == nil {
		j.ring = make([]taken, journalSize)
	}
	j.ring[j.next] = t
	j.next = (j.next + 1) % len(j.ring)
	j.count = min(j.count+1, len(j.ring))
	j.mu.Unlock()
}

// since answers the takes journalled at or after t, oldest first.
func (j *journal) since(t time.Time) []taken {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []taken
	for i := j.count; i > 0; i-- {
		e := j.ring[(j.next-i+len(j.ring))%len(j.ring)]
		if !e.at.Before(t) {
			out = append(out, e)
		}
	}
	return out
}

//go:embed replay.lua
var replayLua string

var replayScript = lua(replayLua)

// Replayed counts what a Replay did with the journal's takes.
type Replayed struct {
	Kept     int // the new master had the take (or the buyer's mark from the database)
	Restored int // taken again on the new master, the order queued again under its number
	Lost     int // no unit left to take, or the sale not loaded: a promise broken, logged by the caller
}

// Replay takes again, on the masters the ledger's client reaches now, every take this instance answered
// in the last journalKeep that they lack. Run it after a failover, before selling again: a unit sold
// meanwhile could be the one a journalled buyer was promised. A buyer marked already is left alone, so a
// Replay twice, or on a master that lost nothing, changes nothing. A sale the masters lack altogether (a
// master restarted empty, whose replicas resynced from it) is loaded from books first, its buyers marked
// from the database, so that a take the database does not have yet is taken again. A take whose home
// shard is empty borrows from the item's other shards, as the buy does. One that cannot be taken (no
// unit left in any shard) gets its buyer the lost result: told, not left reading "none".
func (l *Ledger) Replay(ctx context.Context, books Books) (Replayed, error) {
	return l.replay(ctx, &l.journal, books, 0)
}

// replay is Replay of journal j (another ledger's: the shop's, whose client a failover's hold refuses)
// on this ledger's client, after a hold of buys that has lasted held: it replays the takes of journalKeep
// before the hold began, not before now, as a hold may last longer than journalKeep (with one replica,
// until a replica is back), and the takes the new master lacks were all answered before it began. The
// hold is measured by the wall clock and the journal by the ledger's, so the hold's beginning is
// placed on the ledger's clock as now less held. The ring's size still bounds what is replayed.
func (l *Ledger) replay(ctx context.Context, j *journal, books Books, held time.Duration) (Replayed, error) {
	var r Replayed
	now := l.now()
	loaded := map[int64]bool{}
	for _, t := range j.since(now.Add(-max(held, 0) - journalKeep)) {
		k := ShardKeys(t.itemID, t.shard)
		run := func(loan string) (string, error) {
			return replayScript.Run(ctx, l.rdb, []string{k.Sale, k.Buyers, k.Stream, k.Paths, k.Received, k.Results},
				t.userID, t.orderNo, t.at.UnixMilli(), now.UnixMilli(), loan, lostPrefix+t.orderNo).Text()
		}
		got, err := run("")
		if err == nil && got == answerNotFound && !loaded[t.itemID] {
			loaded[t.itemID] = true
			if _, err := l.Preheat(ctx, books, t.itemID); err != nil && !errs.Is(err, errs.NotFound) {
				return r, fmt.Errorf("replay: load item %d: %w", t.itemID, err)
			}
			got, err = run("")
		}
		if err == nil && got == errs.SoldOut {
			got, err = l.replayBorrowing(ctx, t, now, run)
		}
		if err != nil {
			return r, fmt.Errorf("replay order %s of item %d: %w", t.orderNo, t.itemID, err)
		}
		switch got {
		case answerKept:
			r.Kept++
		case "restored":
			r.Restored++
		default:
			r.Lost++
			uid := strconv.FormatInt(t.userID, 10)
			if err := l.rdb.HSetNX(ctx, k.Results, uid, lostPrefix+t.orderNo).Err(); err != nil {
				return r, fmt.Errorf("replay: tell buyer %d of item %d: %w", t.userID, t.itemID, err)
			}
		}
	}
	return r, nil
}

// replayBorrowing takes again a journalled take whose home shard has no unit left on the new master, as
// the buy does: a unit lent by another shard (borrow, lend.lua's loan), landed and taken by run in one
// step. The take may well have borrowed on the old master, and the loan gone with it; other shards'
// units are the buyer's as much as later shoppers'. It answers sold_out only when no shard lends, and
// fails when a shard's stock cannot be read: not known to be sold out, so the failover's check fails
// and tries again, with the buys held, rather than tell the buyer their buy was lost.
//
// The loans are named after the order and this replay's time, not as the buy names its own: a loan of
// the old master that reached the new one stays as it is (settleLoans lands it), and a replay cut off
// between its loan and its take leaves its loan for settleLoans rather than have the next replay
// overwrite it.
func (l *Ledger) replayBorrowing(ctx context.Context, t taken, now time.Time, run func(loan string) (string, error)) (string, error) {
	n, err := l.Shards(ctx, t.itemID)
	if err != nil || n == 1 {
		return errs.SoldOut, err
	}
	name := t.orderNo + ":replay" + strconv.FormatInt(now.UnixMilli(), 10)
	for try := range n {
		loan, _, err := l.borrow(ctx, t.itemID, n, t.shard, name, try)
		if err != nil {
			return "", err
		}
		// No loan: one more look at the home shard, which units lent meanwhile may have reached.
		got, err := run(loan)
		if err != nil || got != errs.SoldOut || loan == "" {
			return got, err
		}
	}
	return errs.SoldOut, nil
}

// journalTake journals a take answered queued or unconfirmed.
func (l *Ledger) journalTake(itemID, userID int64, shard int, orderNo string, at time.Time) {
	l.journal.add(taken{itemID: itemID, userID: userID, shard: shard, orderNo: orderNo, at: at})
}
