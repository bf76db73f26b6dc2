package jobs

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"gorm.io/gorm"

	"seckill/models"
	"seckill/stock"
)

// Preheat keeps every approved sale that starts within the window, or is running, loaded in Redis.
// It is idempotent, so every instance may run it: a loaded sale keeps its count, and a sale Redis lost is
// rebuilt from the database.
type Preheat struct {
	DB       *gorm.DB
	Ledger   *stock.Ledger
	Window   time.Duration
	Interval time.Duration
	Now      func() time.Time
	Log      *slog.Logger
	Runs     *Runs // records each round (optional)
}

// Run preheats every Interval until ctx ends.
func (p *Preheat) Run(ctx context.Context) error {
	return Every(ctx, p.Interval, func(ctx context.Context) error {
		if p.Runs == nil {
			_, err := p.Once(ctx)
			return err
		}
		return p.Runs.Once(ctx, PreheatJob, false, 0, func(ctx context.Context, counts map[string]int64) error {
			n, err := p.Once(ctx)
			counts["items"] += int64(n)
			return err
		})
	}, func(err error) { p.Log.Warn("preheat failed", "err", err) })
}

// Once preheats what is due now and answers how many items it loaded or refreshed. An item that fails
// (its shard's master is away) does not hold up the others; the round's error names every one.
func (p *Preheat) Once(ctx context.Context) (int, error) {
	now := p.Now()
	acts, err := models.ActivitiesToPreheat(ctx, p.DB, now, now.Add(p.Window))
	if err != nil {
		return 0, err
	}
	n := 0
	var failed []error
	for _, a := range acts {
		for _, it := range a.Items {
			if _, err := p.Ledger.Preheat(ctx, DBBooks{DB: p.DB}, it.ID); err != nil {
				failed = append(failed, err)
				continue
			}
			n++
		}
	}
	return n, errors.Join(failed...)
}

// DBBooks reads a sale from PostgreSQL for the ledger, which speaks Redis only (stock.Books).
type DBBooks struct{ DB *gorm.DB }

var _ stock.SnapshotBooks = DBBooks{}

// Sale is the item's sale as the database has it.
func (b DBBooks) Sale(ctx context.Context, itemID int64) (stock.Sale, error) {
	it, act, err := models.ItemInAnyState(ctx, b.DB, itemID)
	if err != nil {
		return stock.Sale{}, err
	}
	return stock.Sale{
		ItemID: itemID, ActivityID: act.ID, StartsAt: act.StartsAt, EndsAt: act.EndsAt, Shards: max(it.StockShards, 1),
		PriceCents: it.SeckillPriceCents, StockTotal: it.StockTotal, StockLeft: max(it.StockTotal-it.StockSold, 0),
	}, nil
}

// SaleAndBuyers reads the sale and its buyers in one transaction that sees one snapshot (PostgreSQL's
// repeatable read; SQLite's transactions see one already): an order is in the buyers exactly when it is
// in the count sold.
func (b DBBooks) SaleAndBuyers(ctx context.Context, itemID int64) (sale stock.Sale, buyers map[int64]string, err error) {
	err = models.InSnapshot(ctx, b.DB, func(tx *gorm.DB) error {
		var err error
		if sale, err = (DBBooks{DB: tx}).Sale(ctx, itemID); err != nil {
			return err
		}
		buyers, err = (DBBooks{DB: tx}).Buyers(ctx, itemID)
		return err
	})
	return sale, buyers, err
}

// Buyers maps the item's buyers to their order numbers.
func (b DBBooks) Buyers(ctx context.Context, itemID int64) (map[int64]string, error) {
	ps, err := models.Buyers(ctx, b.DB, itemID)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]string, len(ps))
	for _, p := range ps {
		out[p.UserID] = p.OrderNo
	}
	return out, nil
}
