package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"seckill/handlers"
	"seckill/i18n"
	"seckill/internal/testenv"
	"seckill/jobs"
	"seckill/models"
	"seckill/payment"
)

// orderFor has a new shopper buy one unit, waits for the order to be written, and gives it a delivery
// address, as the order page has the shopper do before paying.
func orderFor(t *testing.T, s *liveServer, item models.Item, name string) (*browser, models.Order) {
	t.Helper()
	b, o := bareOrderFor(t, s, item, name)
	deliverTo(t, b, o.OrderNo, homeAddress)
	return b, o
}

// homeAddress is a good delivery address.
var homeAddress = map[string]any{"recipient": "张伟", "phone": "+86 138-0013-8000", "region": "浙江省", "city": "杭州市",
	"street": "西湖区文三路 90 号 3 栋 501", "postcode": "310012"}

// deliverTo adds the address to the shopper's book and chooses it for the order.
func deliverTo(t *testing.T, b *browser, no string, addr map[string]any) int64 {
	t.Helper()
	r := b.call("POST", "/api/addresses", addr)
	if r.Status != 201 {
		t.Fatalf("add an address: %d %s", r.Status, r.Body)
	}
	id := int64(r.json(t)["id"].(float64))
	if r := b.call("POST", "/api/orders/"+no+"/address", map[string]any{"address_id": id}); r.Status != 200 {
		t.Fatalf("choose the address for %s: %d %s", no, r.Status, r.Body)
	}
	return id
}

// bareOrderFor has a new shopper buy one unit and waits for the order to be written: no address yet.
func bareOrderFor(t *testing.T, s *liveServer, item models.Item, name string) (*browser, models.Order) {
	t.Helper()
	b := newBrowser(t, s.URL)
	id := b.register(name, passwordOf(name))
	if _, err := s.Srv.Ledger.Take(context.Background(), item.ID, id, issuePath(t, s, item.ID, id), "SK"+name); err != nil {
		t.Fatalf("take: %v", err)
	}
	var o *models.Order
	testenv.EventuallySaw(t, 20*time.Second, "order SK"+name+" to be written", func() (bool, string) {
		var err error
		o, err = models.OrderByNo(context.Background(), s.DB, "SK"+name)
		return err == nil, fmt.Sprint(err)
	})
	return b, *o
}

func newPaySale(t *testing.T, s *liveServer, stockTotal int64) (models.Item, func(string) (*browser, models.Order)) {
	t.Helper()
	now := s.Clock.Now()
	_, item := testenv.Sale(t, s.DB, stockTotal, now.Add(-time.Minute), now.Add(24*time.Hour))
	if _, err := s.Srv.Ledger.Preheat(context.Background(), jobs.DBBooks{DB: s.DB}, item.ID); err != nil {
		t.Fatal(err)
	}
	return item, func(name string) (*browser, models.Order) { return orderFor(t, s, item, name) }
}

func orderStatus(t *testing.T, s *liveServer, no string) string {
	t.Helper()
	o, err := models.OrderByNo(context.Background(), s.DB, no)
	if err != nil {
		t.Fatal(err)
	}
	return o.Status
}

func waitStatus(t *testing.T, s *liveServer, no, want string, within time.Duration) {
	t.Helper()
	testenv.EventuallySaw(t, within, "order "+no+" to be "+want, func() (bool, string) {
		got := orderStatus(t, s, no)
		return got == want, "it is " + got
	})
}

func pay(t *testing.T, b *browser, no string) map[string]any {
	t.Helper()
	r := b.call("POST", "/api/orders/"+no+"/pay", nil)
	if r.Status != 200 {
		t.Fatalf("pay %s: %d %s", no, r.Status, r.Body)
	}
	j := r.json(t)
	if j["payment_id"] == "" || decodeQR(t, j["image"].(string)) != j["pay_url"] {
		t.Fatalf("pay answered %v: the QR code must hold pay_url", j)
	}
	return j
}

