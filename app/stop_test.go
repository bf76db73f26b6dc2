package app

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"seckill/internal/testenv"
	"seckill/jobs"
	"seckill/models"
	"seckill/stock"

	"github.com/chromedp/chromedp"
)

// An admin pauses a sale in the middle of a rush on two instances: once the pause is answered, no buy
// is taken on either (403 paused), purchase paths and the line's joins wait too, the pages and the
// merchant see it with its reason, and it is audited; resumed, the crowd buys again; ended, it is over.
func TestEmergencyStopDuringARush(t *testing.T) {
	testenv.Long(t)
	db := testenv.Postgres(t)
	rdb := testenv.Redis(t)
	workers := []string{"order_consumer", "stops"}
	oneAddress := func(c *Config) { c.RateLimitIP = false } // the whole crowd comes from 127.0.0.1
	a := startLive(t, liveOpts{db: db, rdb: rdb, only: workers, tune: oneAddress})
	b := startLive(t, liveOpts{db: db, rdb: rdb, only: workers, tune: oneAddress})
	merchant, sale, item := merchantSale(t, a, "stop_shop", 5000)
	admin := withRole(t, a, "stop_admin", models.RoleAdmin)
	_, queued := queueSale(t, db, a, 10)
	crowd := makeShoppers(t, a, "stop_crowd", 3000)
	base := "/api/admin/activities/" + itoa(sale.ID)
	client := &http.Client{Timeout: 10 * time.Second}

	// The rush: twenty buyers at a time on both instances, each a shopper who has not bought yet, with a
	// path, until told to stop; a buy taken is counted with when its answer came.
	var stop atomic.Bool
	var mu sync.Mutex
	var taken []time.Time
	var paused atomic.Int64
	var next atomic.Int64
	var wg sync.WaitGroup
	t.Cleanup(func() { stop.Store(true); wg.Wait() }) // before the servers close, however the test ends
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			srv := []*liveServer{a, b}[i%2]
			for !stop.Load() {
				sh := crowd[int(next.Add(1))%len(crowd)]
				got := sh.post(t, client, srv.URL, "/api/items/"+itoa(item.ID)+"/buy/"+issuePathOrSoldOut(t, a, item.ID, sh.id))
				switch {
				case got.status == 202:
					mu.Lock()
					taken = append(taken, time.Now())
					mu.Unlock()
				case got.code == "paused":
					paused.Add(1)
				}
				time.Sleep(40 * time.Millisecond)
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)

	expect(t, "a pause without a reason", admin.call("POST", base+"/pause", map[string]any{"reason": " "}), 400, "bad_request")
	expect(t, "a merchant pausing", merchant.call("POST", base+"/pause", map[string]any{"reason": "x"}), 403, "forbidden")
	const reason = "价格标错了 (a wrong price)"
	r := admin.call("POST", base+"/pause", map[string]any{"reason": reason})
	if r.Status != 200 || r.json(t)["paused_at"] == nil || r.json(t)["stop_reason"] != reason {
		t.Fatalf("pause: %d %s", r.Status, r.Body)
	}
	pausedAt := time.Now()
	expect(t, "pausing again", admin.call("POST", base+"/pause", map[string]any{"reason": reason}), 409, "activity_state")
	// Both instances know within a moment; from then on nothing is taken anywhere.
	probe := makeShoppers(t, a, "stop_probe", 1)[0]
	testenv.Eventually(t, 10*time.Second, "both instances to refuse buys as paused", func() bool {
		for _, srv := range []*liveServer{a, b} {
			got := probe.post(t, client, srv.URL, "/api/items/"+itoa(item.ID)+"/buy/"+issuePathOrSoldOut(t, a, item.ID, probe.id))
			if got.status == 202 { // before the pause reached it: an order like the others
				mu.Lock()
				taken = append(taken, time.Now())
				mu.Unlock()
			}
			if got.code != "paused" {
				return false
			}
		}
		return true
	})
	known := time.Now()
	t.Logf("both instances refused buys %v after the pause was answered", known.Sub(pausedAt))
	time.Sleep(500 * time.Millisecond)
	mu.Lock()
	late := 0
	for _, at := range taken {
		// (A buy that passed the check a moment before the pause reached its instance may answer a moment
		// after: a fifth of a second is far more than that takes.)
		if at.After(known.Add(200 * time.Millisecond)) {
			late++
		}
	}
	before := len(taken)
	mu.Unlock()
	if late > 0 || paused.Load() == 0 {
		t.Errorf("while paused: %d buys taken after both instances knew, %d refused as paused", late, paused.Load())
	}

	// An instance that starts while the sale is paused knows it before its first answer.
	c := startLive(t, liveOpts{db: db, rdb: rdb, only: []string{"order_consumer"}, tune: oneAddress})
	if got := probe.post(t, client, c.URL, "/api/items/"+itoa(item.ID)+"/buy/"+issuePathOrSoldOut(t, a, item.ID, probe.id)); got.code != "paused" {
		t.Errorf("a buy on an instance started during the pause: %+v, want 403 paused", got)
	}

	// Paths, the line and the pages say so too.
	for _, srv := range []*liveServer{a, b} {
		viewer := newBrowser(t, srv.URL)
		viewer.register("viewer_"+strings.TrimPrefix(srv.URL, "http://127.0.0.1:"), passwordOf("viewer"))
		id, answer := viewer.captcha()
		expect(t, "a purchase path while paused", viewer.call("POST", "/api/items/"+itoa(item.ID)+"/path",
			map[string]any{"captcha_id": id, "captcha_answer": answer}), 403, "paused")
		if it := viewer.call("GET", "/api/items/"+itoa(item.ID), nil).json(t); it["paused"] != true {
			t.Errorf("the item on %s does not say paused: %v", srv.URL, it)
		}
	}
	expect(t, "pausing the queue sale", admin.call("POST", "/api/admin/activities/"+itoa(queued.ActivityID)+"/pause", map[string]any{"reason": "bots"}), 200, "")
	line := newBrowser(t, b.URL)
	line.register("line_viewer", passwordOf("line"))
	testenv.Eventually(t, 10*time.Second, "the queue sale paused on the second instance", func() bool {
		return line.call("GET", "/api/items/"+itoa(queued.ID)+"/queue", nil).json(t)["paused"] == true
	})
	expect(t, "joining a paused sale's line", line.join(queued.ID), 403, "paused")
	mine := merchant.call("GET", "/api/merchant/activities/"+itoa(sale.ID), nil).json(t)
	if mine["paused_at"] == nil || mine["stop_reason"] != reason {
		t.Errorf("the merchant does not see the pause and its reason: %v", mine)
	}
	var row models.AuditLog
	db.Where("action = ? AND target = ?", "activity.pause", "activity:"+itoa(sale.ID)).Take(&row)
	if row.Actor != "stop_admin" || !strings.Contains(row.After, reason) {
		t.Errorf("the pause's audit row: %+v", row)
	}

	// Resumed: the crowd buys again, on both instances.
	if r := admin.call("POST", base+"/resume", map[string]any{"reason": "price fixed"}); r.Status != 200 || r.json(t)["paused_at"] != nil {
		t.Fatalf("resume: %d %s", r.Status, r.Body)
	}
	testenv.Eventually(t, 10*time.Second, "buys taken again after the resume", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(taken) > before+20
	})

	// Ended: every buy is refused as ended, and the sale leaves the catalog.
	if r := admin.call("POST", base+"/end", map[string]any{"reason": "stock recalled"}); r.Status != 200 || r.json(t)["ended_early"] != true {
		t.Fatalf("end: %d %s", r.Status, r.Body)
	}
	for _, srv := range []*liveServer{a, b} {
		late := newBrowser(t, srv.URL)
		late.register("late_"+strings.TrimPrefix(srv.URL, "http://127.0.0.1:"), passwordOf("late"))
		id, answer := late.captcha()
		expect(t, "a purchase path after the end", late.call("POST", "/api/items/"+itoa(item.ID)+"/path",
			map[string]any{"captcha_id": id, "captcha_answer": answer}), 403, "ended")
	}
	stop.Store(true)
	wg.Wait()
	// Refused in memory even if Redis's window were open again (a preheat that read the sale before the
	// end, say, writing its old window back).
	rdb.HSet(context.Background(), stock.ShardKeys(item.ID, 0).Sale, "ends", time.Now().Add(time.Hour).UnixMilli())
	lateBuyer := makeShoppers(t, a, "stop_late", 1)[0]
	for _, srv := range []*liveServer{a, b} {
		if got := lateBuyer.post(t, client, srv.URL, "/api/items/"+itoa(item.ID)+"/buy/"+issuePathOrSoldOut(t, a, item.ID, lateBuyer.id)); got.code != "ended" {
			t.Errorf("a buy on %s after the end, Redis's window open again: %+v, want 403 ended", srv.URL, got)
		}
	}
	expect(t, "resuming an ended sale", admin.call("POST", base+"/resume", map[string]any{"reason": "x"}), 409, "activity_state")
	testenv.Eventually(t, 10*time.Second, "the ended sale to leave the catalog", func() bool {
		return !strings.Contains(string(newBrowser(t, b.URL).call("GET", "/api/activities", nil).Body), `"id":`+itoa(sale.ID)+`,`)
	})
	// The books agree: everything taken became an order (or is on its way), nothing beyond stock.
	waitDrained(t, a, item.ID)
	if _, err := a.Srv.Ledger.Preheat(context.Background(), jobs.DBBooks{DB: db}, item.ID); err != nil {
		t.Fatal(err)
	}
	var orders int64
	db.Model(&models.Order{}).Where("item_id = ?", item.ID).Count(&orders)
	mu.Lock()
	n := len(taken)
	mu.Unlock()
	if orders != int64(n) {
		t.Errorf("%d buys taken, %d orders written", n, orders)
	}
}

