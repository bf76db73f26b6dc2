// Package catalog keeps the approved sales in memory. Every instance answers the public catalog, the item
// pages and the buy path's questions about a sale (is it approved, when does it start) from a snapshot
// of the database rebuilt at most once per TTL, one rebuild at a time, so that however many pages poll,
// PostgreSQL sees one query per instance per TTL.
package catalog

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"
	"golang.org/x/time/rate"
	"gorm.io/gorm"

	"seckill/errs"
	"seckill/internal/memo"
	"seckill/models"
)

// keep is how long after its end a sale stays in the snapshot; an older one is looked up on its own
// (and remembered for a TTL), as is anything the snapshot does not hold.
const keep = 30 * 24 * time.Hour

// maxLookups bounds the remembered lookups of sales outside the snapshot; lookupsPerSecond bounds the
// queries they make.
const (
	maxLookups       = 4096
	lookupsPerSecond = 20
)

// Snapshot is the approved sales as the database had them at Built. It is never changed once made.
type Snapshot struct {
	Version    uint64            // a hash of what the snapshot holds: equal snapshots have equal versions
	Built      time.Time         // by the app's clock
	open       []models.Activity // approved and not ended at Built, soonest first
	activities map[int64]*models.Activity
	items      map[int64]*models.Item
}

// Open lists the approved activities that have not ended by now, soonest first, with their items. The
// caller must not change them.
func (s *Snapshot) Open(now time.Time) []models.Activity {
	for i := range s.open {
		if s.open[i].Over(now) { // one ended since the snapshot was made: leave it out
			out := make([]models.Activity, 0, len(s.open))
			for j := range s.open {
				if !s.open[j].Over(now) {
					out = append(out, s.open[j])
				}
			}
			return out
		}
	}
	return s.open
}

// Catalog serves snapshots.
type Catalog struct {
	db  *gorm.DB
	now func() time.Time
	ttl time.Duration
	log *slog.Logger

	cur        atomic.Pointer[built]
	seq        atomic.Uint64 // rebuilds started: a later one's snapshot is never replaced by an earlier one's
	flight     singleflight.Group
	lookups    *memo.Timed[int64, lookup] // sales outside the snapshot, found or not
	lookupRate *rate.Limiter
}

type built struct {
	snap *Snapshot
	at   time.Time // by the wall clock: the snapshot's age is elapsed time
	seq  uint64
}

type lookup struct {
	item *models.Item
	act  *models.Activity
	err  error
}

// New returns a catalog that rebuilds its snapshot at most once per ttl.
func New(db *gorm.DB, now func() time.Time, ttl time.Duration, log *slog.Logger) *Catalog {
	return &Catalog{db: db, now: now, ttl: ttl, log: log, lookups: memo.NewTimed[int64, lookup](maxLookups, ttl),
		lookupRate: rate.NewLimiter(lookupsPerSecond, lookupsPerSecond)}
}

// Snapshot answers the current snapshot. One older than the TTL is rebuilt by one caller while the
// others go on with it; only the first ever request waits for the database. When the database fails,
// the last snapshot goes on being served (and the failure is retried after a TTL).
func (c *Catalog) Snapshot(ctx context.Context) (*Snapshot, error) {
	b := c.cur.Load()
	if b != nil && time.Since(b.at) < c.ttl {
		return b.snap, nil
	}
	ch := c.flight.DoChan("snapshot", func() (any, error) { return c.rebuild(ctx) })
	if b != nil {
		return b.snap, nil // the rebuild goes on without us
	}
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*Snapshot), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Refresh rebuilds the snapshot now: this instance changed a sale (approved, rejected) and shows it at
// once; the others within a TTL.
func (c *Catalog) Refresh(ctx context.Context) error {
	c.lookups.Purge()
	_, err := c.rebuild(ctx)
	return err
}

