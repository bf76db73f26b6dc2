package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"
	"golang.org/x/time/rate"

	"seckill/internal/testenv"
)

// A store that is away for a moment (a Redis restarting, failing over, or refusing writes without its
// replicas) is said as such: 503 unavailable with when to try again, in the person's language, never
// "something went wrong on our side".
func TestAStoreAwayIsUnavailableNotInternal(t *testing.T) {
	ctx := context.Background()
	pair := testenv.StartReplicaPair(t)
	gone := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t)), MaxRetries: -1})
	defer gone.Close()
	noReplicas, _ := testenv.RedisServer(t, "lonely", "--min-replicas-to-write", "1")

	errsOf := map[string]error{
		"a Redis nobody listens on":                 gone.Set(ctx, "k", "v", 0).Err(),
		"a replica asked to write (READONLY)":       pair.Replica.Set(ctx, "k", "v", 0).Err(),
		"a master without its replica (NOREPLICAS)": noReplicas.Set(ctx, "k", "v", 0).Err(),
		"a script's call refused (NOREPLICAS)":      noReplicas.Eval(ctx, "return redis.call('SET', KEYS[1], 'v')", []string{"k"}).Err(),
	}
	app := fiber.New(fiber.Config{ErrorHandler: errorHandler(slog.New(slog.NewTextHandler(io.Discard, nil)), time.Now)})
	for name, err := range errsOf {
		if err == nil {
			t.Fatalf("%s: no error to answer", name)
		}
		app.Get("/api/"+strings.ReplaceAll(name, " ", "-"), func(*fiber.Ctx) error { return fmt.Errorf("take: %w", err) })
	}
	app.Get("/api/a-bug", func(*fiber.Ctx) error { return errors.New("nil map") })

	for name := range errsOf {
		for lang, words := range map[string]string{"en": "try again in a few seconds", "zh": "请几秒后重试"} {
			req := httptest.NewRequest("GET", "/api/"+strings.ReplaceAll(name, " ", "-"), nil)
			req.Header.Set("Accept-Language", lang)
			resp, err := app.Test(req, -1)
			if err != nil {
				t.Fatal(err)
			}
			var body struct{ Error, Message string }
			_ = json.NewDecoder(resp.Body).Decode(&body)
			if resp.StatusCode != 503 || body.Error != "unavailable" || !strings.Contains(body.Message, words) || resp.Header.Get("Retry-After") != "2" {
				t.Errorf("%s (%s): %d %+v Retry-After %q; want 503 unavailable saying %q, Retry-After 2", name, lang, resp.StatusCode, body, resp.Header.Get("Retry-After"), words)
			}
		}
	}
	resp, err := app.Test(httptest.NewRequest("GET", "/api/a-bug", nil), -1)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 500 {
		t.Errorf("a bug of ours: %d, want 500 internal", resp.StatusCode)
	}
}

// go-redis logs a line for each dial that fails while a master is away: a crowd's worth a second. The app
// passes on a burst and then a line a second, saying how many it dropped.
func TestRedisLinesAreRateLimited(t *testing.T) {
	var buf strings.Builder
	r := &redisLog{log: slog.New(slog.NewTextHandler(&buf, nil)), every: rate.NewLimiter(rate.Every(time.Hour), 5)}
	for range 1000 {
		r.Printf(context.Background(), "connection pool: failed to dial after %d attempts", 5)
	}
	if n := strings.Count(buf.String(), "failed to dial"); n != 5 {
		t.Errorf("1,000 lines of go-redis made %d lines of the log, want the burst of 5", n)
	}
	r.every.SetLimit(rate.Inf)
	r.Printf(context.Background(), "sentinel: new master=%q", "chaos")
	if !strings.Contains(buf.String(), "lines_dropped_since=995") {
		t.Errorf("the next line does not say 995 were dropped:\n%s", buf.String())
	}
}
