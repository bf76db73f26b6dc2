package app

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	goparser "go/parser"
	"go/token"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/chromedp/chromedp"
	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"seckill/handlers"
	"seckill/internal/testenv"
	"seckill/jobs"
	"seckill/models"
	"seckill/payment"
	"seckill/ratelimit"
)

// TestLanguageSwitchRedirectsOnlyToLocalPaths: the switch's back= can neither inject a header nor send
// the visitor to another site.
func TestLanguageSwitchRedirectsOnlyToLocalPaths(t *testing.T) {
	s := startLive(t, liveOpts{noBackground: true})
	for _, tt := range []struct{ back, want string }{
		{"/%0d%0aSet-Cookie:%20evil=1;%20Path=/", "/"},
		{"/%0aSet-Cookie:%20evil=1", "/"},
		{"/%09/evil.example", "/"},
		{"//evil.example", "/"},
		{"/%5Cevil.example", "/"},
		{"https://evil.example/", "/"},
		{"/%20/evil.example", "/"},
		{"/items/2?x=1", "/items/2?x=1"},
		{"", "/"},
	} {
		b := newBrowser(t, s.URL)
		req, _ := http.NewRequest("GET", s.URL+"/lang/zh?back="+tt.back, nil)
		resp, err := b.c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 302 || resp.Header.Get("Location") != tt.want {
			t.Errorf("back=%s: %d to %q, want 302 to %q", tt.back, resp.StatusCode, resp.Header.Get("Location"), tt.want)
		}
		for _, c := range resp.Cookies() {
			if c.Name == "evil" {
				t.Errorf("back=%s set the cookie evil=%s", tt.back, c.Value)
			}
		}
		if lang := b.cookie(handlers.LangCookie); lang != "zh" {
			t.Errorf("back=%s: the language cookie is %q", tt.back, lang)
		}
	}
}

