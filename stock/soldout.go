package stock

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/follow"
)

const eventsChannel = "sk:stock-events"

// Flags is this instance's memory of which items are sold out, so that the crowd that comes after the
// last unit is answered without Redis. Instances tell each other through Redis pub/sub when an item
// sells out and when stock comes back; a check every second clears a flag whose message was lost.
type Flags struct {
	ledger *Ledger
	rdb    redis.UniversalClient
	log    *slog.Logger
	mu     sync.RWMutex
	out    map[int64]struct{}
}

// NewFlags returns empty flags.
func NewFlags(ledger *Ledger, rdb redis.UniversalClient, log *slog.Logger) *Flags {
	return &Flags{ledger: ledger, rdb: rdb, log: log, out: map[int64]struct{}{}}
}

// SoldOut reports whether the item is known to be sold out. Memory only.
func (f *Flags) SoldOut(itemID int64) bool {
	f.mu.RLock()
	_, ok := f.out[itemID]
	f.mu.RUnlock()
	return ok
}

func (f *Flags) set(itemID int64, out bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, was := f.out[itemID]
	if out {
		f.out[itemID] = struct{}{}
	} else {
		delete(f.out, itemID)
	}
	return was != out
}

// MarkSoldOut flags the item here and on every instance.
func (f *Flags) MarkSoldOut(ctx context.Context, itemID int64) {
	if f.set(itemID, true) {
		f.publish(ctx, "out:"+strconv.FormatInt(itemID, 10))
	}
}

// Restocked clears the item's flag here and on every instance: stock came back.
func (f *Flags) Restocked(ctx context.Context, itemID int64) {
	f.set(itemID, false)
	f.publish(ctx, "in:"+strconv.FormatInt(itemID, 10))
}

func (f *Flags) publish(ctx context.Context, msg string) {
	if err := follow.Publish(ctx, f.rdb, eventsChannel, msg); err != nil {
		f.log.WarnContext(ctx, "stock event not published", "event", msg, "err", err)
	}
}

// Run follows the other instances' messages and rechecks the flags every second, until ctx ends.
func (f *Flags) Run(ctx context.Context) error {
	return follow.Channel(ctx, f.rdb, eventsChannel, time.Second, func(payload string) {
		kind, id, found := strings.Cut(payload, ":")
		if itemID, err := strconv.ParseInt(id, 10, 64); found && err == nil {
			f.set(itemID, kind == "out")
		}
	}, f.recheck)
}

// recheck clears the flag of every item whose stock is back, in case its message was lost.
func (f *Flags) recheck(ctx context.Context) {
	f.mu.RLock()
	ids := make([]int64, 0, len(f.out))
	for id := range f.out {
		ids = append(ids, id)
	}
	f.mu.RUnlock()
	for _, id := range ids {
		left, complete, err := f.ledger.Left(ctx, id)
		if err != nil {
			continue
		}
		if !complete || left > 0 {
			f.set(id, false)
		}
	}
}
