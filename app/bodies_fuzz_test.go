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
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"seckill/handlers"
	"seckill/internal/testenv"
	"seckill/models"
	"seckill/payment"
)

// fzServer is one live server for a whole fuzz run (seeds, or every input a fuzzing worker tries), with
// a client per role, logged in and holding a CSRF token.
type fzServer struct {
	URL   string
	Srv   *Server
	DB    *gorm.DB
	Redis *redis.Client
	Cfg   Config
	http  *http.Client

	anon, shopper, merchant, admin fzClient
	target                         int64 // a user whose role the admin changes
	draft, pending, item           int64 // the merchant's draft, an activity waiting for review, an item on sale

	saved                            []models.Activity // the draft and the pending activity as set up
	lastUser, lastActivity, lastItem int64             // the last rows set up: later ones are a fuzz input's
}

// fzClient is one browser: the cookies it sends (a session, or none, and its CSRF cookie) and its token.
type fzClient struct {
	name, cookie, csrf string
}

// fzReply is an answer.
type fzReply struct {
	status int
	header http.Header
	body   []byte
}

// startFuzzServer starts the app on the real services for tb (a *testing.F: the server lives for the whole
// fuzz run), as startLive does but without its background work, which no request here waits for.
// Per-address limits are off, and reset clears the others between inputs, so that inputs reach the
// handlers rather than a 429.
// hooks, if any, are added to the server's Redis client before the server is built.
func startFuzzServer(tb testing.TB, hooks ...redis.Hook) *fzServer {
	tb.Helper()
	s := &fzServer{DB: testenv.Postgres(tb), Redis: testenv.Redis(tb), http: &http.Client{Timeout: 15 * time.Second}}
	for _, h := range hooks {
		s.Redis.AddHook(h)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s.Cfg = testConfig()
	s.Cfg.RateLimitIP = false
	s.Cfg.BaseURL = "http://" + ln.Addr().String()
	s.URL = s.Cfg.BaseURL
	s.Srv, err = NewServer(context.Background(), s.Cfg, Deps{DB: s.DB, Redis: s.Redis, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: time.Now})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Srv.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, s.Srv.Fiber, ln, 5*time.Second) }()
	tb.Cleanup(func() {
		cancel()
		<-done
		s.http.CloseIdleConnections()
	})

	users := testenv.Users(tb, s.DB, "fuzz_", 4)
	admin := users[2]
	s.target = users[3].ID
	roles := []string{models.RoleShopper, models.RoleMerchant, models.RoleAdmin}
	clients := []*fzClient{&s.shopper, &s.merchant, &s.admin}
	for i, role := range roles {
		u := &users[i]
		if role != models.RoleShopper {
			if u, err = s.Srv.Sessions.SetRole(ctx, models.Actor{ID: admin.ID, Username: admin.Username}, u.ID, role); err != nil {
				tb.Fatal(err)
			}
		}
		_, cookie, err := s.Srv.Sessions.Issue(u)
		if err != nil {
			tb.Fatal(err)
		}
		*clients[i] = s.withCSRF(tb, role, handlers.SessionCookie+"="+cookie)
	}
	s.anon = s.withCSRF(tb, "anonymous", "")

	now := time.Now()
	activity := []byte(fmt.Sprintf(`{"name":"Fuzz sale","description":"d","starts_at":%q,"ends_at":%q}`,
		now.Add(24*time.Hour).UTC().Format(time.RFC3339), now.Add(48*time.Hour).UTC().Format(time.RFC3339)))
	item := []byte(`{"name":"Kettle","title":"1.7 L","image_url":"/assets/img/demo-1.svg","original_price_cents":19900,"seckill_price_cents":990,"stock":50}`)
	s.draft = s.created(tb, s.merchant, "POST", "/api/merchant/activities", activity)
	s.pending = s.created(tb, s.merchant, "POST", "/api/merchant/activities", activity)
	s.created(tb, s.merchant, "POST", fmt.Sprintf("/api/merchant/activities/%d/items", s.pending), item)
	if r := s.send(tb, s.merchant, "POST", fmt.Sprintf("/api/merchant/activities/%d/submit", s.pending), nil, nil); r.status != 200 {
		tb.Fatalf("submit activity %d: %d %s", s.pending, r.status, r.body)
	}
	_, it := testenv.Sale(tb, s.DB, 100, now.Add(-time.Hour), now.Add(time.Hour))
	s.item = it.ID

	if err := s.DB.Omit("Items").Find(&s.saved, []int64{s.draft, s.pending}).Error; err != nil || len(s.saved) != 2 {
		tb.Fatalf("read the activities set up: %v", err)
	}
	for _, last := range []struct {
		table string
		id    *int64
	}{{"users", &s.lastUser}, {"activities", &s.lastActivity}, {"items", &s.lastItem}} {
		if err := s.DB.Raw("SELECT COALESCE(MAX(id), 0) FROM " + last.table).Scan(last.id).Error; err != nil {
			tb.Fatal(err)
		}
	}
	return s
}