// TestCrossSiteFormsAreRefused: a cross-site form can send neither the CSRF header nor a JSON content
// type; login, registration and logout refuse it, with a session or without.
func TestCrossSiteFormsAreRefused(t *testing.T) {
	s := startLive(t, liveOpts{only: []string{"sessions"}})
	victim := newBrowser(t, s.URL)
	victim.register("victim_1", passwordOf("victim"))
	newBrowser(t, s.URL).register("attacker0", passwordOf("attacker"))

	form := func(b *browser, path, contentType, body string, withToken bool) reply {
		t.Helper()
		req, _ := http.NewRequest("POST", s.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		if withToken {
			req.Header.Set(handlers.CSRFHeader, b.csrf)
		}
		return b.do(req)
	}
	login := `{"username":"attacker0","password":"` + passwordOf("attacker") + `"}`
	for _, tt := range []struct {
		name, path, contentType, body string
		withToken                     bool
		status                        int
		code                          string
	}{
		{"login from a text/plain form", "/api/auth/login", "text/plain", login, false, 403, "csrf"},
		{"registration from a text/plain form", "/api/auth/register", "text/plain", `{"username":"bot_1","password":"bot password"}`, false, 403, "csrf"},
		{"logout from a form", "/api/auth/logout", "application/x-www-form-urlencoded", "", false, 403, "csrf"},
		{"login as JSON with no token", "/api/auth/login", "application/json", login, false, 403, "csrf"},
		{"a token but a text/plain body", "/api/auth/login", "text/plain", login, true, 415, "unsupported_media_type"},
		{"a token but a form body", "/api/auth/login", "application/x-www-form-urlencoded", "username=attacker0", true, 415, "unsupported_media_type"},
	} {
		r := form(victim, tt.path, tt.contentType, tt.body, tt.withToken)
		if r.Status != tt.status || r.code(t) != tt.code {
			t.Errorf("%s: %d %s, want %d %s", tt.name, r.Status, r.Body, tt.status, tt.code)
		}
	}
	if status, name := victim.me(); status != 200 || name != "victim_1" {
		t.Errorf("after the cross-site forms the victim is %d %q, want still logged in as victim_1", status, name)
	}
	// The same login with the token and JSON is an ordinary login.
	if r := form(victim, "/api/auth/login", "application/json; charset=utf-8", login, true); r.Status != 200 {
		t.Errorf("a real login: %d %s", r.Status, r.Body)
	}
}

// TestRegistrationNeedsACaptchaAndIsLimitedPerAddress: a script cannot register for free.
func TestRegistrationNeedsACaptchaAndIsLimitedPerAddress(t *testing.T) {
	s := startLive(t, liveOpts{only: []string{"sessions"}})
	b := newBrowser(t, s.URL)
	r := b.call("POST", "/api/auth/register", map[string]string{"username": "no_captcha", "password": "long enough"})
	if f, _ := r.json(t)["fields"].(map[string]any); r.Status != 400 || r.code(t) != "bad_request" || f["captcha_id"] == nil {
		t.Errorf("registration without a captcha: %d %s, want 400 naming captcha_id", r.Status, r.Body)
	}
	body := b.registration("wrong_captcha", "long enough")
	body["captcha_answer"] = "not the answer"
	if r := b.call("POST", "/api/auth/register", body); r.Status != 400 || r.code(t) != "bad_captcha" {
		t.Errorf("a wrong captcha: %d %s, want 400 bad_captcha", r.Status, r.Body)
	}
	// A bad field does not use the captcha up: the person fixes the field and sends it again.
	body = b.registration("x", "long enough")
	if r := b.call("POST", "/api/auth/register", body); r.Status != 400 || r.code(t) != "bad_request" {
		t.Fatalf("a bad name: %d %s", r.Status, r.Body)
	}
	body["username"] = "fixed_name"
	if r := b.call("POST", "/api/auth/register", body); r.Status != 201 {
		t.Errorf("the same captcha after fixing the name: %d %s, want 201", r.Status, r.Body)
	}
	// From one address, the burst of 20 attempts a minute is all (the 60th in a minute is far past it).
	limited := 0
	for i := range 30 {
		r := b.call("POST", "/api/auth/register", map[string]string{"username": "flood_" + strconv.Itoa(i), "password": "long enough"})
		if r.Status == 429 {
			limited++
			if r.Header.Get("Retry-After") == "" {
				t.Error("a refused registration has no Retry-After")
			}
		}
	}
	if limited < 8 {
		t.Errorf("%d of 30 more registrations from one address were refused, want every one past the burst of 20 (at least 8)", limited)
	}
}

// TestTakenNameIsCheckedBeforeHashing: with every hashing turn taken (a flood of logins), a taken name
// is still answered at once, and a login waits its bounded moment and is told to come back.
func TestTakenNameIsCheckedBeforeHashing(t *testing.T) {
	testenv.Long(t)
	s := startLive(t, liveOpts{only: []string{"sessions"}})
	first := newBrowser(t, s.URL)
	first.register("taken_name", "a good password")
	b := newBrowser(t, s.URL)
	body := b.registration("taken_name", "another password")
	release := holdPasswordTurns(t, s)
	defer release()

	start := time.Now()
	r := b.call("POST", "/api/auth/register", body)
	if r.Status != 409 || r.code(t) != "username_taken" {
		t.Errorf("a taken name while hashing is busy: %d %s, want 409 username_taken", r.Status, r.Body)
	}
	if waited := time.Since(start); waited > 2500*time.Millisecond {
		t.Errorf("a taken name took %v: it waited for a hashing turn", waited)
	}
	r = b.call("POST", "/api/auth/login", map[string]string{"username": "taken_name", "password": "a good password"})
	if r.Status != 429 || r.code(t) != "rate_limited" {
		t.Errorf("a login with no hashing turn free: %d %s, want 429 rate_limited", r.Status, r.Body)
	}
	// Captchas have turns of their own: a flood of logins does not stop the way to a purchase path.
	if r := b.call("GET", "/api/captcha", nil); r.Status != 200 {
		t.Errorf("a captcha while every hashing turn is taken: %d, want 200", r.Status)
	}
	// A login told that the server is busy did not use up one of the owner's five attempts.
	release()
	for i := range 5 {
		if r := b.call("POST", "/api/auth/login", map[string]string{"username": "taken_name", "password": "a wrong password"}); r.Status != 401 {
			t.Errorf("wrong password %d after a busy 429: %d %s, want 401 (the 429 counted as an attempt)", i+1, r.Status, r.Body)
		}
	}
}

// holdPasswordTurns takes every turn of the server's password hashing until release is called.
func holdPasswordTurns(t *testing.T, s *liveServer) (release func()) {
	t.Helper()
	hold, started := make(chan struct{}), make(chan struct{}, 64)
	turns := max(runtime.NumCPU()/4, 1) // as NewServer sizes the hasher
	for range turns {
		go func() {
			_ = s.Srv.Hashing.Do(context.Background(), func() { started <- struct{}{}; <-hold })
		}()
	}
	for range turns {
		select {
		case <-started:
		case <-time.After(5 * time.Second):
			t.Fatal("the hashing turns were not all taken")
		}
	}
	var once sync.Once
	return func() { once.Do(func() { close(hold) }) }
}

// TestLongUsernamesMakeNoKeys: a login with a name that cannot be one is refused before it becomes a
// rate-limit key in Redis.
func TestLongUsernamesMakeNoKeys(t *testing.T) {
	s := startLive(t, liveOpts{only: []string{"sessions"}})
	b := newBrowser(t, s.URL)
	long := strings.Repeat("a", 50_000) // under BODY_LIMIT (64 KB): the name itself must be refused
	if r := b.call("POST", "/api/auth/login", map[string]string{"username": long, "password": "whatever it is"}); r.Status != 401 || r.code(t) != "bad_credentials" {
		t.Errorf("a 50 kB username: %d %.200s, want 401 bad_credentials", r.Status, r.Body)
	}
	keys, _ := s.Redis.Keys(context.Background(), "*aaaaaaaaaa*").Result()
	if len(keys) > 0 {
		t.Errorf("a 100 kB username became Redis keys: %d of them", len(keys))
	}
}

// TestCanonicalIDsAndBoundedPageCache: only /items/2 names item 2, and an item that does not exist is
// remembered as such for a second instead of asking the database on every request.
func TestCanonicalIDsAndBoundedPageCache(t *testing.T) {
	s := startLive(t, liveOpts{noBackground: true})
	now := s.Clock.Now()
	_, item := testenv.Sale(t, s.DB, 5, now.Add(time.Hour), now.Add(2*time.Hour))
	id := strconv.FormatInt(item.ID, 10)
	b := newBrowser(t, s.URL)
	for _, p := range []string{"/items/" + id, "/api/items/" + id} {
		if r := b.call("GET", p, nil); r.Status != 200 {
			t.Errorf("GET %s: %d", p, r.Status)
		}
	}
	for _, spelling := range []string{"0" + id, "00" + id, "+" + id, id + ".0", "%2B" + id, " " + id} {
		for _, p := range []string{"/items/", "/api/items/", "/api/activities/"} {
			if r := b.call("GET", p+spelling, nil); r.Status != 404 {
				t.Errorf("GET %s%s: %d, want 404", p, spelling, r.Status)
			}
		}
	}
	queries := countQueries(t, s.DB)
	for range 20 {
		if r := b.call("GET", "/items/987654321", nil); r.Status != 404 {
			t.Fatalf("an unknown item: %d", r.Status)
		}
	}
	if n := queries.Load(); n > 4 {
		t.Errorf("20 views of an unknown item within a second made %d queries, want those of one render", n)
	}
}

// countQueries counts the queries made through db from now on.
func countQueries(t *testing.T, db *gorm.DB) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	count := func(*gorm.DB) { n.Add(1) }
	name := "count_" + strings.ReplaceAll(t.Name(), "/", "_")
	if err := db.Callback().Query().After("gorm:query").Register(name, count); err != nil {
		t.Fatal(err)
	}
	if err := db.Callback().Raw().After("gorm:raw").Register(name, count); err != nil {
		t.Fatal(err)
	}
	if err := db.Callback().Row().After("gorm:row").Register(name, count); err != nil {
		t.Fatal(err)
	}
	return &n
}

