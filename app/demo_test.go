package app

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestTheDemosRedisTakesOnlyItsOwnClient(t *testing.T) {
	ctx := context.Background()
	cfg := Config{DataDir: t.TempDir()}
	d, err := openDemo(ctx, &cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.redis.Ping(ctx).Err(); err != nil {
		t.Fatalf("the demo's own client: %v", err)
	}
	for _, pw := range []string{"", "guess"} {
		other := redis.NewClient(&redis.Options{Addr: d.mr.Addr(), Password: pw, MaxRetries: -1})
		err := other.Set(ctx, "stock:1", "999", 0).Err()
		_ = other.Close()
		if err == nil || !strings.Contains(err.Error(), "NOAUTH") && !strings.Contains(err.Error(), "WRONGPASS") {
			t.Errorf("another local client with password %q: %v; want it refused", pw, err)
		}
	}
}
