package app

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/handlers"
	"seckill/internal/testenv"
	"seckill/jobs"
	"seckill/models"
	"seckill/stock"
)

// linePage is a shopper's item page that follows the line as the rule of "When a page asks its own
// standing" says (item.js does the same): it polls the public document, asks its own standing only when
// the rule says so (with its signed place), and otherwise shows what the document and its place tell.
type linePage struct {
	b      *browser
	user   int64
	place  int64
	token  string
	own    map[string]any // its last own standing (nil: not in line)
	asked  int64          // let_in when it last asked
	seen   float64        // readmitted when it last asked (or learnt its order failed)
	held   bool           // its last own standing was held below let_in, or its order failed
	out    bool           // the line was sold out when it last asked
	bought bool           // it bought, and follows its result
}

// shown is a standing as a page shows it: a state and, for a shopper placed in line, how many are ahead.
type shown struct {
	state string
	ahead any // float64, or nil when the page shows none
}

// decide is the rule: whether the page asks its own standing now, and else what it shows.
func (p *linePage) decide(doc map[string]any, now time.Time) (bool, shown) {
	letIn := int64(doc["let_in"].(float64))
	soldOut := doc["sold_out"] == true
	switch {
	case doc["state"] == "ended":
		return false, shown{"ended", nil}
	case p.own == nil:
		return false, shown{"out", nil}
	case p.bought:
		return false, shown{"bought", nil}
	case p.own["state"] == "missed":
		return false, shown{"missed", nil}
	case doc["drawn"] != true:
		return false, shown{"waiting", nil} // the draw places everyone at once
	case p.place == 0:
		return true, shown{} // once after the draw: the page learns its place
	case p.own["state"] == "your_turn":
		ends, _ := time.Parse(time.RFC3339Nano, p.own["turn_ends_at"].(string))
		if !now.Before(ends) {
			return true, shown{} // the turn's time is up: what became of it?
		}
		if soldOut {
			return false, shown{"sold_out", nil}
		}
		return false, shown{"your_turn", nil}
	}
	st := map[bool]string{true: "sold_out", false: "waiting"}[soldOut]
	ahead := shown{st, float64(max(p.place-letIn-1, 0))}
	if p.held {
		// Asked again at a re-admission, or when units come back: a turn the sell-out held is given back
		// as it was, and nothing else in the document says so.
		return !soldOut && (doc["readmitted"].(float64) != p.seen || p.out), ahead
	}
	return !soldOut && p.place <= letIn && p.asked != letIn, ahead
}

// learn keeps what the page's own standing told it.
func (p *linePage) learn(q, doc map[string]any) {
	p.own = q
	if pos, ok := q["position"].(float64); ok {
		p.place = int64(pos)
	}
	if tok, ok := q["place_token"].(string); ok {
		p.token = tok
	}
	p.asked, p.seen, p.out = int64(doc["let_in"].(float64)), doc["readmitted"].(float64), doc["sold_out"] == true
	st := q["state"]
	p.held = (st == "sold_out" || st == "waiting") && p.place > 0 && p.place <= p.asked
}

// standing asks the page's own standing, with its signed place once it has one, and checks the answer
// is the one the page would get without it.
func (p *linePage) standing(t *testing.T, itemID int64) map[string]any {
	t.Helper()
	path := "/api/items/" + itoa(itemID) + "/queue"
	plain := p.b.call("GET", path, nil)
	if plain.Status != 200 {
		t.Fatalf("%s's standing: %d %s", p.b.name, plain.Status, plain.Body)
	}
	if p.token == "" {
		return plain.json(t)
	}
	signed := p.b.send("GET", path, nil, map[string]string{handlers.PlaceHeader: p.token})
	if signed.Status != 200 {
		t.Fatalf("%s's standing with its place: %d %s", p.b.name, signed.Status, signed.Body)
	}
	a, b := plain.json(t), signed.json(t)
	for _, f := range []string{"state", "position", "ahead", "ticket", "place_token"} {
		if a[f] != b[f] {
			t.Errorf("%s: %s is %v without the signed place, %v with it", p.b.name, f, a[f], b[f])
		}
	}
	return b
}

func (s shown) matches(q map[string]any) bool {
	if s.state == "" || q["state"] != s.state {
		return false
	}
	switch s.state {
	case "waiting", "sold_out":
		if s.ahead == nil {
			return q["position"] == nil || s.state == "sold_out"
		}
		return q["ahead"] == s.ahead
	}
	return true
}

