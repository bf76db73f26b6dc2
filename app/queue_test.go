package app

import (
	"context"
	"regexp"
	"sort"
	"testing"
	"time"

	"gorm.io/gorm"

	"seckill/handlers"
	"seckill/internal/testenv"
	"seckill/jobs"
	"seckill/models"
	"seckill/stock"
)

// queueSale makes an approved queue sale of one item in db, whose room opened a minute ago and whose
// sale starts in a minute, and loads it into Redis as the preheat job would.
func queueSale(t *testing.T, db *gorm.DB, s *liveServer, stockTotal int64) (models.Activity, models.Item) {
	t.Helper()
	now := time.Now()
	act, item := testenv.Sale(t, db, stockTotal, now.Add(time.Minute), now.Add(time.Hour))
	opens := now.Add(-time.Minute)
	if err := db.Model(&act).Updates(map[string]any{"sale_mode": models.SaleQueue, "queue_opens_at": opens}).Error; err != nil {
		t.Fatal(err)
	}
	act.SaleMode, act.QueueOpensAt = models.SaleQueue, &opens
	if s != nil {
		if _, err := s.Srv.Ledger.Preheat(context.Background(), jobs.DBBooks{DB: db}, item.ID); err != nil {
			t.Fatal(err)
		}
	}
	return act, item
}

// join puts the browser's user in the item's line with a fresh captcha and proof of work.
func (b *browser) join(itemID int64) reply {
	b.t.Helper()
	id, answer := b.captcha()
	return b.call("POST", "/api/items/"+itoa(itemID)+"/queue", map[string]string{"captcha_id": id, "captcha_answer": answer,
		"altcha": b.altcha("purpose=join&item_id=" + itoa(itemID))})
}

var hex32 = regexp.MustCompile(`^[0-9a-f]{32}$`)

