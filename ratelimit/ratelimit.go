// Package ratelimit holds the limits every instance shares through Redis (GCRA, from redis_rate): a
// request over a limit answers errs.RateLimited with the time to wait.
package ratelimit

import (
	"context"
	"fmt"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"seckill/errs"
)

// Limit is how many events a key may have: Burst at once, then Rate per Period.
type Limit = redis_rate.Limit

// Shared counts events per key in Redis.
type Shared struct {
	rl *redis_rate.Limiter
}

// NewShared returns limits kept in rdb.
func NewShared(rdb redis.UniversalClient) *Shared { return &Shared{rl: redis_rate.NewLimiter(rdb)} }

// Allow counts one event for key and answers errs.RateLimited when key is over its limit.
func (s *Shared) Allow(ctx context.Context, key string, l Limit) error {
	res, err := s.rl.Allow(ctx, key, l)
	if err != nil {
		return fmt.Errorf("rate limit %s: %w", key, err)
	}
	if res.Allowed == 0 {
		return errs.Limited(res.RetryAfter)
	}
	return nil
}

// Reset forgets what key has counted.
func (s *Shared) Reset(ctx context.Context, key string) error {
	if err := s.rl.Reset(ctx, key); err != nil {
		return fmt.Errorf("rate limit %s: %w", key, err)
	}
	return nil
}

// Check answers errs.RateLimited when one more event for key would be over its limit, and counts nothing.
func (s *Shared) Check(ctx context.Context, key string, l Limit) error {
	res, err := s.rl.AllowN(ctx, key, l, 0)
	if err != nil {
		return fmt.Errorf("rate limit %s: %w", key, err)
	}
	if res.Remaining < 1 {
		return errs.Limited(l.Period / time.Duration(l.Rate))
	}
	return nil
}