// lineDoc fetches the line's public document as anyone does (no cookie), and checks what makes it
// cacheable: no cookie set, public for a second, an ETag that a revalidation answers 304.
func lineDoc(t *testing.T, base string, itemID int64) (map[string]any, reply) {
	t.Helper()
	b := newBrowser(t, base)
	path := "/api/items/" + itoa(itemID) + "/line"
	r := b.call("GET", path, nil)
	if r.Status != 200 {
		t.Fatalf("the line's document: %d %s", r.Status, r.Body)
	}
	if c := r.Header.Values("Set-Cookie"); len(c) > 0 {
		t.Errorf("the line's document sets cookies: %v", c)
	}
	if cc := r.Header.Get("Cache-Control"); cc != "public, max-age=1" {
		t.Errorf("the line's document: Cache-Control %q, want public, max-age=1", cc)
	}
	etag := r.Header.Get("ETag")
	if !strings.HasPrefix(etag, `"`) || len(etag) != 34 {
		t.Errorf("the line's document: ETag %q, want a quoted hash", etag)
	}
	if again := b.send("GET", path, nil, map[string]string{"If-None-Match": etag}); again.Status != 304 && again.Header.Get("ETag") == etag {
		t.Errorf("revalidating the line's document with its own ETag: %d, want 304", again.Status)
	} else if len(again.Header.Values("Set-Cookie")) > 0 {
		t.Errorf("a 304 of the line's document sets cookies")
	}
	return r.json(t), r
}

