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

// A replica promoted after its master answered takes it never received (the partition's heal: a replica
// that acknowledged them, then followed the new master and dropped them) gets them again from the journal
// of the instance that answered: the buyer's result is queued on the new master, the order message is
// queued under the number the buyer was answered for, and the unit is off the count. A take the new master
// has no unit left for is counted lost, and a replay twice changes nothing.
func TestJournalledTakesComeBackOnAPromotedReplica(t *testing.T) {
	ctx := context.Background()
	db := testenv.Postgres(t)
	pair := testenv.StartReplicaPair(t)
	_, item := testenv.Sale(t, db, 2, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	old := testenv.Ledger(pair.Master, time.Now)
	if _, err := old.Preheat(ctx, jobs.DBBooks{DB: db}, item.ID); err != nil {
		t.Fatal(err)
	}
	users := testenv.Users(t, db, "journal", 3)
	buy := func(l *stock.Ledger, i int, orderNo string) error {
		tok, _ := auth.RandomToken(16)
		if err := l.IssuePath(ctx, item.ID, users[i].ID, tok); err != nil {
			t.Fatal(err)
		}
		_, err := l.Take(ctx, item.ID, users[i].ID, tok, orderNo)
		return err
	}
	if err := buy(old, 0, "SK-journal-1"); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "the replica has the first take", func() bool {
		return testenv.ReplicaAcknowledges(ctx, pair.Master)
	})
	// The replica is promoted; the old master, not told yet, answers a second buyer the last unit.
	if err := pair.Replica.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	if err := buy(old, 1, "SK-journal-2"); err != nil {
		t.Fatal(err)
	}
	promoted := testenv.Ledger(pair.Replica, time.Now)
	if r, err := promoted.ResultOf(ctx, item.ID, users[1].ID); err != nil || r.Status != stock.ResultNone {
		t.Fatalf("the promoted replica knows the second buyer already (%+v, %v): the test proves nothing", r, err)
	}

	got, err := stock.ReplayOnto(ctx, old, promoted, jobs.DBBooks{DB: db})
	if err != nil || got != (stock.Replayed{Kept: 1, Restored: 1}) {
		t.Fatalf("replay: %+v, %v; want the first take kept and the second restored", got, err)
	}
	if r, err := promoted.ResultOf(ctx, item.ID, users[1].ID); err != nil || r.Status != stock.ResultQueued {
		t.Errorf("the second buyer's result on the new master: %+v, %v; want queued", r, err)
	}
	msgs, err := pair.Replica.XRange(ctx, stock.KeysOf(item.ID).Stream, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	var numbers []string
	for _, m := range msgs {
		numbers = append(numbers, m.Values["order_no"].(string))
	}
	if len(numbers) != 2 || numbers[0] != "SK-journal-1" || numbers[1] != "SK-journal-2" {
		t.Errorf("the new master's order messages: %v; want SK-journal-1 and SK-journal-2", numbers)
	}
	if left, _ := pair.Replica.HGet(ctx, stock.KeysOf(item.ID).Sale, "left").Int(); left != 0 {
		t.Errorf("the new master has %d units left, want 0", left)
	}
	// Again: nothing changes, nothing is queued twice.
	if got, err := stock.ReplayOnto(ctx, old, promoted, jobs.DBBooks{DB: db}); err != nil || got != (stock.Replayed{Kept: 2}) {
		t.Errorf("a second replay: %+v, %v; want both kept", got, err)
	}

	// A new master that sold the unit meanwhile to someone else cannot keep the promise: counted lost.
	_, item2 := testenv.Sale(t, db, 1, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	if _, err := promoted.Preheat(ctx, jobs.DBBooks{DB: db}, item2.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Preheat(ctx, jobs.DBBooks{DB: db}, item2.ID); err != nil {
		t.Fatal(err)
	}
	item = item2
	if err := buy(old, 0, "SK-journal-3"); err != nil {
		t.Fatal(err)
	}
	if err := buy(promoted, 2, "SK-journal-4"); err != nil {
		t.Fatal(err)
	}
	if got, err := stock.ReplayOnto(ctx, old, promoted, jobs.DBBooks{DB: db}); err != nil || got.Lost != 1 {
		t.Errorf("replay onto a master that sold the promised unit: %+v, %v; want one lost", got, err)
	}
	if r, err := promoted.ResultOf(ctx, item2.ID, users[0].ID); err != nil || r.Status != stock.ResultFailed || r.Reason != stock.ResultLost || r.Message == "" {
		t.Errorf("the buyer whose promised unit was sold on the new master reads %+v, %v; want failed, lost, with a message", r, err)
	}
	// A unit comes back (an unpaid order cancelled) and the books are checked again: the buyer told lost,
	// who may have gone, is not handed an order after all, nor counted lost a second time.
	if err := pair.Replica.HIncrBy(ctx, stock.KeysOf(item2.ID).Sale, "left", 1).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := stock.ReplayOnto(ctx, old, promoted, jobs.DBBooks{DB: db}); err != nil || got.Lost != 0 || got.Restored != 0 {
		t.Errorf("a replay after the buyer was told lost: %+v, %v; want nothing restored, nothing lost again", got, err)
	}
	if r, err := promoted.ResultOf(ctx, item2.ID, users[0].ID); err != nil || r.Status != stock.ResultFailed || r.Reason != stock.ResultLost {
		t.Errorf("the buyer told lost reads %+v, %v after the replay; want failed, lost still", r, err)
	}
}
