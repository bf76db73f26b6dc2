package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
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
// a browser per role, logged in and holding a CSRF token.
type fzServer struct {
	*liveServer

	anon, shopper, merchant, admin *browser
	target                         int64 // a user whose role the admin changes
	draft, pending, item           int64 // the merchant's draft, an activity waiting for review, an item on sale

	saved                            []models.Activity           // the draft and the pending activity as set up
	lastUser, lastActivity, lastItem int64                       // the last rows set up: later ones are a fuzz input's
	cookies                          map[*browser][]*http.Cookie // each browser's cookies as set up
}

// startFuzzServer starts the app for tb (a *testing.F: the server lives for the whole fuzz run) without
// its background work, which no request here waits for. Per-address limits are off, and reset clears the
// others between inputs, so that inputs reach the handlers rather than a 429.
// hooks, if any, are added to the server's Redis client before the server is built.
func startFuzzServer(tb testing.TB, hooks ...redis.Hook) *fzServer {
	tb.Helper()
	rdb := testenv.Redis(tb)
	for _, h := range hooks {
		rdb.AddHook(h)
	}
	s := &fzServer{liveServer: startLive(tb, liveOpts{rdb: rdb, noBackground: true, tune: func(c *Config) { c.RateLimitIP = false }})}

	users := testenv.Users(tb, s.DB, "fuzz_", 4)
	admin := users[2]
	s.target = users[3].ID
	roles := []string{models.RoleShopper, models.RoleMerchant, models.RoleAdmin}
	browsers := []**browser{&s.shopper, &s.merchant, &s.admin}
	for i, role := range roles {
		u := &users[i]
		var err error
		if role != models.RoleShopper {
			if u, err = s.Srv.Sessions.SetRole(context.Background(), models.Actor{ID: admin.ID, Username: admin.Username}, u.ID, role); err != nil {
				tb.Fatal(err)
			}
		}
		_, cookie, err := s.Srv.Sessions.Issue(u)
		if err != nil {
			tb.Fatal(err)
		}
		*browsers[i] = s.browser(tb, role, cookie)
	}
	s.anon = s.browser(tb, "anonymous", "")

	now := time.Now()
	activity := []byte(fmt.Sprintf(`{"name":"Fuzz sale","description":"d","starts_at":%q,"ends_at":%q}`,
		now.Add(24*time.Hour).UTC().Format(time.RFC3339), now.Add(48*time.Hour).UTC().Format(time.RFC3339)))
	item := []byte(`{"name":"Kettle","title":"1.7 L","image_url":"/assets/img/demo-1.svg","original_price_cents":19900,"seckill_price_cents":990,"stock":50}`)
	s.draft = s.created(s.merchant, "POST", "/api/merchant/activities", activity)
	s.pending = s.created(s.merchant, "POST", "/api/merchant/activities", activity)
	s.created(s.merchant, "POST", fmt.Sprintf("/api/merchant/activities/%d/items", s.pending), item)
	if r := s.merchant.send("POST", fmt.Sprintf("/api/merchant/activities/%d/submit", s.pending), nil, nil); r.Status != 200 {
		tb.Fatalf("submit activity %d: %d %s", s.pending, r.Status, r.Body)
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
	// Each browser holds the cookies it was set up with, and none an earlier input made it keep.
	u, _ := url.Parse(s.URL)
	for b, cookies := range s.cookies {
		jar, _ := cookiejar.New(nil)
		jar.SetCookies(u, cookies)
		b.c.Jar = jar
	}
	if err != nil {
		tb.Fatalf("reset: %v", err)
	}
}

// browser is a browser named name that holds the session cookie (none when "") and a CSRF token.
func (s *fzServer) browser(tb testing.TB, name, session string) *browser {
	tb.Helper()
	b := newBrowser(tb, s.URL)
	b.name = name
	if session != "" {
		b.setCookie(handlers.SessionCookie, session)
	}
	b.getCSRF()
	if s.cookies == nil {
		s.cookies = map[*browser][]*http.Cookie{}
	}
	u, _ := url.Parse(s.URL)
	s.cookies[b] = b.c.Jar.Cookies(u)
	return b
}

// created sends a request that must answer 201 with an id, and returns the id.
func (s *fzServer) created(b *browser, method, path string, body []byte) int64 {
	b.t.Helper()
	r := b.send(method, path, body, nil)
	var out struct{ ID int64 }
	if r.Status != 201 || json.Unmarshal(r.Body, &out) != nil || out.ID == 0 {
		b.t.Fatalf("%s %s as %s: %d %s", method, path, b.name, r.Status, r.Body)
	}
	return out.ID
}

// fzLeaks are what an answer must never show: a panic, a stack, the database's or the ORM's own words.
var fzLeaks = []string{"panic", "goroutine", "sqlstate", "gorm"}

// fzDataURL matches an image sent inline (a QR code), whose base64 may spell anything.
var fzDataURL = regexp.MustCompile(`data:[a-z/+.-]+;base64,[A-Za-z0-9+/=]*`)

// fzCheckContract checks an answer against the contract: never 500, every error the contract's JSON with a
// known code (answered with that code's status) and a message, and no internals in any body. A success
// may echo the input, so it is searched only for words the input does not hold (even escaped).
func fzCheckContract(t *testing.T, what string, input []byte, r reply) {
	t.Helper()
	if r.Status == http.StatusInternalServerError {
		t.Fatalf("%s: 500 for body %q: %s", what, input, r.Body)
	}
	lower := strings.ToLower(fzDataURL.ReplaceAllString(string(r.Body), "data:"))
	if r.Status >= 400 {
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Fatalf("%s: %d with Content-Type %q for body %q: %s", what, r.Status, ct, input, r.Body)
		}
		var e struct {
			Error   *string `json:"error"`
			Message *string `json:"message"`
		}
		if err := json.Unmarshal(r.Body, &e); err != nil || e.Error == nil || e.Message == nil {
			t.Fatalf("%s: %d body %s is not the contract's error JSON (%v), for body %q", what, r.Status, r.Body, err, input)
		}
		status, known := statusOf[*e.Error]
		if !known || *e.Message == "" {
			t.Fatalf("%s: %d error %q (message %q) is not a contract code with a message, for body %q", what, r.Status, *e.Error, *e.Message, input)
		}
		if status != r.Status {
			t.Fatalf("%s: error %q answered %d, but the contract maps it to %d, for body %q", what, *e.Error, r.Status, status, input)
		}
	}
	in := strings.ToLower(string(input))
	for _, w := range fzLeaks {
		if strings.Contains(lower, w) && (r.Status >= 400 || !strings.Contains(in, w) && !strings.Contains(in, `\`)) {
			t.Fatalf("%s: %d answer shows %q, for body %q: %s", what, r.Status, w, input, r.Body)
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
		`{"code":"42"}`, `{"code":42}`, `{"code":"` + strings.Repeat("4", 3000) + `"}`,
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
	secret := s.Cfg.callbackSecret()
	routes := []struct {
		as           *browser
		method, path string
	}{
		{s.anon, "POST", "/api/auth/login"},
		{s.anon, "POST", "/api/auth/register"},
		{s.shopper, "POST", fmt.Sprintf("/api/items/%d/path", s.item)},
		{s.anon, "POST", "/api/qr/login"},
		{s.shopper, "POST", "/api/qr/login/0123456789abcdef0123456789abcdef/confirm"}, // its {"code"} is read first
		{s.merchant, "POST", "/api/merchant/activities"},
		{s.merchant, "PUT", fmt.Sprintf("/api/merchant/activities/%d", s.draft)},
		{s.merchant, "POST", fmt.Sprintf("/api/merchant/activities/%d/items", s.draft)},
		{s.admin, "POST", fmt.Sprintf("/api/admin/activities/%d/reject", s.pending)},
		{s.admin, "POST", fmt.Sprintf("/api/admin/users/%d/role", s.target)},
		{s.anon, "POST", "/api/payments/notify"},
	}
	// What the input may have written must still read back: the lists that show it.
	reads := []struct {
		as   *browser
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
			fzCheckContract(t, what, body, rt.as.in(t).send(rt.method, rt.path, body, nil))
		}
		signed := bytes.ReplaceAll(body, []byte(fzNow), []byte(strconv.FormatInt(time.Now().Unix(), 10)))
		r := s.anon.in(t).send("POST", "/api/payments/notify", signed, map[string]string{payment.SignatureHeader: payment.Sign(secret, signed)})
		fzCheckContract(t, "POST /api/payments/notify signed", signed, r)
		for _, rd := range reads {
			r := rd.as.in(t).send("GET", rd.path, nil, nil)
			if r.Status != 200 {
				t.Fatalf("GET %s as %s after body %q: %d %s", rd.path, rd.as.name, body, r.Status, r.Body)
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
	secret := s.Cfg.callbackSecret()
	reads := []struct {
		as   *browser
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
			as           *browser
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
			fzCheckContract(t, rq.method+" "+rq.path+" as "+rq.as.name, rq.body, rq.as.in(t).send(rq.method, rq.path, rq.body, nil))
		}
		// A callback signed as the provider signs, fresh or b seconds off.
		notify := body(map[string]any{"payment_id": text1, "order_no": text2, "amount_cents": a, "status": time1, "at": time.Now().Unix() + b%1000})
		r := s.anon.in(t).send("POST", "/api/payments/notify", notify, map[string]string{payment.SignatureHeader: payment.Sign(secret, notify)})
		fzCheckContract(t, "POST /api/payments/notify signed", notify, r)
		for _, rd := range reads {
			r := rd.as.in(t).send("GET", rd.path, nil, nil)
			if r.Status != 200 {
				t.Fatalf("GET %s as %s after %q, %q, %q, %q, %d, %d, %d: %d %s", rd.path, rd.as.name, text1, text2, time1, time2, a, b, c, r.Status, r.Body)
			}
		}
	})
}
