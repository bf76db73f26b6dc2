package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"seckill/auth"
	"seckill/handlers"
	"seckill/internal/testenv"
	"seckill/jobs"
	"seckill/models"
	"seckill/stock"
)

// hotAnswer is one of the answers a crowd asks most, as a test sends it.
type hotAnswer struct {
	name, method, path string
	cookie, csrf       string
	place              string
	want               int
	route              string // its route in the metrics
}

// hotServer is a live server with the hot answers ready to ask: a first-come sale sold out, one in
// stock with a path issued, and a queue sale with a shopper in line who holds a signed place.
func hotServer(t *testing.T, logs *safeWriter) (*liveServer, []hotAnswer) {
	t.Helper()
	s := startLive(t, liveOpts{noBackground: true, log: newLogger(Config{}, logs)})
	ctx := context.Background()
	srv := s.Srv
	csrfTok, err := auth.NewCSRF(testConfig().SessionSecret).Token()
	if err != nil {
		t.Fatal(err)
	}
	shopper := func(id int64) string {
		u := models.User{ID: id, Username: fmt.Sprintf("shopper%d", id), Role: models.RoleShopper, SessionVersion: 1}
		_, cookie, err := srv.Sessions.Issue(&u)
		if err != nil {
			t.Fatal(err)
		}
		return handlers.SessionCookie + "=" + cookie + "; " + handlers.CSRFCookie + "=" + csrfTok
	}
	sale := func(stockTotal int64) int64 {
		_, it := testenv.Sale(t, s.DB, stockTotal, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
		if _, err := srv.Ledger.Preheat(ctx, jobs.DBBooks{DB: s.DB}, it.ID); err != nil {
			t.Fatal(err)
		}
		return it.ID
	}

	soldOut := sale(1)
	if err := srv.Ledger.IssuePath(ctx, soldOut, 900, strings.Repeat("a", 32)); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Ledger.Take(ctx, soldOut, 900, strings.Repeat("a", 32), "SKfront1"); err != nil {
		t.Fatal(err)
	}
	srv.Flags.MarkSoldOut(ctx, soldOut)

	inStock := sale(10)
	path := strings.Repeat("b", 32)
	if err := srv.Ledger.IssuePath(ctx, inStock, 901, path); err != nil {
		t.Fatal(err)
	}

	queued := sale(10)
	opens := time.Now().Add(-time.Hour)
	if err := s.DB.Model(&models.Activity{}).Where("id = (SELECT activity_id FROM items WHERE id = ?)", queued).
		Updates(map[string]any{"sale_mode": models.SaleQueue, "queue_opens_at": opens}).Error; err != nil {
		t.Fatal(err)
	}
	w := stock.Window{Opens: opens, Starts: time.Now().Add(-time.Minute), Ends: time.Now().Add(time.Hour)}
	for _, id := range []int64{902, 903} {
		if _, err := srv.Line.Join(ctx, queued, id, w); err != nil {
			t.Fatal(err)
		}
	}
	if drawn, err := srv.Line.Draw(ctx, queued); !drawn || err != nil {
		t.Fatalf("draw: %v %v", drawn, err)
	}
	status := fmt.Sprintf("/api/items/%d/queue", queued)
	first := askHot(t, srv.Fiber, hotAnswer{method: "GET", path: status, cookie: shopper(902)})
	var q struct {
		PlaceToken string `json:"place_token"`
	}
	if err := json.Unmarshal(first.Body, &q); err != nil || q.PlaceToken == "" {
		t.Fatalf("the shopper in line has no place: %d %s", first.Status, first.Body)
	}
	return s, []hotAnswer{
		{name: "sold-out buy", method: "POST", path: fmt.Sprintf("/api/items/%d/buy/%s", soldOut, strings.Repeat("c", 32)),
			cookie: shopper(904), csrf: csrfTok, want: 409, route: "/api/items/:id/buy/:path"},
		{name: "status poll", method: "GET", path: status, cookie: shopper(902), place: q.PlaceToken, want: 200, route: "/api/items/:id/queue"},
		{name: "the line's document", method: "GET", path: fmt.Sprintf("/api/items/%d/line", queued), want: 200, route: "/api/items/:id/line"},
		{name: "item", method: "GET", path: fmt.Sprintf("/api/items/%d", inStock), want: 200, route: "/api/items/:id"},
		{name: "buy in stock", method: "POST", path: fmt.Sprintf("/api/items/%d/buy/%s", inStock, path),
			cookie: shopper(901), csrf: csrfTok, want: 202, route: "/api/items/:id/buy/:path"},
	}
}

// The hot answers go through the whole chain: each carries the security headers and a request id of its
// own, is counted in the metrics under its route, and is written to the access log with that id.
func TestHotAnswersKeepTheChain(t *testing.T) {
	logs := &safeWriter{w: &bytes.Buffer{}}
	s, hot := hotServer(t, logs)
	ids := map[string]bool{}
	for _, h := range hot {
		before := routeCount(t, s.Srv, h.method, h.route, h.want)
		a := askHot(t, s.Srv.Fiber, h)
		if a.Status != h.want {
			t.Fatalf("%s: %d %s, want %d", h.name, a.Status, a.Body, h.want)
		}
		hd := a.Header
		if hd.Get("X-Content-Type-Options") != "nosniff" ||
			!strings.Contains(hd.Get("Content-Security-Policy"), "default-src 'none'") || hd.Get("Cross-Origin-Resource-Policy") != "same-origin" {
			t.Errorf("%s: security headers missing: %v", h.name, hd)
		}
		id := hd.Get("X-Request-Id")
		if id == "" || ids[id] {
			t.Errorf("%s: request id %q (empty, or another answer's)", h.name, id)
		}
		ids[id] = true
		if after := routeCount(t, s.Srv, h.method, h.route, h.want); after != before+1 {
			t.Errorf("%s: the metrics counted %d then %d, want one more", h.name, before, after)
		}
		line := regexp.MustCompile(`(?m)^time=\S+ level=INFO msg=request method=` + h.method + ` path=` + regexp.QuoteMeta(h.path) +
			fmt.Sprintf(` status=%d latency=[0-9.]+(µs|ms|s) ip=\S+ request_id=`, h.want) + regexp.QuoteMeta(id) + `$`)
		if !line.MatchString(logs.String()) {
			t.Errorf("%s: no access log line with its request id %s in:\n%s", h.name, id, lastLines(logs.String(), 4))
		}
	}
}

// An unsafe hot answer still checks CSRF: a buy in stock without the token is refused and takes nothing.
// (A sold-out item's buy is answered before the check, as the contract lets it: it changes nothing.)
func TestHotBuysCheckCSRF(t *testing.T) {
	s, hot := hotServer(t, &safeWriter{w: &bytes.Buffer{}})
	for _, h := range hot {
		if h.method != "POST" {
			continue
		}
		h.csrf = ""
		a := askHot(t, s.Srv.Fiber, h)
		want := 403
		if h.want == 409 {
			want = 409
		}
		if a.Status != want {
			t.Errorf("%s without a CSRF token: %d %s, want %d", h.name, a.Status, a.Body, want)
		}
	}
}

func askHot(t *testing.T, f *fiber.App, h hotAnswer) reply {
	t.Helper()
	req := httptest.NewRequest(h.method, h.path, nil)
	if h.cookie != "" {
		req.Header.Set("Cookie", h.cookie)
	}
	if h.csrf != "" {
		req.Header.Set(handlers.CSRFHeader, h.csrf)
	}
	if h.place != "" {
		req.Header.Set(handlers.PlaceHeader, h.place)
	}
	return doRequest(t, f, req)
}

// routeCount is seckill_http_requests_total of a route and status, 0 before its first request.
func routeCount(t *testing.T, srv *Server, method, route string, status int) int {
	t.Helper()
	m := regexp.MustCompile(fmt.Sprintf(`(?m)^seckill_http_requests_total\{method="%s",route="%s",status="%d"\} (\d+)$`,
		method, regexp.QuoteMeta(route), status)).FindStringSubmatch(scrape(t, srv))
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

// The access log's lines are those the server's logger writes: in JSON each is an object with the
// request's fields, in text a path with '=' (or spaces, quotes) is quoted; a client's plain request id is kept,
// one that is not is replaced.
func TestAccessLogLines(t *testing.T) {
	for _, format := range []string{"json", "text"} {
		logs := &safeWriter{w: &bytes.Buffer{}}
		s := startLive(t, liveOpts{noBackground: true, log: newLogger(Config{LogFormat: format}, logs)})
		req := httptest.NewRequest("GET", `/api/items/%22x%20y=z`, nil)
		req.Header.Set("X-Request-Id", "edge-42.a_b")
		a := doRequest(t, s.Srv.Fiber, req)
		if a.Status < 400 || a.Header.Get("X-Request-Id") != "edge-42.a_b" {
			t.Fatalf("%s: %d, request id %q", format, a.Status, a.Header.Get("X-Request-Id"))
		}
		req = httptest.NewRequest("GET", "/api/activities", nil)
		req.Header.Set("X-Request-Id", "two words\n")
		b := doRequest(t, s.Srv.Fiber, req)
		if id := b.Header.Get("X-Request-Id"); id == "" || strings.ContainsAny(id, " \n") {
			t.Fatalf("%s: a client's unsafe request id came back as %q", format, id)
		}
		// The access log's own lines: the server says other things at its start (the replicas it waits for).
		var lines []string
		for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			if strings.Contains(l, `"msg":"request"`) || strings.Contains(l, "msg=request ") {
				lines = append(lines, l)
			}
		}
		if len(lines) != 2 {
			t.Fatalf("%s: %d request lines, want 2:\n%s", format, len(lines), logs.String())
		}
		if format == "json" {
			for i, want := range []struct {
				path, id string
				status   float64
			}{{`/api/items/%22x%20y=z`, "edge-42.a_b", float64(a.Status)}, {"/api/activities", b.Header.Get("X-Request-Id"), 200}} {
				var l map[string]any
				if err := json.Unmarshal([]byte(lines[i]), &l); err != nil {
					t.Fatalf("not JSON: %s: %v", lines[i], err)
				}
				if l["msg"] != "request" || l["level"] != "INFO" || l["method"] != "GET" || l["path"] != want.path ||
					l["status"] != want.status || l["request_id"] != want.id || l["latency"] == nil || l["time"] == nil {
					t.Errorf("line %d: %v", i, l)
				}
				if _, err := time.Parse(time.RFC3339Nano, fmt.Sprint(l["time"])); err != nil {
					t.Errorf("line %d: time %v", i, l["time"])
				}
			}
			continue
		}
		if !strings.Contains(lines[0], fmt.Sprintf(` path="/api/items/%%22x%%20y=z" status=%d `, a.Status)) || !strings.HasSuffix(lines[0], " request_id=edge-42.a_b") {
			t.Errorf("text line: %s", lines[0])
		}
	}
}

// A handler's panic is the request's 500, in the contract's body, logged with its request id; the
// server answers the next request.
func TestAPanicIsOneRequestsError(t *testing.T) {
	logs := &safeWriter{w: &bytes.Buffer{}}
	s := startLive(t, liveOpts{noBackground: true, log: newLogger(Config{}, logs), setup: func(srv *Server) {
		srv.Fiber.Get("/api/test-panic", func(*fiber.Ctx) error { panic("a bug") })
	}})
	a := do(t, s.Srv.Fiber, "GET", "/api/test-panic", nil)
	if a.Status != 500 || a.code(t) != "internal" {
		t.Fatalf("a panic answered %d %s", a.Status, a.Body)
	}
	id := a.Header.Get("X-Request-Id")
	if !strings.Contains(logs.String(), "request_id="+id) || !strings.Contains(logs.String(), "a bug") {
		t.Errorf("the panic is not logged with its request id %s:\n%s", id, logs.String())
	}
	if b := do(t, s.Srv.Fiber, "GET", "/api/activities", nil); b.Status != 200 {
		t.Errorf("after the panic: %d", b.Status)
	}
}

// A value with what JSON or a text line cannot hold bare is escaped as slog would: valid JSON, a Go
// quoted string in text.
func TestAppendLogString(t *testing.T) {
	for _, v := range []string{"", "plain", "a b", `q"uote`, "back\\slash", "nl\nx", "\xff\xfe", "中文", "k=v"} {
		var s string
		if err := json.Unmarshal(appendLogString(nil, v, true), &s); err != nil || (utf8.ValidString(v) && s != v) {
			t.Errorf("JSON of %q: %s (%v)", v, appendLogString(nil, v, true), err)
		}
		text := string(appendLogString(nil, v, false))
		if uq, err := strconv.Unquote(text); err == nil {
			if uq != v {
				t.Errorf("text of %q unquotes to %q", v, uq)
			}
		} else if text != v || v == "" || strings.ContainsAny(v, " =\"\n") {
			t.Errorf("text of %q: %s", v, text)
		}
	}
}

// The access log writes a duration and a time as slog does: Duration's String in text, RFC 3339 with
// nanoseconds in JSON and milliseconds in text.
func TestLogDurationsAndTimesAreSlogs(t *testing.T) {
	for _, d := range []time.Duration{0, 1, 999, 1000, 1001, 725123, 999999, time.Millisecond, 1500 * time.Microsecond,
		1234567, 999999999, time.Second, 2500 * time.Millisecond, 59*time.Second + 1, time.Minute, 90 * time.Second, -5} {
		if got := string(appendDuration(nil, d)); got != d.String() {
			t.Errorf("%d: %q, String says %q", int64(d), got, d.String())
		}
	}
	for _, ts := range []time.Time{time.Date(2026, 11, 26, 4, 3, 3, 978123456, time.UTC), time.Date(2026, 11, 26, 4, 3, 3, 0, time.UTC),
		time.Date(2026, 11, 26, 4, 3, 4, 500000000, time.FixedZone("CST", 8*3600))} {
		if got, want := string(appendLogTime(nil, ts, true)), ts.Format(time.RFC3339Nano); got != want {
			t.Errorf("JSON time %q, want %q", got, want)
		}
		if got, want := string(appendLogTime(nil, ts, false)), ts.Format("2006-01-02T15:04:05.000Z07:00"); got != want {
			t.Errorf("text time %q, want %q", got, want)
		}
	}
}
