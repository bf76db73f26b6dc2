package catalog

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/follow"
	"seckill/stock"
)

// stopsChannel carries an admin's emergency stop (a pause, a resume, an end) to every instance.
const stopsChannel = "sk:stops"

// StopsVersion counts the stops announced: an instance that missed a message (its subscription was
// reconnecting) sees the count change at its next look, half a second later at most.
const StopsVersion = "sk:stops:version"

// Stops is this instance's memory of the items whose sale an admin has paused: the buy, purchase paths
// and the waiting room ask it, in memory. An admin's stop is published to every instance, which rebuilds
// its catalog at once; a look at the stops' count in Redis every half second catches a message lost while
// the subscription was away (and a rebuild follows every time Redis could not be asked: nothing can be
// bought while it cannot be reached, and the first look after it comes back rebuilds).
type Stops struct {
	cat    *Catalog
	rdb    redis.UniversalClient
	log    *slog.Logger
	seen   string // the stops' count at the last rebuild; "" when unknown (Run's goroutine only)
	paused atomic.Pointer[map[int64]bool]
	ended  atomic.Pointer[map[int64]bool] // ended early by an admin: refused here whatever Redis's window says
}

// NewStops returns the stops of the catalog's sales (none known until Load or Run).
func NewStops(cat *Catalog, rdb redis.UniversalClient, log *slog.Logger) *Stops {
	s := &Stops{cat: cat, rdb: rdb, log: log}
	s.paused.Store(&map[int64]bool{})
	s.ended.Store(&map[int64]bool{})
	return s
}

// Paused reports whether the item's sale is paused. Memory only.
func (s *Stops) Paused(itemID int64) bool { return (*s.paused.Load())[itemID] }

// Ended reports whether an admin ended the item's sale early. Memory only: the buy and the purchase path
// refuse it even if Redis's window was not closed (Redis failed at the end, or a preheat that read the
// sale before the end wrote its old window back).
func (s *Stops) Ended(itemID int64) bool { return (*s.ended.Load())[itemID] }

// Check answers why the item's sale may not be bought now by an admin's stop, or nil: ended early first,
// then paused (a sale is never both). Memory only. Every step of buying asks it (the purchase path, the
// buy, joining a line, loading a sale into Redis): the one place that reads the stops.
func (s *Stops) Check(itemID int64) error {
	switch {
	case s.Ended(itemID):
		return stock.ErrEnded
	case s.Paused(itemID):
		return stock.ErrPaused
	}
	return nil
}

// Load reads the paused sales from the catalog.
func (s *Stops) Load(ctx context.Context) error {
	snap, err := s.cat.Snapshot(ctx)
	if err != nil {
		return err
	}
	paused, ended := map[int64]bool{}, map[int64]bool{}
	for _, a := range snap.activities {
		into := paused
		switch {
		case a.EndedEarly:
			into = ended
		case a.PausedAt == nil:
			continue
		}
		for _, it := range a.Items {
			into[it.ID] = true
		}
	}
	s.paused.Store(&paused)
	s.ended.Store(&ended)
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
	err := s.rdb.Incr(ctx, StopsVersion).Err()
	if err == nil {
		err = follow.Publish(ctx, s.rdb, stopsChannel, "changed")
	}
	if err != nil {
		// The stop is in the database, and no instance can sell while Redis is away: each rebuilds at its
		// first look after Redis is back (half a second).
		s.log.WarnContext(ctx, "stops: not published", "err", err)
	}
	return nil
}

// Run follows the other instances' stops until ctx ends.
func (s *Stops) Run(ctx context.Context) error {
	reload := func(ctx context.Context) {
		if err := s.Load(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("stops: the catalog could not be read", "err", err)
		}
	}
	rebuild := func(ctx context.Context) bool {
		if err := s.cat.Refresh(ctx); err != nil {
			if ctx.Err() == nil {
				s.log.Warn("stops: the catalog could not be rebuilt", "err", err)
			}
			return false
		}
		reload(ctx)
		return true
	}
	reload(ctx)
	// The count is read before the rebuild: every stop counted by then is in the database it reads.
	look := func(ctx context.Context, always bool) {
		v, err := s.rdb.Get(ctx, StopsVersion).Result()
		switch {
		case err != nil && !errors.Is(err, redis.Nil):
			s.seen = "" // unknown: rebuilt at the first look that can ask
			if always {
				rebuild(ctx)
			} else {
				reload(ctx)
			}
			return
		case v == "":
			v = "0"
		}
		if (always || v != s.seen) && rebuild(ctx) {
			s.seen = v
			return
		}
		reload(ctx)
	}
	return follow.Channel(ctx, s.rdb, stopsChannel, 500*time.Millisecond, func(string) { look(ctx, true) },
		func(ctx context.Context) { look(ctx, false) })
}
