package stock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/errs"
)

// An item split into shards keeps a whole ledger per shard (stock, buyers, paths, results, order stream),
// each in a slot of its own, so that one hot item's sale is spread over several Redis cores. A buyer
// always buys in their home shard (HomeShard): their mark lives in one place, so one-per-user holds
// across shards. When the home shard runs out, the buy borrows a unit from another shard: lend.lua takes
// it there and records the loan, and take.lua credits it here, once, in the same step as the buy. A loan
// whose buyer vanished in between is credited by settleLoans. The item is sold out when every shard is
// empty.

// loanGrace is how long a loan is left to the buy that made it before settleLoans credits it: the buy
// has long finished by then, and crediting twice is harmless anyway (once per loan id).
const loanGrace = 5 * time.Second

// loanKeep is how long a settled loan's record stays before it is deleted: far longer than a rebuild
// of lost shards takes to read the others (held refuses to take longer than loanReadLimit), so that the
// rebuild sees every loan that matters to it.
const (
	loanKeep      = time.Minute
	loanReadLimit = 20 * time.Second
)

// errStockUnknown answers a buy whose home shard is empty while another shard's stock cannot be read:
// not sold out, and the path stays valid for another try once the preheat job has rebuilt the shard.
// It says when with Retry-After, as every not_ready answer does.
var errStockUnknown = stockUnknownError()

func stockUnknownError() *errs.Error {
	e := errs.Static(errs.NotReady, "part of this item's stock is being restored: try again in a few seconds")
	e.RetryAfter = 2 * time.Second
	return e
}

// loan is one entry of a shard's loans hash: 'to:at ms', with ':done:at ms' once the borrower has it.
type loan struct {
	to     int
	at     time.Time
	done   bool
	doneAt time.Time
}

func parseLoan(v string) (loan, bool) {
	parts := strings.Split(v, ":")
	if len(parts) < 2 {
		return loan{}, false
	}
	to, err1 := strconv.Atoi(parts[0])
	at, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err1 != nil || err2 != nil || to < 0 {
		return loan{}, false
	}
	ln := loan{to: to, at: time.UnixMilli(at)}
	if len(parts) >= 4 && parts[2] == "done" {
		if d, err := strconv.ParseInt(parts[3], 10, 64); err == nil {
			ln.done, ln.doneAt = true, time.UnixMilli(d)
		}
	}
	return ln, true
}

// settleLoans credits every loan older than loanGrace to its borrower, once, and marks it done; a loan
// done for loanKeep is deleted.
func (l *Ledger) settleLoans(ctx context.Context, itemID int64, n int) error {
	now := l.now()
	for s := range n {
		k := ShardKeys(itemID, s)
		loans, err := l.rdb.HGetAll(ctx, k.Loans).Result()
		if err != nil {
			return fmt.Errorf("loans of item %d: %w", itemID, err)
		}
		for id, v := range loans {
			ln, ok := parseLoan(v)
			switch {
			case !ok || ln.to >= n:
				continue
			case ln.done && now.Sub(ln.doneAt) >= loanKeep:
				err = l.rdb.HDel(ctx, k.Loans, id).Err()
			case !ln.done && now.Sub(ln.at) >= loanGrace:
				to := ShardKeys(itemID, ln.to)
				var got int64
				if got, err = creditScript.Run(ctx, l.rdb, []string{to.Sale, to.Received}, id).Int64(); err == nil && got >= 0 {
					err = l.rdb.HSet(ctx, k.Loans, id, v+":done:"+strconv.FormatInt(now.UnixMilli(), 10)).Err()
				} // got < 0: the borrower is not loaded; after its rebuild
			}
			if err != nil {
				return fmt.Errorf("loan %s of item %d: %w", id, itemID, err)
			}
		}
	}
	return nil
}

// InTransit counts an item's lent units that have not reached their borrower yet.
func (l *Ledger) InTransit(ctx context.Context, itemID int64) (int64, error) {
	n, err := l.Shards(ctx, itemID)
	if err != nil || n == 1 {
		return 0, err
	}
	var count int64
	for s := range n {
		loans, err := l.rdb.HGetAll(ctx, ShardKeys(itemID, s).Loans).Result()
		if err != nil {
			return 0, fmt.Errorf("loans of item %d: %w", itemID, err)
		}
		var in []*redis.BoolCmd
		_, err = l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for id, v := range loans {
				if ln, ok := parseLoan(v); ok && !ln.done && ln.to < n {
					in = append(in, p.SIsMember(ctx, ShardKeys(itemID, ln.to).Received, id))
				}
			}
			return nil
		})
		if err != nil {
			return 0, fmt.Errorf("loans of item %d: %w", itemID, err)
		}
		for _, c := range in {
			if !c.Val() {
				count++
			}
		}
	}
	return count, nil
}

// held counts what the loaded shards of an item hold that the database does not know yet: their stock
// left, their queued orders, and the units lent to a shard that does not have them (a lost shard, whose
// loans settleLoans credits again once it is rebuilt, or a loaded one that has not received them yet).
// Each shard is read in one step, with its loans and the loans it received, so that a unit moving
// between two shards meanwhile is counted once or twice, never not at all: a rebuild may load too little,
// never too much.
func (l *Ledger) held(ctx context.Context, itemID int64, n int, missing []int) (int64, error) {
	started := time.Now() // elapsed time, by the wall clock
	lost := map[int]bool{}
	for _, i := range missing {
		lost[i] = true
	}
	type shard struct {
		left, queued int64
		loans        map[string]string
		received     map[string]bool
	}
	shards := map[int]shard{}
	for i := range n {
		if lost[i] {
			continue
		}
		k := ShardKeys(itemID, i)
		var left *redis.StringCmd
		var queued *redis.IntCmd
		var loans *redis.MapStringStringCmd
		var received *redis.StringSliceCmd
		_, err := l.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			left = p.HGet(ctx, k.Sale, "left")
			queued = p.XLen(ctx, k.Stream)
			loans = p.HGetAll(ctx, k.Loans)
			received = p.SMembers(ctx, k.Received)
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return 0, fmt.Errorf("shard %d of item %d: %w", i, itemID, err)
		}
		v, _ := left.Int64()
		sh := shard{left: max(v, 0), queued: queued.Val(), loans: loans.Val(), received: map[string]bool{}}
		for _, id := range received.Val() {
			sh.received[id] = true
		}
		shards[i] = sh
	}
	if time.Since(started) > loanReadLimit {
		return 0, fmt.Errorf("item %d: reading its shards took %v: a settled loan may have gone meanwhile; try again", itemID, time.Since(started))
	}
	var sum int64
	for _, sh := range shards {
		sum += sh.left + sh.queued
		for id, v := range sh.loans {
			ln, ok := parseLoan(v)
			if !ok || ln.to >= n {
				continue
			}
			if to, loaded := shards[ln.to]; loaded && !to.received[id] || !loaded && !ln.done {
				sum++
			}
		}
	}
	return sum, nil
}
