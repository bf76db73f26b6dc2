package catalog_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"seckill/catalog"
	"seckill/errs"
	"seckill/internal/testenv"
	"seckill/jobs"
	"seckill/models"
)

// Ensure loads a sale Redis does not hold only when it may be bought now, and answers the buyer's refusal
// otherwise, in one order: unknown, not started, ended, then an admin's stops.
func TestEnsureLoadsOnlyASaleOnNow(t *testing.T) {
	db := testenv.Postgres(t)
	rdb := testenv.Redis(t)
	ctx := context.Background()
	now := time.Now()
	_, soon := testenv.Sale(t, db, 10, now.Add(time.Hour), now.Add(2*time.Hour))
	_, over := testenv.Sale(t, db, 10, now.Add(-2*time.Hour), now.Add(-time.Hour))
	pausedAct, paused := testenv.Sale(t, db, 10, now.Add(-time.Minute), now.Add(time.Hour))
	_, on := testenv.Sale(t, db, 7, now.Add(-time.Minute), now.Add(time.Hour))
	admin := testenv.Users(t, db, "ensure_admin", 1)[0]
	if _, err := models.Stop(ctx, db, models.Actor{ID: admin.ID, Username: admin.Username}, pausedAct.ID, models.ActPause, "bots", now, nil); err != nil {
		t.Fatal(err)
	}
	cat := catalog.New(db, time.Now, time.Hour, slog.New(slog.DiscardHandler))
	stops := catalog.NewStops(cat, rdb, slog.New(slog.DiscardHandler))
	if err := stops.Load(ctx); err != nil {
		t.Fatal(err)
	}
	ledger := testenv.Ledger(rdb, time.Now)
	l := &catalog.Loader{Catalog: cat, Stops: stops, Ledger: ledger, Books: jobs.DBBooks{DB: db}, Now: time.Now}
	for _, c := range []struct {
		name string
		item int64
		code string // "" loads it
	}{
		{"no such item", on.ID + 1000, errs.NotFound},
		{"not started", soon.ID, errs.NotStarted},
		{"ended", over.ID, errs.Ended},
		{"paused", paused.ID, errs.Paused},
		{"on now", on.ID, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := l.Ensure(ctx, c.item)
			if got := errs.Code(err); c.code != "" && got != c.code || c.code == "" && err != nil {
				t.Fatalf("Ensure: %v (%q), want %q", err, got, c.code)
			}
			left, complete, err := ledger.Left(ctx, c.item)
			if err != nil {
				t.Fatal(err)
			}
			if loaded := complete; loaded != (c.code == "") {
				t.Errorf("loaded into Redis: %v, want %v", loaded, c.code == "")
			}
			if c.code == "" && left != 7 {
				t.Errorf("%d left in Redis, want 7", left)
			}
		})
	}
}
