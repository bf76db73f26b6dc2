package stock

import (
	"context"
	"sync"
	"time"

	"gorm.io/gorm"

	"seckill/models"
)

// PreheatFromDB loads an item's sale from what the database knows: stock left is stock_total minus
// stock_sold (the count the order consumer moves under the optimistic lock), and every user with a
// purchase is a buyer already. A sale that is loaded only has its window refreshed and its count capped;
// after Redis lost its data, this rebuilds everything, and the item can never be sold beyond its stock.
func (l *Ledger) PreheatFromDB(ctx context.Context, db *gorm.DB, itemID int64) (int64, error) {
	it, act, err := models.ItemAndActivity(ctx, db, itemID)
	if err != nil {
		return 0, err
	}
	sale := Sale{
		ItemID: itemID, ActivityID: act.ID, StartsAt: act.StartsAt, EndsAt: act.EndsAt,
		PriceCents: it.SeckillPriceCents, StockTotal: it.StockTotal, StockLeft: it.StockTotal - it.StockSold,
	}
	if left, loaded, err := l.Refresh(ctx, sale); err != nil || loaded {
		return left, err
	}
	buyers, err := models.Buyers(ctx, db, itemID)
	if err != nil {
		return 0, err
	}
	sale.Buyers = make(map[int64]string, len(buyers))
	for _, p := range buyers {
		sale.Buyers[p.UserID] = p.OrderNo
	}
	return l.Preheat(ctx, sale)
}

// LeftCache answers the stock left of items from Redis, at most one read per item per ttl: pages and the
// catalog show stock that may lag by up to ttl.
type LeftCache struct {
	ledger *Ledger
	ttl    time.Duration
	mu     sync.Mutex
	m      map[int64]cachedLeft
}

type cachedLeft struct {
	left   int64
	loaded bool
	at     time.Time
}

// NewLeftCache returns a cache that reads Redis at most once per item per ttl.
func NewLeftCache(ledger *Ledger, ttl time.Duration) *LeftCache {
	return &LeftCache{ledger: ledger, ttl: ttl, m: map[int64]cachedLeft{}}
}

// Left answers the item's stock left in Redis, and false when its sale is not loaded (or Redis failed:
// the caller then shows what the database knows).
func (c *LeftCache) Left(ctx context.Context, itemID int64) (int64, bool) {
	now := time.Now()
	c.mu.Lock()
	e, ok := c.m[itemID]
	c.mu.Unlock()
	if ok && now.Sub(e.at) < c.ttl {
		return e.left, e.loaded
	}
	left, loaded, err := c.ledger.Left(ctx, itemID)
	if err != nil {
		return 0, false
	}
	c.mu.Lock()
	c.m[itemID] = cachedLeft{left: left, loaded: loaded, at: now}
	c.mu.Unlock()
	return left, loaded
}