// TestLineDocumentAgreesWithEachStanding follows a queue sale through every moment a page meets (before
// the room opens, open, the draw being written, drawn, turns, a bought unit, a missed turn, sold out, an
// order that failed and its shopper let in again, a turn that ended sold out and was let in again when
// a unit came back, a pause, the end). At each, every shopper's page decides from the public document
// and its own place, as the rule says; a page that does not ask shows exactly what its own standing
// says, and a page asks only when its standing is not what the document tells (a held page asks at every
// re-admission, which may be another's).
func TestLineDocumentAgreesWithEachStanding(t *testing.T) {
	db := testenv.Postgres(t)
	act, item := queueSale(t, db, nil, 2)
	s := startLive(t, liveOpts{db: db, noBackground: true})
	ctx := context.Background()
	if _, err := s.Srv.Ledger.Preheat(ctx, jobs.DBBooks{DB: db}, item.ID); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	pages := make([]*linePage, 7)
	for i := range pages {
		b := newBrowser(t, s.URL)
		b.name = fmt.Sprintf("shopper %d", i)
		pages[i] = &linePage{b: b, user: b.register(fmt.Sprintf("liner_%d", i), passwordOf("liner"))}
	}
	admin := withRole(t, s, "line_admin", models.RoleAdmin)
	var doc map[string]any
	// moment waits for the document to show want, then checks every page against its own standing.
	moment := func(name string, want map[string]any) {
		t.Helper()
		testenv.Eventually(t, 10*time.Second, name+": the document to show "+fmt.Sprint(want), func() bool {
			doc, _ = lineDoc(t, s.URL, item.ID)
			for k, v := range want {
				if doc[k] != v {
					return false
				}
			}
			return true
		})
		if doc["item_id"] != float64(item.ID) || doc["turn_seconds"] != s.Cfg.QueueTurn.Seconds() || doc["rate"].(float64) <= 0 {
			t.Errorf("%s: the document %v", name, doc)
		}
		for _, p := range pages {
			ask, sh := p.decide(doc, s.Clock.Now())
			q := p.standing(t, item.ID)
			switch {
			case !ask && !sh.matches(q):
				t.Errorf("%s: %s decides from the document %v that it is %v; its standing is %v", name, p.b.name, doc, sh, q)
			case ask && sh.matches(q) && !p.held:
				t.Errorf("%s: %s asked its standing, which the document told: %v", name, p.b.name, q)
			}
			if ask {
				p.learn(q, doc)
			}
		}
	}
	at := func(place int64) *linePage {
		t.Helper()
		for _, p := range pages {
			if p.place == place {
				return p
			}
		}
		t.Fatalf("nobody has place %d", place)
		return nil
	}
	buy := func(p *linePage) {
		t.Helper()
		if r := p.b.call("POST", "/api/items/"+itoa(item.ID)+"/buy/"+p.own["path"].(string), nil); r.Status != 202 {
			t.Fatalf("%s buys with its turn: %d %s", p.b.name, r.Status, r.Body)
		}
		p.bought = true
	}
	// step moves the line as the rooms job does: let in, and flag the item when nothing is left.
	step := func(overbook float64) {
		t.Helper()
		if _, err := s.Srv.Line.Admit(ctx, item.ID, stock.Admission{Overbook: overbook, Rate: 100, Turn: 30 * time.Second}); err != nil {
			t.Fatal(err)
		}
		if left, complete, err := s.Srv.Ledger.Left(ctx, item.ID); err == nil && complete && left <= 0 {
			s.Srv.Flags.MarkSoldOut(ctx, item.ID)
		}
	}
	unitBack := func(orderNo string) {
		t.Helper()
		if _, err := s.Srv.Ledger.Restock(ctx, item.ID, orderNo); err != nil {
			t.Fatal(err)
		}
		s.Srv.Flags.Restocked(ctx, item.ID)
	}

	s.Clock.Set(start.Add(-2 * time.Minute)) // the room opens a minute from now
	moment("before the room opens", map[string]any{"state": "before_open", "drawn": false, "let_in": 0.0, "stock_left": 2.0})
	s.Clock.Set(start)
	for _, p := range pages {
		r := p.b.join(item.ID)
		if r.Status != 200 {
			t.Fatalf("join: %d %s", r.Status, r.Body)
		}
		p.own = r.json(t)
	}
	moment("the room open", map[string]any{"state": "open", "drawn": false})
	s.Clock.Set(start.Add(time.Minute + time.Second))
	moment("the start, the draw not written", map[string]any{"state": "drawing", "drawn": false})
	if drawn, err := s.Srv.Line.Draw(ctx, item.ID); !drawn || err != nil {
		t.Fatalf("draw: %v %v", drawn, err)
	}
	moment("drawn", map[string]any{"state": "moving", "drawn": true, "let_in": 0.0})
	for _, p := range pages {
		if p.place == 0 || p.token == "" {
			t.Fatalf("%s has no place after the draw: %v", p.b.name, p.own)
		}
	}

	step(1) // 2 left: places 1 and 2 let in
	moment("two turns", map[string]any{"let_in": 2.0, "held": 0.0})
	buy(at(1))
	step(1)
	moment("place 1 bought", map[string]any{"let_in": 2.0, "stock_left": 1.0})
	s.Clock.Advance(30*time.Second + stock.TurnGrace + time.Second)
	step(1) // place 2 missed; place 3 let in for the unit left
	moment("place 2 missed, place 3's turn", map[string]any{"let_in": 3.0, "sold_out": false})
	buy(at(3))
	step(1)
	moment("sold out", map[string]any{"state": "sold_out", "sold_out": true, "stock_left": 0.0})
	t.Logf("a line's document, sold out: %s", func() []byte { _, r := lineDoc(t, s.URL, item.ID); return r.Body }())

	// Place 1's order fails (the consumer refused it): its unit comes back, its shopper back in line,
	// held to be let in first.
	first := at(1)
	unitBack("SKfailed1")
	s.Redis.SRem(ctx, stock.KeysOf(item.ID).Buyers, first.user)
	if err := s.Srv.Line.BackInLine(ctx, item.ID, first.user); err != nil {
		t.Fatal(err)
	}
	// Its page's result said failed: it keeps its place, held, and waits for a re-admission.
	first.own, first.bought, first.held, first.seen = map[string]any{"state": "failed"}, false, true, doc["readmitted"].(float64)
	moment("place 1's order failed", map[string]any{"state": "moving", "held": 1.0, "readmitted": 0.0, "stock_left": 1.0})
	step(2) // 1 left × 2: place 1 again first, then place 4
	moment("place 1 let in again", map[string]any{"held": 0.0, "readmitted": 1.0, "let_in": 4.0})
	if first.own["state"] != "your_turn" {
		t.Fatalf("place 1 after its re-admission: %v", first.own)
	}
	buy(at(4))
	step(2)
	moment("sold out with place 1's turn running", map[string]any{"state": "sold_out", "let_in": 4.0})
	s.Clock.Advance(30*time.Second + stock.TurnGrace + time.Second)
	step(2) // place 1's turn ends with nothing to buy: held
	moment("place 1's turn ended sold out", map[string]any{"state": "sold_out", "held": 1.0})
	if !first.held || first.own["state"] != "sold_out" {
		t.Fatalf("place 1 after its turn ended sold out: %v", first.own)
	}
	unitBack("SKcancelled3") // an unpaid order cancelled
	moment("a unit back", map[string]any{"state": "moving", "sold_out": false, "held": 1.0})
	step(2)
	moment("place 1 let in again for the unit back", map[string]any{"held": 0.0, "readmitted": 2.0, "let_in": 5.0})
	if first.own["state"] != "your_turn" || at(5).own["state"] != "your_turn" {
		t.Fatalf("after the unit came back: place 1 %v, place 5 %v", first.own, at(5).own)
	}

	// Place 5 buys the unit; place 1's turn runs on, sold out. Its page loads now (its standing: sold
	// out, the place kept: held), and a unit comes back before the turn ends: the turn is given back as
	// it was, with no re-admission counted; the page must ask all the same (found by a review: the page
	// sat on "about 0 s" while its turn ran out).
	buy(at(5))
	step(2)
	moment("sold out again with place 1's turn running", map[string]any{"state": "sold_out", "let_in": 5.0})
	first.learn(first.standing(t, item.ID), doc)
	if first.own["state"] != "sold_out" || !first.held {
		t.Fatalf("place 1's page loaded during its turn, sold out: %v (held %v)", first.own, first.held)
	}
	unitBack("SKcancelled5")
	moment("a unit back during place 1's held turn", map[string]any{"state": "moving", "sold_out": false, "readmitted": 2.0})
	if first.own["state"] != "your_turn" {
		t.Fatalf("place 1's page after its turn came back: %v", first.own)
	}

	sale := "/api/admin/activities/" + itoa(act.ID)
	expect(t, "pause", admin.call("POST", sale+"/pause", map[string]any{"reason": "a check"}), 200, "")
	moment("paused", map[string]any{"state": "paused", "let_in": 5.0})
	expect(t, "resume", admin.call("POST", sale+"/resume", map[string]any{"reason": "checked"}), 200, "")
	moment("resumed", map[string]any{"state": "moving"})
	s.Clock.Set(start.Add(time.Hour + time.Second))
	moment("ended", map[string]any{"state": "ended"})
}

