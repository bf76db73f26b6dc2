package jobs

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v5"
	"gorm.io/gorm"

	"seckill/errs"
	"seckill/models"
	"seckill/stock"
)

// OrderConsumer drains the items' order streams into PostgreSQL. Every instance runs one; the consumer
// group shares the messages out among them. A message is acknowledged only after its order is committed,
// so a consumer that dies, or a database that is away, loses nothing: the messages wait in the stream,
// this consumer retries with backoff, and another instance claims what a dead one left pending.
//
// Its Ledger should sit on a Redis client of its own: each stream's worker holds a connection while it
// waits for messages, and the buy endpoint must never queue behind them.
type OrderConsumer struct {
	DB         *gorm.DB
	Ledger     *stock.Ledger
	Flags      *stock.Flags // told when a unit goes back on sale
	Name       string       // this consumer's name in the group: unique per instance
	Log        *slog.Logger
	Now        func() time.Time
	PayTimeout time.Duration
	Batch      int           // messages per transaction (default 500)
	Block      time.Duration // how long a read waits for new messages (default 1s)
	Gather     time.Duration // after a read short of a batch, how long to let more come before writing (default 100ms)
	ClaimIdle  time.Duration // how long a message may sit with a silent consumer before another takes it (default 30s)
	Discover   time.Duration // how often to look for new item streams (default 1s)
	Keep       time.Duration // how long a sale's keys stay in Redis once it is over and drained (default a day)
	Linger     time.Duration // how long after its sale ends a drained stream is still followed (default 1m)

	// afterCommit, when set, runs between the commit and the acknowledgement (tests stop the consumer there).
	afterCommit func(itemID int64)
}

