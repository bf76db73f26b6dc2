package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"gorm.io/gorm"

	"seckill/models"
	"seckill/stock"
)

// OrderConsumer drains the items' order streams into PostgreSQL. Every instance runs one; the consumer
// group shares the messages out among them. A message is acknowledged only after its order is committed,
// so a consumer that dies, or a database that is away, loses nothing: the messages wait in the stream,
// this consumer retries with backoff, and another instance claims what a dead one left pending.
type OrderConsumer struct {
	DB         *gorm.DB
	Ledger     *stock.Ledger
	Flags      *stock.Flags // told when a failed order gives stock back
	Name       string       // this consumer's name in the group: unique per instance
	Log        *slog.Logger
	Now        func() time.Time
	PayTimeout time.Duration
	Batch      int           // messages per transaction (default 500)
	Block      time.Duration // how long a read waits for new messages (default 1s)
	ClaimIdle  time.Duration // how long a message may sit with a silent consumer before another takes it (default 30s)
	Discover   time.Duration // how often to look for new item streams (default 1s)

	// afterCommit, when set, runs between the commit and the acknowledgement (tests stop the consumer there).
	afterCommit func(itemID int64)
}

func (c *OrderConsumer) defaults() {
	if c.Batch <= 0 {
		c.Batch = 500
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
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Run consumes every item stream until ctx ends: one worker per stream, started as streams appear.
func (c *OrderConsumer) Run(ctx context.Context) error {
	c.defaults()
	var wg sync.WaitGroup
	defer wg.Wait()
	running := map[int64]bool{}
	return Every(ctx, c.Discover, func(ctx context.Context) error {
		items, err := c.Ledger.Streams(ctx)
		if err != nil {
			return err
		}
		for _, id := range items {
			if running[id] {
				continue
			}
			running[id] = true
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.consume(ctx, id)
			}()
		}
		return nil
	}, func(err error) { c.Log.Warn("order consumer: listing streams failed", "err", err) })
}

// consume drains one item's stream: first what this consumer left pending (after a restart or an
// error), then new messages, and now and then what dead consumers left behind.
func (c *OrderConsumer) consume(ctx context.Context, itemID int64) {
	backoff := newBackoff()
	pending := true
	lastClaim := time.Time{}
	for ctx.Err() == nil {
		if err := c.Ledger.EnsureGroup(ctx, itemID); err != nil {
			c.fail(ctx, itemID, err, backoff)
			continue
		}
		var msgs []stock.OrderMessage
		var err error
		switch {
		case time.Since(lastClaim) >= c.ClaimIdle/2:
			lastClaim = time.Now()
			msgs, err = c.Ledger.Claim(ctx, itemID, c.Name, c.ClaimIdle, c.Batch)
		case pending:
			msgs, err = c.Ledger.Read(ctx, itemID, c.Name, true, c.Batch, 0)
			if err == nil && len(msgs) == 0 {
				pending = false
				continue
			}
		default:
			msgs, err = c.Ledger.Read(ctx, itemID, c.Name, false, c.Batch, c.Block)
		}
		if err == nil && len(msgs) > 0 {
			err = c.process(ctx, itemID, msgs)
		}
		if err != nil {
			pending = true // what was read and not acknowledged is read again from our pending list
			c.fail(ctx, itemID, err, backoff)
			continue
		}
		backoff.reset()
	}
}

func (c *OrderConsumer) fail(ctx context.Context, itemID int64, err error, b *backoff) {
	if ctx.Err() != nil {
		return
	}
	d := b.next()
	c.Log.Warn("order consumer: retrying", "item_id", itemID, "in", d, "err", err)
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// process writes one batch and settles every message in it: placed or already placed → success and
// acknowledged; refused for good → failed, stock given back, acknowledged. A database error leaves the
// whole batch unacknowledged, to be read again.
func (c *OrderConsumer) process(ctx context.Context, itemID int64, msgs []stock.OrderMessage) error {
	var good []stock.OrderMessage
	var bad []stock.OrderMessage
	for _, m := range msgs {
		if m.Bad != nil {
			bad = append(bad, m)
		} else {
			good = append(good, m)
		}
	}
	if err := c.refuse(ctx, itemID, bad, "this order could not be read; your stock was given back", true); err != nil {
		return err
	}
	if len(good) == 0 {
		return nil
	}
	orders := make([]models.NewOrder, len(good))
	for i, m := range good {
		orders[i] = models.NewOrder{OrderNo: m.OrderNo, UserID: m.UserID, ActivityID: m.ActivityID, PriceCents: m.PriceCents, BoughtAt: m.At}
	}
	placed, err := models.PlaceOrders(ctx, c.DB, itemID, orders, c.Now().UTC(), c.PayTimeout)
	if errors.Is(err, models.ErrItemGone) {
		return c.refuse(ctx, itemID, good, "this item is no longer on sale; your stock was given back", true)
	}
	if err != nil {
		return err
	}
	if c.afterCommit != nil {
		c.afterCommit(itemID)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	var ok []stock.Placed
	var other []stock.OrderMessage
	var noStock []string
	for _, m := range good {
		p := placed[m.OrderNo]
		switch p.Outcome {
		case models.Placed, models.AlreadyHeld:
			ok = append(ok, stock.Placed{MessageID: m.ID, UserID: m.UserID, OrderNo: p.OrderNo})
		case models.OtherOrder:
			// The buyer holds an order for this item already: this unit goes back on sale, and the
			// buyer's result stays the order they hold.
			ok = append(ok, stock.Placed{MessageID: m.ID, UserID: m.UserID, OrderNo: p.OrderNo})
			other = append(other, m)
		case models.NoStock:
			// Redis held more than the database: never sell it, so nothing is given back.
			if err := c.Ledger.Fail(ctx, itemID, m.UserID, "sold out"); err != nil {
				return err
			}
			noStock = append(noStock, m.ID)
		}
	}
	for _, m := range other {
		if _, err := c.Ledger.Release(ctx, itemID, m.UserID, "", false); err != nil {
			return err
		}
		c.Flags.Restocked(ctx, itemID)
	}
	if err := c.Ledger.Ack(ctx, itemID, ok); err != nil {
		return err
	}
	return c.Ledger.AckOnly(ctx, itemID, noStock...)
}

// refuse ends messages that can never become orders: the buyer's result is failed, the unit goes back on
// sale, and the buyer may try again.
func (c *OrderConsumer) refuse(ctx context.Context, itemID int64, msgs []stock.OrderMessage, why string, rebuy bool) error {
	if len(msgs) == 0 {
		return nil
	}
	ids := make([]string, 0, len(msgs))
	for _, m := range msgs {
		c.Log.Warn("order refused", "item_id", itemID, "message_id", m.ID, "order_no", m.OrderNo, "reason", why, "err", m.Bad)
		if m.UserID > 0 {
			if _, err := c.Ledger.Release(ctx, itemID, m.UserID, stock.FailedValue(why), rebuy); err != nil {
				return fmt.Errorf("give back stock: %w", err)
			}
		}
		ids = append(ids, m.ID)
	}
	c.Flags.Restocked(ctx, itemID)
	return c.Ledger.AckOnly(ctx, itemID, ids...)
}

// backoff doubles from 100 ms to 5 s.
type backoff struct{ d time.Duration }

func newBackoff() *backoff { return &backoff{} }

func (b *backoff) next() time.Duration {
	if b.d == 0 {
		b.d = 100 * time.Millisecond
	} else {
		b.d = min(2*b.d, 5*time.Second)
	}
	return b.d
}

func (b *backoff) reset() { b.d = 0 }
