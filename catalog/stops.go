package catalog

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/follow"
)

// stopsChannel carries an admin's emergency stop (a pause, a resume, an end) to every instance.
const stopsChannel = "sk:stops"

// Stops is this instance's memory of the items whose sale an admin has paused: the buy, purchase paths
// and the waiting room ask it, in memory. An admin's stop is published to every instance, which rebuilds
// its catalog at once; a look at the catalog every half second catches a message lost while Redis was
// away (the catalog itself is at most a second old).
type Stops struct {
	cat    *Catalog
	rdb    redis.UniversalClient
	log    *slog.Logger
	paused atomic.Pointer[map[int64]bool]
}

// NewStops returns the stops of the catalog's sales (none known until Load or Run).
func NewStops(cat *Catalog, rdb redis.UniversalClient, log *slog.Logger) *Stops {
	s := &Stops{cat: cat, rdb: rdb, log: log}
	s.paused.Store(&map[int64]bool{})
	return s
}

// Paused reports whether the item's sale is paused. Memory only.
func (s *Stops) Paused(itemID int64) bool { return (*s.paused.Load())[itemID] }

// Load reads the paused sales from the catalog.
func (s *Stops) Load(ctx context.Context) error {
	snap, err := s.cat.Snapshot(ctx)
	if err != nil {
		return err
	}
	paused := map[int64]bool{}
	for _, a := range snap.activities {
		if a.PausedAt == nil {
			continue
		}
		for _, it := range a.Items {
			paused[it.ID] = true
		}
	}
	s.paused.Store(&paused)
	return nil
}

// Announce tells every instance, this one first, that a sale was stopped or resumed.
func (s *Stops) Announce(ctx context.Context) error {
	if err := s.cat.Refresh(ctx); err != nil {
		return err
	}
	if err := s.Load(ctx); err != nil {
		return err
	}
	return follow.Publish(ctx, s.rdb, stopsChannel, "changed")
}

// Run follows the other instances' stops until ctx ends.
func (s *Stops) Run(ctx context.Context) error {
	reload := func(ctx context.Context) {
		if err := s.Load(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("stops: the catalog could not be read", "err", err)
		}
	}
	return follow.Channel(ctx, s.rdb, stopsChannel, 500*time.Millisecond, func(string) {
		if err := s.cat.Refresh(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("stops: the catalog could not be rebuilt", "err", err)
		}
		reload(ctx)
	}, reload)
}
