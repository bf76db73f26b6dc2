package stock

import (
	"context"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
)

// LeftCache answers the stock left of items from Redis, at most one read per item per ttl: pages and the
// catalog show stock that may lag by up to ttl.
type LeftCache struct {
	ledger *Ledger
	m      *expirable.LRU[int64, cachedLeft]
}

type cachedLeft struct {
	left   int64
	loaded bool
}

// maxLeftCached bounds the items whose stock left is kept: far more than are on sale at once.
const maxLeftCached = 16384

// NewLeftCache returns a cache that reads Redis at most once per item per ttl.
func NewLeftCache(ledger *Ledger, ttl time.Duration) *LeftCache {
	return &LeftCache{ledger: ledger, m: expirable.NewLRU[int64, cachedLeft](maxLeftCached, nil, ttl)}
}

// Left answers the item's stock left in Redis, and false when its sale is not loaded (or Redis failed:
// the caller then shows what the database knows).
func (c *LeftCache) Left(ctx context.Context, itemID int64) (int64, bool) {
	if e, ok := c.m.Get(itemID); ok {
		return e.left, e.loaded
	}
	left, loaded, err := c.ledger.Left(ctx, itemID)
	if err != nil {
		return 0, false
	}
	c.m.Add(itemID, cachedLeft{left: left, loaded: loaded})
	return left, loaded
}
