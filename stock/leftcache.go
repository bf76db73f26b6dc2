package stock

import (
	"context"
	"strconv"
	"time"

	"golang.org/x/sync/singleflight"

	"seckill/internal/memo"
)

// LeftCache answers the stock left of items from Redis, at most one read per item per ttl: pages and the
// catalog show stock that may lag by up to ttl.
type LeftCache struct {
	ledger *Ledger
	m      *memo.Timed[int64, cachedLeft]
	flight singleflight.Group // one read per item at a time, however many pages ask at once
}

type cachedLeft struct {
	left   int64
	loaded bool
}

// maxLeftCached bounds the items whose stock left is kept: far more than are on sale at once.
const maxLeftCached = 16384

// NewLeftCache returns a cache that reads Redis at most once per item per ttl.
func NewLeftCache(ledger *Ledger, ttl time.Duration) *LeftCache {
	return &LeftCache{ledger: ledger, m: memo.NewTimed[int64, cachedLeft](maxLeftCached, ttl)}
}

// Left answers the item's stock left in Redis, and false when its sale is not loaded (or Redis failed:
// the caller then shows what the database knows).
func (c *LeftCache) Left(ctx context.Context, itemID int64) (int64, bool) {
	if e, ok := c.m.Get(itemID); ok {
		return e.left, e.loaded
	}
	v, err, _ := c.flight.Do(strconv.FormatInt(itemID, 10), func() (any, error) {
		left, loaded, err := c.ledger.Left(ctx, itemID)
		if err != nil {
			return nil, err
		}
		e := cachedLeft{left: left, loaded: loaded}
		c.m.Add(itemID, e)
		return e, nil
	})
	if err != nil {
		return 0, false
	}
	e := v.(cachedLeft)
	return e.left, e.loaded
}

// Peek answers the item's stock left as last read, without asking Redis (false: not read lately).
func (c *LeftCache) Peek(itemID int64) (int64, bool) {
	e, ok := c.m.Get(itemID)
	return e.left, ok && e.loaded
}

// Note records a stock left read elsewhere (in the same command as something else), for the others who ask.
func (c *LeftCache) Note(itemID, left int64) {
	c.m.Add(itemID, cachedLeft{left: left, loaded: true})
}