// TestJunkItemIDsMakeNoDashboardKeys: buys aimed at items that are not on sale are answered, but leave
// no answer counts in Redis.
func TestJunkItemIDsMakeNoDashboardKeys(t *testing.T) {
	s := startLive(t, liveOpts{noBackground: true})
	b := newBrowser(t, s.URL)
	b.register("junk_buyer", passwordOf("junk"))
	now := s.Clock.Now()
	_, item := testenv.Sale(t, s.DB, 5, now.Add(-time.Minute), now.Add(time.Hour))
	if _, err := s.Srv.Ledger.Preheat(context.Background(), jobs.DBBooks{DB: s.DB}, item.ID); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"987654", "987655", strconv.FormatInt(item.ID, 10)} {
		b.call("POST", "/api/items/"+id+"/buy/0123456789abcdef0123456789abcdef", nil)
		b.call("POST", "/api/items/"+id+"/buy/junk", nil)
	}
	if err := s.Srv.Answers.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, id := range []int64{987654, 987655} {
		if keys, _ := s.Redis.Keys(ctx, "sk:{item:"+strconv.FormatInt(id, 10)+"}:*").Result(); len(keys) > 0 {
			t.Errorf("buys of item %d, which is not on sale, left keys %v", id, keys)
		}
	}
	series, err := s.Srv.Answers.Series(ctx, []int64{item.ID}, time.Now(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var counted int64
	for _, p := range series {
		for _, n := range p.Counts {
			counted += n
		}
	}
	if counted != 2 {
		t.Errorf("the item on sale counted %d answers, want its 2", counted)
	}
}

// TestSecurityHeaders: pages and JSON answers cannot be framed or sniffed, scripts come from this site
// only, and HSTS is sent when the site is served over TLS.
func TestSecurityHeaders(t *testing.T) {
	for _, base := range []string{"http://shop.example", "https://shop.example"} {
		s := startLive(t, liveOpts{noBackground: true, tune: func(c *Config) { c.BaseURL = base }})
		for _, path := range []string{"/", "/api/activities", "/API/activities", "/login", "/api/nothing-here", "/nothing-here", "/api"} {
			a := do(t, s.Srv.Fiber, "GET", path, nil)
			h := a.Header
			want := "script-src 'self'" // a page's scripts come from this site; a JSON answer loads nothing
			if isAPI(path) {
				want = "default-src 'none'"
			}
			if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, want) {
				t.Errorf("%s%s: Content-Security-Policy %q", base, path, csp)
			}
			if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Cross-Origin-Resource-Policy") != "same-origin" {
				t.Errorf("%s%s: nosniff %q, resource policy %q", base, path, h.Get("X-Content-Type-Options"), h.Get("Cross-Origin-Resource-Policy"))
			}
			// A page's own headers are on pages, and only there: a JSON answer has no links and no window.
			page := !isAPI(path)
			if (h.Get("X-Frame-Options") == "DENY") != page || (h.Get("Referrer-Policy") != "") != page || (h.Get("Cross-Origin-Opener-Policy") != "") != page {
				t.Errorf("%s%s: frame %q, referrer %q, opener %q", base, path, h.Get("X-Frame-Options"), h.Get("Referrer-Policy"), h.Get("Cross-Origin-Opener-Policy"))
			}
			if hsts := h.Get("Strict-Transport-Security"); (hsts != "") != strings.HasPrefix(base, "https") {
				t.Errorf("%s%s: Strict-Transport-Security %q", base, path, hsts)
			}
		}
	}
}

