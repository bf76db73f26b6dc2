package jobs

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"seckill/internal/testenv"
	"seckill/stock"
)

// The reconciliation round settles the buys this instance answered unconfirmed: one whose order was made
// is forgotten; one a failover lost (gone from Redis: its mark, its order message, its unit back), once it
// is 30 s old, leaves its buyer the result failed, reason lost, and counts it.
func TestReconcilerTellsAnUnconfirmedBuyerTheirBuyWasLost(t *testing.T) {
	r := newRig(t, 10, 2)
	ctx := context.Background()
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	// A master with no replica and WAIT 1: every buy is answered unconfirmed.
	r.ledger = testenv.Ledger(r.rdb, clock)
	r.ledger.WaitReplicas(1, 10*time.Millisecond)
	for _, u := range r.users {
		if err := r.buy(t, u); err != nil {
			t.Fatal(err)
		}
	}
	if told, open, _ := r.ledger.UnconfirmedStats(); told != 2 || open != 2 {
		t.Fatalf("%d told unconfirmed, %d open; want 2 and 2", told, open)
	}
	// A failover loses the second buyer's take: the promoted replica never had it.
	lost := r.users[1]
	k := stock.KeysOf(r.item.ID)
	uid := strconv.FormatInt(lost.ID, 10)
	msgs, err := r.rdb.XRange(ctx, k.Stream, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if m.Values["user_id"] == uid {
			r.rdb.XDel(ctx, k.Stream, m.ID)
		}
	}
	r.rdb.SRem(ctx, k.Buyers, uid)
	r.rdb.HIncrBy(ctx, k.Sale, "left", 1)

	stop := run(r.consumer(r.db, "c"))
	r.waitDrained(t, 10*time.Second)
	stop()
	rec := r.reconciler()
	rec.rounds(t, 1)
	if _, open, n := r.ledger.UnconfirmedStats(); open != 2 || n != 0 {
		t.Errorf("before 30 s: %d open, %d lost; want both open, none lost (a consumer may still write the order)", open, n)
	}
	mu.Lock()
	now = now.Add(stock.UnconfirmedGrace)
	mu.Unlock()
	rec.rounds(t, 1)
	if _, open, n := r.ledger.UnconfirmedStats(); open != 0 || n != 1 {
		t.Errorf("after 30 s: %d open, %d lost; want none open, one lost", open, n)
	}
	if res, err := r.ledger.ResultOf(ctx, r.item.ID, lost.ID); err != nil || res.Status != stock.ResultFailed || res.Reason != stock.ResultLost {
		t.Errorf("the lost buyer reads %+v (%v), want failed, reason lost", res, err)
	}
	if res, _ := r.ledger.ResultOf(ctx, r.item.ID, r.users[0].ID); res.Status != stock.ResultSuccess {
		t.Errorf("the buyer whose order was made reads %+v, want success", res)
	}
	runs, err := rec.Runs.All(ctx)
	if err != nil || len(runs) != 1 || runs[0].Counts["unconfirmed_lost"] != 1 || runs[0].Counts["unconfirmed_settled"] != 1 {
		t.Errorf("the job's last run: %+v, %v; want 1 lost and 1 settled", runs, err)
	}
}