func TestPaidByPollingAlone(t *testing.T) {
	testenv.Long(t)
	// No callback: the provider is told to pay, and only the poller can learn it.
	s := startLive(t, liveOpts{only: []string{"order_consumer", "payment_poll"}, tune: func(c *Config) { c.PayPollInterval = 100 * time.Millisecond }})
	_, buy := newPaySale(t, s, 5)
	b, o := buy("poll_payer")
	p := pay(t, b, o.OrderNo)
	// The payer pays at the provider, whose callback is lost.
	s.Redis.HSet(context.Background(), "sandbox:pay:{"+p["payment_id"].(string)+"}", "status", payment.StatusPaid)
	waitStatus(t, s, o.OrderNo, models.OrderPaid, 10*time.Second)
	if r := b.call("GET", "/api/orders/"+o.OrderNo, nil); r.json(t)["status"] != "paid" {
		t.Errorf("GET /api/orders/{no}: %s", r.Body)
	}
	expect(t, "paying a paid order", b.call("POST", "/api/orders/"+o.OrderNo+"/pay", nil), 409, "order_state")
}

func TestPaidByCallbackAlone(t *testing.T) {
	s := startLive(t, liveOpts{only: []string{"order_consumer"}}) // no poller
	_, buy := newPaySale(t, s, 5)
	b, o := buy("callback_payer")
	p := pay(t, b, o.OrderNo)
	// The payer opens the payment page (the QR code's URL) and presses Pay.
	page := b.call("GET", "/sandbox/pay/"+p["payment_id"].(string), nil)
	if page.Status != 200 || !bytes.Contains(page.Body, []byte("¥9.90")) || !bytes.Contains(page.Body, []byte(o.OrderNo)) {
		t.Fatalf("the payment page: %d", page.Status)
	}
	if r := b.call("POST", "/sandbox/pay/"+p["payment_id"].(string)+"/confirm", nil); r.Status != 302 {
		t.Fatalf("pressing Pay: %d", r.Status)
	}
	waitStatus(t, s, o.OrderNo, models.OrderPaid, 5*time.Second)
}

