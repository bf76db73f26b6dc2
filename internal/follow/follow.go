// Package follow keeps an instance's memory in step with the others': messages on a Redis channel as
// they come, and a look at the source of truth on a ticker, for any message lost while Redis was away.
package follow

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Channel calls onMessage with every message published on channel and onTick every period, until ctx
// ends (it then returns ctx's error).
func Channel(ctx context.Context, rdb redis.UniversalClient, channel string, period time.Duration,
	onMessage func(payload string), onTick func(ctx context.Context)) error {
	sub := rdb.Subscribe(ctx, channel)
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
