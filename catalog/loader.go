package catalog

import (
	"context"
	"time"

	"seckill/stock"
)

// Loader makes sure that a sale that may be bought now is in Redis: the one place that decides, from the
// catalog, the sale's window and the stops, whether an item Redis does not hold is loaded from the
// database (stock.Books), or refused.
type Loader struct {
	Catalog *Catalog
	Stops   *Stops
	Ledger  *stock.Ledger
	Books   stock.Books // the sales as the database has them
	Now     func() time.Time
}

// Ensure loads the item's sale into Redis (a sale loaded already keeps its count) when it may be bought
// now. It answers, in this order: not found unless the item is in an approved sale; not started before
// its start; ended from its end; the stops' answer (ended early, then paused). Callers ask it when the
// ledger answered that the sale is not in Redis (not yet preheated, or Redis lost it), then ask again.
func (l *Loader) Ensure(ctx context.Context, itemID int64) error {
	_, act, err := l.Catalog.Item(ctx, itemID)
	if err != nil {
		return err
	}
	now := l.Now()
	switch {
	case now.Before(act.StartsAt):
		return stock.ErrNotStarted
	case !now.Before(act.EndsAt):
		return stock.ErrEnded
	}
	if err := l.Stops.Check(itemID); err != nil {
		return err
	}
	_, err = l.Ledger.Preheat(ctx, l.Books, itemID)
	return err
}