func TestUnpaidOrderIsCancelledAndItsStockSoldAgain(t *testing.T) {
	s := startLive(t, liveOpts{only: []string{"order_consumer"}})
	item, buy := newPaySale(t, s, 1)
	b, o := buy("slow_payer")
	pay(t, b, o.OrderNo) // a payment opened and never paid
	if _, err := s.Srv.Ledger.Take(context.Background(), item.ID, 999999, issuePathOrSoldOut(t, s, item.ID, 999999), "SKx"); err == nil {
		t.Fatal("a second unit was sold from a stock of one")
	}
	s.Clock.Advance(s.Cfg.PayTimeout + time.Minute)
	if err := s.Srv.UnpaidTimeout.Once(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := orderStatus(t, s, o.OrderNo); st != models.OrderCancelled {
		t.Fatalf("after the deadline the order is %s", st)
	}
	var sold, releases int64
	s.DB.Raw("SELECT stock_sold FROM items WHERE id = ?", item.ID).Scan(&sold)
	s.DB.Raw("SELECT count(*) FROM stock_logs WHERE item_id = ? AND kind = 'release'", item.ID).Scan(&releases)
	left, _, _ := s.Srv.Ledger.Left(context.Background(), item.ID)
	if sold != 0 || releases != 1 || left != 1 {
		t.Errorf("after the cancel: stock_sold %d (want 0), release logs %d (want 1), Redis left %d (want 1)", sold, releases, left)
	}
	// The unit is on sale again: another shopper buys it; the cancelled buyer cannot buy it again.
	_, again := orderFor(t, s, item, "next_in_line")
	if again.Status != models.OrderPendingPayment {
		t.Errorf("the second buyer's order: %+v", again)
	}
	expect(t, "the cancelled buyer again", getPath(t, s, b, item.ID), 409, "already_bought")
	// A second round changes nothing, even if the unit's return to Redis looks unfinished (as after a
	// Redis failure): the job retries it, and Redis takes each order's unit back once.
	s.DB.Exec("UPDATE stock_logs SET pending = ? WHERE item_id = ? AND kind = 'release'", true, item.ID)
	leftBefore, _, _ := s.Srv.Ledger.Left(context.Background(), item.ID)
	if err := s.Srv.UnpaidTimeout.Once(context.Background()); err != nil {
		t.Fatal(err)
	}
	if l, _, _ := s.Srv.Ledger.Left(context.Background(), item.ID); l != leftBefore {
		t.Errorf("retrying a finished restock changed Redis from %d to %d", leftBefore, l)
	}
	var pending int64
	s.DB.Raw("SELECT count(*) FROM stock_logs WHERE pending").Scan(&pending)
	if pending != 0 {
		t.Errorf("%d releases still pending after the retry", pending)
	}
	s.DB.Raw("SELECT count(*) FROM stock_logs WHERE item_id = ? AND kind = 'release'", item.ID).Scan(&releases)
	if releases != 1 {
		t.Errorf("%d release logs after a second round, want 1", releases)
	}
	// The admins see the job's last round and what it did, in words.
	ops := withRole(t, s, "ops", models.RoleAdmin)
	if page := ops.call("GET", "/admin", nil); page.Status != 200 || !bytes.Contains(page.Body, []byte(i18n.For("en").T("job.unpaid_timeout"))) {
		t.Errorf("the admin page does not show the unpaid timeout's last round: %d", page.Status)
	}
}

func issuePathOrSoldOut(t *testing.T, s *liveServer, itemID, userID int64) string {
	t.Helper()
	tok := "00000000000000000000000000000000"
	_ = s.Srv.Ledger.IssuePath(context.Background(), itemID, userID, tok)
	return tok
}

// TestPaidWhileCancelling: the payer pays at the very moment the deadline job closes the payment. The
// order ends paid or cancelled, never both, and the stock is right either way.
func TestPaidWhileCancelling(t *testing.T) {
	testenv.Long(t)
	s := startLive(t, liveOpts{only: []string{"order_consumer"}})
	item, buy := newPaySale(t, s, 20)
	type outcome struct{ paid, cancelled int }
	var got outcome
	for i := 0; i < 12; i++ {
		b, o := buy("racer" + itoa(int64(i)))
		p := pay(t, b, o.OrderNo)
		s.Clock.Advance(s.Cfg.PayTimeout + time.Minute)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i%4) * 2 * time.Millisecond) // vary who comes first
			b.call("POST", "/sandbox/pay/"+p["payment_id"].(string)+"/confirm", nil)
		}()
		go func() { defer wg.Done(); _ = s.Srv.UnpaidTimeout.Once(context.Background()) }()
		wg.Wait()
		_ = s.Srv.UnpaidTimeout.Once(context.Background()) // a round that lost the lock to nobody
		switch st := orderStatus(t, s, o.OrderNo); st {
		case models.OrderPaid:
			got.paid++
		case models.OrderCancelled:
			got.cancelled++
			if pst, _ := s.Srv.Provider.Query(context.Background(), p["payment_id"].(string)); pst == payment.StatusPaid {
				t.Errorf("order %s was cancelled but its payment went through", o.OrderNo)
			}
		default:
			t.Errorf("order %s is %s after the race", o.OrderNo, st)
		}
	}
	t.Logf("paid %d, cancelled %d", got.paid, got.cancelled)
	var sold, releases, live int64
	s.DB.Raw("SELECT stock_sold FROM items WHERE id = ?", item.ID).Scan(&sold)
	s.DB.Raw("SELECT count(*) FROM stock_logs WHERE item_id = ? AND kind = 'release'", item.ID).Scan(&releases)
	s.DB.Raw("SELECT count(*) FROM orders WHERE item_id = ? AND status <> 'cancelled'", item.ID).Scan(&live)
	left, _, _ := s.Srv.Ledger.Left(context.Background(), item.ID)
	if sold != int64(got.paid) || live != int64(got.paid) || releases != int64(got.cancelled) || left != 20-int64(got.paid) {
		t.Errorf("stock_sold %d, live orders %d, releases %d, Redis left %d; want %d, %d, %d, %d",
			sold, live, releases, left, got.paid, got.paid, got.cancelled, 20-got.paid)
	}
}

func TestProviderDown(t *testing.T) {
	testenv.Long(t)
	var calls sync.Mutex
	hits := 0
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Lock()
		hits++
		calls.Unlock()
		http.Error(w, "down", http.StatusBadGateway)
	}))
	defer down.Close()
	s := startLive(t, liveOpts{only: []string{"order_consumer"}, tune: func(c *Config) { c.PayProviderURL = down.URL }})
	_, buy := newPaySale(t, s, 5)
	b, o := buy("unlucky")
	for i := 0; i < 4; i++ {
		expect(t, "pay while the provider fails", b.call("POST", "/api/orders/"+o.OrderNo+"/pay", nil), 503, "payment_unavailable")
	}
	if st := s.Srv.Provider.BreakerState(); st != "open" {
		t.Errorf("the circuit breaker is %s after repeated failures, want open", st)
	}
	calls.Lock()
	before := hits
	calls.Unlock()
	expect(t, "pay with the circuit open", b.call("POST", "/api/orders/"+o.OrderNo+"/pay", nil), 503, "payment_unavailable")
	calls.Lock()
	if hits != before {
		t.Errorf("with the circuit open the provider was still called")
	}
	calls.Unlock()

	// An order past its deadline with an open payment: the provider cannot be asked to close it, so the
	// order is not cancelled.
	if _, _, err := models.AddPayment(context.Background(), s.DB, &o, models.NewPayment{ProviderID: "sbx_unknowable"}, s.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	s.Clock.Advance(s.Cfg.PayTimeout + time.Minute)
	if err := s.Srv.UnpaidTimeout.Once(context.Background()); err == nil {
		t.Error("the deadline round with the provider down reported no error")
	}
	if st := orderStatus(t, s, o.OrderNo); st != models.OrderPendingPayment {
		t.Errorf("the order was %s because of the provider's failure alone", st)
	}
	if err := s.Srv.PaymentPoll.Once(context.Background()); err == nil {
		t.Error("the polling round with the provider down reported no error (it backs off on it)")
	}
}

