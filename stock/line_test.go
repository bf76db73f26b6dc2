package stock_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"seckill/errs"
	"seckill/internal/testenv"
	"seckill/jobs"
	"seckill/stock"
)

// roomRig is a queue sale of one item that starts a minute from the rig's clock, preheated, with users.
type roomRig struct {
	*shardRig
	line   *stock.Line
	window stock.Window
	users  []int64
}

func newRoomRig(t *testing.T, stockTotal int64, shards, users int) *roomRig {
	t.Helper()
	now := time.Now()
	r := &roomRig{shardRig: &shardRig{db: testenv.Postgres(t), rdb: testenv.Redis(t), clock: &clock{t: now}}}
	r.ledger = testenv.Ledger(r.rdb, r.clock.now)
	r.line = stock.NewLine(r.ledger)
	_, r.item = testenv.Sale(t, r.db, stockTotal, now.Add(time.Minute), now.Add(time.Hour))
	if err := r.db.Model(&r.item).Update("stock_shards", shards).Error; err != nil {
		t.Fatal(err)
	}
	if _, err := r.ledger.Preheat(context.Background(), jobs.DBBooks{DB: r.db}, r.item.ID); err != nil {
		t.Fatal(err)
	}
	r.window = stock.Window{Opens: now.Add(-time.Minute), Starts: now.Add(time.Minute), Ends: now.Add(time.Hour)}
	for i := range users {
		r.users = append(r.users, int64(1000+i))
	}
	return r
}

func (r *roomRig) join(t *testing.T, user int64) stock.Joined {
	t.Helper()
	j, err := r.line.Join(context.Background(), r.item.ID, user, r.window)
	if err != nil {
		t.Fatalf("user %d joins: %v", user, err)
	}
	return j
}

// joinAllAndDraw has every user join before the start, then starts the sale and writes the draw.
func (r *roomRig) joinAllAndDraw(t *testing.T) {
	t.Helper()
	for _, u := range r.users {
		r.join(t, u)
	}
	r.clock.add(2 * time.Minute)
	if drawn, err := r.line.Draw(context.Background(), r.item.ID); !drawn || err != nil {
		t.Fatalf("draw: %v %v", drawn, err)
	}
}

func (r *roomRig) place(t *testing.T, user int64) (stock.Room, stock.Place) {
	t.Helper()
	st, err := r.line.StandingOf(context.Background(), r.item.ID, user)
	if err != nil {
		t.Fatal(err)
	}
	return st.Room, st.Place
}

