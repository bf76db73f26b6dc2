package ratelimit

import (
	"context"
	"hash/maphash"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"seckill/errs"
)

// Local limits events per key in this process only, at no Redis round trip: for the buy endpoint,
// where every request already needs a fresh single-use path and only floods need stopping.
type Local struct {
	perSecond rate.Limit
	burst     int
	seed      maphash.Seed
	shards    [32]localShard
}

type localShard struct {
	mu sync.Mutex
	m  map[string]*localEntry
}

type localEntry struct {
	lim  *rate.Limiter
	seen time.Time
}

// NewLocal allows perSecond events per key, with bursts of burst.
func NewLocal(perSecond float64, burst int) *Local {
	l := &Local{perSecond: rate.Limit(perSecond), burst: burst, seed: maphash.MakeSeed()}
	for i := range l.shards {
		l.shards[i].m = map[string]*localEntry{}
	}
	return l
}

// Allow counts one event for key and answers errs.RateLimited when key is over its limit.
func (l *Local) Allow(key string) error {
	s := &l.shards[maphash.String(l.seed, key)%uint64(len(l.shards))]
	now := time.Now()
	s.mu.Lock()
	e, ok := s.m[key]
	if !ok {
		if len(s.m) >= maxLocalKeys/len(l.shards) {
			l.sweep(s, now)
		}
		e = &localEntry{lim: rate.NewLimiter(l.perSecond, l.burst)}
		// A copy: the key may live in a request's buffer (Fiber's c.IP() behind a proxy), which the
		// next request on the connection overwrites.
		s.m[strings.Clone(key)] = e
	}
	e.seen = now
	allowed := e.lim.AllowN(now, 1)
	s.mu.Unlock()
	if !allowed {
		return errs.Limited(time.Second)
	}
	return nil
}

// maxLocalKeys bounds the keys kept (a hundred bytes or so each): a flood from more addresses than that
// within a refill (two seconds for the buy's limit) empties a shard, whose addresses then start again
// with a full burst.
const maxLocalKeys = 100_000

// sweep makes room in a full shard (its lock held): it forgets the keys whose bucket has filled up again
// since they were last seen, which a fresh one would equal; if none has, all of the shard's.
func (l *Local) sweep(s *localShard, now time.Time) {
	refill := time.Duration(float64(l.burst) / float64(l.perSecond) * float64(time.Second))
	for k, e := range s.m {
		if now.Sub(e.seen) > refill {
			delete(s.m, k)
		}
	}
	if len(s.m) >= maxLocalKeys/len(l.shards) {
		clear(s.m)
	}
}

// Run forgets keys unseen for a minute, until ctx ends, so that the map does not grow without bound.
func (l *Local) Run(ctx context.Context) error {
	t := time.NewTicker(30 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case now := <-t.C:
			for i := range l.shards {
				s := &l.shards[i]
				s.mu.Lock()
				for k, e := range s.m {
					if now.Sub(e.seen) > time.Minute {
						delete(s.m, k)
					}
				}
				s.mu.Unlock()
			}
		}
	}
}
