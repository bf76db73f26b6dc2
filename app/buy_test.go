package app

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"seckill/auth"
	"seckill/handlers"
	"seckill/internal/testenv"
	"seckill/jobs"
	"seckill/models"
	"seckill/stock"
)

// shopper is a logged-in buyer made straight in the database, with its cookies and CSRF token, for
// tests that need thousands of them.
type shopper struct {
	id     int64
	cookie string
	csrf   string
}

func makeShoppers(t *testing.T, s *liveServer, prefix string, n int) []shopper {
	t.Helper()
	users := testenv.Users(t, s.DB, prefix, n)
	csrf := auth.NewCSRF(s.Cfg.SessionSecret)
	out := make([]shopper, n)
	for i := range users {
		_, session, err := s.Srv.Sessions.Issue(&users[i])
		if err != nil {
			t.Fatal(err)
		}
		tok, _ := csrf.Token()
		out[i] = shopper{id: users[i].ID, cookie: handlers.SessionCookie + "=" + session + "; " + handlers.CSRFCookie + "=" + tok, csrf: tok}
	}
	return out
}

// answer of one buy request: status and error code ("" for success).
type buyAnswer struct {
	status int
	code   string
}

func (sh shopper) post(t *testing.T, client *http.Client, base, path string) buyAnswer {
	req, _ := http.NewRequest("POST", base+path, nil)
	req.Header.Set("Cookie", sh.cookie)
	req.Header.Set(handlers.CSRFHeader, sh.csrf)
	resp, err := client.Do(req)
	if err != nil {
		t.Errorf("POST %s: %v", path, err)
		return buyAnswer{}
	}
	defer resp.Body.Close()
	r := reply{Status: resp.StatusCode}
	buf := make([]byte, 512)
	n, _ := resp.Body.Read(buf)
	r.Body = buf[:n]
	a := buyAnswer{status: resp.StatusCode}
	if resp.StatusCode >= 400 {
		a.code = r.code(t)
	}
	return a
}

func issuePath(t *testing.T, s *liveServer, itemID, userID int64) string {
	t.Helper()
	tok, _ := auth.RandomToken(16)
	if err := s.Srv.Ledger.IssuePath(context.Background(), itemID, userID, tok); err != nil {
		t.Fatalf("issue path: %v", err)
	}
	return tok
}

func waitDrained(t *testing.T, s *liveServer, itemID int64) {
	t.Helper()
	testenv.EventuallySaw(t, 60*time.Second, "the order queue to drain", func() (bool, string) {
		n, err := s.Srv.Ledger.Backlog(context.Background(), itemID)
		return err == nil && n == 0, fmt.Sprintf("%d left (%v)", n, err)
	})
}