// TestMetricsListener: /metrics answers on the operators' listener, with the process's metrics.
func TestMetricsListener(t *testing.T) {
	s := startLive(t, liveOpts{noBackground: true})
	addr, stop, err := serveMetrics("127.0.0.1:0", s.Srv.Metrics, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	resp, err := http.Get("http://" + addr.String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "go_goroutines") {
		t.Errorf("the operators' /metrics: %d %.200s", resp.StatusCode, body)
	}
	if r, err := http.Get("http://" + addr.String() + "/"); err != nil || r.StatusCode != 404 {
		t.Errorf("the operators' listener serves more than /metrics: %v %v", r, err)
	}
}

// TestSandboxIsNotAPublicService: unmounted unless enabled; enabled, its API serves only the shop (with
// its key), takes no callback address from a caller, caps its fields and limits the payer's presses.
func TestSandboxIsNotAPublicService(t *testing.T) {
	testenv.Long(t)
	off := startLive(t, liveOpts{noBackground: true, tune: func(c *Config) {
		c.PaySandbox, c.PayProviderURL = false, "http://127.0.0.1:1/provider"
	}})
	for _, p := range []string{"/sandbox/pay/sbx_0123456789abcdef01234567", "/sandbox/api/payments/sbx_0123456789abcdef01234567"} {
		if a := do(t, off.Srv.Fiber, "GET", p, nil); a.Status != 404 {
			t.Errorf("with PAY_SANDBOX off, GET %s: %d, want 404", p, a.Status)
		}
	}

	s := startLive(t, liveOpts{only: []string{"order_consumer"}})
	var calledBack atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calledBack.Add(1) }))
	defer elsewhere.Close()
	create := func(key, body string) reply {
		req := httptest.NewRequest("POST", "/sandbox/api/payments", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		return doRequest(t, s.Srv.Fiber, req)
	}
	key := payment.APIKey(s.Cfg.callbackSecret())
	good := `{"order_no":"SK1","amount_cents":100,"notify_url":"` + elsewhere.URL + `"}`
	if a := create("", good); a.Status != 401 {
		t.Errorf("an anonymous payment: %d %s, want 401", a.Status, a.Body)
	}
	if a := create("not the key", good); a.Status != 401 {
		t.Errorf("a payment with a wrong key: %d %s, want 401", a.Status, a.Body)
	}
	if a := create(key, `{"order_no":"`+strings.Repeat("9", 50_000)+`","amount_cents":100}`); a.Status != 400 {
		t.Errorf("a 100 kB order number: %d %.200s, want 400", a.Status, a.Body)
	}
	if a := create(key, `{"order_no":"SK1","amount_cents":100000000001}`); a.Status != 400 {
		t.Errorf("a huge amount: %d %.200s, want 400", a.Status, a.Body)
	}
	// The shop's own payment goes through; paying it calls back the shop, never the caller's address.
	_, buy := newPaySale(t, s, 5)
	b, o := buy("sandbox_payer")
	p := pay(t, b, o.OrderNo)
	r := create(key, good)
	if r.Status != 201 {
		t.Fatalf("a payment with the key: %d %s", r.Status, r.Body)
	}
	for _, id := range []string{p["payment_id"].(string), jsonField(t, string(r.Body), "payment_id")} {
		if r := b.call("POST", "/sandbox/pay/"+id+"/confirm", nil); r.Status != 302 {
			t.Fatalf("confirm %s: %d %s", id, r.Status, r.Body)
		}
	}
	waitStatus(t, s, o.OrderNo, models.OrderPaid, 10*time.Second)
	if n := calledBack.Load(); n != 0 {
		t.Errorf("the sandbox called a caller-chosen address %d times", n)
	}
	// The payer's presses are limited per address.
	limited := false
	for range 40 {
		if r := b.call("POST", "/sandbox/pay/"+p["payment_id"].(string)+"/cancel", nil); r.Status == 429 {
			limited = true
			break
		}
	}
	if !limited {
		t.Error("40 presses of Cancel from one address in a moment were all taken")
	}
}

