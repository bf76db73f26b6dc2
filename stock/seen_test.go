package stock_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"seckill/errs"
	"seckill/internal/testenv"
	"seckill/stock"
)

// seenRules: turns of 30 s that wait 90 s to be seen, one let in per unit of stock.
var seenRules = stock.Admission{Overbook: 1, Rate: 1000, Turn: 30 * time.Second, SeenWithin: 90 * time.Second}

// look is the shopper's own page asking its standing (Watch.Standing does it so): the moment a turn is seen.
func (r *roomRig) look(t *testing.T, user int64) stock.Place {
	t.Helper()
	st, err := r.line.Look(context.Background(), r.item.ID, user)
	if err != nil {
		t.Fatal(err)
	}
	return st.Place
}

// told is what the shopper's page is told of the place p now.
func (r *roomRig) told(p stock.Place) string {
	return stock.Tell(p, stock.RoomView{}, stock.Scene{Now: r.clock.now(), Ends: r.window.Ends}).State
}

// A turn let in while its page was in the background is given its full length from the page's first
// look, within the wait for it; meanwhile it holds its place in flight (nobody is let in in its stead),
// and a page that polls sees its turn at once and has it for its length, as before.
func TestATurnNotSeenRunsItsFullLengthFromTheFirstLook(t *testing.T) {
	r := newRoomRig(t, 2, 1, 4)
	ctx := context.Background()
	r.joinAllAndDraw(t)
	byPlace := r.byPlace(t)
	polling, away := byPlace[0], byPlace[1]
	if n := r.admit(t, seenRules); n != 2 {
		t.Fatalf("2 in stock: %d let in, want 2", n)
	}
	start := r.clock.now().Truncate(time.Millisecond) // as Redis keeps times
	if p := r.look(t, polling); r.told(p) != stock.LineTurn || !p.TurnEnds.Equal(start.Add(30*time.Second)) {
		t.Fatalf("the polling page's first look: %s until %v, want its turn until %v", r.told(p), p.TurnEnds, start.Add(30*time.Second))
	}
	// Past the polling page's turn and its grace: it is missed and the next in line is let in; the turn
	// not seen holds its place (nobody is let in for it).
	r.clock.add(40 * time.Second)
	if n := r.admit(t, seenRules); n != 1 {
		t.Fatalf("40 s on: %d let in, want 1 (for the polling page's missed turn only)", n)
	}
	if _, p := r.place(t, polling); p.Done != stock.TurnMissed {
		t.Errorf("the polling page's turn 40 s on: done %q, want missed", p.Done)
	}
	if _, p := r.place(t, byPlace[2]); p.Path == "" {
		t.Errorf("the next in line was not let in for the missed turn")
	}
	if _, p := r.place(t, byPlace[3]); p.Path != "" {
		t.Errorf("a fourth was let in while the turn not seen holds its place: more in flight than the stock")
	}
	// StandingOf is not a look: it sees nothing.
	if _, p := r.place(t, away); p.TurnEnds.After(start.Add(30 * time.Second)) {
		t.Errorf("a read that is not a look moved the turn to %v", p.TurnEnds)
	}
	// The page comes back 40 s after its turn began: 30 s from now.
	seen := r.clock.now().Truncate(time.Millisecond)
	p := r.look(t, away)
	if r.told(p) != stock.LineTurn || !p.TurnEnds.Equal(seen.Add(30*time.Second)) {
		t.Fatalf("the first look 40 s into the turn: %s until %v, want the turn until %v", r.told(p), p.TurnEnds, seen.Add(30*time.Second))
	}
	// A second look gives nothing more.
	r.clock.add(5 * time.Second)
	if again := r.look(t, away); !again.TurnEnds.Equal(p.TurnEnds) {
		t.Errorf("a second look moved the turn from %v to %v", p.TurnEnds, again.TurnEnds)
	}
	// 20 s after the look (60 s after the turn began, past its first end): it still buys.
	r.clock.add(15 * time.Second)
	if n := r.admit(t, seenRules); n != 0 {
		t.Errorf("the seen turn running: %d let in", n)
	}
	if _, err := r.ledger.Take(ctx, r.item.ID, away, p.Path, "SKseen"); err != nil {
		t.Fatalf("the seen turn buys 20 s after its look: %v", err)
	}
	r.admit(t, seenRules)
	if room, p := r.place(t, away); p.Done != stock.TurnBought || room.Bought != 1 || room.LetIn != 3 {
		t.Errorf("after the buy: done %q, room %+v; want bought, 1 bought of 3 let in", p.Done, room)
	}
}

// A page that comes back after the wait finds its turn over: missed, and the next in line let in, as if
// the turn had been seen and let run out. A look between the wait's end and the line's next step gives
// nothing back either.
func TestATurnSeenAfterTheWaitHasEnded(t *testing.T) {
	r := newRoomRig(t, 1, 1, 3)
	ctx := context.Background()
	r.joinAllAndDraw(t)
	byPlace := r.byPlace(t)
	away := byPlace[0]
	if n := r.admit(t, seenRules); n != 1 {
		t.Fatalf("%d let in, want 1", n)
	}
	_, turn := r.place(t, away)
	// Past the turn's length, within the wait: still its place, nobody let in for it.
	r.clock.add(60 * time.Second)
	if n := r.admit(t, seenRules); n != 0 {
		t.Fatalf("60 s into a turn not seen: %d let in, want 0", n)
	}
	// The wait is over; the line has not stepped yet.
	r.clock.add(31 * time.Second)
	p := r.look(t, away)
	if r.told(p) != stock.LineMissed || !p.TurnEnds.Equal(turn.TurnEnds) {
		t.Errorf("a look 91 s into the turn: %s until %v, want missed, the turn as it was (%v)", r.told(p), p.TurnEnds, turn.TurnEnds)
	}
	if _, err := r.ledger.Take(ctx, r.item.ID, away, p.Path, "SKlate"); !errs.Is(err, errs.InvalidPath) {
		t.Errorf("the turn past its wait buys: %v, want invalid_path", err)
	}
	r.clock.add(3 * time.Second) // and the grace
	if n := r.admit(t, seenRules); n != 1 {
		t.Fatalf("the turn past its wait: %d let in, want 1 (the next in line)", n)
	}
	if room, p := r.place(t, away); p.Done != stock.TurnMissed || room.Missed != 1 {
		t.Errorf("the turn past its wait: done %q, %d missed; want missed, 1", p.Done, room.Missed)
	}
	if _, p := r.place(t, byPlace[1]); p.Path == "" {
		t.Errorf("the next in line was not let in")
	}
}

