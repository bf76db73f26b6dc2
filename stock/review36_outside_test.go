package stock_test

import (
	"context"
	"testing"
	"time"

	"seckill/auth"
	"seckill/internal/testenv"
	"seckill/jobs"
	"seckill/stock"
)

// Outside review of issue 36: a master restarted empty at its address (no persistence) wipes its
// replicas by full sync, so the "new master" has no sale keys at all. The failover check's Recheck finds
// the sale not loaded and does nothing; the journal replay then answers not_found for every take and counts
// them lost, though the buyers were answered 202 queued and their order messages went with the old
// master's stream (the order consumer had not written them yet). Expected: the sale is loaded from the
// database before the journal is replayed, and the journalled buyer is queued again on the new master.
func TestReviewJournalReplayOntoAMasterWithoutTheSale(t *testing.T) {
	ctx := context.Background()
	db := testenv.Postgres(t)
	oldRdb, _ := testenv.RedisServer(t, "old")
	newRdb, _ := testenv.RedisServer(t, "restarted")
	_, item := testenv.Sale(t, db, 5, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	old := testenv.Ledger(oldRdb, time.Now)
	if _, err := old.Preheat(ctx, jobs.DBBooks{DB: db}, item.ID); err != nil {
		t.Fatal(err)
	}
	users := testenv.Users(t, db, "rev36out", 1)
	tok, _ := auth.RandomToken(16)
	if err := old.IssuePath(ctx, item.ID, users[0].ID, tok); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Take(ctx, item.ID, users[0].ID, tok, "SK-rev36-out-1"); err != nil {
		t.Fatal(err)
	}
	// The master restarts empty (its replica resyncs from it, empty too): the new master has nothing.
	restarted := testenv.Ledger(newRdb, time.Now)
	if err := restarted.Recheck(ctx, jobs.DBBooks{DB: db}, item.ID); err != nil {
		t.Fatal(err)
	}
	got, err := stock.ReplayOnto(ctx, old, restarted, jobs.DBBooks{DB: db})
	if err != nil {
		t.Fatal(err)
	}
	if got.Lost != 0 {
		t.Errorf("replay onto a master that lost the whole sale: %+v; the buyer answered 202 queued is counted lost (their order message went with the old master)", got)
	}
	if r, err := restarted.ResultOf(ctx, item.ID, users[0].ID); err != nil || r.Status != stock.ResultQueued {
		t.Errorf("the buyer's result on the new master: %+v, %v; want queued (a 202 queued is a promise)", r, err)
	}
}
