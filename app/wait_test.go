package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"seckill/handlers"
	"seckill/internal/testenv"
	"seckill/jobs"
	"seckill/stock"
)

func TestRedisWaitSettings(t *testing.T) {
	for _, tc := range []struct {
		env      map[string]string
		replicas int
		timeout  time.Duration
		bad      string
	}{
		{env: nil, replicas: RedisWaitAuto, timeout: 100 * time.Millisecond},
		{env: map[string]string{"REDIS_WAIT_REPLICAS": "AUTO"}, replicas: RedisWaitAuto, timeout: 100 * time.Millisecond},
		{env: map[string]string{"REDIS_WAIT_REPLICAS": "0", "REDIS_WAIT_TIMEOUT": "1s"}, replicas: 0, timeout: time.Second},
		{env: map[string]string{"REDIS_WAIT_REPLICAS": "2", "REDIS_WAIT_TIMEOUT": "20ms"}, replicas: 2, timeout: 20 * time.Millisecond},
		{env: map[string]string{"REDIS_WAIT_REPLICAS": "one"}, bad: "REDIS_WAIT_REPLICAS must be auto or a whole number from 0 to 16"},
		{env: map[string]string{"REDIS_WAIT_REPLICAS": "17"}, bad: "REDIS_WAIT_REPLICAS must be auto"},
		{env: map[string]string{"REDIS_WAIT_TIMEOUT": "2s"}, bad: "REDIS_WAIT_TIMEOUT must be at most 1s"},
		{env: map[string]string{"REDIS_WAIT_TIMEOUT": "0"}, bad: "REDIS_WAIT_TIMEOUT must be a positive duration"},
	} {
		c, err := LoadConfig(envOf(tc.env))
		switch {
		case tc.bad != "":
			if err == nil || !strings.Contains(err.Error(), tc.bad) {
				t.Errorf("%v: %v, want an error saying %q", tc.env, err, tc.bad)
			}
		case err != nil:
			t.Errorf("%v: %v", tc.env, err)
		case c.RedisWaitReplicas != tc.replicas || c.RedisWaitTimeout != tc.timeout:
			t.Errorf("%v: %d replicas within %v, want %d within %v", tc.env, c.RedisWaitReplicas, c.RedisWaitTimeout, tc.replicas, tc.timeout)
		}
	}
}

// With a replica (REDIS_WAIT_REPLICAS=auto finds it), the buy answers queued once the replica has the buy;
// with the replica frozen (SIGSTOP), never queued: 202 unconfirmed, and the buyer's order is made all the
// same, which the result tells. Thawed, queued again.
func TestBuyIsQueuedOnlyOnceARedisReplicaHasIt(t *testing.T) {
	pair := testenv.StartReplicaPair(t)
	master := pair.Master
	s := startLive(t, liveOpts{rdb: master, tune: func(c *Config) {
		c.RateLimitIP = false
		c.RedisWaitReplicas = RedisWaitAuto
		c.RedisWaitTimeout = 150 * time.Millisecond
	}})
	ctx := context.Background()
	now := s.Clock.Now()
	_, item := testenv.Sale(t, s.DB, 10, now.Add(-time.Minute), now.Add(time.Hour))
	if _, err := s.Srv.Ledger.Preheat(ctx, jobs.DBBooks{DB: s.DB}, item.ID); err != nil {
		t.Fatal(err)
	}
	buyers := makeShoppers(t, s, "waiter", 4)
	buy := func(sh shopper) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", fmt.Sprintf("%s/api/items/%d/buy/%s", s.URL, item.ID, issuePath(t, s, item.ID, sh.id)), nil)
		req.Header.Set("Cookie", sh.cookie)
		req.Header.Set(handlers.CSRFHeader, sh.csrf)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct{ Status string }
		b, _ := io.ReadAll(resp.Body)
		_ = json.Unmarshal(b, &body)
		return resp.StatusCode, body.Status
	}
	if code, status := buy(buyers[0]); code != 202 || status != "queued" {
		t.Fatalf("with the replica up: %d %q, want 202 queued", code, status)
	}
	if waits, _ := s.Srv.Ledger.WaitStats(); waits == 0 {
		t.Fatal("REDIS_WAIT_REPLICAS=auto with a replica: the buy sent no WAIT")
	}

	pair.Freeze(t)
	for _, sh := range buyers[1:3] {
		if code, status := buy(sh); code != 202 || status != "unconfirmed" {
			t.Errorf("with the replica frozen: %d %q, want 202 unconfirmed", code, status)
		}
	}
	if left, _, _ := s.Srv.Ledger.Left(ctx, item.ID); left != 7 {
		t.Errorf("%d left on the master, want 7: an unconfirmed buy has taken its unit", left)
	}
	// The unconfirmed buyers' orders are made from the stream, as every buyer's.
	for _, sh := range buyers[1:3] {
		testenv.EventuallySaw(t, 30*time.Second, "an unconfirmed buyer's result", func() (bool, string) {
			r, err := s.Srv.Ledger.ResultOf(ctx, item.ID, sh.id)
			return err == nil && r.Status == stock.ResultSuccess, fmt.Sprintf("%+v %v", r, err)
		})
	}

	pair.Thaw(t)
	testenv.Eventually(t, 10*time.Second, "the replica caught up", func() bool { return testenv.ReplicaAcknowledges(ctx, master) })
	if code, status := buy(buyers[3]); code != 202 || status != "queued" {
		t.Errorf("with the replica back: %d %q, want 202 queued", code, status)
	}
}

