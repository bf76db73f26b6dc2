package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"seckill/handlers"
	"seckill/internal/testenv"
	"seckill/jobs"
	"seckill/stock"
)

// A join of the waiting room is a promise as a buy is: with the Redis replica up it answers the shopper's
// standing as ever; with the replica frozen (SIGSTOP) it is never answered as a plain "you're in line"
// but with "unconfirmed": true (the page says the place is not confirmed yet), and not as an error: the
// place is on the master, and the shopper's standing holds it. Thawed, joins are plain again.
func TestJoinIsAnsweredUnconfirmedWhileTheReplicaIsSilent(t *testing.T) {
	pair := testenv.StartReplicaPair(t)
	db := testenv.Postgres(t)
	_, item := queueSale(t, db, nil, 3)
	s := startLive(t, liveOpts{db: db, rdb: pair.Master, only: []string{"queue", "sold_out_flags", "preheat"}, tune: func(c *Config) {
		c.RateLimitIP = false
		c.RedisWaitReplicas = 1
		c.RedisWaitTimeout = 150 * time.Millisecond
	}})
	ctx := context.Background()
	if _, err := s.Srv.Ledger.Preheat(ctx, jobs.DBBooks{DB: db}, item.ID); err != nil {
		t.Fatal(err)
	}
	shoppers := make([]*browser, 3)
	for i := range shoppers {
		shoppers[i] = newBrowser(t, s.URL)
		shoppers[i].register("joinwait_"+itoa(int64(i)), passwordOf("joinwait"))
	}
	join := func(b *browser) map[string]any {
		t.Helper()
		r := b.join(item.ID)
		if r.Status != 200 {
			t.Fatalf("join: %d %s, want 200 (never an error for a place taken)", r.Status, r.Body)
		}
		return r.json(t)
	}
	if q := join(shoppers[0]); q["state"] != "waiting" || q["unconfirmed"] != nil {
		t.Errorf("join with the replica up: %v, want waiting, not unconfirmed", q)
	}

	pair.Freeze(t)
	q := join(shoppers[1])
	pair.Thaw(t)
	if q["unconfirmed"] != true {
		t.Errorf("join with the replica frozen: %v, want \"unconfirmed\": true (not told they are in line as a promise)", q)
	}
	if q["state"] != "waiting" || q["ticket"] == nil {
		t.Errorf("join with the replica frozen: %v, want waiting with a ticket: the place is on the master", q)
	}

	testenv.Eventually(t, 10*time.Second, "the replica caught up", func() bool { return testenv.ReplicaAcknowledges(ctx, pair.Master) })
	if q := join(shoppers[2]); q["unconfirmed"] != nil {
		t.Errorf("join with the replica back: %v, want no unconfirmed", q)
	}
	// The shopper joined while it was frozen holds their ticket; joining again is acknowledged now.
	again := join(shoppers[1])
	if again["unconfirmed"] != nil || again["ticket"] != q["ticket"] {
		t.Errorf("the frozen joiner joins again: %v, want their ticket %v, acknowledged", again, q["ticket"])
	}
}

// An unconfirmed buy is not a queued one wherever the shop counts its answers: the live chart's series
// has it as unconfirmed, and /metrics as seckill_buys_unconfirmed_total.
func TestUnconfirmedBuysAreCountedApartFromQueued(t *testing.T) {
	pair := testenv.StartReplicaPair(t)
	s := startLive(t, liveOpts{rdb: pair.Master, tune: func(c *Config) {
		c.RateLimitIP = false
		c.RedisWaitReplicas = 1
		c.RedisWaitTimeout = 150 * time.Millisecond
	}})
	ctx := context.Background()
	now := s.Clock.Now()
	_, item := testenv.Sale(t, s.DB, 10, now.Add(-time.Minute), now.Add(time.Hour))
	if _, err := s.Srv.Ledger.Preheat(ctx, jobs.DBBooks{DB: s.DB}, item.ID); err != nil {
		t.Fatal(err)
	}
	buyers := makeShoppers(t, s, "countedapart", 3)
	buy := func(sh shopper) string {
		t.Helper()
		req, _ := http.NewRequest("POST", fmt.Sprintf("%s/api/items/%d/buy/%s", s.URL, item.ID, issuePath(t, s, item.ID, sh.id)), nil)
		req.Header.Set("Cookie", sh.cookie)
		req.Header.Set(handlers.CSRFHeader, sh.csrf)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var body struct{ Status string }
		_ = json.Unmarshal(b, &body)
		return fmt.Sprintf("%d %s", resp.StatusCode, body.Status)
	}
	if got := buy(buyers[0]); got != "202 queued" {
		t.Fatalf("with the replica up: %s", got)
	}
	pair.Freeze(t)
	for _, sh := range buyers[1:] {
		if got := buy(sh); got != "202 unconfirmed" {
			t.Errorf("with the replica frozen: %s, want 202 unconfirmed", got)
		}
	}
	pair.Thaw(t)

	if err := s.Srv.Answers.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	points, err := s.Srv.Answers.Series(ctx, []int64{item.ID}, s.Clock.Now(), 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int64{}
	for _, p := range points {
		for k, n := range p.Counts {
			counts[k] += n
		}
	}
	if counts[stock.AnswerQueued] != 1 || counts[stock.AnswerUnconfirmed] != 2 {
		t.Errorf("the live chart's answers: %v, want 1 queued and 2 unconfirmed", counts)
	}
	rec := httptest.NewRecorder()
	s.Srv.Metrics.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if !strings.Contains(rec.Body.String(), "\nseckill_buys_unconfirmed_total 2\n") {
		t.Errorf("/metrics has no seckill_buys_unconfirmed_total 2:\n%s", grepLines(rec.Body.String(), "seckill_buys_unconfirmed"))
	}
}