// TestWaitingRoomFromJoinToSoldOut follows a queue sale as its shoppers see it: they join during the
// countdown (once each), the draw is published and checkable, the line is let in a few more than the
// stock at a time, those let in buy with their turns, and those still waiting hear it is sold out,
// keeping their places.
func TestWaitingRoomFromJoinToSoldOut(t *testing.T) {
	db := testenv.Postgres(t)
	act, item := queueSale(t, db, nil, 2)
	s := startLive(t, liveOpts{db: db, only: []string{"queue", "sold_out_flags", "preheat"}})
	if _, err := s.Srv.Ledger.Preheat(context.Background(), jobs.DBBooks{DB: db}, item.ID); err != nil {
		t.Fatal(err)
	}
	id := itoa(item.ID)
	shoppers := make([]*browser, 5)
	tickets := map[string]*browser{}
	var seedHash string
	for i := range shoppers {
		b := newBrowser(t, s.URL)
		b.register("queuer_"+itoa(int64(i)), passwordOf("queuer"))
		shoppers[i] = b
		if i == 0 {
			cid, answer := b.captcha()
			expect(t, "a purchase path of a queue item", b.call("POST", "/api/items/"+id+"/path",
				map[string]string{"captcha_id": cid, "captcha_answer": answer}), 409, "queue")
		}
		r := b.join(item.ID)
		q := r.json(t)
		if r.Status != 200 || q["state"] != "waiting" || !hex32.MatchString(q["ticket"].(string)) || q["position"] != nil {
			t.Fatalf("joining during the countdown: %d %s", r.Status, r.Body)
		}
		if again := b.join(item.ID).json(t); again["ticket"] != q["ticket"] {
			t.Errorf("joining twice changed the ticket: %v then %v", q["ticket"], again["ticket"])
		}
		tickets[q["ticket"].(string)] = b
		seedHash = q["seed_hash"].(string)
	}
	draw := newBrowser(t, s.URL).call("GET", "/api/items/"+id+"/draw", nil).json(t)
	if draw["seed_hash"] != seedHash || draw["seed"] != nil || draw["tickets"] != nil || draw["entrants"] != 5.0 {
		t.Fatalf("the draw before the start: %v", draw)
	}

	s.Clock.Set(time.Now().Add(time.Minute + time.Second)) // the sale starts
	var drawn map[string]any
	testenv.Eventually(t, 10*time.Second, "the draw to be published", func() bool {
		drawn = newBrowser(t, s.URL).call("GET", "/api/items/"+id+"/draw", nil).json(t)
		return drawn["seed"] != nil
	})
	seed := drawn["seed"].(string)
	if stock.SeedHash(seed) != seedHash {
		t.Errorf("the seed %s does not hash to the published %s", seed, seedHash)
	}
	var order []string
	for tk := range tickets {
		order = append(order, tk)
	}
	sort.Slice(order, func(i, j int) bool { return stock.DrawKey(seed, order[i]) < stock.DrawKey(seed, order[j]) })
	for i, tk := range drawn["tickets"].([]any) {
		if tk != order[i] {
			t.Fatalf("drawn tickets %v, the rule gives %v", drawn["tickets"], order)
		}
	}

	// 2 units × 1.5: the first three in drawn order get their turns, the other two wait.
	status := func(b *browser) map[string]any { return b.call("GET", "/api/items/"+id+"/queue", nil).json(t) }
	testenv.Eventually(t, 10*time.Second, "three turns", func() bool { return status(tickets[order[2]])["state"] == "your_turn" })
	for i, tk := range order {
		q := status(tickets[tk])
		want := map[bool]string{true: "your_turn", false: "waiting"}[i < 3]
		if q["state"] != want || q["position"] != float64(i+1) {
			t.Errorf("place %d: %v, want %s", i+1, q, want)
		}
		if i == 3 && (q["ahead"] != 0.0 || q["wait_seconds"] == nil) {
			t.Errorf("the first one waiting: ahead %v, wait %v; want 0 ahead and an estimate", q["ahead"], q["wait_seconds"])
		}
	}
	for _, tk := range order[:2] {
		b := tickets[tk]
		path := status(b)["path"].(string)
		if r := b.call("POST", "/api/items/"+id+"/buy/"+path, nil); r.Status != 202 {
			t.Fatalf("a buy with a turn's path: %d %s", r.Status, r.Body)
		}
	}
	// Sold out: those waiting hear it at once and keep their places; the buyers see bought.
	testenv.Eventually(t, 10*time.Second, "the waiting to hear it is sold out", func() bool { return status(tickets[order[4]])["state"] == "sold_out" })
	if q := status(tickets[order[3]]); q["state"] != "sold_out" || q["position"] != 4.0 {
		t.Errorf("place 4 after the sell-out: %v, want sold_out keeping place 4", q)
	}
	if q := status(tickets[order[0]]); q["state"] != "bought" {
		t.Errorf("a buyer: %v, want bought", q)
	}
	// The live dashboard shows the line.
	admin := withRole(t, s, "line_watcher", models.RoleAdmin)
	testenv.Eventually(t, 10*time.Second, "the dashboard to count the buyers", func() bool {
		st := admin.call("GET", "/api/admin/activities/"+itoa(act.ID)+"/stats", nil).json(t)
		line, _ := st["items"].([]any)[0].(map[string]any)["line"].(map[string]any)
		return line != nil && line["bought"] == 2.0
	})
	st := admin.call("GET", "/api/admin/activities/"+itoa(act.ID)+"/stats", nil).json(t)
	line := st["items"].([]any)[0].(map[string]any)["line"].(map[string]any)
	if line["joined"] != 5.0 || line["let_in"] != 3.0 || line["seed"] != seed || line["seed_hash"] != seedHash || line["state"] != "drawn" {
		t.Errorf("the dashboard's line: %v, want 5 joined, 3 let in, 2 bought, the seed and its hash", line)
	}
}

// TestQueueStatusPollCostsAtMostOneRedisCommand: a shopper's status poll asks no PostgreSQL query and
// at most one Redis command; one waiting behind the front of the line, none most of the time.
func TestQueueStatusPollCostsAtMostOneRedisCommand(t *testing.T) {
	db := testenv.Postgres(t)
	_, item := queueSale(t, db, nil, 1)
	s := startLive(t, liveOpts{db: db, noBackground: true})
	ctx := context.Background()
	if _, err := s.Srv.Ledger.Preheat(ctx, jobs.DBBooks{DB: db}, item.ID); err != nil {
		t.Fatal(err)
	}
	shoppers := make([]*browser, 4)
	for i := range shoppers {
		shoppers[i] = newBrowser(t, s.URL)
		shoppers[i].register("poller_"+itoa(int64(i)), passwordOf("poller"))
		if r := shoppers[i].join(item.ID); r.Status != 200 {
			t.Fatalf("join: %d %s", r.Status, r.Body)
		}
	}
	s.Clock.Set(time.Now().Add(time.Minute + time.Second))
	if drawn, err := s.Srv.Line.Draw(ctx, item.ID); !drawn || err != nil {
		t.Fatalf("draw: %v %v", drawn, err)
	}
	if _, err := s.Srv.Line.Admit(ctx, item.ID, stock.Admission{Overbook: 1, Rate: 100, Turn: time.Minute}); err != nil {
		t.Fatal(err)
	}
	path := "/api/items/" + itoa(item.ID) + "/queue"
	for _, b := range shoppers { // the script is loaded, the pages know their places
		b.call("GET", path, nil)
	}
	hook := &countingHook{}
	s.Redis.AddHook(hook)
	queries := countQueries(t, db)
	for round := range 20 {
		for i, b := range shoppers {
			before := hook.n.Load()
			r := b.call("GET", path, nil)
			if r.Status != 200 {
				t.Fatalf("poll: %d %s", r.Status, r.Body)
			}
			if n := hook.n.Load() - before; n > 1 {
				t.Errorf("round %d, shopper %d (%s): a poll cost %d Redis commands, want at most 1", round, i, r.json(t)["state"], n)
			}
		}
	}
	if n := queries.Load(); n > 2*2 { // at most a catalog snapshot a second
		t.Errorf("80 polls made %d PostgreSQL queries", n)
	}
	if n := hook.n.Load(); n >= 80 {
		t.Errorf("80 polls cost %d Redis commands: the waiting should mostly be answered from memory", n)
	}
}