// TestRush: 5,000 buyers at once for 100 units, 1,000 of them trying twice, some with a wrong path.
func TestRush(t *testing.T) {
	testenv.Long(t)
	s := startLive(t, liveOpts{tune: func(c *Config) { c.RateLimitIP = false }})
	now := s.Clock.Now()
	_, item := testenv.Sale(t, s.DB, 100, now.Add(-time.Minute), now.Add(time.Hour))
	if _, err := s.Srv.Ledger.Preheat(context.Background(), jobs.DBBooks{DB: s.DB}, item.ID); err != nil {
		t.Fatal(err)
	}
	buyers := makeShoppers(t, s, "rush", 5000)
	paths := make([]string, len(buyers))
	for i, b := range buyers {
		paths[i] = issuePath(t, s, item.ID, b.id)
	}

	type attempt struct {
		who  int
		path string
	}
	var attempts []attempt
	for i := range buyers {
		if i%25 == 0 { // 200 buyers try a made-up path first
			attempts = append(attempts, attempt{i, strings.Repeat("ab", 16)})
		}
		attempts = append(attempts, attempt{i, paths[i]})
		if i < 1000 { // 1,000 try twice with the same path
			attempts = append(attempts, attempt{i, paths[i]})
		}
	}
	rand.Shuffle(len(attempts), func(i, j int) { attempts[i], attempts[j] = attempts[j], attempts[i] })

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}, Timeout: 60 * time.Second}
	answers := make([]buyAnswer, len(attempts))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, a := range attempts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			answers[i] = buyers[a.who].post(t, client, s.URL, fmt.Sprintf("/api/items/%d/buy/%s", item.ID, a.path))
		}()
	}
	close(start)
	wg.Wait()

	allowed := map[buyAnswer]bool{
		{202, ""}: true, {403, "invalid_path"}: true, {409, "sold_out"}: true, {409, "already_bought"}: true,
	}
	counts := map[buyAnswer]int{}
	queuedBy := map[int64]int{}
	for i, a := range answers {
		counts[a]++
		if !allowed[a] {
			t.Errorf("answer %+v is none of the contract's", a)
		}
		if a.status == 202 {
			queuedBy[buyers[attempts[i].who].id]++
		}
	}
	t.Logf("answers: %v", counts)
	if counts[buyAnswer{202, ""}] != 100 {
		t.Fatalf("%d answers were 202 queued, want exactly 100", counts[buyAnswer{202, ""}])
	}
	for id, n := range queuedBy {
		if n > 1 {
			t.Errorf("user %d was queued %d times", id, n)
		}
	}

	waitDrained(t, s, item.ID)
	count := func(q string) int64 {
		var n int64
		if err := s.DB.Raw(q, item.ID).Scan(&n).Error; err != nil {
			t.Fatal(err)
		}
		return n
	}
	for q, want := range map[string]int64{
		"SELECT count(*) FROM orders WHERE item_id = ?":                                                                  100,
		"SELECT count(*) FROM purchases WHERE item_id = ?":                                                               100,
		"SELECT count(*) FROM stock_logs WHERE item_id = ?":                                                              100,
		"SELECT stock_sold FROM items WHERE id = ?":                                                                      100,
		"SELECT count(*) FROM (SELECT user_id FROM orders WHERE item_id = ? GROUP BY user_id HAVING count(*) > 1) twice": 0,
	} {
		if got := count(q); got != want {
			t.Errorf("%s = %d, want %d", q, got, want)
		}
	}
	if left, _, _ := s.Srv.Ledger.Left(context.Background(), item.ID); left != 0 {
		t.Errorf("Redis stock left %d, want 0", left)
	}
	// Every queued buyer has an order, and sees it.
	for id := range queuedBy {
		var o models.Order
		if err := s.DB.Where("user_id = ? AND item_id = ?", id, item.ID).Take(&o).Error; err != nil {
			t.Errorf("queued user %d has no order: %v", id, err)
			continue
		}
		res, _ := s.Srv.Ledger.ResultOf(context.Background(), item.ID, id)
		if res.Status != "success" || res.OrderNo != o.OrderNo || !strings.HasPrefix(o.OrderNo, "SK") {
			t.Errorf("user %d's result %+v, order %s", id, res, o.OrderNo)
		}
	}
}

// captchaFor is one shopper drawing a captcha as the pages do, with its answer.
func captchaFor(t *testing.T, s *liveServer, b *browser) (id, answer string) {
	t.Helper()
	return b.captcha()
}

func getPath(t *testing.T, s *liveServer, b *browser, itemID int64) reply {
	t.Helper()
	id, answer := captchaFor(t, s, b)
	return b.call("POST", "/api/items/"+itoa(itemID)+"/path", map[string]string{"captcha_id": id, "captcha_answer": answer})
}

func expect(t *testing.T, what string, r reply, status int, code string) {
	t.Helper()
	if r.Status != status || (code != "" && r.code(t) != code) {
		t.Errorf("%s: %d %s, want %d %s", what, r.Status, r.Body, status, code)
	}
}

