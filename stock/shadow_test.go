package stock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"seckill/sift"
	"seckill/stock"
)

// shadowRig is a queue sale whose first users are people (their own devices and prefixes) and whose
// last `scalper` users are one scalper's entrants: one device, one prefix, and refused joins from it.
type shadowRig struct {
	*roomRig
	sifter  *stock.Sifter
	people  []int64
	scalper []int64
}

func newShadowRig(t *testing.T, stockTotal int64, people, scalper int) *shadowRig {
	t.Helper()
	r := &shadowRig{roomRig: newRoomRig(t, stockTotal, 1, people+scalper)}
	r.people, r.scalper = r.users[:people], r.users[people:]
	noAges := func(context.Context, []int64) (map[int64]time.Time, error) { return map[int64]time.Time{}, nil }
	r.sifter = stock.NewSifter(r.rdb, noAges, sift.Defaults(), true)
	r.line.Sift(r.sifter)
	ctx := context.Background()
	var wg sync.WaitGroup
	for i, u := range r.people {
		wg.Go(func() {
			r.join(t, u)
			r.sifter.Note(ctx, r.item.ID, sift.Join{User: u, Device: fmt.Sprintf("dev-%d", u), Prefix: fmt.Sprintf("10.0.%d.0/24", i)}, r.window.Ends)
		})
	}
	for _, u := range r.scalper {
		wg.Go(func() {
			r.join(t, u)
			r.sifter.Note(ctx, r.item.ID, sift.Join{User: u, Device: "dev-scalper", Prefix: "198.51.100.0/24"}, r.window.Ends)
		})
	}
	for i := range 3 { // the scalper's accounts refused by the address rule, from the same device
		r.sifter.Note(ctx, r.item.ID, sift.Join{User: int64(9000 + i), Device: "dev-scalper", Prefix: "198.51.100.0/24", Refused: "address_limit"}, r.window.Ends)
	}
	wg.Wait()
	return r
}

func (r *shadowRig) draw(t *testing.T) {
	t.Helper()
	r.clock.add(2 * time.Minute)
	if drawn, err := r.line.Draw(context.Background(), r.item.ID); !drawn || err != nil {
		t.Fatalf("draw: %v %v", drawn, err)
	}
}

// letInOrder moves the line step by step, every turn missed, until no one is left to let in: it answers
// the users in the order they were let in (within a step, by place; with peopleFirst the people by place,
// then the scalper's by place: a step lets them in at once).
func (r *shadowRig) letInOrder(t *testing.T, turn time.Duration, peopleFirst bool) []int64 {
	t.Helper()
	var order []int64
	seen := map[int64]bool{}
	for range len(r.users) + 2 {
		if r.admit(t, stock.Admission{Overbook: 1, Rate: 100, Turn: turn}) == 0 && len(order) == len(r.users) {
			break
		}
		type let struct{ user, place int64 }
		var step []let
		for _, u := range r.users {
			if _, p := r.place(t, u); p.Path != "" && !seen[u] {
				seen[u] = true
				step = append(step, let{u, p.Place})
			}
		}
		slices.SortFunc(step, func(a, b let) int {
			if sa, sb := slices.Contains(r.scalper, a.user), slices.Contains(r.scalper, b.user); peopleFirst && sa != sb {
				if sa {
					return 1
				}
				return -1
			}
			return int(a.place - b.place)
		})
		for _, l := range step {
			order = append(order, l.user)
		}
		r.clock.add(turn + stock.TurnGrace + time.Second) // every turn missed
	}
	return order
}

// The scalper's entrants keep their drawn places but are let in only once every other entrant had a turn,
// in drawn order; their standing looks like waiting all along.
func TestShadowLineIsLetInAfterEveryoneElse(t *testing.T) {
	r := newShadowRig(t, 3, 20, 6)
	ctx := context.Background()
	cs, err := r.sifter.Clusters(ctx, r.item.ID)
	if err != nil || len(cs) != 1 || !slices.Equal(cs[0].Users, r.scalper) {
		t.Fatalf("clusters before the draw %+v, %v; want the scalper's %v", cs, err, r.scalper)
	}
	r.draw(t)
	f, err := r.line.ShadowOf(ctx, r.item.ID)
	if err != nil || f.Flagged != 6 || f.Shadowed != 6 || f.Cleared != 0 {
		t.Fatalf("shadow figures after the draw %+v, %v; want 6 flagged and shadowed", f, err)
	}
	places := map[int64]int64{}
	for _, u := range r.users {
		_, p := r.place(t, u)
		places[u] = p.Place
		if p.Place == 0 || p.Shadowed != slices.Contains(r.scalper, u) {
			t.Fatalf("user %d after the draw: %+v; want a drawn place, shadowed only if the scalper's", u, p)
		}
	}

	order := r.letInOrder(t, time.Minute, true)
	if len(order) != len(r.users) {
		t.Fatalf("let in %d of %d", len(order), len(r.users))
	}
	for i, u := range order {
		if scalper := slices.Contains(r.scalper, u); scalper != (i >= len(r.people)) {
			t.Fatalf("let in %v: user %d (the scalper's: %v) came %dth; want every person before the scalper", order, u, scalper, i+1)
		}
	}
	shadowed := order[len(r.people):]
	if !slices.IsSortedFunc(shadowed, func(a, b int64) int { return int(places[a] - places[b]) }) {
		t.Fatalf("the shadow line let in %v, places %v: want drawn order", shadowed, places)
	}
	if f, _ := r.line.ShadowOf(ctx, r.item.ID); f.LetIn != 6 {
		t.Fatalf("shadow figures at the end %+v; want 6 let in from the shadow line", f)
	}
}

