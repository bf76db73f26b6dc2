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

// A buyer answered 202 on the old master with a unit borrowed from another shard (their home shard was
// empty) keeps it after a failover that lost their take: the replay finds the home shard empty on the
// new master too, borrows from the other shard as the buy did, and the buyer reads queued, the unit off
// the item's stock. Found by the outside review of issue 36: the replay looked at the home shard only and
// told the buyer the buy was lost, while the other shard's unit went to the next shopper. A second replay
// changes nothing.
func TestBuyerWhoBorrowedKeepsTheUnitAfterAFailover(t *testing.T) {
	ctx := context.Background()
	db := testenv.Postgres(t)
	pair := testenv.StartReplicaPair(t)
	_, item := testenv.Sale(t, db, 2, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	if err := db.Exec("UPDATE items SET stock_shards = 2 WHERE id = ?", item.ID).Error; err != nil {
		t.Fatal(err)
	}
	old := testenv.Ledger(pair.Master, time.Now)
	if _, err := old.Preheat(ctx, jobs.DBBooks{DB: db}, item.ID); err != nil {
		t.Fatal(err)
	}
	if n, _ := old.Shards(ctx, item.ID); n != 2 {
		t.Fatalf("shards %d, want 2", n)
	}
	users := testenv.Users(t, db, "replayshard", 8)
	var home0 []int // users whose home shard is 0
	for i, u := range users {
		if stock.HomeShard(u.ID, 2) == 0 {
			home0 = append(home0, i)
		}
	}
	if len(home0) < 2 {
		t.Fatalf("%d of 8 consecutive users live in shard 0, want at least 2", len(home0))
	}
	y, x := home0[0], home0[1]
	buy := func(l *stock.Ledger, i int, orderNo string) {
		t.Helper()
		tok, _ := auth.RandomToken(16)
		if err := l.IssuePath(ctx, item.ID, users[i].ID, tok); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Take(ctx, item.ID, users[i].ID, tok, orderNo); err != nil {
			t.Fatal(err)
		}
	}
	// Y takes shard 0's unit; the replica has it.
	buy(old, y, "SK-replayshard-Y")
	testenv.Eventually(t, 10*time.Second, "the replica has the first take", func() bool {
		return testenv.ReplicaAcknowledges(ctx, pair.Master)
	})
	// The replica is promoted; the old master, not told yet, answers X a unit borrowed from shard 1.
	if err := pair.Replica.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	buy(old, x, "SK-replayshard-X")
	promoted := testenv.Ledger(pair.Replica, time.Now)
	if r, err := promoted.ResultOf(ctx, item.ID, users[x].ID); err != nil || r.Status != stock.ResultNone {
		t.Fatalf("the promoted replica knows X already (%+v, %v): the test proves nothing", r, err)
	}
	if left, complete, err := promoted.Left(ctx, item.ID); err != nil || !complete || left != 1 {
		t.Fatalf("the new master has %d units left (complete %v, %v) before the replay, want shard 1's one", left, complete, err)
	}

	got, err := stock.ReplayOnto(ctx, old, promoted, jobs.DBBooks{DB: db})
	if err != nil || got != (stock.Replayed{Kept: 1, Restored: 1}) {
		t.Errorf("replay: %+v, %v; want Y's take kept and X's restored", got, err)
	}
	if r, err := promoted.ResultOf(ctx, item.ID, users[x].ID); err != nil || r.Status != stock.ResultQueued {
		t.Errorf("X, answered 202 on the old master, reads %+v, %v on the new one; want queued", r, err)
	}
	if left, _, _ := promoted.Left(ctx, item.ID); left != 0 {
		t.Errorf("the new master has %d units left over its shards after the replay, want 0 (X's unit taken)", left)
	}
	// Again: nothing changes.
	if got, err := stock.ReplayOnto(ctx, old, promoted, jobs.DBBooks{DB: db}); err != nil || got != (stock.Replayed{Kept: 2}) {
		t.Errorf("a second replay: %+v, %v; want both kept", got, err)
	}
	if left, _, _ := promoted.Left(ctx, item.ID); left != 0 {
		t.Errorf("the new master has %d units left after a second replay, want 0", left)
	}
	msgs, err := pair.Replica.XRange(ctx, stock.ShardKeys(item.ID, 0).Stream, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[1].Values["order_no"] != "SK-replayshard-X" {
		t.Errorf("home shard's order messages on the new master: %v; want Y's and then X's, once", msgs)
	}
}