// TestLinePlacesAndInstances: a place token is the caller's for the item alone (a forged one, another
// user's, another item's answer 400 bad_place); two instances on the same Redis answer the same ETag for
// the same line; a first-come item and an unknown one have no line.
func TestLinePlacesAndInstances(t *testing.T) {
	db := testenv.Postgres(t)
	_, item := queueSale(t, db, nil, 3)
	_, other := queueSale(t, db, nil, 3)
	a := startLive(t, liveOpts{db: db, noBackground: true})
	b := startLive(t, liveOpts{db: db, rdb: a.Redis, noBackground: true})
	ctx := context.Background()
	for _, id := range []int64{item.ID, other.ID} {
		if _, err := a.Srv.Ledger.Preheat(ctx, jobs.DBBooks{DB: db}, id); err != nil {
			t.Fatal(err)
		}
	}
	ada, bob := newBrowser(t, a.URL), newBrowser(t, a.URL)
	ada.register("ada_line", passwordOf("ada_line"))
	bob.register("bob_line", passwordOf("bob_line"))
	for _, sh := range []*browser{ada, bob} {
		for _, id := range []int64{item.ID, other.ID} {
			if r := sh.join(id); r.Status != 200 {
				t.Fatalf("join: %d %s", r.Status, r.Body)
			}
		}
	}
	for _, s := range []*liveServer{a, b} {
		s.Clock.Set(time.Now().Add(time.Minute + time.Second))
	}
	for _, id := range []int64{item.ID, other.ID} {
		if drawn, err := a.Srv.Line.Draw(ctx, id); !drawn || err != nil {
			t.Fatalf("draw: %v %v", drawn, err)
		}
	}
	path := func(id int64) string { return "/api/items/" + itoa(id) + "/queue" }
	var q map[string]any
	testenv.Eventually(t, 10*time.Second, "a place after the draw", func() bool {
		q = ada.call("GET", path(item.ID), nil).json(t)
		return q["position"] != nil
	})
	tok, _ := q["place_token"].(string)
	if tok == "" {
		t.Fatalf("a placed shopper's answer has no place_token: %v", q)
	}
	if again := ada.call("GET", path(item.ID), nil).json(t); again["place_token"] != tok {
		t.Errorf("the place token changed: %v, then %v", tok, again["place_token"])
	}
	// The token works on the other instance, which never saw the shopper.
	adaOnB := newBrowser(t, b.URL)
	adaOnB.setCookie(handlers.SessionCookie, ada.cookie(handlers.SessionCookie))
	if r := adaOnB.send("GET", path(item.ID), nil, map[string]string{handlers.PlaceHeader: tok}); r.Status != 200 || r.json(t)["position"] != q["position"] {
		t.Errorf("the signed place on another instance: %d %s", r.Status, r.Body)
	}
	forged := []byte(tok)
	forged[5] = map[bool]byte{true: 'B', false: 'A'}[forged[5] == 'A']
	for name, tc := range map[string]struct {
		who  *browser
		item int64
		tok  string
	}{
		"a forged place":        {ada, item.ID, string(forged)},
		"another user's":        {bob, item.ID, tok},
		"another item's":        {ada, other.ID, tok},
		"not a token at all":    {ada, item.ID, "hello"},
		"a place made up":       {ada, item.ID, strings.Repeat("A", len(tok))},
		"another user's (on B)": {newBrowser(t, b.URL), item.ID, tok},
	} {
		who := tc.who
		if name == "another user's (on B)" {
			who.setCookie(handlers.SessionCookie, bob.cookie(handlers.SessionCookie))
		}
		expect(t, name, who.send("GET", path(tc.item), nil, map[string]string{handlers.PlaceHeader: tc.tok}), 400, "bad_place")
	}
	// On the other instance, which never saw them, a shopper the line has not reached costs no Redis
	// command of its own with its signed place: only the line's shared read, a transaction made at most
	// four times a second however many ask.
	bobOnB := newBrowser(t, b.URL)
	bobOnB.setCookie(handlers.SessionCookie, bob.cookie(handlers.SessionCookie))
	bobTok, _ := bob.call("GET", path(item.ID), nil).json(t)["place_token"].(string)
	own := &ownCommands{}
	b.Redis.AddHook(own)
	for range 20 {
		for _, p := range []struct {
			who *browser
			tok string
		}{{adaOnB, tok}, {bobOnB, bobTok}} {
			r := p.who.send("GET", path(item.ID), nil, map[string]string{handlers.PlaceHeader: p.tok})
			if q := r.json(t); r.Status != 200 || q["state"] != "waiting" || q["position"] == nil {
				t.Fatalf("a waiting shopper's poll with its place on B: %d %s", r.Status, r.Body)
			}
		}
	}
	if n := own.n.Load(); n != 0 {
		t.Errorf("40 polls of waiting shoppers with their places cost %d Redis commands of their own, want none", n)
	}
	// Two instances, the same line: the same ETag.
	testenv.Eventually(t, 10*time.Second, "both instances to show the drawn line alike", func() bool {
		da, ra := lineDoc(t, a.URL, item.ID)
		db, rb := lineDoc(t, b.URL, item.ID)
		return da["drawn"] == true && db["drawn"] == true && ra.Header.Get("ETag") == rb.Header.Get("ETag")
	})
	// Another line's content, another ETag.
	_, ri := lineDoc(t, a.URL, item.ID)
	if _, err := a.Srv.Line.Admit(ctx, item.ID, stock.Admission{Overbook: 1, Rate: 100, Turn: 30 * time.Second}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "the ETag to follow the line", func() bool {
		_, r := lineDoc(t, a.URL, item.ID)
		return r.Header.Get("ETag") != ri.Header.Get("ETag")
	})
	// A shopper's browser, with its session, and one with a session that is no more, get the same document
	// and no cookie.
	stale := newBrowser(t, a.URL)
	stale.setCookie(handlers.SessionCookie, "not-a-session")
	for _, who := range []*browser{ada, stale} {
		r := who.call("GET", "/api/items/"+itoa(item.ID)+"/line", nil)
		if r.Status != 200 || len(r.Header.Values("Set-Cookie")) > 0 || r.Header.Get("Cache-Control") != "public, max-age=1" {
			t.Errorf("the line's document to a browser with cookies: %d, Set-Cookie %v, Cache-Control %q", r.Status, r.Header.Values("Set-Cookie"), r.Header.Get("Cache-Control"))
		}
	}
	// No line for an unknown item or a first-come one.
	first := newBrowser(t, a.URL)
	_, fc := testenv.Sale(t, db, 5, time.Now(), time.Now().Add(time.Hour))
	expect(t, "a first-come item's line", first.call("GET", "/api/items/"+itoa(fc.ID)+"/line", nil), 404, "not_found")
	expect(t, "an unknown item's line", first.call("GET", "/api/items/987654321/line", nil), 404, "not_found")
}

// ownCommands counts the Redis commands sent other than in a transaction (MULTI … EXEC): a shopper's own
// reads, not the line's shared one.
type ownCommands struct{ n atomic.Int64 }

func (h *ownCommands) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *ownCommands) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.n.Add(1); return next(ctx, cmd) }
}
func (h *ownCommands) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) == 0 || cmds[0].Name() != "multi" {
			h.n.Add(int64(len(cmds)))
		}
		return next(ctx, cmds)
	}
}
