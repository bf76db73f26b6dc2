package jobs

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"seckill/catalog"
	"seckill/models"
	"seckill/stock"
)

// Rooms moves the waiting rooms of queue sales: it opens each room when its time comes (publishing the
// hash of the draw's seed), writes the draw at the start, and lets the line in, step by step. Every
// instance runs it: each step is safe to run anywhere at any time (see stock.Line.Draw and Admit),
// and the rate holds across all of them.
type Rooms struct {
	Catalog   *catalog.Catalog
	Line      *stock.Line
	Ledger    *stock.Ledger  // the stock left, to tell the shoppers waiting when it is sold out
	Flags     *stock.Flags   // told when the line finds the item sold out
	Stops     *catalog.Stops // a paused sale's line is not moved: nobody is let in
	Admission stock.Admission
	Interval  time.Duration
	Now       func() time.Time
	Log       *slog.Logger

	// Only Run's goroutine touches these.
	rooms  []queueRoom
	listed time.Time
	opened map[int64]bool // rooms this instance has opened
}

// Run steps every open room every Interval until ctx ends.
func (q *Rooms) Run(ctx context.Context) error {
	return Every(ctx, q.Interval, q.Once, func(err error) { q.Log.Warn("waiting rooms: a step failed", "err", err) })
}

// Once steps every room that is open now. A room that fails does not hold up the others.
func (q *Rooms) Once(ctx context.Context) error {
	now := q.Now()
	if err := q.list(ctx, now); err != nil {
		return err
	}
	var failed []error
	for _, r := range q.rooms {
		if now.Before(r.w.Opens) || !now.Before(r.w.Ends) || q.Stops != nil && q.Stops.Paused(r.item) {
			continue
		}
		if err := q.step(ctx, r.item, r.w, now); err != nil {
			failed = append(failed, err)
		}
	}
	return errors.Join(failed...)
}

type queueRoom struct {
	item int64
	w    stock.Window
}

// listEvery is how often the job looks in the catalog for queue sales (a new one is stepped within it).
const listEvery = 5 * time.Second

// list finds the queue sales that have not ended, at most every listEvery (by the wall clock: an interval).
func (q *Rooms) list(ctx context.Context, now time.Time) error {
	if time.Since(q.listed) < listEvery {
		return nil
	}
	snap, err := q.Catalog.Snapshot(ctx)
	if err != nil {
		return err
	}
	q.rooms = q.rooms[:0]
	open := map[int64]bool{}
	for _, a := range snap.Open(now) {
		if a.SaleMode != models.SaleQueue || a.QueueOpensAt == nil {
			continue
		}
		for _, it := range a.Items {
			q.rooms = append(q.rooms, queueRoom{item: it.ID, w: stock.Window{Opens: *a.QueueOpensAt, Starts: a.StartsAt, Ends: a.EndsAt}})
			open[it.ID] = true
		}
	}
	for id := range q.opened {
		if !open[id] {
			delete(q.opened, id)
		}
	}
	q.listed = time.Now()
	return nil
}

func (q *Rooms) step(ctx context.Context, itemID int64, w stock.Window, now time.Time) error {
	if q.opened == nil {
		q.opened = map[int64]bool{}
	}
	if !q.opened[itemID] {
		if err := q.Line.OpenRoom(ctx, itemID, w); err != nil {
			return err
		}
		q.opened[itemID] = true
	}
	if now.Before(w.Starts) {
		return nil
	}
	drawn, err := q.Line.Draw(ctx, itemID)
	if err != nil || !drawn {
		// Not drawn after the start: another instance draws, or Redis lost the room (lost, or failed over
		// to a replica without it). The next step opens it again, which restores a lost room with its
		// kept seed and changes nothing in one that is there.
		delete(q.opened, itemID)
		return err
	}
	if _, err := q.Line.Admit(ctx, itemID, q.Admission); err != nil {
		return err
	}
	// Nothing left: the shoppers waiting hear it at once (their pages read the sold-out flag).
	if left, complete, err := q.Ledger.Left(ctx, itemID); err == nil && complete && left <= 0 && !q.Flags.SoldOut(itemID) {
		q.Flags.MarkSoldOut(ctx, itemID)
	}
	return nil
}