func jsonField(t *testing.T, body, field string) string {
	t.Helper()
	return reply{Body: []byte(body)}.json(t)[field].(string)
}

// TestSecondPaymentByCallbackIsRefunded: money that arrives by callback for an order already paid by
// another payment gets a refund, as it does when the poller finds it; the same callback twice does not.
func TestSecondPaymentByCallbackIsRefunded(t *testing.T) {
	testenv.Long(t)
	s := startLive(t, liveOpts{only: []string{"order_consumer"}})
	_, buy := newPaySale(t, s, 5)
	b, o := buy("twice_payer")
	refunds := func() []models.Refund {
		t.Helper()
		rs, err := models.RefundsOfOrder(context.Background(), s.DB, o.ID)
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	first := pay(t, b, o.OrderNo)["payment_id"].(string)
	if r := b.call("POST", "/sandbox/pay/"+first+"/confirm", nil); r.Status != 302 {
		t.Fatalf("confirm: %d", r.Status)
	}
	waitStatus(t, s, o.OrderNo, models.OrderPaid, 10*time.Second)
	// The same payment's callback again (a provider's retry) is no second payment.
	p, err := models.PaymentByProviderID(context.Background(), s.DB, first)
	if err != nil {
		t.Fatal(err)
	}
	notify(t, s, payment.Notification{PaymentID: first, OrderNo: o.OrderNo, AmountCents: o.PriceCents, Status: payment.StatusPaid, At: s.Clock.Now().Unix()})
	if rs := refunds(); len(rs) != 0 {
		t.Fatalf("a repeated callback for the paying payment got a refund: %+v", rs)
	}
	// A signed callback whose payment id cannot be one is refused, not a failure (found by fuzzing).
	body := []byte(`{"payment_id":"sbx_\u0000","order_no":"` + o.OrderNo + `","amount_cents":1,"status":"paid","at":` + strconv.FormatInt(s.Clock.Now().Unix(), 10) + `}`)
	signed := map[string]string{payment.SignatureHeader: payment.Sign(s.Cfg.callbackSecret(), body)}
	if r := newBrowser(t, s.URL).send("POST", handlers.NotifyPath, body, signed); r.Status != 400 {
		t.Errorf("a callback with a NUL in its payment id: %d %s, want 400", r.Status, r.Body)
	}
	// A second payment of the same order, paid too (an older payment the payer still had open).
	second := models.Payment{OrderID: p.OrderID, OrderNo: o.OrderNo, ProviderID: "sbx_" + strings.Repeat("b", 24), Status: models.PaymentOpen,
		AmountCents: o.PriceCents, CreatedAt: time.Now(), UpdatedAt: time.Now()}
	if err := s.DB.Create(&second).Error; err != nil {
		t.Fatal(err)
	}
	notify(t, s, payment.Notification{PaymentID: second.ProviderID, OrderNo: o.OrderNo, AmountCents: o.PriceCents, Status: payment.StatusPaid, At: s.Clock.Now().Unix()})
	if rs := refunds(); len(rs) != 1 || rs[0].ProviderID != second.ProviderID || rs[0].Kind != models.RefundLatePayment {
		t.Errorf("a second payment's money on a paid order: refunds %+v, want one of %s", rs, second.ProviderID)
	}
}

func notify(t *testing.T, s *liveServer, n payment.Notification) {
	t.Helper()
	body := []byte(`{"payment_id":"` + n.PaymentID + `","order_no":"` + n.OrderNo + `","amount_cents":` + strconv.FormatInt(n.AmountCents, 10) +
		`,"status":"` + n.Status + `","at":` + strconv.FormatInt(n.At, 10) + `}`)
	signed := map[string]string{payment.SignatureHeader: payment.Sign(s.Cfg.callbackSecret(), body)}
	if r := newBrowser(t, s.URL).send("POST", handlers.NotifyPath, body, signed); r.Status != 200 {
		t.Fatalf("notify: %d %s", r.Status, r.Body)
	}
}

// TestEveryErrorCodeHasAStatus walks the codes errs declares: none answers 500 by being forgotten.
func TestEveryErrorCodeHasAStatus(t *testing.T) {
	f, err := goparser.ParseFile(token.NewFileSet(), "../errs/errs.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	codes := 0
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			for _, v := range spec.(*ast.ValueSpec).Values {
				lit, ok := v.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				code, _ := strconv.Unquote(lit.Value)
				codes++
				if _, ok := statusOf[code]; !ok {
					t.Errorf("errs code %q has no HTTP status in statusOf", code)
				}
			}
		}
	}
	if codes < 20 {
		t.Fatalf("found %d codes in errs.go: the walk is broken", codes)
	}
	if statusOf["timeout"] != 408 {
		t.Errorf("timeout answers %d, want 408", statusOf["timeout"])
	}
}