// TestPauseInABrowser: an admin pauses a running sale from the approval dashboard with a reason; a
// shopper's item page says it is paused and Buy waits; resumed, Buy comes back.
func TestPauseInABrowser(t *testing.T) {
	testenv.Long(t)
	s := startLive(t, liveOpts{})
	withRole(t, s, "pause_chief", models.RoleAdmin)
	now := s.Clock.Now()
	_, item := testenv.Sale(t, s.DB, 5, now.Add(-time.Minute), now.Add(time.Hour))
	if _, err := s.Srv.Ledger.Preheat(context.Background(), jobs.DBBooks{DB: s.DB}, item.ID); err != nil {
		t.Fatal(err)
	}
	shopper := chrome(t)
	registerInBrowser(t, shopper, s.URL, "pause_shopper")
	run(t, shopper, "the item page", chromedp.Navigate(s.URL+"/items/"+itoa(item.ID)), chromedp.WaitEnabled("#buy", chromedp.ByID))

	admin := chrome(t)
	loginInBrowser(t, admin, s.URL, "pause_chief", passwordOf("pause_chief"))
	var notice string
	run(t, admin, "pause from the dashboard",
		chromedp.Navigate(s.URL+"/admin"),
		chromedp.WaitVisible("form[data-stop] input[name=reason]", chromedp.ByQuery),
		chromedp.SendKeys("form[data-stop] input[name=reason]", "A wrong price", chromedp.ByQuery),
		chromedp.Click(`form[data-stop] button[data-action="pause"]`, chromedp.ByQuery),
		chromedp.WaitVisible("form[data-stop] .notice", chromedp.ByQuery),
		chromedp.Text("form[data-stop] .notice", &notice, chromedp.ByQuery),
	)
	if !strings.Contains(notice, "Paused by the shop's staff") || !strings.Contains(notice, "A wrong price") {
		t.Errorf("the dashboard says %q after the pause", notice)
	}
	shot(t, admin, "admin-paused-sale")

	var said string
	run(t, shopper, "the item page learns of the pause",
		chromedp.WaitVisible(`//p[@id="buy-status"][contains(., "paused")]`),
		chromedp.Text("#buy-status", &said, chromedp.ByID),
	)
	var disabled bool
	run(t, shopper, "Buy waits", chromedp.Evaluate(`document.getElementById("buy").disabled`, &disabled))
	if !disabled {
		t.Error("Buy is enabled on a paused sale")
	}
	shot(t, shopper, "item-paused")

	run(t, admin, "resume",
		chromedp.SendKeys("form[data-stop] input[name=reason]", "Price fixed", chromedp.ByQuery),
		chromedp.Click(`form[data-stop] button[data-action="resume"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`form[data-stop] button[data-action="pause"]`, chromedp.ByQuery),
	)
	run(t, shopper, "Buy comes back", chromedp.WaitEnabled("#buy", chromedp.ByID), chromedp.Text("#buy-status", &said, chromedp.ByID))
	if strings.Contains(said, "paused") {
		t.Errorf("after the resume the item page still says %q", said)
	}
}

// A sale that ends while paused is over, not paused: the merchant's pages say so.
func TestSaleEndedWhilePausedIsNotShownPaused(t *testing.T) {
	s := startLive(t, liveOpts{noBackground: true})
	merchant, sale, _ := merchantSale(t, s, "ended_paused_shop", 5)
	past := s.Clock.Now().Add(-time.Minute)
	s.DB.Model(&models.Activity{}).Where("id = ?", sale.ID).Updates(map[string]any{"paused_at": past.Add(-time.Hour), "ends_at": past, "stop_reason": "a wrong price"})
	for _, path := range []string{"/merchant", "/merchant/activities/" + itoa(sale.ID)} {
		if pg := string(merchant.call("GET", path, nil).Body); strings.Contains(pg, "Paused") {
			t.Errorf("%s shows an ended sale as paused", path)
		}
	}
	live := merchant.call("GET", "/merchant/activities/"+itoa(sale.ID)+"/live", nil)
	if strings.Contains(string(live.Body), "Paused by the shop") {
		t.Error("the live page shows an ended sale as paused")
	}
}

// A shopper let in to buy has their turn's time given back after a pause: paused with most of the turn
// left, resumed after longer than the whole turn, they still buy, and the turn ends later by the pause;
// a second resume of the same pause (a retried request) gives nothing more.
func TestTurnInterruptedByAPauseKeepsItsTime(t *testing.T) {
	db := testenv.Postgres(t)
	act, item := queueSale(t, db, nil, 5)
	s := startLive(t, liveOpts{db: db, only: []string{"queue", "sold_out_flags", "preheat", "stops", "order_consumer"}})
	if _, err := s.Srv.Ledger.Preheat(context.Background(), jobs.DBBooks{DB: db}, item.ID); err != nil {
		t.Fatal(err)
	}
	admin := withRole(t, s, "turn_pauser", models.RoleAdmin)
	shopper := newBrowser(t, s.URL)
	shopper.register("turn_keeper", passwordOf("turn"))
	expect(t, "joining", shopper.join(item.ID), 200, "")
	queue := "/api/items/" + itoa(item.ID) + "/queue"
	s.Clock.Set(time.Now().Add(time.Minute + time.Second)) // the sale starts
	var turn map[string]any
	testenv.Eventually(t, 10*time.Second, "the shopper's turn", func() bool {
		turn = shopper.call("GET", queue, nil).json(t)
		return turn["state"] == "your_turn"
	})
	ends, err := time.Parse(time.RFC3339Nano, turn["turn_ends_at"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if left := ends.Sub(s.Clock.Now()); left < s.Cfg.QueueTurn/2 {
		t.Fatalf("the turn has %v left, the test wants most of %v", left, s.Cfg.QueueTurn)
	}

	base := "/api/admin/activities/" + itoa(act.ID)
	r := admin.call("POST", base+"/pause", map[string]any{"reason": "a wrong price"})
	expect(t, "pause", r, 200, "")
	pausedAt, err := time.Parse(time.RFC3339Nano, r.json(t)["paused_at"].(string))
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "the line to say paused", func() bool { return shopper.call("GET", queue, nil).json(t)["paused"] == true })
	pause := s.Cfg.QueueTurn + 10*time.Second // longer than the whole turn
	s.Clock.Set(pausedAt.Add(pause))
	time.Sleep(1500 * time.Millisecond) // the line's steps run during the pause and must not settle the turn
	if q := shopper.call("GET", queue, nil).json(t); q["state"] != "your_turn" || q["paused"] != true {
		t.Errorf("during the pause, past the turn's end: %v, want the turn, held", q)
	}
	// A resume refused (a reason too long: a resume needs none, but one given is checked) changes nothing:
	// the turn still gets all of its time back after it.
	expect(t, "a resume with a reason too long", admin.call("POST", base+"/resume", map[string]any{"reason": strings.Repeat("x", 2001)}), 400, "bad_request")
	s.Clock.Set(pausedAt.Add(pause + 10*time.Second))
	pause += 10 * time.Second
	expect(t, "resume", admin.call("POST", base+"/resume", map[string]any{"reason": "fixed"}), 200, "")
	testenv.Eventually(t, 10*time.Second, "the line to go on", func() bool { return shopper.call("GET", queue, nil).json(t)["paused"] == false })

	after := shopper.call("GET", queue, nil).json(t)
	if after["state"] != "your_turn" {
		t.Fatalf("after the pause: %v, want the same turn", after)
	}
	moved, _ := time.Parse(time.RFC3339Nano, after["turn_ends_at"].(string))
	if got := moved.Sub(ends); got < pause || got > pause+3*time.Second {
		t.Errorf("the turn ends %v later after a pause of %v, want the pause (and a second for every instance to hear)", got, pause)
	}
	if after["path"] != turn["path"] {
		t.Errorf("the turn's path changed: %v then %v", turn["path"], after["path"])
	}
	// Asked again for the same pause (as a resume whose database write failed is tried again): no more
	// than the time since.
	if _, err := s.Srv.Line.Resume(context.Background(), item.ID, pausedAt, s.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	if again := shopper.call("GET", queue, nil).json(t); again["turn_ends_at"] != after["turn_ends_at"] {
		t.Errorf("a second resume moved the turn to %v", again["turn_ends_at"])
	}
	// Past where the turn would have ended without the pause, the path still buys.
	s.Clock.Set(ends.Add(5 * time.Second))
	expect(t, "a buy with the turn's path after the pause", shopper.call("POST", "/api/items/"+itoa(item.ID)+"/buy/"+turn["path"].(string), nil), 202, "")
	testenv.Eventually(t, 10*time.Second, "bought", func() bool { return shopper.call("GET", queue, nil).json(t)["state"] == "bought" })
}
