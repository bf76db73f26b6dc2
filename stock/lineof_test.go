package stock_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"seckill/stock"
)

// The line's public view counts the held and the re-admissions: a turn that ends sold out is held, and
// letting it in again when a unit comes back counts once; an order that fails holds its shopper too.
func TestLineOfCountsHeldAndReadmitted(t *testing.T) {
	r := newRoomRig(t, 2, 1, 6)
	ctx := context.Background()
	r.joinAllAndDraw(t)
	byPlace := r.byPlace(t)
	view := func() stock.LineState {
		t.Helper()
		st, err := r.line.LineOf(ctx, r.item.ID)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	if v := view(); v.State != stock.RoomDrawn || v.Cursor != 0 || v.Held != 0 || v.Readmitted != 0 || !v.LeftKnown || v.Left != 2 {
		t.Fatalf("after the draw: %+v", v)
	}
	a := stock.Admission{Overbook: 1.5, Rate: 1000, Turn: 30 * time.Second}
	r.admit(t, a) // places 1 to 3
	for i, u := range byPlace[:2] {
		_, p := r.place(t, u)
		if _, err := r.ledger.Take(ctx, r.item.ID, u, p.Path, "SKh"+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	r.clock.add(33 * time.Second)
	r.admit(t, a) // place 3's turn ends sold out: held
	if v := view(); v.Cursor != 3 || v.Held != 1 || v.Readmitted != 0 || v.Left != 0 {
		t.Fatalf("a turn ended sold out: %+v, want cursor 3, 1 held, none readmitted, none left", v)
	}
	if _, err := r.ledger.Restock(ctx, r.item.ID, "SKh0"); err != nil {
		t.Fatal(err)
	}
	r.admit(t, a) // 1 left × 1.5: place 3 again, nobody new
	if v := view(); v.Cursor != 3 || v.Held != 0 || v.Readmitted != 1 || v.Left != 1 {
		t.Fatalf("a unit back: %+v, want cursor 3, none held, 1 readmitted, 1 left", v)
	}
	// Place 2's order fails: held below the cursor until let in again.
	r.rdb.SRem(ctx, stock.KeysOf(r.item.ID).Buyers, byPlace[1])
	if err := r.line.BackInLine(ctx, r.item.ID, byPlace[1]); err != nil {
		t.Fatal(err)
	}
	if v := view(); v.Held != 1 || v.Readmitted != 1 {
		t.Fatalf("an order failed: %+v, want 1 held, 1 readmitted", v)
	}
}