// TestLocalPathMirrorInThePageScript: the pages' localPath (assets/js/api.js) answers as the server's
// handlers.LocalPath does, on the tricky targets and on a thousand random ones.
func TestLocalPathMirrorInThePageScript(t *testing.T) {
	testenv.Long(t)
	s := startLive(t, liveOpts{noBackground: true})
	ctx := chrome(t)
	targets := []string{"/", "/items/2", "", "items", "//evil.example", "/\\evil.example", "/\t/evil.example",
		"/\r\nSet-Cookie: x=1", "/ /x", "/caf\u00e9", "/\x7f", "https://evil.example", "/a\\b", "/" + strings.Repeat("a", 2047),
		"/" + strings.Repeat("a", 2048), "/?next=//x", "/%2F%2Fevil.example"}
	rnd := rand.New(rand.NewPCG(14, 14))
	alphabet := []byte("/\\\t\r\n :%?#.aZ09~\x00\x1f\x7f\x80")
	for range 1000 {
		b := make([]byte, rnd.IntN(8))
		for i := range b {
			b[i] = alphabet[rnd.IntN(len(alphabet))]
		}
		targets = append(targets, string(b))
	}
	for i, tg := range targets { // JSON carries only valid UTF-8: compare those
		if !utf8.ValidString(tg) {
			targets[i] = strings.ToValidUTF8(tg, "?")
		}
	}
	raw, _ := json.Marshal(targets)
	var got []string
	run(t, ctx, "localPath in the page",
		chromedp.Navigate(s.URL+"/login"),
		chromedp.WaitReady("body", chromedp.ByQuery),
		chromedp.Evaluate(`JSON.parse(`+strconv.Quote(string(raw))+`).map(localPath)`, &got))
	if len(got) != len(targets) {
		t.Fatalf("the page answered %d targets of %d", len(got), len(targets))
	}
	for i, tg := range targets {
		if want := handlers.LocalPath(tg); got[i] != want {
			t.Errorf("localPath(%q) = %q in the page, %q on the server", tg, got[i], want)
		}
	}
}