// reset puts back what a fuzz input may have changed (rows it made, the activities it edited or
// reviewed, the rate limits and codes in Redis), so that every input meets the same server, and one that
// fails fails again while the fuzzer minimizes it.
func (s *fzServer) reset(tb testing.TB) {
	tb.Helper()
	err := s.DB.Transaction(func(tx *gorm.DB) error {
		if err := tx.Where("id > ?", s.lastItem).Delete(&models.Item{}).Error; err != nil {
			return err
		}
		if err := tx.Where("id > ?", s.lastActivity).Delete(&models.Activity{}).Error; err != nil {
			return err
		}
		if err := tx.Where("id > ?", s.lastUser).Delete(&models.User{}).Error; err != nil {
			return err
		}
		for _, a := range s.saved {
			if err := tx.Omit("Items").Save(&a).Error; err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		err = s.Redis.FlushDB(context.Background()).Err()
	}
	if err != nil {
		tb.Fatalf("reset: %v", err)
	}
}

// withCSRF is a browser that sends sessionCookie (or no session) and the CSRF token it got from the server.
func (s *fzServer) withCSRF(tb testing.TB, name, sessionCookie string) fzClient {
	tb.Helper()
	c := fzClient{name: name, cookie: sessionCookie}
	r := s.send(tb, c, "GET", "/api/csrf", nil, nil)
	var out struct{ Token string }
	if r.status != 200 || json.Unmarshal(r.body, &out) != nil || out.Token == "" {
		tb.Fatalf("GET /api/csrf as %s: %d %s", name, r.status, r.body)
	}
	c.csrf = out.Token
	if c.cookie != "" {
		c.cookie += "; "
	}
	c.cookie += handlers.CSRFCookie + "=" + out.Token
	return c
}

// created sends a request that must answer 201 with an id, and returns the id.
func (s *fzServer) created(tb testing.TB, c fzClient, method, path string, body []byte) int64 {
	tb.Helper()
	r := s.send(tb, c, method, path, body, nil)
	var out struct{ ID int64 }
	if r.status != 201 || json.Unmarshal(r.body, &out) != nil || out.ID == 0 {
		tb.Fatalf("%s %s as %s: %d %s", method, path, c.name, r.status, r.body)
	}
	return out.ID
}

// send makes one request as c; a body goes as JSON, with c's CSRF token.
func (s *fzServer) send(tb testing.TB, c fzClient, method, path string, body []byte, header map[string]string) fzReply {
	tb.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if method != "GET" && c.csrf != "" {
		req.Header.Set(handlers.CSRFHeader, c.csrf)
	}
	if c.cookie != "" {
		req.Header.Set("Cookie", c.cookie)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		// A server that drops the connection has crashed or hung on this input.
		tb.Fatalf("%s %s as %s: %v", method, path, c.name, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("%s %s as %s: reading the answer: %v", method, path, c.name, err)
	}
	return fzReply{resp.StatusCode, resp.Header, b}
}

// fzLeaks are what an answer must never show: a panic, a stack, the database's or the ORM's own words.
var fzLeaks = []string{"panic", "goroutine", "sqlstate", "gorm"}

// fzDataURL matches an image sent inline (a QR code), whose base64 may spell anything.
var fzDataURL = regexp.MustCompile(`data:[a-z/+.-]+;base64,[A-Za-z0-9+/=]*`)

// fzCheckContract checks an answer against the contract: never 500, every error the contract's JSON with a
// known code (answered with that code's status) and a message, and no internals in any body. A success
// may echo the input, so it is searched only for words the input does not hold (even escaped).
func fzCheckContract(t *testing.T, what string, input []byte, r fzReply) {
	t.Helper()
	if r.status == http.StatusInternalServerError {
		t.Fatalf("%s: 500 for body %q: %s", what, input, r.body)
	}
	lower := strings.ToLower(fzDataURL.ReplaceAllString(string(r.body), "data:"))
	if r.status >= 400 {
		if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Fatalf("%s: %d with Content-Type %q for body %q: %s", what, r.status, ct, input, r.body)
		}
		var e struct {
			Error   *string `json:"error"`
			Message *string `json:"message"`
		}
		if err := json.Unmarshal(r.body, &e); err != nil || e.Error == nil || e.Message == nil {
			t.Fatalf("%s: %d body %s is not the contract's error JSON (%v), for body %q", what, r.status, r.body, err, input)
		}
		status, known := statusOf[*e.Error]
		if !known || *e.Message == "" {
			t.Fatalf("%s: %d error %q (message %q) is not a contract code with a message, for body %q", what, r.status, *e.Error, *e.Message, input)
		}
		if status != r.status {
			t.Fatalf("%s: error %q answered %d, but the contract maps it to %d, for body %q", what, *e.Error, r.status, status, input)
		}
	}
	in := strings.ToLower(string(input))
	for _, w := range fzLeaks {
		if strings.Contains(lower, w) && (r.status >= 400 || !strings.Contains(in, w) && !strings.Contains(in, `\`)) {
			t.Fatalf("%s: %d answer shows %q, for body %q: %s", what, r.status, w, input, r.body)
		}
	}
}

// fzNow in a fuzzed payment callback stands for the current time, so that callbacks get past the replay
// check to the payment lookup.
const fzNow = "$NOW"

// FuzzJSONBodies sends every input as the JSON body of each route that reads one, as the role that may
// call it (so the body is read, not refused at the door): never a 500 or a panic, every refusal the
// contract's error JSON, no internals shown. The payment callback gets it unsigned and signed.
func FuzzJSONBodies(f *testing.F) {
	for _, s := range []string{
		``, `{}`, `null`, `[]`, `""`, `0`, `true`, `{`, `}`, `{"":""}`, "\xef\xbb\xbf{}", "\xff\xfe{}", "{\"a\":\"\xff\"}",
		`{"username":"fuzz_0","password":"password"}`, `{"username":"fuzz_0","password":"wrong password"}`,
		`{"username":"new_user_1","password":"a good password","captcha_id":"x","captcha_answer":"y"}`,
		`{"username":"a\r\nSet-Cookie: x=y","password":"p\tq"}`, `{"username":"\u00e9\u0001\u2028","password":"\\\\//"}`,
		`{"username":["x"],"password":{"a":1}}`, `{"username":"` + strings.Repeat("u", 100) + `","password":"` + strings.Repeat("p", 100) + `"}`,
		`{"username":"x","username":"y"}`, `{"USERNAME":"fuzz_1","Password":"password"}`,
		`{"captcha_id":"../../x","captcha_answer":"1e9999"}`, `{"captcha_id":1,"captcha_answer":null}`,
		`{"name":"Sale","description":"d","starts_at":"2030-01-01T00:00:00Z","ends_at":"2030-01-02T00:00:00Z"}`,
		`{"name":"Sale","starts_at":"2030-01-01T00:00:00+14:00","ends_at":"2030-01-01T00:00:00-12:00"}`,
		`{"name":"\t","starts_at":"2030-13-01T00:00:00Z","ends_at":"later"}`, `{"name":"x","starts_at":1,"ends_at":2}`,
		`{"name":"Sale","starts_at":"2030-01-01T00:00:00.123456789123Z","ends_at":"2031-01-01T00:00:00Z"}`,
		`{"name":"Kettle","title":"1.7 L","image_url":"/a.svg","original_price_cents":19900,"seckill_price_cents":990,"stock":50,"stock_shards":2}`,
		`{"name":"K","original_price_cents":9223372036854775807,"seckill_price_cents":9223372036854775807,"stock":1000000,"stock_shards":64}`,
		`{"name":"K","original_price_cents":1e400,"seckill_price_cents":-1,"stock":-9223372036854775808,"stock_shards":-1}`,
		`{"name":"K","image_url":"javascript:alert(1)","original_price_cents":2,"seckill_price_cents":1,"stock":1}`,
		`{"name":"Sale \u0001","description":"\u00e9\t\n","starts_at":"2030-01-01T00:00:00Z","ends_at":"2030-01-02T00:00:00Z"}`,
		`{"name":"Sale","starts_at":"0000-01-01T00:00:00Z","ends_at":"2030-01-02T00:00:00Z"}`,
		`{"name":"Sale","starts_at":"2030-01-01T00:00:00Z","ends_at":"9999-12-31T23:00:00-00:59"}`,
		`{"name":"K \u0001","title":"\u0001","image_url":"/\u0001","original_price_cents":2,"seckill_price_cents":1,"stock":1}`,
		`{"reason":"no \u0001"}`, `{"payment_id":"sbx_\u0001","order_no":"SK\u0001","amount_cents":990,"status":"paid","at":` + fzNow + `}`,
		`{"reason":"not a real sale"}`, `{"reason":"   "}`, `{"reason":"` + strings.Repeat("r", 3000) + `"}`,
		`{"role":"merchant"}`, `{"role":"ADMIN"}`, `{"role":"shopper "}`, `{"role":""}`,
		`{"payment_id":"sbx_1","order_no":"SK1","amount_cents":990,"status":"paid","at":` + fzNow + `}`,
		`{"payment_id":"","order_no":"","amount_cents":-1,"status":"PAID","at":` + fzNow + `}`,
		`{"payment_id":"\u00e9","at":9223372036854775807}`, `{"at":-9223372036854775808}`,
		strings.Repeat("[", 1500) + strings.Repeat("]", 1500), strings.Repeat(`{"a":`, 500) + `1` + strings.Repeat("}", 500),
		`{"a":` + strings.Repeat("9", 400) + `}`, `{"a":1e999999999}`, `"\ud800"`, `{"name":"\ud83d\ude00"}`,
	} {
		f.Add([]byte(s))
	}
	s := startFuzzServer(f)
	secret := s.Cfg.CallbackSecret()
	routes := []struct {
		as           fzClient
		method, path string
	}{
		{s.anon, "POST", "/api/auth/login"},
		{s.anon, "POST", "/api/auth/register"},
		{s.shopper, "POST", fmt.Sprintf("/api/items/%d/path", s.item)},
		{s.anon, "POST", "/api/qr/login"},
		{s.merchant, "POST", "/api/merchant/activities"},
		{s.merchant, "PUT", fmt.Sprintf("/api/merchant/activities/%d", s.draft)},
		{s.merchant, "POST", fmt.Sprintf("/api/merchant/activities/%d/items", s.draft)},
		{s.admin, "POST", fmt.Sprintf("/api/admin/activities/%d/reject", s.pending)},
		{s.admin, "POST", fmt.Sprintf("/api/admin/users/%d/role", s.target)},
		{s.anon, "POST", "/api/payments/notify"},
	}
	// What the input may have written must still read back: the lists that show it.
	reads := []struct {
		as   fzClient
		path string
	}{
		{s.merchant, "/api/merchant/activities"},
		{s.admin, "/api/admin/reviews"},
		{s.admin, "/api/admin/audit"},
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		s.reset(t)
		for _, rt := range routes {
			what := rt.method + " " + rt.path + " as " + rt.as.name
			fzCheckContract(t, what, body, s.send(t, rt.as, rt.method, rt.path, body, nil))
		}
		signed := bytes.ReplaceAll(body, []byte(fzNow), []byte(strconv.FormatInt(time.Now().Unix(), 10)))
		r := s.send(t, s.anon, "POST", "/api/payments/notify", signed, map[string]string{payment.SignatureHeader: payment.Sign(secret, signed)})
		fzCheckContract(t, "POST /api/payments/notify signed", signed, r)
		for _, rd := range reads {
			r := s.send(t, rd.as, "GET", rd.path, nil, nil)
			if r.status != 200 {
				t.Fatalf("GET %s as %s after body %q: %d %s", rd.path, rd.as.name, body, r.status, r.body)
			}
		}
	})
}

// FuzzJSONFields is FuzzJSONBodies with well-formed bodies whose field values are fuzzed: any bytes in
// the text fields (a NUL, bad UTF-8, a line break), any time strings, any numbers, each sent to the
// routes that read those fields, with the same contract to keep.
func FuzzJSONFields(f *testing.F) {
	f.Add("fuzz_0", "password", "2030-01-01T00:00:00Z", "2030-01-02T00:00:00Z", int64(19900), int64(990), int64(50))
	f.Add("Double 11 \x01", "Big sale\r\n\t", "2030-01-01T00:00:00+00:00", "9999-12-31T23:00:00-00:59", int64(2), int64(1), int64(1))
	f.Add("K", "", "0000-01-01T00:00:00+00:00", "2030-01-02T00:00:00Z", int64(9223372036854775807), int64(-1), int64(1000000))
	f.Add("merchant", "paid", "/assets/img/demo-1.svg", "https://cdn.example/a.png", int64(990), int64(-300), int64(64))
	f.Add("", "\xff\xfe", "2030-02-30T00:00:00Z", "tomorrow", int64(0), int64(0), int64(0))
	f.Add("é😀\u2028", "ADMIN", "2030-01-01T00:00:00.999999999Z", "2030-01-01t00:00:00z", int64(-9223372036854775808), int64(299), int64(65))
	s := startFuzzServer(f)
	secret := s.Cfg.CallbackSecret()
	reads := []struct {
		as   fzClient
		path string
	}{
		{s.merchant, "/api/merchant/activities"},
		{s.admin, "/api/admin/reviews"},
		{s.admin, "/api/admin/audit"},
	}
	f.Fuzz(func(t *testing.T, text1, text2, time1, time2 string, a, b, c int64) {
		s.reset(t)
		body := func(v map[string]any) []byte {
			raw, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			return raw
		}
		login := body(map[string]any{"username": text1, "password": text2, "captcha_id": time1, "captcha_answer": time2})
		activity := body(map[string]any{"name": text1, "description": text2, "starts_at": time1, "ends_at": time2})
		item := body(map[string]any{"name": text1, "title": text2, "description": text2, "image_url": time1,
			"original_price_cents": a, "seckill_price_cents": b, "stock": c, "stock_shards": c % 70})
		requests := []struct {
			as           fzClient
			method, path string
			body         []byte
		}{
			{s.anon, "POST", "/api/auth/login", login},
			{s.anon, "POST", "/api/auth/register", login},
			{s.shopper, "POST", fmt.Sprintf("/api/items/%d/path", s.item), body(map[string]any{"captcha_id": text1, "captcha_answer": text2})},
			{s.merchant, "POST", "/api/merchant/activities", activity},
			{s.merchant, "PUT", fmt.Sprintf("/api/merchant/activities/%d", s.draft), activity},
			{s.merchant, "POST", fmt.Sprintf("/api/merchant/activities/%d/items", s.draft), item},
			{s.admin, "POST", fmt.Sprintf("/api/admin/activities/%d/reject", s.pending), body(map[string]any{"reason": text1})},
			{s.admin, "POST", fmt.Sprintf("/api/admin/users/%d/role", s.target), body(map[string]any{"role": text1})},
		}
		for _, rq := range requests {
			fzCheckContract(t, rq.method+" "+rq.path+" as "+rq.as.name, rq.body, s.send(t, rq.as, rq.method, rq.path, rq.body, nil))
		}
		// A callback signed as the provider signs, fresh or b seconds off.
		notify := body(map[string]any{"payment_id": text1, "order_no": text2, "amount_cents": a, "status": time1, "at": time.Now().Unix() + b%1000})
		r := s.send(t, s.anon, "POST", "/api/payments/notify", notify, map[string]string{payment.SignatureHeader: payment.Sign(secret, notify)})
		fzCheckContract(t, "POST /api/payments/notify signed", notify, r)
		for _, rd := range reads {
			r := s.send(t, rd.as, "GET", rd.path, nil, nil)
			if r.status != 200 {
				t.Fatalf("GET %s as %s after %q, %q, %q, %q, %d, %d, %d: %d %s", rd.path, rd.as.name, text1, text2, time1, time2, a, b, c, r.status, r.body)
			}
		}
	})
}