// An item split in shards: a turn's path lives in the shopper's home shard, which the look cannot write
// in the same command; the line's next step writes it with the turn's new end.
func TestATurnSeenLateInAnotherShardBuys(t *testing.T) {
	r := newRoomRig(t, 4, 2, 4)
	ctx := context.Background()
	r.joinAllAndDraw(t)
	if n := r.admit(t, seenRules); n != 4 {
		t.Fatalf("%d let in, want 4", n)
	}
	var away int64
	for _, u := range r.users {
		if stock.HomeShard(u, 2) == 1 {
			away = u
			break
		}
	}
	r.clock.add(50 * time.Second)
	p := r.look(t, away)
	if r.told(p) != stock.LineTurn {
		t.Fatalf("the first look 50 s into the turn: %s", r.told(p))
	}
	if _, err := r.ledger.Take(ctx, r.item.ID, away, p.Path, "SKearly"); !errs.Is(err, errs.InvalidPath) {
		t.Logf("before the line's next step the path in the other shard is the old one: %v", err)
	}
	r.admit(t, seenRules)
	r.clock.add(20 * time.Second)
	if _, err := r.ledger.Take(ctx, r.item.ID, away, p.Path, "SKshard"); err != nil {
		t.Fatalf("the seen turn buys from its home shard 20 s after its look: %v", err)
	}
}

// The demo's in-process Redis runs the looks as Redis does.
func TestALookRunsOnTheDemosRedis(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	c := &clock{t: time.Now()}
	ledger := testenv.Ledger(rdb, c.now)
	line := stock.NewLine(ledger)
	ctx := context.Background()
	const item = 8
	starts, ends := c.now().Add(time.Minute), c.now().Add(time.Hour)
	if err := rdb.HSet(ctx, stock.KeysOf(item).Sale, "left", 1, "total", 1, "starts", starts.UnixMilli(), "ends", ends.UnixMilli(),
		"price", 990, "activity", 1, "shards", 1).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := line.Join(ctx, item, 1, stock.Window{Opens: c.now(), Starts: starts, Ends: ends}); err != nil {
		t.Fatal(err)
	}
	c.add(2 * time.Minute)
	if drawn, err := line.Draw(ctx, item); !drawn || err != nil {
		t.Fatalf("draw: %v %v", drawn, err)
	}
	if n, err := line.Admit(ctx, item, seenRules); n != 1 || err != nil {
		t.Fatalf("admit: %d %v", n, err)
	}
	c.add(45 * time.Second)
	st, err := line.Look(ctx, item, 1)
	if want := c.now().Add(30 * time.Second).Truncate(time.Millisecond); err != nil || !st.Place.TurnEnds.Equal(want) {
		t.Fatalf("a look 45 s into the turn: %v until %v, want until %v", err, st.Place.TurnEnds, want)
	}
	c.add(20 * time.Second)
	if _, err := ledger.Take(ctx, item, 1, st.Place.Path, "SKdemo"+strconv.Itoa(1)); err != nil {
		t.Fatalf("the seen turn buys: %v", err)
	}
}

// A pause moves the wait as it moves the turn: a page that comes back after a pause longer than the wait
// (the line stood still meanwhile) still gets its turn.
func TestAPauseMovesTheWaitToBeSeen(t *testing.T) {
	r := newRoomRig(t, 1, 1, 2)
	ctx := context.Background()
	r.joinAllAndDraw(t)
	away := r.byPlace(t)[0]
	if n := r.admit(t, seenRules); n != 1 {
		t.Fatalf("%d let in, want 1", n)
	}
	r.clock.add(50 * time.Second)
	paused := r.clock.now()
	r.clock.add(2 * time.Minute) // paused two minutes: the line does not step
	if n, err := r.line.Resume(ctx, r.item.ID, paused, r.clock.now()); n != 1 || err != nil {
		t.Fatalf("resume: %d turns given their time back, %v; want 1", n, err)
	}
	r.clock.add(20 * time.Second) // 70 s of the wait used, the pause not counted
	if n := r.admit(t, seenRules); n != 0 {
		t.Fatalf("after the pause, within the wait: %d let in", n)
	}
	seen := r.clock.now().Truncate(time.Millisecond)
	p := r.look(t, away)
	if r.told(p) != stock.LineTurn || !p.TurnEnds.Equal(seen.Add(30*time.Second)) {
		t.Fatalf("the first look after the pause: %s until %v, want the turn until %v", r.told(p), p.TurnEnds, seen.Add(30*time.Second))
	}
	r.clock.add(10 * time.Second)
	if _, err := r.ledger.Take(ctx, r.item.ID, away, p.Path, "SKpaused"); err != nil {
		t.Fatalf("the turn seen after the pause buys: %v", err)
	}
}
