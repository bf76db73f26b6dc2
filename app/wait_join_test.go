package app

import (
	"context"
	"testing"
	"time"

	"seckill/internal/testenv"
	"seckill/jobs"
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