func TestCaptchaPathAndBuyRefusals(t *testing.T) {
	s := startLive(t, liveOpts{})
	now := s.Clock.Now()
	_, item := testenv.Sale(t, s.DB, 10, now.Add(-time.Minute), now.Add(time.Hour))
	_, other := testenv.Sale(t, s.DB, 10, now.Add(-time.Minute), now.Add(time.Hour))
	left := func() int64 {
		l, _, _ := s.Srv.Ledger.Left(context.Background(), item.ID)
		return l
	}
	alice := newBrowser(t, s.URL)
	alice.register("alice", passwordOf("alice"))
	bob := newBrowser(t, s.URL)
	bob.register("bob", passwordOf("bob"))
	itemPath := "/api/items/" + itoa(item.ID)

	// Captcha: a wrong answer, then the same captcha with the right one (single use).
	id, answer := captchaFor(t, s, alice)
	expect(t, "wrong captcha answer", alice.call("POST", itemPath+"/path", map[string]string{"captcha_id": id, "captcha_answer": "x" + answer}), 400, "bad_captcha")
	expect(t, "the same captcha after a wrong answer", alice.call("POST", itemPath+"/path", map[string]string{"captcha_id": id, "captcha_answer": answer}), 400, "bad_captcha")
	expect(t, "no captcha", alice.call("POST", itemPath+"/path", map[string]string{}), 400, "bad_request")
	expect(t, "path without a session", newBrowser(t, s.URL).call("POST", itemPath+"/path", map[string]string{"captcha_id": id, "captcha_answer": answer}), 401, "unauthenticated")

	// A reused captcha: right the first time, refused the second.
	id2, answer2 := captchaFor(t, s, alice)
	expect(t, "a right captcha", alice.call("POST", itemPath+"/path", map[string]string{"captcha_id": id2, "captcha_answer": answer2}), 200, "")
	expect(t, "a reused captcha", alice.call("POST", itemPath+"/path", map[string]string{"captcha_id": id2, "captcha_answer": answer2}), 400, "bad_captcha")

	// A new path replaces the one before it.
	r := getPath(t, s, alice, item.ID)
	expect(t, "a right captcha", r, 200, "")
	path := r.json(t)["path"].(string)
	if len(path) < 32 {
		t.Errorf("path %q is shorter than 128 bits", path)
	}

	expect(t, "another user's path", bob.call("POST", itemPath+"/buy/"+path, nil), 403, "invalid_path")
	expect(t, "a path for another item", alice.call("POST", "/api/items/"+itoa(other.ID)+"/buy/"+path, nil), 403, "invalid_path")
	expect(t, "a made-up path", alice.call("POST", itemPath+"/buy/"+strings.Repeat("0", 32), nil), 403, "invalid_path")
	expect(t, "a malformed path", alice.call("POST", itemPath+"/buy/not-a-path", nil), 403, "invalid_path")
	if l := left(); l != 10 {
		t.Fatalf("refused buys took stock: %d left, want 10", l)
	}
	expect(t, "result before buying", alice.call("GET", itemPath+"/result", nil), 200, "")
	if st := alice.call("GET", itemPath+"/result", nil).json(t)["status"]; st != "none" {
		t.Errorf("result before buying: %v, want none", st)
	}

	expect(t, "the buy", alice.call("POST", itemPath+"/buy/"+path, nil), 202, "")
	if st := alice.call("GET", itemPath+"/result", nil).json(t)["status"]; st != "queued" && st != "success" {
		t.Errorf("result after buying: %v, want queued or success", st)
	}
	expect(t, "a reused path", alice.call("POST", itemPath+"/buy/"+path, nil), 403, "invalid_path")
	expect(t, "a path after buying", getPath(t, s, alice, item.ID), 409, "already_bought")
	if l := left(); l != 9 {
		t.Fatalf("%d left after one buy, want 9", l)
	}

	// Expired: the clock moves past the path's minute.
	r = getPath(t, s, bob, item.ID)
	expect(t, "bob's path", r, 200, "")
	s.Clock.Advance(stock.PathTTL + time.Second)
	expect(t, "an expired path", bob.call("POST", itemPath+"/buy/"+r.json(t)["path"].(string), nil), 403, "invalid_path")
	if l := left(); l != 9 {
		t.Errorf("the expired path took stock: %d left", l)
	}
	expect(t, "a path for an unknown item", getPath(t, s, bob, 987654), 404, "not_found")

	// The queue drains into an order the buyer sees.
	waitDrained(t, s, item.ID)
	res := alice.call("GET", itemPath+"/result", nil).json(t)
	if res["status"] != "success" || res["order_no"] == nil {
		t.Fatalf("result after the queue drained: %v", res)
	}
	orders := alice.call("GET", "/api/orders", nil)
	if orders.Status != 200 || !strings.Contains(string(orders.Body), res["order_no"].(string)) {
		t.Errorf("GET /api/orders: %d %s, want the order %s", orders.Status, orders.Body, res["order_no"])
	}
	one := alice.call("GET", "/api/orders/"+res["order_no"].(string), nil).json(t)
	if one["status"] != "pending_payment" || one["name"] != "Test item" || one["price_cents"] != 990.0 || one["item_id"] != float64(item.ID) {
		t.Errorf("GET /api/orders/{order_no}: %v", one)
	}
	expect(t, "another user's order", bob.call("GET", "/api/orders/"+res["order_no"].(string), nil), 404, "not_found")
}

