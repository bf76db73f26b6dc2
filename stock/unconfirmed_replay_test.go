package stock_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"seckill/auth"
	"seckill/internal/testenv"
	"seckill/jobs"
	"seckill/stock"
)

// An unconfirmed buyer whose take the replay after a failover could not take again (the new master had
// sold the unit meanwhile) reads failed, lost, and is counted in seckill_buys_unconfirmed_lost_total
// (UnconfirmedStats' lost) when the ledger settles its unconfirmed takes. Found by the outside review
// of issue 36: the settling counted the lost result the replay wrote as any other result, settled, and
// the metric missed exactly the buyers it is for.
func TestUnconfirmedBuyerTheReplayFoundLostIsCountedLost(t *testing.T) {
	ctx := context.Background()
	db := testenv.Postgres(t)
	oldRdb, _ := testenv.RedisServer(t, "old")
	newRdb, _ := testenv.RedisServer(t, "new")
	var master atomic.Value
	master.Store(oldRdb.Options().Addr)
	c := &clock{t: time.Now()}
	sell := testenv.Ledger(followingClient(t, &master), c.now)
	sell.WaitReplicas(1, 10*time.Millisecond) // the old master has no replica: every take is unconfirmed
	books := testenv.Ledger(newRdb, c.now)
	_, item := testenv.Sale(t, db, 1, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	for _, l := range []*stock.Ledger{sell, books} {
		if _, err := l.Preheat(ctx, jobs.DBBooks{DB: db}, item.ID); err != nil {
			t.Fatal(err)
		}
	}
	users := testenv.Users(t, db, "unconfreplay", 2)
	buyer, other := users[0].ID, users[1].ID
	buy := func(l *stock.Ledger, userID int64, orderNo string) bool {
		t.Helper()
		tok, _ := auth.RandomToken(16)
		if err := l.IssuePath(ctx, item.ID, userID, tok); err != nil {
			t.Fatal(err)
		}
		_, confirmed, err := l.TakeConfirmed(ctx, item.ID, userID, tok, orderNo)
		if err != nil {
			t.Fatal(err)
		}
		return confirmed
	}
	if buy(sell, buyer, "SK-unconfreplay-1") {
		t.Fatal("the take on a master without replica is confirmed: the test proves nothing")
	}
	// The new master never had the take, and sold its unit to another shopper.
	buy(books, other, "SK-unconfreplay-2")
	master.Store(newRdb.Options().Addr)
	if err := oldRdb.ClientKillByFilter(ctx, "TYPE", "normal").Err(); err != nil { // the old master is gone
		t.Fatal(err)
	}
	if got, err := stock.ReplayOnto(ctx, sell, books, jobs.DBBooks{DB: db}); err != nil || got != (stock.Replayed{Lost: 1}) {
		t.Fatalf("replay: %+v, %v; want the unconfirmed take lost", got, err)
	}

	c.add(stock.UnconfirmedGrace)
	noOrder := func(context.Context, string) (bool, error) { return false, nil }
	lost, settled, err := sell.SettleUnconfirmed(ctx, noOrder)
	if err != nil || lost != 1 || settled != 0 {
		t.Errorf("settling: %d lost, %d settled, %v; want the buyer the replay told lost counted lost", lost, settled, err)
	}
	if told, open, lost := sell.UnconfirmedStats(); told != 1 || open != 0 || lost != 1 {
		t.Errorf("unconfirmed stats: %d told, %d open, %d lost; want 1, 0, 1", told, open, lost)
	}
	if r, err := sell.ResultOf(ctx, item.ID, buyer); err != nil || r.Status != stock.ResultFailed || r.Reason != stock.ResultLost {
		t.Errorf("the buyer reads %+v, %v; want failed, lost", r, err)
	}
	// Settled once: a second look counts nothing more.
	c.add(stock.UnconfirmedGrace)
	if lost, settled, err := sell.SettleUnconfirmed(ctx, noOrder); err != nil || lost != 0 || settled != 0 {
		t.Errorf("settling again: %d lost, %d settled, %v; want nothing", lost, settled, err)
	}
}