func TestTwoInstancesCancelEachOrderOnce(t *testing.T) {
	testenv.Long(t)
	a := startLive(t, liveOpts{only: []string{"order_consumer"}})
	b := startLive(t, liveOpts{db: a.DB, rdb: a.Redis, only: []string{"order_consumer"}})
	item, buy := newPaySale(t, a, 10)
	var nos []string
	for i := 0; i < 6; i++ {
		_, o := buy("twin" + itoa(int64(i)))
		nos = append(nos, o.OrderNo)
	}
	a.Clock.Advance(a.Cfg.PayTimeout + time.Minute)
	b.Clock.Advance(b.Cfg.PayTimeout + time.Minute)
	var wg sync.WaitGroup
	for _, srv := range []*liveServer{a, b, a, b} {
		wg.Add(1)
		go func() { defer wg.Done(); _ = srv.Srv.UnpaidTimeout.Once(context.Background()) }()
	}
	wg.Wait()
	_ = a.Srv.UnpaidTimeout.Once(context.Background())
	for _, no := range nos {
		if st := orderStatus(t, a, no); st != models.OrderCancelled {
			t.Errorf("order %s is %s", no, st)
		}
	}
	var releases, sold int64
	a.DB.Raw("SELECT count(*) FROM stock_logs WHERE item_id = ? AND kind = 'release'", item.ID).Scan(&releases)
	a.DB.Raw("SELECT stock_sold FROM items WHERE id = ?", item.ID).Scan(&sold)
	left, _, _ := a.Srv.Ledger.Left(context.Background(), item.ID)
	if releases != 6 || sold != 0 || left != 10 {
		t.Errorf("releases %d (want 6), stock_sold %d (want 0), Redis left %d (want 10): each order cancelled once", releases, sold, left)
	}
}

func TestForgedAndReplayedCallbacks(t *testing.T) {
	s := startLive(t, liveOpts{only: []string{"order_consumer"}})
	_, buy := newPaySale(t, s, 5)
	b, o := buy("target_payer")
	p := pay(t, b, o.OrderNo)
	id := p["payment_id"].(string)
	secret := s.Cfg.callbackSecret()
	send := func(n payment.Notification, key string) reply {
		body, _ := json.Marshal(n)
		return newBrowser(t, s.URL).send("POST", handlers.NotifyPath, body, map[string]string{payment.SignatureHeader: payment.Sign(key, body)})
	}
	now := s.Clock.Now().Unix()
	good := payment.Notification{PaymentID: id, OrderNo: o.OrderNo, AmountCents: o.PriceCents, Status: "paid", At: now}
	for name, tt := range map[string]struct {
		n      payment.Notification
		key    string
		status int
	}{
		"bad signature":   {good, "not the secret at all", 400},
		"wrong amount":    {payment.Notification{PaymentID: id, OrderNo: o.OrderNo, AmountCents: 1, Status: "paid", At: now}, secret, 400},
		"unknown payment": {payment.Notification{PaymentID: "sbx_nope", OrderNo: o.OrderNo, AmountCents: o.PriceCents, Status: "paid", At: now}, secret, 404},
		"old (a replay)":  {payment.Notification{PaymentID: id, OrderNo: o.OrderNo, AmountCents: o.PriceCents, Status: "paid", At: now - 3600}, secret, 400},
	} {
		if r := send(tt.n, tt.key); r.Status != tt.status {
			t.Errorf("%s: %d %s, want %d", name, r.Status, r.Body, tt.status)
		}
		if st := orderStatus(t, s, o.OrderNo); st != models.OrderPendingPayment {
			t.Fatalf("a %s callback changed the order to %s", name, st)
		}
	}
	if r := send(good, secret); r.Status != 200 {
		t.Fatalf("a genuine callback: %d %s", r.Status, r.Body)
	}
	if st := orderStatus(t, s, o.OrderNo); st != models.OrderPaid {
		t.Fatalf("after a genuine callback the order is %s", st)
	}
	if r := send(good, secret); r.Status != 200 || orderStatus(t, s, o.OrderNo) != models.OrderPaid {
		t.Errorf("the same callback again: %d, order %s", r.Status, orderStatus(t, s, o.OrderNo))
	}
}