// TestInstanceLostWithShoppersInLine: the line lives in Redis, so shoppers who joined through an instance
// that then dies keep their tickets and places on another, and are let in there.
func TestInstanceLostWithShoppersInLine(t *testing.T) {
	db := testenv.Postgres(t)
	_, item := queueSale(t, db, nil, 2)
	a := startLive(t, liveOpts{db: db, noBackground: true})
	b := startLive(t, liveOpts{db: db, rdb: a.Redis, noBackground: true})
	ctx := context.Background()
	if _, err := a.Srv.Ledger.Preheat(ctx, jobs.DBBooks{DB: db}, item.ID); err != nil {
		t.Fatal(err)
	}
	path := "/api/items/" + itoa(item.ID) + "/queue"
	type shopper struct {
		onA, onB *browser
		ticket   string
	}
	var shoppers []shopper
	for i := range 3 {
		onA := newBrowser(t, a.URL)
		onA.register("survivor_"+itoa(int64(i)), passwordOf("survivor"))
		r := onA.join(item.ID)
		if r.Status != 200 {
			t.Fatalf("join on A: %d %s", r.Status, r.Body)
		}
		// The same shopper's session cookie works on every instance.
		onB := newBrowser(t, b.URL)
		onB.setCookie(handlers.SessionCookie, onA.cookie(handlers.SessionCookie))
		shoppers = append(shoppers, shopper{onA: onA, onB: onB, ticket: r.json(t)["ticket"].(string)})
	}
	// The sale starts on A: A draws, lets the first two in, and its shoppers' pages see their standing
	// there (A remembers the places of those who wait).
	a.Clock.Set(time.Now().Add(time.Minute + time.Second))
	b.Clock.Set(time.Now().Add(time.Minute + time.Second))
	if drawn, err := a.Srv.Line.Draw(ctx, item.ID); !drawn || err != nil {
		t.Fatalf("draw on A: %v %v", drawn, err)
	}
	if _, err := a.Srv.Line.Admit(ctx, item.ID, stock.Admission{Overbook: 1, Rate: 100, Turn: time.Minute}); err != nil {
		t.Fatal(err)
	}
	for _, s := range shoppers {
		// (A room read before the draw is kept a quarter of a second.)
		testenv.Eventually(t, 10*time.Second, "a place on A after the draw", func() bool { return s.onA.call("GET", path, nil).json(t)["position"] != nil })
	}
	if err := a.Srv.Fiber.Shutdown(); err != nil { // instance A is gone, and what it knew with it
		t.Fatal(err)
	}
	if _, err := b.Srv.Line.Admit(ctx, item.ID, stock.Admission{Overbook: 1, Rate: 100, Turn: time.Minute}); err != nil {
		t.Fatal(err)
	}
	turns := 0
	for _, s := range shoppers {
		q := s.onB.call("GET", path, nil).json(t)
		if q["ticket"] != s.ticket || q["position"] == nil {
			t.Errorf("on B after A died: %v, want ticket %s with a place", q, s.ticket)
		}
		if q["state"] == "your_turn" {
			turns++
		}
	}
	if turns != 2 {
		t.Errorf("%d turns on B for 2 units, want 2", turns)
	}
	// A turn let in on A is bought on B.
	for _, s := range shoppers {
		if q := s.onB.call("GET", path, nil).json(t); q["state"] == "your_turn" {
			if r := s.onB.call("POST", "/api/items/"+itoa(item.ID)+"/buy/"+q["path"].(string), nil); r.Status != 202 {
				t.Errorf("a turn from A bought on B: %d %s", r.Status, r.Body)
			}
			break
		}
	}
}
