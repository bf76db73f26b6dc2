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