// TestLoginGuessesAtOnceAreCounted: guesses sent at once on one name pass no more than the limit's five.
func TestLoginGuessesAtOnceAreCounted(t *testing.T) {
	testenv.Long(t)
	s := startLive(t, liveOpts{only: []string{"sessions"}, tune: func(c *Config) { c.RateLimitIP = false }})
	guessedID := newBrowser(t, s.URL).register("guessed", "the real password")
	attacker := newBrowser(t, s.URL)
	attacker.getCSRF()
	var wrong, limited atomic.Int32
	var wg sync.WaitGroup
	for range 25 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch r := attacker.call("POST", "/api/auth/login", map[string]string{"username": "guessed", "password": "a guess"}); r.Status {
			case 401:
				wrong.Add(1)
			case 429:
				limited.Add(1)
			}
		}()
	}
	wg.Wait()
	if wrong.Load() > 5 || wrong.Load()+limited.Load() != 25 {
		t.Errorf("25 guesses at once: %d checked (401), %d refused (429); want at most 5 checked and the rest refused", wrong.Load(), limited.Load())
	}
	// A success forgets the count: the owner, once through, is not slowed by the guesses before.
	owner := newBrowser(t, s.URL)
	if err := ratelimit.NewShared(s.Redis).Reset(context.Background(), "login:account:"+itoa(guessedID)); err != nil {
		t.Fatal(err)
	}
	if r := owner.call("POST", "/api/auth/login", map[string]string{"username": "guessed", "password": "the real password"}); r.Status != 200 {
		t.Fatalf("the owner's login: %d %s", r.Status, r.Body)
	}
	for i := range 5 {
		if r := owner.call("POST", "/api/auth/login", map[string]string{"username": "guessed", "password": "the real password"}); r.Status != 200 {
			t.Fatalf("the owner's login %d after a success: %d %s, want 200", i+2, r.Status, r.Body)
		}
	}
}

