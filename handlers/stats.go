package handlers

import (
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"seckill/models"
	"seckill/stock"
)

// Live computes an activity's live figures: stock and orders per item from Redis and PostgreSQL, and
// the buy's answers per second over the last minutes.
type Live struct {
	DB      *gorm.DB
	Ledger  *stock.Ledger
	Line    *stock.Line
	Answers *stock.Answers
	Now     func() time.Time
	Window  time.Duration // how far back the answers go (default 5 minutes)
}

// itemStats are an item's figures, and (summed) an activity's.
type itemStats struct {
	ID              int64      `json:"id,omitempty"`
	Name            string     `json:"name,omitempty"`
	StockTotal      int64      `json:"stock_total"`
	StockLeft       int64      `json:"stock_left"`
	Queued          int64      `json:"queued"`
	OrdersPending   int64      `json:"orders_pending"`
	OrdersPaid      int64      `json:"orders_paid"`    // paid and kept: shipped ones included
	OrdersShipped   int64      `json:"orders_shipped"` // of those, shipped
	OrdersCancelled int64      `json:"orders_cancelled"`
	OrdersRefunded  int64      `json:"orders_refunded"`        // paid, then refunded: sold, the money given back
	RevenuePaid     int64      `json:"revenue_paid_cents"`     // the prices of the orders paid and kept
	RevenueRefunded int64      `json:"revenue_refunded_cents"` // the prices of the orders refunded
	Line            *lineStats `json:"line,omitempty"`         // a queue sale's item: its waiting room
}

// lineStats are the figures of an item's waiting room.
type lineStats struct {
	State    string `json:"state"` // open, drawing, drawn ("" before the room opens)
	Joined   int64  `json:"joined"`
	LetIn    int64  `json:"let_in"`
	Bought   int64  `json:"bought"`
	Missed   int64  `json:"missed"`
	Waiting  int64  `json:"waiting"` // placed and not let in yet
	SeedHash string `json:"seed_hash"`
	Seed     string `json:"seed"` // once the draw is written
}

// activityStats is the contract's stats with the items' and the answers per second added.
type activityStats struct {
	itemStats
	Items   []itemStats   `json:"items"`
	Answers []stock.Point `json:"answers"`
}

// of computes an activity's figures.
func (h *Live) of(c *fiber.Ctx, a *models.Activity) (*activityStats, error) {
	ctx := c.UserContext()
	// What is queued is read before the orders: an order written in between is then counted twice for a
	// moment (queued and written) rather than not at all, so "nothing queued" always comes with every
	// order counted.
	queued := map[int64]int64{}
	for _, it := range a.Items {
		if n, err := h.Ledger.Backlog(ctx, it.ID); err == nil {
			queued[it.ID] = n
		}
	}
	counts, err := models.OrderCounts(ctx, h.DB, a.ID)
	if err != nil {
		return nil, err
	}
	cents, err := models.OrderCents(ctx, h.DB, a.ID)
	if err != nil {
		return nil, err
	}
	out := &activityStats{Items: []itemStats{}}
	ids := make([]int64, 0, len(a.Items))
	for _, it := range a.Items {
		ids = append(ids, it.ID)
		st := itemStats{ID: it.ID, Name: it.Name, StockTotal: it.StockTotal, StockLeft: max(it.StockTotal-it.StockSold, 0),
			OrdersPending: counts[it.ID][models.OrderPendingPayment], OrdersPaid: counts[it.ID][models.OrderPaid] + counts[it.ID][models.OrderShipped],
			OrdersShipped: counts[it.ID][models.OrderShipped], OrdersCancelled: counts[it.ID][models.OrderCancelled],
			OrdersRefunded: counts[it.ID][models.OrderRefunded],
			RevenuePaid:    cents[it.ID][models.OrderPaid] + cents[it.ID][models.OrderShipped], RevenueRefunded: cents[it.ID][models.OrderRefunded]}
		if left, loaded, err := h.Ledger.Left(ctx, it.ID); err == nil && loaded {
			st.StockLeft = max(left, 0)
		}
		st.Queued = queued[it.ID]
		if a.SaleMode == models.SaleQueue {
			if r, err := h.Line.RoomOf(ctx, it.ID); err == nil {
				st.Line = &lineStats{State: r.State, Joined: r.Joined(), LetIn: r.LetIn, Bought: r.Bought, Missed: r.Missed,
					Waiting: max(r.Tail-r.Cursor, 0), SeedHash: r.SeedHash, Seed: r.Seed}
			}
		}
		out.Items = append(out.Items, st)
		out.StockTotal += st.StockTotal
		out.StockLeft += st.StockLeft
		out.Queued += st.Queued
		out.OrdersPending += st.OrdersPending
		out.OrdersPaid += st.OrdersPaid
		out.OrdersShipped += st.OrdersShipped
		out.OrdersCancelled += st.OrdersCancelled
		out.OrdersRefunded += st.OrdersRefunded
		out.RevenuePaid += st.RevenuePaid
		out.RevenueRefunded += st.RevenueRefunded
	}
	window := h.Window
	if window <= 0 {
		window = 5 * time.Minute
	}
	if out.Answers, err = h.Answers.Series(ctx, ids, h.Now(), window); err != nil {
		return nil, err
	}
	return out, nil
}
