package stock_test

import (
	"context"
	"testing"
	"time"

	"seckill/stock"
)

// What a shopper is told for each standing: the waiting room's rules, without Redis.
func TestTellEveryStanding(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	pausedAt := now.Add(-time.Minute)
	line := stock.RoomView{Room: stock.Room{State: stock.RoomDrawn, Cursor: 10}, Rate: 20, Measured: true, MaxRate: 50}
	turn := func(ends time.Time) stock.Place {
		return stock.Place{Ticket: "t", Place: 7, Path: "p", TurnEnds: ends}
	}
	waiting := stock.Place{Ticket: "t", Place: 111}
	type want struct {
		state         string
		place         int64
		ahead, wait   int64
		hasAhead, has bool // has: a wait estimate
		path          string
	}
	for _, c := range []struct {
		name  string
		p     stock.Place
		v     stock.RoomView
		scene stock.Scene
		want  want
	}{
		{"not in the line", stock.Place{}, line, stock.Scene{Now: now}, want{state: stock.LineOut}},
		{"bought (the room saw the buy)", stock.Place{Ticket: "t", Place: 3, Bought: true}, line, stock.Scene{Now: now},
			want{state: stock.LineBought, place: 3}},
		{"bought (the turn was settled so)", stock.Place{Ticket: "t", Place: 3, Path: "p", Done: stock.TurnBought}, line,
			stock.Scene{Now: now}, want{state: stock.LineBought, place: 3}},
		{"a turn running", turn(now.Add(time.Minute)), line, stock.Scene{Now: now},
			want{state: stock.LineTurn, place: 7, path: "p"}},
		{"a turn running when nothing is left", turn(now.Add(time.Minute)), line, stock.Scene{Now: now, SoldOut: true},
			want{state: stock.LineSoldOut, place: 7}},
		{"a turn that ended within its grace", turn(now.Add(-stock.TurnGrace / 2)), line, stock.Scene{Now: now},
			want{state: stock.LineTurn, place: 7, path: "p"}},
		{"a turn past its grace", turn(now.Add(-stock.TurnGrace)), line, stock.Scene{Now: now},
			want{state: stock.LineMissed, place: 7}},
		{"a turn the pause interrupted", turn(now.Add(-10 * time.Second)), line,
			stock.Scene{Now: now, Paused: true, PausedAt: &pausedAt}, want{state: stock.LineTurn, place: 7, path: "p"}},
		{"a turn that ended before the pause", turn(pausedAt.Add(-time.Second)), line,
			stock.Scene{Now: now, Paused: true, PausedAt: &pausedAt}, want{state: stock.LineMissed, place: 7}},
		{"a turn that ended with nothing left", turn(now.Add(-time.Minute)), line, stock.Scene{Now: now, SoldOut: true},
			want{state: stock.LineSoldOut, place: 7}},
		{"a turn settled as missed", stock.Place{Ticket: "t", Place: 7, Path: "p", Done: stock.TurnMissed}, line,
			stock.Scene{Now: now}, want{state: stock.LineMissed, place: 7}},
		{"in the draw, before it is written", stock.Place{Ticket: "t"}, stock.RoomView{Room: stock.Room{State: stock.RoomOpen}},
			stock.Scene{Now: now}, want{state: stock.LineWaiting}},
		{"waiting: the line's measured rate", waiting, line, stock.Scene{Now: now},
			want{state: stock.LineWaiting, place: 111, ahead: 100, hasAhead: true, wait: 5, has: true}},
		{"waiting: not seen moving yet", waiting, stock.RoomView{Room: line.Room, MaxRate: 50}, stock.Scene{Now: now},
			want{state: stock.LineWaiting, place: 111, ahead: 100, hasAhead: true, wait: 2, has: true}},
		{"waiting: standing still a moment", waiting, stock.RoomView{Room: line.Room, Measured: true, Rate: 0.001, MaxRate: 50},
			stock.Scene{Now: now}, want{state: stock.LineWaiting, place: 111, ahead: 100, hasAhead: true, wait: 2, has: true}},
		{"waiting at the front", stock.Place{Ticket: "t", Place: 11}, line, stock.Scene{Now: now},
			want{state: stock.LineWaiting, place: 11, hasAhead: true, has: true}},
		{"waiting when nothing is left: the place is kept", waiting, line, stock.Scene{Now: now, SoldOut: true},
			want{state: stock.LineSoldOut, place: 111, ahead: 100, hasAhead: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := stock.Tell(c.p, c.v, c.scene)
			g := want{state: got.State, place: got.Place, ahead: got.Ahead, wait: got.Wait, hasAhead: got.HasAhead, has: got.HasWait, path: got.Path}
			if g != c.want {
				t.Errorf("told %+v, want %+v", g, c.want)
			}
			if got.State != stock.LineOut && got.Ticket != "t" {
				t.Errorf("ticket %q, want the shopper's", got.Ticket)
			}
			if got.State == stock.LineTurn && !got.TurnEnds.Equal(c.p.TurnEnds) {
				t.Errorf("the turn ends %v, want %v", got.TurnEnds, c.p.TurnEnds)
			}
		})
	}
}