// Review of issue 36 (rev36). REDIS_WAIT_REPLICAS=auto (the default) counted the replicas once, at
// start: a shop that started while its replica was away (restarting, resyncing) never WAITed, for the
// rest of its life, once the replica was back. Now it asks again until it sees one.
func TestAutoWaitsForAReplicaThatCameLater(t *testing.T) {
	master, _ := testenv.RedisServer(t, "master", "--repl-diskless-sync-delay", "0")
	s := startLive(t, liveOpts{rdb: master, tune: func(c *Config) {
		c.RateLimitIP = false
		c.RedisWaitReplicas = RedisWaitAuto
		c.RedisWaitTimeout = 150 * time.Millisecond
	}})
	ctx := context.Background()
	now := s.Clock.Now()
	_, item := testenv.Sale(t, s.DB, 10, now.Add(-time.Minute), now.Add(time.Hour))
	if _, err := s.Srv.Ledger.Preheat(ctx, jobs.DBBooks{DB: s.DB}, item.ID); err != nil {
		t.Fatal(err)
	}
	buyers := makeShoppers(t, s, "rev36auto", 2)
	buy := func(sh shopper) int {
		t.Helper()
		req, _ := http.NewRequest("POST", fmt.Sprintf("%s/api/items/%d/buy/%s", s.URL, item.ID, issuePath(t, s, item.ID, sh.id)), nil)
		req.Header.Set("Cookie", sh.cookie)
		req.Header.Set(handlers.CSRFHeader, sh.csrf)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := buy(buyers[0]); code != 202 {
		t.Fatalf("buy: %d", code)
	}
	// The replica is back (started now, as after its restart) and in sync.
	_, port, _ := net.SplitHostPort(master.Options().Addr)
	replica, _ := testenv.RedisServer(t, "replica", "--replicaof", "127.0.0.1", port)
	testenv.Eventually(t, 20*time.Second, "the replica in sync", func() bool {
		return strings.Contains(replica.Info(ctx, "replication").Val(), "master_link_status:up") &&
			master.Wait(ctx, 1, 100*time.Millisecond).Val() == 1
	})
	if code := buy(buyers[1]); code != 202 {
		t.Fatalf("buy: %d", code)
	}
	if waits, _ := s.Srv.Ledger.WaitStats(); waits == 0 {
		t.Errorf("REDIS_WAIT_REPLICAS=auto: the replica has been back and in sync, and the buy sent no WAIT (auto was decided once, at start, with no replica)")
	}
}
