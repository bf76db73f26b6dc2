package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// A fault strikes and heals; it answers when it healed (the last step of its own before the system
// recovers by itself).
type fault struct {
	what   string // in the report's words
	strike func(ctx context.Context, w *world, c *config, rng *rand.Rand) (time.Time, error)
}

var faultOrder = []string{"instance-kill", "redis-kill", "postgres-stop", "postgres-cut", "redis-cut", "both-kill"}

var faultsByName = map[string]fault{
	"instance-kill": {"one instance killed with SIGKILL and started again", func(ctx context.Context, w *world, _ *config, rng *rand.Rand) (time.Time, error) {
		in := w.instances[rng.IntN(len(w.instances))]
		in.kill()
		return time.Now(), in.start(ctx)
	}},
	"both-kill": {"both instances killed with SIGKILL at once and started again", func(ctx context.Context, w *world, _ *config, _ *rand.Rand) (time.Time, error) {
		for _, in := range w.instances {
			in.kill()
		}
		var errs []error
		for _, in := range w.instances {
			errs = append(errs, in.start(ctx))
		}
		return time.Now(), errors.Join(errs...)
	}},
	"redis-kill": {"Redis killed with SIGKILL and started again from its append-only file", func(ctx context.Context, w *world, _ *config, _ *rand.Rand) (time.Time, error) {
		w.redis.kill()
		return time.Now(), w.redis.start(ctx)
	}},
	"postgres-stop": {"PostgreSQL stopped in immediate mode (no checkpoint, as a crash) and started again", func(ctx context.Context, w *world, _ *config, _ *rand.Rand) (time.Time, error) {
		if err := w.pg.stop(ctx, "immediate"); err != nil {
			return time.Now(), err
		}
		time.Sleep(time.Second)
		return time.Now(), w.pg.start(ctx)
	}},
	"postgres-cut": {"the network to PostgreSQL cut (silent: bytes and new connections wait)", func(ctx context.Context, w *world, c *config, _ *rand.Rand) (time.Time, error) {
		w.pgLink.Cut(false)
		sleep(ctx, c.cut)
		w.pgLink.Heal()
		return time.Now(), nil
	}},
	"redis-cut": {"the network to Redis cut (silent: bytes and new connections wait)", func(ctx context.Context, w *world, c *config, _ *rand.Rand) (time.Time, error) {
		w.redisLink.Cut(false)
		sleep(ctx, c.cut)
		w.redisLink.Heal()
		return time.Now(), nil
	}},
}

func faultNames() []string { return faultOrder }

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func describe(name string, c *config) string {
	f := faultsByName[name]
	if name == "postgres-cut" || name == "redis-cut" {
		return fmt.Sprintf("%s for %v", f.what, c.cut)
	}
	return f.what
}