// TestStartRefusesAnUnknownWorker: a misspelt job name is an error, not a worker that never runs.
func TestStartRefusesAnUnknownWorker(t *testing.T) {
	s := startLive(t, liveOpts{noBackground: true})
	if _, err := s.Srv.Start(context.Background(), "order consumer"); err == nil || !strings.Contains(err.Error(), "order consumer") {
		t.Errorf("starting a worker by an unknown name: %v, want an error naming it", err)
	}
}

// TestEveryRequestHasADeadline: no query or Redis call made with a request's context can wait forever.
func TestEveryRequestHasADeadline(t *testing.T) {
	s := startLive(t, liveOpts{noBackground: true, setup: func(srv *Server) {
		srv.Fiber.Get("/test/deadline", func(c *fiber.Ctx) error {
			d, ok := c.UserContext().Deadline()
			if !ok {
				return c.SendString("none")
			}
			return c.SendString(time.Until(d).Round(time.Second).String())
		})
	}})
	if a := do(t, s.Srv.Fiber, "GET", "/test/deadline", nil); string(a.Body) != requestDeadline.String() {
		t.Errorf("a request's context deadline: %q from now, want %v", a.Body, requestDeadline)
	}
}

// TestRawBytesInAnOrderNumber: an order number that is no text (a raw 0xff on the wire) names no order;
// it never reaches PostgreSQL, which would fail on it (found by the second review).
func TestRawBytesInAnOrderNumber(t *testing.T) {
	s := startLive(t, liveOpts{only: []string{"sessions"}})
	b := newBrowser(t, s.URL)
	b.register("raw_bytes", "raw bytes password")
	u, _ := url.Parse(s.URL)
	cookies := ""
	for _, c := range b.c.Jar.Cookies(u) {
		cookies += c.Name + "=" + c.Value + "; "
	}
	for _, req := range []string{"GET /api/orders/\xff", "GET /orders/\xff", "POST /api/orders/\xff/pay", "GET /api/orders/" + strings.Repeat("9", 40)} {
		conn, err := net.Dial("tcp", u.Host)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "%s HTTP/1.1\r\nHost: %s\r\nCookie: %s\r\n%s: %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", req, u.Host, cookies, handlers.CSRFHeader, b.csrf)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		conn.Close()
		if resp.StatusCode != 404 {
			t.Errorf("%q: %d, want 404", req, resp.StatusCode)
		}
	}
}

// TestPrivateAnswersAreKeptByNoCache: every JSON answer is no-store unless its handler says a cache may
// keep it: a buy's answers (queued, a refused path), a shopper's orders and addresses, a 404; the
// catalog stays public, for nginx.
func TestPrivateAnswersAreKeptByNoCache(t *testing.T) {
	s := startLive(t, liveOpts{})
	now := s.Clock.Now()
	_, item := testenv.Sale(t, s.DB, 10, now.Add(-time.Minute), now.Add(time.Hour))
	alice := newBrowser(t, s.URL)
	alice.register("alice", passwordOf("alice"))
	itemPath := "/api/items/" + itoa(item.ID)
	r := getPath(t, s, alice, item.ID)
	expect(t, "a path", r, 200, "")
	path := r.json(t)["path"].(string)
	for what, a := range map[string]reply{
		"a refused path":   alice.call("POST", itemPath+"/buy/"+strings.Repeat("0", 32), nil),
		"a buy":            alice.call("POST", itemPath+"/buy/"+path, nil),
		"the buy's result": alice.call("GET", itemPath+"/result", nil),
		"the orders":       alice.call("GET", "/api/orders", nil),
		"the addresses":    alice.call("GET", "/api/addresses", nil),
		"an unknown route": alice.call("GET", "/api/nothing-here", nil),
	} {
		if cc := a.Header.Get("Cache-Control"); cc != "no-store" {
			t.Errorf("%s (%d): Cache-Control %q, want no-store", what, a.Status, cc)
		}
	}
	if cc := alice.call("GET", itemPath, nil).Header.Get("Cache-Control"); !strings.HasPrefix(cc, "public") {
		t.Errorf("GET %s: Cache-Control %q, want public", itemPath, cc) // the line's document: app/line_test.go
	}
}
