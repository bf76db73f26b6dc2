package ratelimit

import (
	"context"
	"log/slog"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"golang.org/x/time/rate"
)

// Pace is a rate that every process sharing a Redis keeps together (GCRA under one key, redis_rate's):
// the mail workers' sends, so that two workers hand the relay MAIL_RATE mails a second in all, not each.
// While Redis cannot be reached, a process paces itself alone at the rate (as if it were the only one),
// so that mails still go, no faster than one worker's share would allow.
type Pace struct {
	rl    *redis_rate.Limiter
	key   string
	limit redis_rate.Limit
	local *rate.Limiter
	log   *slog.Logger
}

// NewPace allows perSecond events a second under key in all, burst at once.
func NewPace(rdb redis.UniversalClient, key string, perSecond float64, burst int, log *slog.Logger) *Pace {
	burst = max(1, burst)
	// GCRA spaces events by Period/Rate: a rate given as one event per interval keeps fractions (0.1 a
	// second is one every 10 s).
	limit := redis_rate.Limit{Rate: 1, Burst: burst, Period: time.Duration(float64(time.Second) / perSecond)}
	return &Pace{rl: redis_rate.NewLimiter(rdb), key: key, limit: limit, local: rate.NewLimiter(rate.Limit(perSecond), burst), log: log}
}

// Wait returns once n more events may happen, or with ctx's error.
func (p *Pace) Wait(ctx context.Context, n int) error {
	for n > 0 {
		k := min(n, p.limit.Burst)
		res, err := p.rl.AllowN(ctx, p.key, p.limit, k)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			p.log.WarnContext(ctx, "the shared rate is not reachable in Redis: this process paces itself alone", "key", p.key, "err", err)
			if err := p.local.WaitN(ctx, k); err != nil {
				return err
			}
			n -= k
			continue
		}
		if res.Allowed >= k {
			n -= k
			continue
		}
		t := time.NewTimer(max(res.RetryAfter, time.Millisecond))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}