// A shopper waiting behind the front is answered from memory after the first poll (the crowd's polls cost
// no Redis), the room's view lives a quarter of a second, and joining again forgets the place.
func TestWatchAnswersTheWaitingFromMemory(t *testing.T) {
	r := newRoomRig(t, 5, 1, 20)
	ctx := context.Background()
	r.joinAllAndDraw(t)
	if _, err := r.line.Admit(ctx, r.item.ID, stock.Admission{Overbook: 1, Rate: 100, Turn: time.Minute}); err != nil {
		t.Fatal(err)
	}
	w := stock.NewWatch(r.line, stock.NewFlags(r.ledger, r.rdb, nil), 50)
	scene := stock.Scene{Now: r.clock.now(), Ends: r.window.Ends}
	byPlace := map[int64]int64{}
	for _, u := range r.users {
		told, err := w.Standing(ctx, r.item.ID, u, scene)
		if err != nil {
			t.Fatal(err)
		}
		byPlace[told.Place] = u
		switch {
		case told.Place <= 5 && told.State != stock.LineTurn:
			t.Errorf("place %d: %s, want your_turn", told.Place, told.State)
		case told.Place > 5 && (told.State != stock.LineWaiting || told.Ahead != told.Place-6 || !told.LeftKnown):
			t.Errorf("place %d: %+v, want waiting with %d ahead, read from Redis", told.Place, told, told.Place-6)
		}
	}
	last := byPlace[20]
	// Redis goes away: the waiting shopper is still told where they stand, the one let in is not.
	if err := r.rdb.FlushDB(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	told, err := w.Standing(ctx, r.item.ID, last, scene)
	if err != nil || told.State != stock.LineWaiting || told.Place != 20 || told.Ahead != 14 || told.LeftKnown {
		t.Errorf("from memory: %+v %v, want waiting at 20 with 14 ahead", told, err)
	}
	if told, err := w.Standing(ctx, r.item.ID, byPlace[1], scene); err != nil || told.State != stock.LineOut {
		t.Errorf("a turn is read from Redis: %+v %v, want out (Redis was emptied)", told, err)
	}
	time.Sleep(300 * time.Millisecond) // the room's view is stale: Redis is asked again
	if told, err := w.Standing(ctx, r.item.ID, last, scene); err != nil || told.State != stock.LineOut {
		t.Errorf("after the room's view went stale: %+v %v, want out", told, err)
	}
	ended := scene
	ended.Now = r.window.Ends
	if told, err := w.Standing(ctx, r.item.ID, last, ended); err != nil || told.State != stock.LineEnded {
		t.Errorf("at the end: %+v %v, want ended", told, err)
	}
}