func (c *OrderConsumer) defaults() {
	if c.Batch <= 0 {
		c.Batch = 500
	}
	if c.Gather <= 0 {
		c.Gather = 100 * time.Millisecond
	}
	if c.Block <= 0 {
		c.Block = time.Second
	}
	if c.ClaimIdle <= 0 {
		c.ClaimIdle = 30 * time.Second
	}
	if c.Discover <= 0 {
		c.Discover = time.Second
	}
	if c.Linger <= 0 {
		c.Linger = time.Minute
	}
	if c.Keep <= 0 {
		c.Keep = 24 * time.Hour
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Run consumes every order stream until ctx ends: one worker per stream (an item has one per stock
// shard), started as streams appear and stopped once their sale is over and their queue is empty.
func (c *OrderConsumer) Run(ctx context.Context) error {
	c.defaults()
	var wg sync.WaitGroup
	defer wg.Wait()
	var mu sync.Mutex
	running := map[stock.Stream]bool{}
	return Every(ctx, c.Discover, func(ctx context.Context) error {
		items, err := c.Ledger.Streams(ctx)
		if err != nil {
			return err
		}
		var streams []stock.Stream
		for _, id := range items {
			if err := c.knowShards(ctx, id); err != nil {
				return err
			}
			ss, err := c.Ledger.StreamsOf(ctx, id)
			if err != nil {
				return err
			}
			streams = append(streams, ss...)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, st := range streams {
			if running[st] {
				continue
			}
			running[st] = true
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.consume(ctx, st)
				mu.Lock()
				delete(running, st)
				mu.Unlock()
			}()
		}
		return nil
	}, func(err error) { c.Log.Warn("order consumer: listing streams failed", "err", err) })
}

// knowShards makes sure the ledger knows the item's shard count. Where Redis lost it (a master of a
// cluster restarted empty), it comes from the database, so that no shard's queue is left unfollowed.
func (c *OrderConsumer) knowShards(ctx context.Context, itemID int64) error {
	if _, known, err := c.Ledger.ShardsKnown(ctx, itemID); err != nil || known {
		return err
	}
	it, _, err := models.ItemInAnyState(ctx, c.DB, itemID)
	if errs.Is(err, errs.NotFound) {
		return nil // an item gone from the database: its orders are refused
	}
	if err != nil {
		return err
	}
	c.Ledger.SetShards(itemID, it.StockShards)
	return nil
}

// consume drains one stream: first what this consumer left pending (after a restart or an
// error), then new messages, and now and then what dead consumers left behind. It returns when ctx ends
// or when the sale is over and nothing is left to drain.
func (c *OrderConsumer) consume(ctx context.Context, st stock.Stream) {
	wait := retryWait(100*time.Millisecond, 5*time.Second)
	pending, needGroup := true, true
	lastClaim, lastCheck := time.Time{}, time.Now() // intervals of the loop itself, by the wall clock
	for ctx.Err() == nil {
		if needGroup {
			if err := c.Ledger.EnsureGroup(ctx, st); err != nil {
				c.fail(ctx, st, err, wait)
				continue
			}
			needGroup = false
		}
		var msgs []stock.OrderMessage
		var err error
		switch {
		case time.Since(lastClaim) >= c.ClaimIdle/2:
			lastClaim = time.Now()
			msgs, err = c.Ledger.Claim(ctx, st, c.Name, c.ClaimIdle, c.Batch)
		case pending:
			msgs, err = c.Ledger.Read(ctx, st, c.Name, true, c.Batch, 0)
			if err == nil && len(msgs) == 0 {
				pending = false
				continue
			}
		default:
			msgs, err = c.Ledger.Read(ctx, st, c.Name, false, c.Batch, c.Block)
			if err == nil && len(msgs) > 0 && len(msgs) < c.Batch {
				msgs, err = c.gather(ctx, st, msgs)
			}
		}
		if err == nil && len(msgs) > 0 {
			err = c.process(ctx, st, msgs)
		}
		if err != nil {
			pending = true // what was read and not acknowledged is read again from our pending list
			needGroup = stock.IsNoGroup(err)
			c.fail(ctx, st, err, wait)
			continue
		}
		wait.Reset()
		if len(msgs) == 0 && time.Since(lastCheck) > c.Discover {
			lastCheck = time.Now()
			if c.finished(ctx, st.ItemID) {
				return
			}
		}
	}
}

// gather lets more messages come for a moment after a read short of a batch, and adds them: a sell-out's
// orders arrive over a second or so, and written as they come they would be a transaction for every few
// (122 transactions in the second 500 orders came, measured through nginx); gathered, they are a few
// transactions a second per consumer, each order later by the moment at most. What is read here is
// pending like the rest: if the write or the second read fails, all of it is read again.
func (c *OrderConsumer) gather(ctx context.Context, st stock.Stream, msgs []stock.OrderMessage) ([]stock.OrderMessage, error) {
	t := time.NewTimer(c.Gather)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return msgs, nil // written now: the messages are ours until acknowledged
	case <-t.C:
	}
	more, err := c.Ledger.Read(ctx, st, c.Name, false, c.Batch-len(msgs), -1)
	if err != nil {
		// All of it is pending (what the failed read may have taken too): the loop reads it again from
		// the pending list.
		return nil, err
	}
	return append(msgs, more...), nil
}

// finished reports (and records) that an item's sale is over and its queues, every shard's, are empty:
// nobody can queue an order for it any more, so its streams need no worker, and its keys leave Redis
// after Keep (the buyers' results stay readable until then; the database has the rest).
func (c *OrderConsumer) finished(ctx context.Context, itemID int64) bool {
	ends, loaded, err := c.Ledger.SaleEnds(ctx, itemID)
	if err != nil || (loaded && c.Now().Before(ends.Add(c.Linger))) {
		return false
	}
	if n, err := c.Ledger.Backlog(ctx, itemID); err != nil || n > 0 {
		return false
	}
	// A sale Redis does not hold (it lost it: the preheat loads it again within seconds) is only no
	// longer followed here; its keys expire only once it is loaded and over.
	retire := func() error { return c.Ledger.ExpireSale(ctx, itemID, c.Keep) }
	if !loaded {
		retire = func() error { return c.Ledger.Unfollow(ctx, itemID) }
	}
	return retire() == nil
}

func (c *OrderConsumer) fail(ctx context.Context, st stock.Stream, err error, wait *backoff.ExponentialBackOff) {
	if ctx.Err() != nil {
		return
	}
	d := wait.NextBackOff()
	c.Log.Warn("order consumer: retrying", "item_id", st.ItemID, "shard", st.Shard, "in", d, "err", err)
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// process writes one batch and settles every message in it. A database that does not answer leaves the
// whole batch unacknowledged, to be read again; a batch the database refuses while answering is split,
// so that one message that can never succeed is refused alone and does not hold up the others.
func (c *OrderConsumer) process(ctx context.Context, st stock.Stream, msgs []stock.OrderMessage) error {
	var good []stock.OrderMessage
	for _, m := range msgs {
		if m.Bad != nil {
			if err := c.refuse(ctx, m, m.Bad, "this order could not be read; your stock was given back"); err != nil {
				return err
			}
			continue
		}
		good = append(good, m)
	}
	if len(good) > 1 {
		err := c.place(ctx, st, good)
		if err == nil || !c.refusedByLiveDB(ctx, err) {
			return err
		}
		c.Log.Warn("order consumer: batch refused, placing its orders one by one", "item_id", st.ItemID, "shard", st.Shard, "size", len(good), "err", err)
	}
	for _, m := range good {
		if err := c.placeAlone(ctx, st, m); err != nil {
			return err
		}
	}
	return nil
}

// placeAlone places one message, trying again twice when the database refuses it (a deadlock or a lost
// race deserves another go). A message the answering database keeps refusing is refused for good, with
// its unit given back.
func (c *OrderConsumer) placeAlone(ctx context.Context, st stock.Stream, m stock.OrderMessage) error {
	var err error
	for try := 0; try < 3; try++ {
		if err = c.place(ctx, st, []stock.OrderMessage{m}); err == nil || !c.refusedByLiveDB(ctx, err) {
			return err
		}
	}
	return c.refuse(ctx, m, err, "your order could not be made; your stock was given back")
}

// refusedByLiveDB reports whether err is the database's refusal: not our own shutdown, not Redis failing
// after the commit, and PostgreSQL answers at all (if not, an error says nothing about the messages).
func (c *OrderConsumer) refusedByLiveDB(ctx context.Context, err error) bool {
	var after committed
	return !errors.Is(err, context.Canceled) && !errors.As(err, &after) && c.dbAnswers(ctx)
}

// dbAnswers reports whether PostgreSQL answers at all.
func (c *OrderConsumer) dbAnswers(ctx context.Context) bool {
	sqlDB, err := c.DB.DB()
	if err != nil {
		return false
	}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return sqlDB.PingContext(pctx) == nil
}

// place writes msgs in one transaction and settles each: placed or already placed → success and
// acknowledged; the user holds another order → the unit goes back; the database has no stock → failed.
func (c *OrderConsumer) place(ctx context.Context, st stock.Stream, msgs []stock.OrderMessage) error {
	orders := make([]models.NewOrder, len(msgs))
	for i, m := range msgs {
		orders[i] = models.NewOrder{OrderNo: m.OrderNo, UserID: m.UserID, ActivityID: m.ActivityID, PriceCents: m.PriceCents, BoughtAt: m.At}
	}
	placed, err := models.PlaceOrders(ctx, c.DB, st.ItemID, orders, c.Now().UTC(), c.PayTimeout)
	if errors.Is(err, models.ErrItemGone) {
		for _, m := range msgs {
			if err := c.refuse(ctx, m, err, "this item is no longer on sale; your stock was given back"); err != nil {
				return err
			}
		}
		return nil
	}
	if err != nil {
		return err
	}
	if c.afterCommit != nil {
		c.afterCommit(st.ItemID)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	// Committed: settle even if we are being stopped, so that no message is settled half. Redis failing
	// from here on says nothing about the orders: they are read again and found placed.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := c.settle(sctx, st, msgs, placed); err != nil {
		return committed{err}
	}
	return nil
}

// committed is an error of Redis's after the orders were committed: never the database's refusal.
type committed struct{ err error }

func (e committed) Error() string { return e.err.Error() }
func (e committed) Unwrap() error { return e.err }

// settle tells Redis what became of each committed message.
func (c *OrderConsumer) settle(sctx context.Context, st stock.Stream, msgs []stock.OrderMessage, placed map[string]models.Placement) error {
	var ok []stock.Placed
	for _, m := range msgs {
		p := placed[m.OrderNo]
		switch p.Outcome {
		case models.Placed, models.AlreadyHeld:
			ok = append(ok, stock.Placed{MessageID: m.ID, UserID: m.UserID, OrderNo: p.OrderNo})
		case models.OtherOrder:
			// The buyer holds an order for this item already: this unit goes back on sale, and the
			// buyer's result stays the order they hold.
			settled, err := c.Ledger.Settle(sctx, m, stock.Settlement{GiveBack: true, Result: stock.SuccessValue(p.OrderNo)})
			if err != nil {
				return err
			}
			if settled {
				c.Flags.Restocked(sctx, m.ItemID)
			}
		case models.NoStock:
			// Redis held more than the database: never sell it, so nothing is given back.
			if _, err := c.Ledger.Settle(sctx, m, stock.Settlement{Result: stock.FailedValue("sold out"), Rebuy: true}); err != nil {
				return err
			}
			if err := stock.NewLine(c.Ledger).BackInLine(sctx, m.ItemID, m.UserID); err != nil {
				return err
			}
		}
	}
	return c.Ledger.Ack(sctx, st, ok)
}

// refuse ends a message that can never become an order: the buyer's result is failed, the unit goes back
// on sale, and the buyer may try again. Done once, however often the message comes.
func (c *OrderConsumer) refuse(ctx context.Context, m stock.OrderMessage, cause error, why string) error {
	c.Log.Warn("order refused", "item_id", m.ItemID, "shard", m.Shard, "message_id", m.ID, "order_no", m.OrderNo, "reason", why, "err", cause)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	settled, err := c.Ledger.Settle(sctx, m, stock.Settlement{GiveBack: m.UserID > 0, Result: stock.FailedValue(why), Rebuy: true})
	if err != nil {
		return err
	}
	if settled {
		c.Flags.Restocked(sctx, m.ItemID)
	}
	if m.UserID > 0 && m.ItemID > 0 {
		// A shopper let in from a waiting room keeps their place, and is let in again first.
		return stock.NewLine(c.Ledger).BackInLine(sctx, m.ItemID, m.UserID)
	}
	return nil
}