// While the line passes a shadowed entrant's place, their standing still says waiting, with those ahead
// counted in the order they are let in.
func TestShadowedStandingLooksLikeWaiting(t *testing.T) {
	r := newShadowRig(t, 2, 10, 5)
	ctx := context.Background()
	r.draw(t)
	for range 4 { // eight people let in and missed: the cursor passes some shadowed places
		r.admit(t, stock.Admission{Overbook: 1, Rate: 100, Turn: time.Minute})
		r.clock.add(time.Minute + stock.TurnGrace + time.Second)
	}
	room, _ := r.place(t, r.people[0])
	passed := 0
	for _, u := range r.scalper {
		st, err := r.line.StandingOf(ctx, r.item.ID, u)
		if err != nil {
			t.Fatal(err)
		}
		told := stock.Tell(st.Place, stock.RoomView{Room: st.Room, MaxRate: 10}, stock.Scene{Now: r.clock.now(), Ends: r.window.Ends})
		if told.State != stock.LineWaiting || !told.HasAhead || told.Path != "" {
			t.Fatalf("shadowed user %d is told %+v; want waiting", u, told)
		}
		if st.Place.Place <= room.Cursor {
			passed++
			if told.Ahead < 2 { // two people are still to be let in, then the shadowed before them
				t.Fatalf("shadowed user %d at place %d (cursor %d) is told %d ahead; want at least the 2 people left", u, st.Place.Place, room.Cursor, told.Ahead)
			}
		}
	}
	if passed == 0 {
		t.Fatalf("the cursor (%d) passed no shadowed place: the test shows nothing", room.Cursor)
	}
}

// Clearing a cluster returns its entrants to their drawn places: the whole line is then let in in drawn
// order, as if no one had been flagged. A cleared cluster cannot be confirmed; a confirmed one can be
// cleared.
func TestClearingAClusterRestoresDrawnPlaces(t *testing.T) {
	r := newShadowRig(t, 3, 12, 5)
	ctx := context.Background()
	r.draw(t)
	cs, err := r.sifter.Flagged(ctx, r.item.ID)
	if err != nil || len(cs) != 1 || cs[0].Shadowed != 5 || cs[0].Decision != stock.Undecided {
		t.Fatalf("flagged %+v, %v; want one undecided cluster of 5 shadowed", cs, err)
	}
	key := cs[0].Key
	// Joins after the draw change nothing of the clusters the admins decide on: they are the draw's.
	for i := range 40 {
		r.sifter.Note(ctx, r.item.ID, sift.Join{User: int64(500 + i), Device: "dev-scalper", Prefix: "198.51.100.0/24"}, r.window.Ends)
	}
	if again, err := r.sifter.Flagged(ctx, r.item.ID); err != nil || len(again) != 1 || !slices.Equal(again[0].Users, cs[0].Users) {
		t.Fatalf("the clusters after later joins: %+v, %v; want the draw's %v", again, err, cs[0].Users)
	}
	decide := func(d stock.Decision) (stock.Flagged, error) {
		t.Helper()
		f, ok, err := r.sifter.Cluster(ctx, r.item.ID, key)
		if !ok || err != nil {
			t.Fatalf("cluster %s: %v %v", key, ok, err)
		}
		return r.sifter.Decide(ctx, r.item.ID, f, d, r.window.Ends)
	}
	if f, err := decide(stock.Confirmed); err != nil || f.Decision != stock.Confirmed {
		t.Fatalf("confirm: %+v %v", f, err)
	}
	if f, err := decide(stock.Cleared); err != nil || f.Decision != stock.Cleared || f.Shadowed != 0 {
		t.Fatalf("clear after confirming: %+v %v", f, err)
	}
	if f, _, _ := r.sifter.Cluster(ctx, r.item.ID, key); f.Decision != stock.Cleared {
		t.Fatalf("the cluster read again: %+v; want cleared", f)
	}
	if _, err := decide(stock.Confirmed); !errors.Is(err, stock.ErrDecided) {
		t.Fatalf("confirming a cleared cluster: %v; want ErrDecided", err)
	}
	if _, ok, err := r.sifter.Cluster(ctx, r.item.ID, "u1"); ok || err != nil {
		t.Fatalf("a cluster that is not there: %v %v; want not found", ok, err)
	}
	places := map[int64]int64{}
	for _, u := range r.users {
		_, p := r.place(t, u)
		places[u] = p.Place
		if p.Shadowed {
			t.Fatalf("user %d is still shadowed after the clear", u)
		}
	}
	order := r.letInOrder(t, time.Minute, false)
	if len(order) != len(r.users) || !slices.IsSortedFunc(order, func(a, b int64) int { return int(places[a] - places[b]) }) {
		t.Fatalf("after the clear the line let in %v; want all %d in drawn order (places %v)", order, len(r.users), places)
	}
	if f, _ := r.line.ShadowOf(ctx, r.item.ID); f.Flagged != 5 || f.Shadowed != 5 || f.Cleared != 5 || f.Confirmed != 5 {
		t.Fatalf("shadow figures %+v; want 5 flagged, shadowed at the draw, confirmed, then cleared", f)
	}
}

