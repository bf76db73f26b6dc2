package stock

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
	mu     sync.Mutex                         // serialises the writers
	out    atomic.Pointer[map[int64]struct{}] // read without a lock: every buy and poll asks; a change copies it
}

// NewFlags returns empty flags.
func NewFlags(ledger *Ledger, rdb redis.UniversalClient, log *slog.Logger) *Flags {
	f := &Flags{ledger: ledger, rdb: rdb, log: log}
	f.out.Store(&map[int64]struct{}{})
	return f
}

// SoldOut reports whether the item is known to be sold out. Memory only.
func (f *Flags) SoldOut(itemID int64) bool {
	_, ok := (*f.out.Load())[itemID]
	return ok
}

func (f *Flags) set(itemID int64, out bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	old := *f.out.Load()
	if _, was := old[itemID]; was == out {
		return false
	}
	next := make(map[int64]struct{}, len(old)+1)
	for id := range old {
		next[id] = struct{}{}
	}
	if out {
		next[itemID] = struct{}{}
	} else {
		delete(next, itemID)
	}
	f.out.Store(&next)
	return true
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
	out := *f.out.Load()
	ids := make([]int64, 0, len(out))
	for id := range out {
		ids = append(ids, id)
	}
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
