package catalog_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"seckill/catalog"
	"seckill/internal/testenv"
	"seckill/models"
)

// An instance whose subscription missed the message of a pause (it was reconnecting) still refuses the
// sale at its next look, however long it keeps its catalog: the stops' count in Redis changed. The same
// for the resume.
func TestStopsReachAnInstanceThatMissedTheMessage(t *testing.T) {
	db := testenv.Postgres(t)
	rdb := testenv.Redis(t)
	now := time.Now()
	act, item := testenv.Sale(t, db, 10, now.Add(-time.Minute), now.Add(time.Hour))
	cat := catalog.New(db, time.Now, time.Hour, slog.New(slog.DiscardHandler)) // a catalog that never goes stale
	stops := catalog.NewStops(cat, rdb, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go stops.Run(ctx)
	// Running: the catalog is built and the sale not paused.
	time.Sleep(700 * time.Millisecond)
	if stops.Paused(item.ID) {
		t.Fatal("paused before any pause")
	}

	// Another instance pauses it: the database and the count change; no message reaches this one.
	admin := testenv.Users(t, db, "stops_admin", 1)[0]
	if _, err := models.Stop(ctx, db, models.Actor{ID: admin.ID, Username: admin.Username}, act.ID, models.ActPause, "bots", time.Now(), nil); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Incr(ctx, catalog.StopsVersion).Err(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	testenv.Eventually(t, 10*time.Second, "the pause heard without its message", func() bool { return stops.Paused(item.ID) })
	t.Logf("paused here %v after the count changed", time.Since(start))

	// Resumed, again without a message.
	if _, err := models.Stop(ctx, db, models.Actor{ID: admin.ID, Username: admin.Username}, act.ID, models.ActResume, "fixed", time.Now(), nil); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Incr(ctx, catalog.StopsVersion).Err(); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "the resume heard without its message", func() bool { return !stops.Paused(item.ID) })
}