func (c *Catalog) rebuild(ctx context.Context) (*Snapshot, error) {
	// The request that started the rebuild may end first: the rebuild is everyone's.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	seq := c.seq.Add(1)
	now := c.now()
	acts, err := models.ApprovedEndingAfter(ctx, c.db, now.Add(-keep))
	if err != nil {
		if b := c.cur.Load(); b != nil {
			c.log.Warn("catalog: rebuild failed, serving the last snapshot", "built", b.snap.Built, "err", err)
			c.store(&built{snap: b.snap, at: time.Now(), seq: seq}) // try again after a TTL, not at once
			return b.snap, nil
		}
		return nil, err
	}
	s := &Snapshot{Built: now, activities: make(map[int64]*models.Activity, len(acts)), items: map[int64]*models.Item{}}
	for i := range acts {
		a := &acts[i]
		s.activities[a.ID] = a
		for j := range a.Items {
			s.items[a.Items[j].ID] = &a.Items[j]
		}
		if !a.Over(now) { // ended early before its start: over, though its window is still to come
			s.open = append(s.open, *a)
		}
	}
	s.Version = version(acts)
	c.store(&built{snap: s, at: time.Now(), seq: seq})
	return s, nil
}

// store keeps b unless a rebuild that started later has already stored its snapshot.
func (c *Catalog) store(b *built) {
	for {
		old := c.cur.Load()
		if old != nil && old.seq > b.seq {
			return
		}
		if c.cur.CompareAndSwap(old, b) {
			return
		}
	}
}

var (
	errNoActivity = errs.Static(errs.NotFound, "no such activity")
	errNoItem     = errs.Static(errs.NotFound, "no such item")
)

// Activity answers an approved activity with its items, or errs.NotFound.
func (c *Catalog) Activity(ctx context.Context, id int64) (*models.Activity, error) {
	s, err := c.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	if a, ok := s.activities[id]; ok {
		return a, nil
	}
	l := c.lookup(ctx, -id, func() lookup {
		a, err := models.ApprovedActivity(ctx, c.db, id)
		return lookup{act: a, err: err}
	})
	if errs.Is(l.err, errs.NotFound) {
		return nil, errNoActivity
	}
	return l.act, l.err
}

// Item answers an item of an approved activity, and the activity, or errs.NotFound.
func (c *Catalog) Item(ctx context.Context, id int64) (*models.Item, *models.Activity, error) {
	s, err := c.Snapshot(ctx)
	if err != nil {
		return nil, nil, err
	}
	if it, ok := s.items[id]; ok {
		return it, s.activities[it.ActivityID], nil
	}
	l := c.lookup(ctx, id, func() lookup {
		it, a, err := models.ApprovedItem(ctx, c.db, id)
		return lookup{item: it, act: a, err: err}
	})
	if errs.Is(l.err, errs.NotFound) {
		return nil, nil, errNoItem
	}
	return l.item, l.act, l.err
}

// lookup finds what the snapshot does not hold (key: an item id, or minus an activity id) once per TTL:
// found or not found is remembered; a failure is not.
func (c *Catalog) lookup(ctx context.Context, key int64, find func() lookup) lookup {
	if l, ok := c.lookups.Get(key); ok {
		return l
	}
	// Someone walking the ids past the snapshot must not turn each request into a query: beyond a few
	// lookups a second, what the snapshot does not hold is not found, until the next snapshot.
	if !c.lookupRate.Allow() {
		return lookup{err: errNoItem}
	}
	v, _, _ := c.flight.Do(lookupKey(key), func() (any, error) {
		l := find()
		if l.err == nil || errs.Is(l.err, errs.NotFound) {
			c.lookups.Add(key, l)
		}
		return l, nil
	})
	return v.(lookup)
}

func lookupKey(key int64) string { return "lookup:" + strconv.FormatInt(key, 10) }

// version hashes the activities as the catalog shows them.
func version(acts []models.Activity) uint64 {
	h := fnv.New64a()
	_ = json.NewEncoder(h).Encode(acts)
	return h.Sum64()
}
