package stock_test

import (
	"context"
	"testing"

	"seckill/auth"
	"seckill/errs"
)

// A buy's address names any item: buys of made-up items leave no batch group behind (before, one each,
// for ever), while a loaded sale's buys keep theirs.
func TestMadeUpItemsLeaveNoGroups(t *testing.T) {
	r := newShardRig(t, 10, 2)
	if err := r.buy(1, "SK-groups-1"); err != nil {
		t.Fatal(err)
	}
	kept := r.ledger.Groups()
	if kept == 0 {
		t.Fatal("a loaded sale's buy kept no group: its buyers would not be batched")
	}
	ctx := context.Background()
	for i := range 500 {
		tok, _ := auth.RandomToken(16)
		if _, err := r.ledger.Take(ctx, 1_000_000+int64(i), 7, tok, "SK-junk"); err == nil || errs.Code(err) == errs.Internal {
			t.Fatalf("a buy of a made-up item: %v", err)
		}
	}
	if n := r.ledger.Groups(); n != kept {
		t.Errorf("500 buys of made-up items: %d groups kept, want %d", n, kept)
	}
}