// A cluster cleared after the line passed its places is let in first, as a turn the line passed.
func TestClearingAfterTheLinePassedLetsThemInFirst(t *testing.T) {
	r := newShadowRig(t, 2, 10, 4)
	ctx := context.Background()
	r.draw(t)
	for range 6 {
		r.admit(t, stock.Admission{Overbook: 1, Rate: 100, Turn: time.Minute})
		r.clock.add(time.Minute + stock.TurnGrace + time.Second)
	}
	room, _ := r.place(t, r.people[0])
	var passed []int64
	for _, u := range r.scalper {
		if _, p := r.place(t, u); p.Place <= room.Cursor {
			passed = append(passed, u)
		}
	}
	if len(passed) == 0 {
		t.Fatalf("the cursor (%d) passed no shadowed place", room.Cursor)
	}
	cs, _ := r.sifter.Flagged(ctx, r.item.ID)
	if _, err := r.sifter.Decide(ctx, r.item.ID, cs[0], stock.Cleared, r.window.Ends); err != nil {
		t.Fatalf("clear: %v", err)
	}
	r.admit(t, stock.Admission{Overbook: 1, Rate: 100, Turn: time.Minute})
	for _, u := range passed[:min(2, len(passed))] {
		if _, p := r.place(t, u); p.Path == "" {
			t.Fatalf("cleared user %d, whose place %d the line had passed, was not let in first: %+v", u, p.Place, p)
		}
	}
}

// One account cannot flood the evidence: the same trace is kept once, and an account's distinct traces
// (a fresh device each time) only up to a few.
func TestEvidenceKeepsAnAccountsTracesOnce(t *testing.T) {
	r := newShadowRig(t, 1, 2, 0)
	ctx := context.Background()
	before, err := r.sifter.Joins(ctx, r.item.ID)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		r.sifter.Note(ctx, r.item.ID, sift.Join{User: 77, Device: "dev-same", Prefix: "10.9.9.0/24", Refused: sift.NotEligible}, r.window.Ends)
		r.sifter.Note(ctx, r.item.ID, sift.Join{User: 78, Device: fmt.Sprintf("dev-%d", i), Prefix: "10.9.9.0/24", Refused: sift.NotEligible}, r.window.Ends)
	}
	after, err := r.sifter.Joins(ctx, r.item.ID)
	if err != nil {
		t.Fatal(err)
	}
	per := map[int64]int{}
	for _, j := range after[len(before):] {
		per[j.User]++
	}
	if len(after)-len(before) != 9 || per[77] != 1 || per[78] != 8 {
		t.Fatalf("600 notes kept %d traces (%v); want account 77's one trace once and account 78's first 8", len(after)-len(before), per)
	}
}

// Let in from the shadow line, an entrant's place is reached by the line's cursor (let_in), so that its
// page, which asks its standing when let_in reaches its place, learns of its turn.
func TestShadowLetInMovesTheCursorToTheirPlaces(t *testing.T) {
	r := newShadowRig(t, 10, 1, 5)
	r.draw(t)
	if n := r.admit(t, stock.Admission{Overbook: 1, Rate: 100, Turn: time.Minute}); n != 6 {
		t.Fatalf("let in %d; want all 6 (10 units)", n)
	}
	room, _ := r.place(t, r.people[0])
	if room.Cursor != 6 {
		t.Fatalf("after letting everyone in, the cursor is %d; want 6, the last place", room.Cursor)
	}
}
