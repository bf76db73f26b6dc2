package app

import (
	"log/slog"
	"testing"
	"time"

	"seckill/catalog"
	"seckill/internal/testenv"
)

// The captcha pool is filled for the shoppers the sales about to start or running will bring, and for
// none of a sold-out item's: they get no purchase path, so no captcha, and drawing for them would take
// the server's CPU from the crowd being answered.
func TestCaptchaPoolDrawsForNoSoldOutItem(t *testing.T) {
	testenv.Long(t)
	db := testenv.Postgres(t)
	now := time.Now()
	_, running := testenv.Sale(t, db, 10, now.Add(-time.Minute), now.Add(time.Hour))
	_, soon := testenv.Sale(t, db, 5, now.Add(time.Minute), now.Add(time.Hour))
	testenv.Sale(t, db, 1000, now.Add(48*time.Hour), now.Add(49*time.Hour)) // beyond the lead
	shop := catalog.New(db, time.Now, time.Second, slog.New(slog.DiscardHandler))
	out := map[int64]bool{}
	soldOut := func(id int64) bool { return out[id] }
	if n := expectedShoppers(shop, soldOut, time.Now, time.Hour)(); n != (10+5)*shoppersPerUnit {
		t.Fatalf("expected %d shoppers, want %d (the two sales within the hour)", n, (10+5)*shoppersPerUnit)
	}
	out[running.ID] = true
	if n := expectedShoppers(shop, soldOut, time.Now, time.Hour)(); n != 5*shoppersPerUnit {
		t.Errorf("expected %d shoppers once item %d sold out, want %d", n, running.ID, 5*shoppersPerUnit)
	}
	out[soon.ID] = true
	if n := expectedShoppers(shop, soldOut, time.Now, time.Hour)(); n != 0 {
		t.Errorf("expected %d shoppers with everything sold out, want none", n)
	}
}
