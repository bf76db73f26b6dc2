package stock_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/auth"
	"seckill/internal/testenv"
	"seckill/jobs"
	"seckill/stock"
)

// A master that refuses writes for want of a replica (min-replicas-to-write: cut off from its replica,
// or promoted with its replica not back yet) takes nothing, and the buyer is told to try again
// (ErrNoReplicas: 503 with Retry-After), not that the buy failed.
func TestBuyRefusedForWantOfAReplicaIsRetryable(t *testing.T) {
	rdb, _ := testenv.RedisServer(t, "lonely")
	ctx := context.Background()
	db := testenv.Postgres(t)
	ledger := testenv.Ledger(rdb, time.Now)
	_, item := testenv.Sale(t, db, 5, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	if _, err := ledger.Preheat(ctx, jobs.DBBooks{DB: db}, item.ID); err != nil {
		t.Fatal(err)
	}
	users := testenv.Users(t, db, "lonely", 1)
	tok, _ := auth.RandomToken(16)
	if err := ledger.IssuePath(ctx, item.ID, users[0].ID, tok); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ConfigSet(ctx, "min-replicas-to-write", "1").Err(); err != nil {
		t.Fatal(err)
	}
	_, err := ledger.Take(ctx, item.ID, users[0].ID, tok, "SK-lonely")
	if !errors.Is(err, stock.ErrNoReplicas) {
		t.Fatalf("a buy on a master with no replica: %v, want ErrNoReplicas", err)
	}
	if left, _, _ := ledger.Left(ctx, item.ID); left != 5 {
		t.Errorf("%d left, want 5: a refused buy takes nothing", left)
	}
	if err := rdb.ConfigSet(ctx, "min-replicas-to-write", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.Take(ctx, item.ID, users[0].ID, tok, "SK-lonely"); err != nil {
		t.Errorf("the same buy once the master writes again: %v", err)
	}
}

// Through Sentinel (go-redis's failover client) the ledger asks the master: REDIS_WAIT_REPLICAS=auto finds
// its replica (INFO replication), and a take's WAIT, on the script call's connection, is acknowledged.
func TestReplicasAndWaitThroughSentinel(t *testing.T) {
	g := testenv.StartSentinelGroup(t)
	rdb := redis.NewFailoverClient(g.FailoverOptions(t))
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	if n, err := stock.ReplicasOf(ctx, rdb); err != nil || n != 1 {
		t.Fatalf("replicas through the sentinels: %d (%v), want 1", n, err)
	}
	db := testenv.Postgres(t)
	ledger := testenv.Ledger(rdb, time.Now)
	ledger.WaitReplicas(1, 500*time.Millisecond)
	_, item := testenv.Sale(t, db, 5, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	if _, err := ledger.Preheat(ctx, jobs.DBBooks{DB: db}, item.ID); err != nil {
		t.Fatal(err)
	}
	users := testenv.Users(t, db, "sentinel", 1)
	tok, _ := auth.RandomToken(16)
	if err := ledger.IssuePath(ctx, item.ID, users[0].ID, tok); err != nil {
		t.Fatal(err)
	}
	_, confirmed, err := ledger.TakeConfirmed(ctx, item.ID, users[0].ID, tok, "SK-sentinel")
	if err != nil || !confirmed {
		t.Errorf("a take through the sentinels: confirmed %v (%v), want confirmed by the replica", confirmed, err)
	}
}

// A master replaced at the address the app dials (restarted, or a cluster's replica promoted) is seen by
// the look at the masters' run_id: the buys are held, the books checked, and the buys resume. The watch
// stops with its context.
func TestNewMasterIsSeenHeldAndReleased(t *testing.T) {
	a, _ := testenv.RedisServer(t, "first")
	b, _ := testenv.RedisServer(t, "second")
	var to atomic.Value
	to.Store(a.Options().Addr)
	rdb := redis.NewClient(&redis.Options{Dialer: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, to.Load().(string))
	}})
	t.Cleanup(func() { _ = rdb.Close() })
	db := testenv.Postgres(t)
	sell, books := testenv.Ledger(rdb, time.Now), testenv.Ledger(rdb, time.Now)
	f := stock.NewFailover(sell, books, jobs.DBBooks{DB: db}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	f.Interval = 20 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the watch stopped with %v", err)
		}
	}()
	testenv.Eventually(t, 5*time.Second, "the first look", func() bool {
		n, _ := a.ClientList(context.Background()).Result()
		return strings.Count(n, "cmd=info") > 0
	})
	if seen, _, held := f.Stats(); seen != 0 || held {
		t.Fatalf("before any change: %d seen, held %v", seen, held)
	}
	to.Store(b.Options().Addr)
	if err := a.ClientKillByFilter(context.Background(), "TYPE", "normal").Err(); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallySaw(t, 5*time.Second, "the new master seen and the buys resumed", func() (bool, string) {
		seen, _, held := f.Stats()
		return seen == 1 && !held, fmt.Sprintf("%d seen, held %v", seen, held)
	})
}
