// Package follow keeps an instance's memory in step with the others': messages on a Redis channel as
// they come, and a look at the source of truth on a ticker, for any message lost while Redis was away.
package follow

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Channel calls onMessage with every message published on channel (by Publish, on the same database)
// and onTick every period, until ctx ends (it then returns ctx's error).
func Channel(ctx context.Context, rdb redis.UniversalClient, channel string, period time.Duration,
	onMessage func(payload string), onTick func(ctx context.Context)) error {
	sub := rdb.Subscribe(ctx, scoped(rdb, channel))
	defer sub.Close()
	msgs := sub.Channel()
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case m, ok := <-msgs:
			if !ok {
				return nil
			}
			onMessage(m.Payload)
		case <-t.C:
			onTick(ctx)
		}
	}
}

// Publish sends msg to the instances that follow channel on rdb's database.
func Publish(ctx context.Context, rdb redis.UniversalClient, channel, msg string) error {
	return rdb.Publish(ctx, scoped(rdb, channel), msg).Err()
}

// scoped names channel for rdb's database. Pub/sub ignores SELECT: two deployments sharing one server
// on different databases would otherwise hear each other's messages about users and items with the
// same ids. Database 0, the only one a Redis Cluster has, keeps the plain name.
func scoped(rdb redis.UniversalClient, channel string) string {
	if c, ok := rdb.(*redis.Client); ok && c.Options().DB != 0 {
		return channel + ":db" + strconv.Itoa(c.Options().DB)
	}
	return channel
}