func TestSoldOutIsAnsweredFromMemory(t *testing.T) {
	s := startLive(t, liveOpts{noBackground: true})
	now := s.Clock.Now()
	_, item := testenv.Sale(t, s.DB, 1, now.Add(-time.Minute), now.Add(time.Hour))
	buyers := makeShoppers(t, s, "so", 3)
	if _, err := s.Srv.Ledger.Preheat(context.Background(), jobs.DBBooks{DB: s.DB}, item.ID); err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	late := issuePath(t, s, item.ID, buyers[1].id)
	if a := buyers[0].post(t, client, s.URL, fmt.Sprintf("/api/items/%d/buy/%s", item.ID, issuePath(t, s, item.ID, buyers[0].id))); a.status != 202 {
		t.Fatalf("the one unit: %+v", a)
	}
	if !s.Srv.Flags.SoldOut(item.ID) {
		t.Fatal("taking the last unit did not flag the item sold out")
	}
	hook := &countingHook{}
	s.Redis.AddHook(hook)
	before := hook.n.Load()
	if a := buyers[1].post(t, client, s.URL, fmt.Sprintf("/api/items/%d/buy/%s", item.ID, late)); a != (buyAnswer{409, "sold_out"}) {
		t.Errorf("after the last unit: %+v, want 409 sold_out", a)
	}
	if n := hook.n.Load() - before; n != 0 {
		t.Errorf("a sold-out answer cost %d Redis commands, want 0", n)
	}
	// A path for it is refused too, and a latecomer's result says sold out.
	b := newBrowser(t, s.URL)
	b.register("latecomer", passwordOf("late"))
	expect(t, "a path for a sold-out item", getPath(t, s, b, item.ID), 409, "sold_out")
	if st := b.call("GET", "/api/items/"+itoa(item.ID)+"/result", nil).json(t)["status"]; st != "sold_out" {
		t.Errorf("a latecomer's result: %v, want sold_out", st)
	}
}

func TestSaleWindow(t *testing.T) {
	s := startLive(t, liveOpts{})
	now := s.Clock.Now()
	start, end := now.Add(time.Hour), now.Add(2*time.Hour)
	_, item := testenv.Sale(t, s.DB, 5, start, end)
	b := newBrowser(t, s.URL)
	b.register("early", passwordOf("early"))
	itemPath := "/api/items/" + itoa(item.ID)

	expect(t, "a path an hour before the start", getPath(t, s, b, item.ID), 403, "not_started")
	s.Clock.Set(start.Add(time.Second))
	r := getPath(t, s, b, item.ID)
	expect(t, "a path a second after the start", r, 200, "")
	path := r.json(t)["path"].(string)

	s.Clock.Set(start.Add(-time.Second)) // the buy arrives by a clock one second before the start
	expect(t, "a buy before the start", b.call("POST", itemPath+"/buy/"+path, nil), 403, "not_started")
	s.Clock.Set(end.Add(-10 * time.Second))
	path = getPath(t, s, b, item.ID).json(t)["path"].(string)
	s.Clock.Set(end.Add(time.Second)) // the path is still fresh, the sale is over
	expect(t, "a buy after the end", b.call("POST", itemPath+"/buy/"+path, nil), 403, "ended")
	expect(t, "a path after the end", getPath(t, s, b, item.ID), 403, "ended")
	if l, _, _ := s.Srv.Ledger.Left(context.Background(), item.ID); l != 5 {
		t.Errorf("stock left %d, want all 5: nothing is sold outside the window", l)
	}
	var n int64
	s.DB.Model(&models.Order{}).Count(&n)
	if n != 0 {
		t.Errorf("%d orders made outside the window", n)
	}
}

func TestBuyingRateLimits(t *testing.T) {
	s := startLive(t, liveOpts{})
	now := s.Clock.Now()
	_, item := testenv.Sale(t, s.DB, 1000, now.Add(-time.Minute), now.Add(time.Hour))
	b := newBrowser(t, s.URL)
	b.register("eager", passwordOf("eager"))
	itemPath := "/api/items/" + itoa(item.ID)

	// Paths: a burst of 10 per user, then 429 with Retry-After (wrong captchas count too).
	var last reply
	for i := 0; i < 11; i++ {
		last = b.call("POST", itemPath+"/path", map[string]string{"captcha_id": "nope", "captcha_answer": "1"})
	}
	if last.Status != 429 || last.code(t) != "rate_limited" || last.Header.Get("Retry-After") == "" {
		t.Errorf("the 11th path request in a burst: %d %s (Retry-After %q), want 429 with Retry-After", last.Status, last.Body, last.Header.Get("Retry-After"))
	}

	// The buy: 40 at once from one address, then 429, counted in memory.
	sh := makeShoppers(t, s, "burst", 1)[0]
	client := &http.Client{Timeout: 10 * time.Second}
	var limited atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 60 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if a := sh.post(t, client, s.URL, itemPath+"/buy/"+strings.Repeat("0", 32)); a.status == 429 {
				limited.Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()
	if limited.Load() == 0 {
		t.Error("60 buys at once from one address were never limited")
	}
}