func (r *roomRig) admit(t *testing.T, a stock.Admission) int {
	t.Helper()
	n, err := r.line.Admit(context.Background(), r.item.ID, a)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// The draw: everyone who joined before the start is placed in the order of SHA-256(seed ‖ ticket), which
// anyone can check from the published record; joining twice keeps the first place; who joins after the
// start goes behind, in order of arrival.
func TestDrawPlacesEntrantsInTheRulesOrder(t *testing.T) {
	r := newRoomRig(t, 10, 1, 60)
	ctx := context.Background()
	tickets := map[int64]string{}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, u := range r.users[:50] { // fifty join at once, some twice
		wg.Go(func() {
			j, err := r.line.Join(ctx, r.item.ID, u, r.window)
			again, err2 := r.line.Join(ctx, r.item.ID, u, r.window)
			if err != nil || err2 != nil || j.Place != 0 || again.Ticket != j.Ticket {
				t.Errorf("user %d joins twice before the start: %+v %v, then %+v %v", u, j, err, again, err2)
			}
			mu.Lock()
			tickets[u] = j.Ticket
			mu.Unlock()
		})
	}
	wg.Wait()
	room, err := r.line.RoomOf(ctx, r.item.ID)
	if err != nil || room.State != stock.RoomOpen || room.Entrants != 50 || len(room.SeedHash) != 64 || room.Seed != "" {
		t.Fatalf("before the start the room is %+v, %v; want open with 50 entrants, a seed hash and no seed", room, err)
	}
	if drawn, err := r.line.Draw(ctx, r.item.ID); drawn || err != nil {
		t.Fatalf("a draw before the start: %v, %v", drawn, err)
	}

	r.clock.add(2 * time.Minute)
	for i, u := range r.users[50:55] { // the first to come after the start close the draw
		if j := r.join(t, u); j.Place != int64(51+i) {
			t.Errorf("late joiner %d got place %d, want %d", i, j.Place, 51+i)
		}
	}
	for range 3 { // every instance may draw, as often as it likes
		if drawn, err := r.line.Draw(ctx, r.item.ID); err != nil {
			t.Fatal(err)
		} else if !drawn {
			t.Fatal("the draw is not written after the start")
		}
	}
	room, _ = r.line.RoomOf(ctx, r.item.ID)
	if room.State != stock.RoomDrawn || stock.SeedHash(room.Seed) != room.SeedHash || room.Entrants != 50 {
		t.Fatalf("after the draw the room is %+v: want drawn, 50 entrants, and a seed whose SHA-256 is the published hash", room)
	}
	// The rule, from the record alone.
	users := r.users[:50]
	sort.Slice(users, func(i, j int) bool {
		return stock.DrawKey(room.Seed, tickets[users[i]]) < stock.DrawKey(room.Seed, tickets[users[j]])
	})
	drawn, err := r.line.DrawnTickets(ctx, r.item.ID)
	if err != nil || len(drawn) != 50 {
		t.Fatalf("drawn tickets: %d, %v", len(drawn), err)
	}
	for i, u := range users {
		if _, p := r.place(t, u); p.Place != int64(i+1) || p.Ticket != tickets[u] {
			t.Errorf("user %d has place %d, ticket %s; the rule gives place %d", u, p.Place, p.Ticket, i+1)
		}
		if drawn[i] != tickets[u] {
			t.Errorf("drawn ticket %d is %s, want %s", i, drawn[i], tickets[u])
		}
		if again := r.join(t, u); again.Place != int64(i+1) {
			t.Errorf("joining again after the draw moved user %d to %d", u, again.Place)
		}
	}
	if j := r.join(t, r.users[55]); j.Place != 56 {
		t.Errorf("a joiner after the draw got place %d, want 56", j.Place)
	}
}

// The line is let in from the front, at most stock left × overbooking at a time and no faster than the
// rate; a shopper let in buys with the path of their turn; a missed turn passes to the next in line;
// nobody is let in twice.
func TestLineMovesWithTheStock(t *testing.T) {
	r := newRoomRig(t, 4, 1, 20)
	ctx := context.Background()
	r.joinAllAndDraw(t)
	byPlace := make([]int64, len(r.users))
	for _, u := range r.users {
		_, p := r.place(t, u)
		byPlace[p.Place-1] = u
	}
	a := stock.Admission{Overbook: 1.5, Rate: 1000, Turn: 30 * time.Second}
	if n := r.admit(t, a); n != 6 {
		t.Fatalf("4 left × 1.5: %d let in, want 6", n)
	}
	if n := r.admit(t, a); n != 0 {
		t.Fatalf("a second step with 6 in flight let in %d more", n)
	}
	for i, u := range byPlace {
		room, p := r.place(t, u)
		if let := i < 6; let != (p.Path != "") || room.Cursor != 6 {
			t.Errorf("place %d: path %q, cursor %d; want a turn for the first 6 only", i+1, p.Path, room.Cursor)
		}
	}
	// The first three buy with their turns' paths; a path is theirs alone.
	for i, u := range byPlace[:3] {
		_, p := r.place(t, u)
		if _, err := r.ledger.Take(ctx, r.item.ID, byPlace[i+10], p.Path, "SKx"+strconv.Itoa(i)); !errs.Is(err, errs.InvalidPath) {
			t.Errorf("another user with place %d's path: %v, want invalid_path", i+1, err)
		}
		if _, err := r.ledger.Take(ctx, r.item.ID, u, p.Path, "SKq"+strconv.Itoa(i)); err != nil {
			t.Fatalf("place %d buys with its turn: %v", i+1, err)
		}
	}
	// 1 left: 1.5 may be in flight, and 3 are: nobody more.
	if n := r.admit(t, a); n != 0 {
		t.Errorf("1 left and 3 in flight: %d let in, want 0", n)
	}
	room, _ := r.place(t, byPlace[0])
	if room.Bought != 3 {
		t.Errorf("the room counts %d bought, want 3", room.Bought)
	}
	// The turns run out (and the grace for the instances' clocks): three missed, and the next in line
	// gets the unit left.
	r.clock.add(33 * time.Second)
	if n := r.admit(t, a); n != 1 {
		t.Fatalf("after the turns ran out, with 1 left: %d let in, want 1", n)
	}
	for i, u := range byPlace[3:7] {
		_, p := r.place(t, u)
		if want := []string{"missed", "missed", "missed", ""}[i]; p.Done != want || (i == 3) != (p.Path != "" && p.TurnEnds.After(r.clock.now())) {
			t.Errorf("place %d: done %q, path %q until %v; want done %q", i+4, p.Done, p.Path, p.TurnEnds, want)
		}
	}
	if _, p := r.place(t, byPlace[3]); p.Path != "" {
		if _, err := r.ledger.Take(ctx, r.item.ID, byPlace[3], p.Path, "SKlate"); !errs.Is(err, errs.InvalidPath) {
			t.Errorf("a missed turn's path still buys: %v", err)
		}
	}
	// A missed shopper who joins again goes to the back.
	if j := r.join(t, byPlace[3]); j.Place != 21 {
		t.Errorf("a missed shopper joining again got place %d, want 21 (the back)", j.Place)
	}
	// The last unit sold: nobody more is let in, and those waiting stay in line.
	_, p := r.place(t, byPlace[6])
	if _, err := r.ledger.Take(ctx, r.item.ID, byPlace[6], p.Path, "SKlast"); err != nil {
		t.Fatal(err)
	}
	if n := r.admit(t, a); n != 0 {
		t.Errorf("sold out: %d let in", n)
	}
	// A unit comes back (an unpaid order cancelled): the next in line gets it, not whoever asks.
	if _, err := r.ledger.Restock(ctx, r.item.ID, "SKq0"); err != nil {
		t.Fatal(err)
	}
	if n := r.admit(t, a); n != 1 {
		t.Fatalf("a unit back: %d let in, want 1", n)
	}
	if _, p := r.place(t, byPlace[7]); p.Path == "" {
		t.Errorf("the unit that came back did not go to place 8, the next in line")
	}
	// Nobody holds two turns: the places let in are each one user's, once.
	seen := map[int64]bool{}
	for _, u := range r.users {
		if _, p := r.place(t, u); p.Path != "" {
			if seen[u] {
				t.Errorf("user %d let in twice", u)
			}
			seen[u] = true
		}
	}
}

// The rate holds however many instances step the line at once.
func TestLineIsLetInNoFasterThanTheRate(t *testing.T) {
	r := newRoomRig(t, 1000, 1, 100)
	ctx := context.Background()
	r.joinAllAndDraw(t)
	a := stock.Admission{Overbook: 1.5, Rate: 10, Turn: 30 * time.Second}
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for range 8 {
		wg.Go(func() {
			n, err := r.line.Admit(ctx, r.item.ID, a)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			total += n
			mu.Unlock()
		})
	}
	wg.Wait()
	if total != 10 {
		t.Errorf("eight instances at once let in %d, want the rate's 10", total)
	}
	r.clock.add(500 * time.Millisecond)
	if n := r.admit(t, a); n != 5 {
		t.Errorf("half a second later: %d let in, want 5", n)
	}
}

// A sharded item: places live in the room, paths in each buyer's home shard, and buying works there.
func TestLineOfAShardedItem(t *testing.T) {
	r := newRoomRig(t, 8, 4, 8)
	ctx := context.Background()
	r.joinAllAndDraw(t)
	if n := r.admit(t, stock.Admission{Overbook: 1, Rate: 100, Turn: time.Minute}); n != 8 {
		t.Fatalf("8 left: %d let in, want 8", n)
	}
	var places []int64
	for i, u := range r.users {
		_, p := r.place(t, u)
		places = append(places, p.Place)
		if _, err := r.ledger.Take(ctx, r.item.ID, u, p.Path, fmt.Sprintf("SKs%d", i)); err != nil {
			t.Errorf("user %d (home shard %d) buys with its turn: %v", u, stock.HomeShard(u, 4), err)
		}
		if _, err := r.line.Join(ctx, r.item.ID, u, r.window); !errs.Is(err, errs.AlreadyBought) {
			t.Errorf("a buyer joins again: %v, want already_bought", err)
		}
	}
	slices.Sort(places)
	if places[0] != 1 || places[7] != 8 {
		t.Errorf("places %v, want 1 to 8", places)
	}
}

// The demo runs on an in-process Redis (miniredis): the waiting room's scripts must run there too, from
// joining to a buy with a turn.
func TestWaitingRoomRunsOnTheDemosRedis(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	c := &clock{t: time.Now()}
	ledger := testenv.Ledger(rdb, c.now)
	line := stock.NewLine(ledger)
	ctx := context.Background()
	const item = 7
	starts, ends := c.now().Add(time.Minute), c.now().Add(time.Hour)
	k := stock.KeysOf(item)
	if err := rdb.HSet(ctx, k.Sale, "left", 2, "total", 2, "starts", starts.UnixMilli(), "ends", ends.UnixMilli(),
		"price", 990, "activity", 1, "shards", 1).Err(); err != nil {
		t.Fatal(err)
	}
	w := stock.Window{Opens: c.now(), Starts: starts, Ends: ends}
	for u := int64(1); u <= 4; u++ {
		if _, err := line.Join(ctx, item, u, w); err != nil {
			t.Fatalf("join: %v", err)
		}
	}
	c.add(2 * time.Minute)
	if drawn, err := line.Draw(ctx, item); !drawn || err != nil {
		t.Fatalf("draw: %v %v", drawn, err)
	}
	if n, err := line.Admit(ctx, item, stock.Admission{Overbook: 1, Rate: 10, Turn: time.Minute}); n != 2 || err != nil {
		t.Fatalf("admit: %d %v, want 2", n, err)
	}
	bought := 0
	for u := int64(1); u <= 4; u++ {
		st, err := line.StandingOf(ctx, item, u)
		if err != nil {
			t.Fatal(err)
		}
		if st.Place.Path == "" {
			continue
		}
		if _, err := ledger.Take(ctx, item, u, st.Place.Path, "SKdemo"+strconv.FormatInt(u, 10)); err != nil {
			t.Fatalf("buy with a turn: %v", err)
		}
		bought++
	}
	if bought != 2 {
		t.Errorf("%d bought with their turns, want 2", bought)
	}
}

// Instances' clocks differ: one whose clock is behind must not refill the rate's bucket for the others.
func TestRateHoldsWhenClocksDiffer(t *testing.T) {
	r := newRoomRig(t, 1000, 1, 200)
	ctx := context.Background()
	r.joinAllAndDraw(t)
	behind := &clock{t: r.clock.now().Add(-time.Second)}
	other := stock.NewLine(testenv.Ledger(r.rdb, behind.now))
	a := stock.Admission{Overbook: 1.5, Rate: 10, Turn: time.Minute}
	total := 0
	for range 20 { // two seconds, two instances stepping in turn every 100 ms
		for _, l := range []*stock.Line{r.line, other} {
			n, err := l.Admit(ctx, r.item.ID, a)
			if err != nil {
				t.Fatal(err)
			}
			total += n
		}
		r.clock.add(100 * time.Millisecond)
		behind.add(100 * time.Millisecond)
	}
	if total > 31 { // a full bucket, then ten a second for two seconds
		t.Errorf("two instances a second apart let in %d in two seconds at 10 a second", total)
	}
}

// byPlace answers the rig's users in the order of their places.
func (r *roomRig) byPlace(t *testing.T) []int64 {
	t.Helper()
	out := make([]int64, len(r.users))
	for _, u := range r.users {
		_, p := r.place(t, u)
		out[p.Place-1] = u
	}
	return out
}

// A turn that runs out while nothing is left is not missed: its shopper keeps the place the page promised,
// and is let in first when a unit comes back, before the next in line.
func TestTurnsThatEndSoldOutKeepTheirPlaces(t *testing.T) {
	r := newRoomRig(t, 2, 1, 10)
	ctx := context.Background()
	r.joinAllAndDraw(t)
	byPlace := r.byPlace(t)
	a := stock.Admission{Overbook: 1.5, Rate: 1000, Turn: 30 * time.Second}
	if n := r.admit(t, a); n != 3 {
		t.Fatalf("2 left × 1.5: %d let in, want 3", n)
	}
	for i, u := range byPlace[:2] {
		_, p := r.place(t, u)
		if _, err := r.ledger.Take(ctx, r.item.ID, u, p.Path, "SKs"+strconv.Itoa(i)); err != nil {
			t.Fatalf("place %d buys: %v", i+1, err)
		}
	}
	// Sold out, and place 3's turn runs out with nothing to buy.
	r.clock.add(33 * time.Second)
	if n := r.admit(t, a); n != 0 {
		t.Fatalf("sold out: %d let in", n)
	}
	room, p := r.place(t, byPlace[2])
	if p.Done != "" || p.Path != "" || room.Missed != 0 {
		t.Errorf("place 3 after its turn ran out sold out: done %q, path %q, %d missed; want held (no outcome, no turn)", p.Done, p.Path, room.Missed)
	}
	if j := r.join(t, byPlace[2]); j.Place != 3 {
		t.Errorf("place 3 joining again got place %d, want to keep 3", j.Place)
	}
	// A unit comes back: place 3 gets it, not place 4.
	if _, err := r.ledger.Restock(ctx, r.item.ID, "SKs0"); err != nil {
		t.Fatal(err)
	}
	if n := r.admit(t, a); n != 1 {
		t.Fatalf("a unit back: %d let in, want 1", n)
	}
	if _, p := r.place(t, byPlace[2]); p.Path == "" || !p.TurnEnds.After(r.clock.now()) {
		t.Errorf("the unit that came back did not go to place 3, who held it: path %q until %v", p.Path, p.TurnEnds)
	}
	if _, p := r.place(t, byPlace[3]); p.Path != "" {
		t.Errorf("place 4 was let in before place 3, who held their place")
	}
}

// A shopper whose order failed (the consumer refused it) is not bought: they can join (and keep their
// place), and are let in again first.
func TestFailedOrderKeepsThePlace(t *testing.T) {
	r := newRoomRig(t, 4, 1, 10)
	ctx := context.Background()
	r.joinAllAndDraw(t)
	byPlace := r.byPlace(t)
	a := stock.Admission{Overbook: 1, Rate: 1000, Turn: 30 * time.Second}
	if n := r.admit(t, a); n != 4 {
		t.Fatalf("4 left: %d let in, want 4", n)
	}
	first := byPlace[0]
	_, p := r.place(t, first)
	if _, err := r.ledger.Take(ctx, r.item.ID, first, p.Path, "SKf"); err != nil {
		t.Fatal(err)
	}
	r.admit(t, a)
	if room, p := r.place(t, first); p.Done != "bought" || room.Bought != 1 {
		t.Fatalf("after buying: done %q, %d bought", p.Done, room.Bought)
	}
	// The order fails: its unit goes back on sale and its shopper back to their place (as the consumer
	// does when it refuses a message).
	if _, err := r.ledger.Restock(ctx, r.item.ID, "SKf"); err != nil {
		t.Fatal(err)
	}
	r.rdb.SRem(ctx, stock.KeysOf(r.item.ID).Buyers, first)
	if err := r.line.BackInLine(ctx, r.item.ID, first); err != nil {
		t.Fatal(err)
	}
	room, p := r.place(t, first)
	if p.Done != "" || room.Bought != 0 {
		t.Errorf("after the order failed: done %q, %d bought; want neither", p.Done, room.Bought)
	}
	if j := r.join(t, first); j.Place != 1 {
		t.Errorf("joining after the order failed: place %d, want 1", j.Place)
	}
	if n := r.admit(t, a); n != 1 {
		t.Fatalf("a unit back with 3 in flight: %d let in, want 1", n)
	}
	if _, p := r.place(t, first); p.Path == "" {
		t.Errorf("the shopper whose order failed was not let in again first")
	}
	if _, p := r.place(t, byPlace[4]); p.Path != "" {
		t.Errorf("place 5 was let in before place 1, whose order failed")
	}
	// Twice changes nothing more.
	if err := r.line.BackInLine(ctx, r.item.ID, byPlace[9]); err != nil {
		t.Fatal(err)
	}
	if room, _ := r.place(t, first); room.Bought != 0 {
		t.Errorf("%d bought after a shopper the room knew nothing of was put back", room.Bought)
	}
}

// A turn past its grace that the line has not settled yet is missed when its shopper joins again: they
// go to the back at once (as the page was told), and the line does not count the miss twice.
func TestJoiningAfterAnUnsettledTurnGoesToTheBack(t *testing.T) {
	r := newRoomRig(t, 3, 1, 10)
	r.joinAllAndDraw(t)
	byPlace := r.byPlace(t)
	a := stock.Admission{Overbook: 1, Rate: 1000, Turn: 30 * time.Second}
	if n := r.admit(t, a); n != 3 {
		t.Fatalf("%d let in, want 3", n)
	}
	r.clock.add(30*time.Second + stock.TurnGrace + time.Second)
	if j := r.join(t, byPlace[0]); j.Place != 11 {
		t.Errorf("joining after the turn and its grace: place %d, want 11 (the back)", j.Place)
	}
	r.admit(t, a)
	if room, _ := r.place(t, byPlace[0]); room.Missed != 3 {
		t.Errorf("%d missed, want 3 (each turn once)", room.Missed)
	}
}

// An instance that dies between letting shoppers in and writing their purchase paths leaves them pending:
// the next step, on any instance, writes them, and the shoppers buy with their turns.
func TestPathsADeadInstanceDidNotWriteAreWritten(t *testing.T) {
	r := newRoomRig(t, 3, 1, 6)
	ctx := context.Background()
	r.joinAllAndDraw(t)
	a := stock.Admission{Overbook: 1, Rate: 1000, Turn: 30 * time.Second}
	if n := r.admit(t, a); n != 3 {
		t.Fatalf("%d let in, want 3", n)
	}
	// As if the instance had died after the admit script and before writing: no paths, all pending.
	byPlace := r.byPlace(t)
	for _, u := range byPlace[:3] {
		r.rdb.HDel(ctx, stock.ShardKeys(r.item.ID, 0).Paths, strconv.FormatInt(u, 10))
		r.rdb.SAdd(ctx, stock.ShardKeys(r.item.ID, 0).Sale[:len(stock.ShardKeys(r.item.ID, 0).Sale)-len("sale")]+"q:pending", u)
	}
	_, p := r.place(t, byPlace[0])
	if _, err := r.ledger.Take(ctx, r.item.ID, byPlace[0], p.Path, "SKdead"); !errs.Is(err, errs.InvalidPath) {
		t.Fatalf("a turn whose path was never written bought: %v", err)
	}
	other := stock.NewLine(testenv.Ledger(r.rdb, r.clock.now)) // another instance
	if _, err := other.Admit(ctx, r.item.ID, a); err != nil {
		t.Fatal(err)
	}
	for i, u := range byPlace[:3] {
		_, p := r.place(t, u)
		if _, err := r.ledger.Take(ctx, r.item.ID, u, p.Path, "SKp"+strconv.Itoa(i)); err != nil {
			t.Errorf("place %d buys with the path the next step wrote: %v", i+1, err)
		}
	}
}

// The turns' paths are written into the shard's paths hash with an expiry past the turn's end, which a
// later, shorter one never shortens.
func TestTurnPathsKeepTheHashAlive(t *testing.T) {
	r := newRoomRig(t, 2, 1, 4)
	ctx := context.Background()
	r.joinAllAndDraw(t)
	a := stock.Admission{Overbook: 1, Rate: 1, Turn: 30 * time.Second}
	if n := r.admit(t, a); n != 1 {
		t.Fatalf("%d let in, want 1", n)
	}
	key := stock.ShardKeys(r.item.ID, 0).Paths
	if ttl := r.rdb.PTTL(ctx, key).Val(); ttl < 30*time.Second || ttl > 92*time.Second {
		t.Fatalf("the paths hash lives %v after a 30 s turn, want its end and a minute more", ttl)
	}
	r.rdb.Expire(ctx, key, 10*time.Minute) // a longer path in it, say
	r.clock.add(2 * time.Second)
	if n := r.admit(t, a); n != 1 {
		t.Fatalf("%d let in, want 1 more", n)
	}
	if ttl := r.rdb.PTTL(ctx, key).Val(); ttl < 9*time.Minute {
		t.Errorf("the next turn shortened the hash's life to %v", ttl)
	}
	if n := r.rdb.HLen(ctx, key).Val(); n != 2 {
		t.Errorf("%d paths in the hash, want the 2 turns'", n)
	}
}
