package stock

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Books is what the database knows of a sale, as loading it into Redis needs it. The ledger speaks Redis
// only: jobs.DBBooks reads these from PostgreSQL.
type Books interface {
	// Sale is the item's sale as it stands, without its buyers: StockLeft is stock_total minus stock_sold
	// (the count the order consumer moves under the optimistic lock). An unknown item is errs.NotFound.
	Sale(ctx context.Context, itemID int64) (Sale, error)
	// Buyers maps every user with a purchase of the item, cancelled or not, to its order number.
	Buyers(ctx context.Context, itemID int64) (map[int64]string, error)
}

// SnapshotBooks are Books that read a sale and its buyers at one moment (one database snapshot): every
// order is in both or in neither, so that the books' check after a failover counts no order twice.
type SnapshotBooks interface {
	Books
	SaleAndBuyers(ctx context.Context, itemID int64) (Sale, map[int64]string, error)
}

// Preheat loads an item's sale from what the books say: stock left as they count it, and every user with
// a purchase a buyer already. A sale that is loaded only has its window refreshed and its count capped;
// after Redis lost its data, this rebuilds everything, and the item can never be sold beyond its stock.
// It answers the stock left in Redis.
func (l *Ledger) Preheat(ctx context.Context, books Books, itemID int64) (int64, error) {
	sale, err := books.Sale(ctx, itemID)
	if err != nil {
		return 0, err
	}
	sale.Shards = max(sale.Shards, 1)
	l.SetShards(itemID, sale.Shards) // the database's word: Redis may have lost its own
	// Every round, and before any shard is loaded: the consumers follow the item's order streams, and
	// know its shard count, even after the master holding these two keys restarted empty while the
	// shards themselves survived.
	if _, err := l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, shardsKey, itemID, sale.Shards)
		p.SAdd(ctx, streamsKey, itemID)
		return nil
	}); err != nil {
		return 0, fmt.Errorf("preheat item %d: %w", itemID, err)
	}
	var total int64
	var missing []int
	for i := range sale.Shards {
		left, loaded, err := l.runPreheat(ctx, sale, i, sale.StockLeft, true)
		if err != nil {
			return 0, err
		}
		if !loaded {
			missing = append(missing, i)
		}
		total += left
	}
	if len(missing) == 0 {
		// Each shard is capped at the database's stock left on its own; the shards together are not,
		// since their counts, read one after another while units move between them, could add up to
		// more than they hold, and lowering them would take real units away. The database's own check
		// (stock_sold never above stock_total) stops any oversell.
		if sale.Shards > 1 {
			if err := l.settleLoans(ctx, itemID, sale.Shards); err != nil {
				return 0, err
			}
		}
		return total, nil
	}
	avail := sale.StockLeft
	if len(missing) < sale.Shards {
		// Some shards were lost (a master of a Redis Cluster restarted empty): the others' stock, queues
		// and loans are not in the database yet. Redis is read before the database, so an order that moves
		// from one to the other meanwhile is counted twice rather than not at all: never oversold.
		held, err := l.held(ctx, itemID, sale.Shards, missing)
		if err != nil {
			return 0, err
		}
		now, err := books.Sale(ctx, itemID)
		if err != nil {
			return 0, err
		}
		avail = max(now.StockLeft-held, 0)
	}
	if sale.Buyers, err = books.Buyers(ctx, itemID); err != nil {
		return 0, err
	}
	loaded, err := l.load(ctx, sale, missing, avail)
	return total + loaded, err
}

// load loads the given shards of a sale with stock split evenly among them, their buyers first.
func (l *Ledger) load(ctx context.Context, s Sale, shards []int, stock int64) (int64, error) {
	var loaded int64
	for j, i := range shards {
		k := ShardKeys(s.ItemID, i)
		// Buyers first: the sale hash does not exist until the script below makes it, so no buy can slip
		// in before the buyers are marked. Their results come back too, where Redis lost them.
		members := make([]any, 0, 1000)
		flush := func() error {
			if len(members) == 0 {
				return nil
			}
			_, err := l.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.SAdd(ctx, k.Buyers, members...)
				for _, m := range members {
					p.HSetNX(ctx, k.Results, strconv.FormatInt(m.(int64), 10), SuccessValue(s.Buyers[m.(int64)]))
				}
				return nil
			})
			members = members[:0]
			return err
		}
		for uid := range s.Buyers {
			if HomeShard(uid, s.Shards) != i {
				continue
			}
			members = append(members, uid)
			if len(members) == cap(members) {
				if err := flush(); err != nil {
					return 0, fmt.Errorf("preheat item %d: %w", s.ItemID, err)
				}
			}
		}
		if err := flush(); err != nil {
			return 0, fmt.Errorf("preheat item %d: %w", s.ItemID, err)
		}
		share := stock / int64(len(shards))
		if int64(j) < stock%int64(len(shards)) {
			share++
		}
		left, _, err := l.runPreheat(ctx, s, i, share, false)
		if err != nil {
			return 0, err
		}
		loaded += left
	}
	return loaded, nil
}

// runPreheat loads shard i with up to limit units, or only refreshes it (never above limit): it answers
// the shard's stock left and whether it was loaded before.
func (l *Ledger) runPreheat(ctx context.Context, s Sale, i int, limit int64, refreshOnly bool) (int64, bool, error) {
	only := "0"
	if refreshOnly {
		only = "1"
	}
	res, err := preheatScript.Run(ctx, l.rdb, []string{ShardKeys(s.ItemID, i).Sale},
		max(limit, 0), s.StockTotal, s.StartsAt.UnixMilli(), s.EndsAt.UnixMilli(), s.PriceCents, s.ActivityID, only, max(s.Shards, 1)).StringSlice()
	if err != nil {
		return 0, false, fmt.Errorf("preheat item %d: %w", s.ItemID, err)
	}
	if res[0] == answerMissing {
		return 0, false, nil
	}
	left, _ := strconv.ParseInt(res[1], 10, 64)
	return left, res[0] == answerKept, nil
}