// TestSandboxRunsAlone: the provider as a separate service (seckill sandbox-pay), and a shop that talks
// to it there.
func TestSandboxRunsAlone(t *testing.T) {
	testenv.Long(t)
	rdb := testenv.Redis(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.PaySecret = "a shared secret of the shop and the provider"
	cfg.PayProviderURL = "http://" + ln.Addr().String() + "/sandbox"
	f, err := newSandboxApp(cfg, rdb, slog.New(slog.NewTextHandler(io.Discard, nil)), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	serveOn(t, f, ln)

	s := startLive(t, liveOpts{rdb: nil, only: []string{"order_consumer", "payment_poll"}, tune: func(c *Config) {
		c.PayProviderURL, c.PaySecret, c.PayPollInterval = cfg.PayProviderURL, cfg.PaySecret, 100*time.Millisecond
	}})
	_, buy := newPaySale(t, s, 3)
	b, o := buy("elsewhere")
	p := pay(t, b, o.OrderNo)
	if !strings.HasPrefix(p["pay_url"].(string), cfg.PayProviderURL+"/pay/") {
		t.Fatalf("pay_url %v is not the separate provider's", p["pay_url"])
	}
	resp, err := http.Post(p["pay_url"].(string)+"/confirm", "application/x-www-form-urlencoded", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	waitStatus(t, s, o.OrderNo, models.OrderPaid, 10*time.Second)
}

// TestDoubleClickOnPay: two Pay requests at once make one payment, and the deadline closes every open
// payment of the order, so none can be paid after it is cancelled.
func TestDoubleClickOnPay(t *testing.T) {
	testenv.Long(t)
	s := startLive(t, liveOpts{only: []string{"order_consumer"}})
	_, buy := newPaySale(t, s, 5)
	b, o := buy("double_clicker")
	ids := make(chan string, 10)
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := b.call("POST", "/api/orders/"+o.OrderNo+"/pay", nil); r.Status == 200 {
				ids <- r.json(t)["payment_id"].(string)
			}
		}()
	}
	wg.Wait()
	close(ids)
	seen := map[string]bool{}
	for id := range ids {
		seen[id] = true
	}
	if len(seen) != 1 {
		t.Errorf("ten Pay clicks at once made %d payments, want 1", len(seen))
	}
	// Even with a second open payment recorded (say from an older provider), the deadline closes both.
	if _, _, err := models.AddPayment(context.Background(), s.DB, &o, models.NewPayment{ProviderID: "sbx_second"}, s.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	extra, err := payment.NewSandbox(s.Redis, s.URL+"/sandbox", s.Cfg.callbackSecret(), "", time.Now).Create(context.Background(),
		payment.Request{OrderNo: o.OrderNo + "-other", AmountCents: o.PriceCents})
	if err != nil {
		t.Fatal(err)
	}
	s.DB.Exec("UPDATE payments SET provider_id = ? WHERE provider_id = ?", extra.ID, "sbx_second")
	s.Clock.Advance(s.Cfg.PayTimeout + time.Minute)
	if err := s.Srv.UnpaidTimeout.Once(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := orderStatus(t, s, o.OrderNo); st != models.OrderCancelled {
		t.Fatalf("order %s", st)
	}
	for id := range seen {
		if st, _ := s.Srv.Provider.Query(context.Background(), id); st != payment.StatusClosed {
			t.Errorf("payment %s is %s at the provider after its order was cancelled, want closed", id, st)
		}
	}
	if st, _ := s.Srv.Provider.Query(context.Background(), extra.ID); st != payment.StatusClosed {
		t.Errorf("the second open payment is %s at the provider, want closed", st)
	}
}
