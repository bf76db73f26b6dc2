package ratelimit

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// With Redis away, a Pace still paces this process alone at its rate: 12 events at 20 a second, 4 at
// once, take at least 0.4 s, and none is lost.
func TestPaceWithoutRedisPacesThisProcessAlone(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 50 * time.Millisecond})
	defer rdb.Close()
	p := NewPace(rdb, "test:pace", 20, 4, slog.New(slog.NewTextHandler(io.Discard, nil)))
	start := time.Now()
	for range 3 {
		if err := p.Wait(context.Background(), 4); err != nil {
			t.Fatal(err)
		}
	}
	if took := time.Since(start); took < 400*time.Millisecond {
		t.Errorf("12 events at 20 a second without Redis went in %v", took)
	}
}
