package stock_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"seckill/auth"
	"seckill/internal/testenv"
	"seckill/jobs"
	"seckill/stock"
)

// A hold can last longer than the journal's two minutes (with one replica, until a replica is back): a
// buyer answered 202 shortly before the failover still gets their unit on the new master when the books
// are checked three minutes later. Found by the outside review of issue 36: the replay took the journal's
// last two minutes counted from the check, not from the hold's beginning, and skipped them.
func TestBuyerAnsweredBeforeALongHoldKeepsTheUnit(t *testing.T) {
	ctx := context.Background()
	db := testenv.Postgres(t)
	oldRdb, _ := testenv.RedisServer(t, "old")
	newRdb, _ := testenv.RedisServer(t, "new")
	c := &clock{t: time.Now()}
	sell := testenv.Ledger(oldRdb, c.now)
	books := testenv.Ledger(newRdb, c.now)
	_, item := testenv.Sale(t, db, 5, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	for _, l := range []*stock.Ledger{sell, books} {
		if _, err := l.Preheat(ctx, jobs.DBBooks{DB: db}, item.ID); err != nil {
			t.Fatal(err)
		}
	}
	users := testenv.Users(t, db, "longhold", 2)
	buy := func(i int, orderNo string) {
		t.Helper()
		tok, _ := auth.RandomToken(16)
		if err := sell.IssuePath(ctx, item.ID, users[i].ID, tok); err != nil {
			t.Fatal(err)
		}
		if _, err := sell.Take(ctx, item.ID, users[i].ID, tok, orderNo); err != nil {
			t.Fatal(err)
		}
	}
	// A take older than the journal's window when the hold began is not replayed: the window still ends.
	buy(1, "SK-longhold-old")
	c.add(stock.JournalKeep + 30*time.Second)
	buy(0, "SK-longhold-1")
	f := stock.NewFailover(sell, books, jobs.DBBooks{DB: db}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	// The old master is lost 10 s after the take, without it reaching the new one; the books are checked
	// 3 minutes after the take (the ledger's clock), the hold having lasted 170 s (the wall clock's, as the
	// watch measures it).
	c.add(3 * time.Minute)
	if err := f.CheckHeldFor(ctx, 170*time.Second); err != nil {
		t.Fatal(err)
	}
	if restored, lost := f.Replays(); restored != 1 || lost != 0 {
		t.Errorf("the check replayed %d takes, %d lost; want the buyer's take restored", restored, lost)
	}
	if r, err := books.ResultOf(ctx, item.ID, users[0].ID); err != nil || r.Status != stock.ResultQueued {
		t.Errorf("the buyer answered 202 before the hold reads %+v, %v on the new master; want queued", r, err)
	}
	if r, err := books.ResultOf(ctx, item.ID, users[1].ID); err != nil || r.Status != stock.ResultNone {
		t.Errorf("the buyer of a take older than the journal's window reads %+v, %v on the new master; want none (not replayed)", r, err)
	}
	if left, _, _ := books.Left(ctx, item.ID); left != 4 {
		t.Errorf("the new master has %d units left, want 4", left)
	}
}
