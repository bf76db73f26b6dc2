package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"seckill/internal/testenv"
	"seckill/jobs"
	"seckill/models"
	"seckill/stock"
)

func TestErrorBodiesAndStatuses(t *testing.T) {
	f, _ := newTestApp(t)
	tests := []struct {
		name, method, path string
		body               io.Reader
		status             int
		code               string // empty: an HTML page is expected
	}{
		{"unknown api route", "GET", "/api/no-such-thing", nil, 404, "not_found"},
		{"unknown activity", "GET", "/api/activities/424242", nil, 404, "not_found"},
		{"malformed activity id", "GET", "/api/activities/abc", nil, 404, "not_found"},
		{"unknown item", "GET", "/api/items/99", nil, 404, "not_found"},
		{"unknown asset", "GET", "/assets/nope.css", nil, 404, ""},
		{"wrong method", "GET", "/api/auth/logout", nil, 405, "method_not_allowed"},
		{"unsafe request without a CSRF token", "DELETE", "/api/activities", nil, 403, "csrf"},
		{"unknown page", "GET", "/no-such-page", nil, 404, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := do(t, f, tt.method, tt.path, tt.body)
			if a.Status != tt.status {
				t.Fatalf("status %d, want %d (body %q)", a.Status, tt.status, a.Body)
			}
			if tt.code == "" {
				if !strings.HasPrefix(a.Header.Get("Content-Type"), "text/html") || !strings.Contains(string(a.Body), "Page not found") {
					t.Errorf("want the HTML 404 page, got %s %q", a.Header.Get("Content-Type"), a.Body)
				}
				return
			}
			code, msg := errorOf(t, a)
			if code != tt.code || msg == "" {
				t.Errorf("error body %q, want code %q and a message", a.Body, tt.code)
			}
		})
	}
}

func TestInternalErrorsShowNoInternals(t *testing.T) {
	f, d := newTestApp(t)
	sqlDB, _ := d.DB.DB()
	sqlDB.Close() // every query now fails inside the database driver
	a := do(t, f, "GET", "/api/activities", nil)
	if a.Status != 500 {
		t.Fatalf("status %d, want 500", a.Status)
	}
	code, msg := errorOf(t, a)
	if code != "internal" {
		t.Errorf("code %q, want internal", code)
	}
	for _, leak := range []string{"sql", "database", "closed", "gorm", ".go"} {
		if strings.Contains(strings.ToLower(msg), leak) {
			t.Errorf("message %q leaks %q", msg, leak)
		}
	}
}

func TestBodyLimit(t *testing.T) {
	cfg := testConfig()
	cfg.BodyLimit = 1024
	f, err := New(context.Background(), cfg, Deps{DB: testenv.SQLite(t), Redis: testenv.Redis(t), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, f)
	resp, err := http.Post(srv+"/api/activities", "application/json", strings.NewReader(strings.Repeat("x", 4096)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a 4 KiB body over a 1 KiB limit: status %d, want 413", resp.StatusCode)
	}
}

func TestHealthAndReadiness(t *testing.T) {
	f, d := newTestApp(t)
	if a := do(t, f, "GET", "/healthz", nil); a.Status != 200 {
		t.Errorf("/healthz: %d", a.Status)
	}
	if a := do(t, f, "GET", "/readyz", nil); a.Status != 200 {
		t.Errorf("/readyz with both services up: %d %s", a.Status, a.Body)
	}

	// The same app on a Redis that does not answer.
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer dead.Close()
	d.Redis = dead
	cfg := testConfig()
	cfg.NodeID = 1 // nothing to lease one from
	f2, err := New(context.Background(), cfg, d)
	if err != nil {
		t.Fatal(err)
	}
	a := do(t, f2, "GET", "/readyz", nil)
	if a.Status != 503 {
		t.Fatalf("/readyz with Redis down: status %d, want 503", a.Status)
	}
	var body struct {
		Error, Message string
		Checks         map[string]string
	}
	if err := json.Unmarshal([]byte(a.Body), &body); err != nil {
		t.Fatal(err)
	}
	if body.Checks["redis"] != "unreachable" || body.Checks["database"] != "ok" || !strings.Contains(body.Message, "redis") {
		t.Errorf("/readyz body %q must name redis as the failed dependency", a.Body)
	}
}

// scrape reads the server's metrics as the operators' listener serves them.
func scrape(t *testing.T, srv *Server) string {
	t.Helper()
	rec := httptest.NewRecorder()
	srv.Metrics.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("/metrics answered %d: %.300s", rec.Code, rec.Body)
	}
	return rec.Body.String()
}

func TestMetricsCountRequestsByRouteAndStatus(t *testing.T) {
	s := startLive(t, liveOpts{noBackground: true})
	f := s.Srv.Fiber
	do(t, f, "GET", "/api/activities", nil)
	do(t, f, "GET", "/api/activities", nil)
	do(t, f, "GET", "/api/items/5", nil)
	do(t, f, "GET", "/wp-login.php", nil)
	// /metrics is not on the public listener: it is a page like any unknown one there.
	if a := do(t, f, "GET", "/metrics", nil); a.Status != 404 || strings.Contains(string(a.Body), "seckill_http_requests_total") {
		t.Errorf("the public listener answers /metrics: %d %.200s", a.Status, a.Body)
	}
	a := struct{ body string }{scrape(t, s.Srv)}
	for _, want := range []string{
		`seckill_http_requests_total{method="GET",route="/api/activities",status="200"} 2`,
		`seckill_http_requests_total{method="GET",route="/api/items/:id",status="404"} 1`,
		`seckill_http_requests_total{method="GET",route="(unmatched)",status="404"} 2`, // /wp-login.php and /metrics
		`seckill_http_request_duration_seconds_count{method="GET",route="/api/activities"} 2`,
	} {
		if !strings.Contains(a.body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(a.body, "wp-login") {
		t.Error("/metrics labels an unmatched path by its raw text")
	}
}

// Over one kept-alive connection, each request's method lives in a buffer the next one reuses: the
// metrics must keep their own copy, or a GET is counted as "POS" and /metrics fails on duplicates.
func TestMetricsKeepTheirLabelsOverKeptAliveConnections(t *testing.T) {
	s := startLive(t, liveOpts{})
	client := &http.Client{}
	for range 20 {
		for _, m := range []string{http.MethodGet, http.MethodPut} {
			req, _ := http.NewRequest(m, s.URL+"/api/csrf", nil)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	body := scrape(t, s.Srv)
	for _, want := range []string{`{method="GET",route="/api/csrf",status="200"} 20`, `{method="PUT",route="/api",status="403"} 20`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s:\n%s", want, grepLines(string(body), "seckill_http_requests_total{"))
		}
	}
}

func grepLines(s, prefix string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// seedCatalog makes one activity of each kind that the catalog must tell apart.
func seedCatalog(t *testing.T, db *gorm.DB) (later, sooner, draft, ended models.Activity) {
	t.Helper()
	mk := func(name, state string, starts, ends time.Duration, items ...models.Item) models.Activity {
		a := models.Activity{MerchantID: 1, Name: name, State: state, StartsAt: testNow.Add(starts), EndsAt: testNow.Add(ends), Items: items}
		if err := db.Create(&a).Error; err != nil {
			t.Fatal(err)
		}
		return a
	}
	item := func(name string, stock, sold int64) models.Item {
		return models.Item{Name: name, Title: name + " title", OriginalPriceCents: 1000, SeckillPriceCents: 100, StockTotal: stock, StockSold: sold, ImageURL: "/x.png"}
	}
	later = mk("Later sale", models.ActivityApproved, 2*time.Hour, 3*time.Hour, item("L1", 10, 0))
	sooner = mk("Running sale", models.ActivityApproved, -time.Hour, time.Hour, item("S1", 100, 40), item("S2", 5, 5))
	draft = mk("Draft sale", models.ActivityDraft, time.Hour, 2*time.Hour, item("D1", 10, 0))
	ended = mk("Ended sale", models.ActivityApproved, -3*time.Hour, -time.Hour, item("E1", 10, 0))
	return
}

func TestCatalog(t *testing.T) {
	f, d := newTestApp(t)
	later, sooner, draft, ended := seedCatalog(t, d.DB)

	var acts []struct {
		ID       int64     `json:"id"`
		Name     string    `json:"name"`
		State    string    `json:"state"`
		StartsAt time.Time `json:"starts_at"`
		Items    []map[string]any
	}
	a := do(t, f, "GET", "/api/activities", nil)
	if a.Status != 200 {
		t.Fatalf("GET /api/activities: %d %s", a.Status, a.Body)
	}
	if err := json.Unmarshal([]byte(a.Body), &acts); err != nil {
		t.Fatal(err)
	}
	if len(acts) != 2 || acts[0].ID != sooner.ID || acts[1].ID != later.ID {
		t.Fatalf("want the running then the later sale (no draft, no ended), got %s", a.Body)
	}
	if acts[0].State != "approved" || !acts[0].StartsAt.Equal(sooner.StartsAt) {
		t.Errorf("activity fields: %+v", acts[0])
	}
	s1 := acts[0].Items[0]
	for _, field := range []string{"id", "activity_id", "name", "title", "description", "image_url", "original_price_cents",
		"seckill_price_cents", "stock_total", "stock_left", "starts_at", "ends_at", "server_time"} {
		if _, ok := s1[field]; !ok {
			t.Errorf("item lacks the contract's field %q", field)
		}
	}
	if s1["stock_left"] != 60.0 || s1["server_time"] != "2026-11-11T10:00:00Z" {
		t.Errorf("item S1: stock_left %v (want 60), server_time %v", s1["stock_left"], s1["server_time"])
	}

	if a := do(t, f, "GET", "/api/activities/"+itoa(draft.ID), nil); a.Status != 404 {
		t.Errorf("a draft activity answered %d, want 404", a.Status)
	}
	if a := do(t, f, "GET", "/api/activities/"+itoa(ended.ID), nil); a.Status != 200 {
		t.Errorf("an ended approved activity answered %d, want 200", a.Status)
	}
	if a := do(t, f, "GET", "/api/items/"+itoa(draft.Items[0].ID), nil); a.Status != 404 {
		t.Errorf("an item of a draft activity answered %d, want 404", a.Status)
	}
	a = do(t, f, "GET", "/api/items/"+itoa(sooner.Items[1].ID), nil)
	if a.Status != 200 || !strings.Contains(string(a.Body), `"stock_left":0`) || !strings.Contains(string(a.Body), `"name":"S2"`) {
		t.Errorf("GET item S2: %d %s", a.Status, a.Body)
	}
}

func TestHomePageListsTheSales(t *testing.T) {
	f, d := newTestApp(t)
	seedCatalog(t, d.DB)
	a := do(t, f, "GET", "/", nil)
	if a.Status != 200 || !strings.HasPrefix(a.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /: %d %s", a.Status, a.Header.Get("Content-Type"))
	}
	for _, want := range []string{"Running sale", "Later sale", "60 / 100 left"} {
		if !strings.Contains(string(a.Body), want) {
			t.Errorf("home page lacks %q", want)
		}
	}
	for _, unwanted := range []string{"Draft sale", "Ended sale"} {
		if strings.Contains(string(a.Body), unwanted) {
			t.Errorf("home page shows %q", unwanted)
		}
	}
}

// The consumer's client is a copy of the buy path's; it must not share its push notification handlers,
// or go-redis refuses to register them again and logs a failure on every start.
func TestDedicatedClientHasItsOwnPushHandlers(t *testing.T) {
	rdb := testenv.Redis(t)
	rdb.Ping(context.Background())
	ded, ok := dedicatedClient(rdb, nil).(*redis.Client)
	if !ok {
		t.Fatal("a single Redis gives a *redis.Client")
	}
	defer ded.Close()
	if err := ded.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	if ded.Options().PushNotificationProcessor == rdb.Options().PushNotificationProcessor {
		t.Error("the consumer's client shares the push notification processor of the buy path's")
	}
	if ded.Options().PoolSize != 256 {
		t.Errorf("pool size %d, want 256", ded.Options().PoolSize)
	}
}

// TestCatalogComesFromMemory: however many pages poll the catalog, the item and its page, PostgreSQL sees
// one snapshot a second (two queries: the activities and their items), not one query per request; the
// answers may be kept a second by a proxy, and a client that has the current one gets 304.
func TestCatalogComesFromMemory(t *testing.T) {
	s := startLive(t, liveOpts{noBackground: true})
	now := s.Clock.Now()
	act, item := testenv.Sale(t, s.DB, 5, now.Add(-time.Minute), now.Add(time.Hour))
	if _, err := s.Srv.Ledger.Preheat(context.Background(), jobs.DBBooks{DB: s.DB}, item.ID); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, s.URL)
	paths := []string{"/api/items/" + itoa(item.ID), "/api/activities", "/api/activities/" + itoa(act.ID), "/items/" + itoa(item.ID), "/"}
	for _, p := range paths { // the first requests build the snapshot
		if r := b.call("GET", p, nil); r.Status != 200 {
			t.Fatalf("GET %s: %d %s", p, r.Status, r.Body)
		}
	}
	queries := countQueries(t, s.DB)
	start := time.Now()
	for range 100 {
		for _, p := range paths {
			if r := b.call("GET", p, nil); r.Status != 200 {
				t.Fatalf("GET %s: %d %s", p, r.Status, r.Body)
			}
		}
	}
	snapshots := int64(time.Since(start)/time.Second) + 1
	if n := queries.Load(); n > 2*snapshots {
		t.Errorf("500 catalog requests over %v made %d queries, want at most %d (one snapshot a second)", time.Since(start).Round(time.Millisecond), n, 2*snapshots)
	}

	// A client that holds the current answer gets 304 (the tag names the second too: try again if the
	// second turned between the two requests).
	var tag string
	req, _ := http.NewRequest("GET", s.URL+paths[0], nil)
	for try := 0; ; try++ {
		r := b.call("GET", paths[0], nil)
		tag = r.Header.Get("ETag")
		if tag == "" || r.Header.Get("Cache-Control") != "public, max-age=1" {
			t.Fatalf("GET %s: ETag %q, Cache-Control %q", paths[0], tag, r.Header.Get("Cache-Control"))
		}
		req.Header.Set("If-None-Match", tag)
		r = b.do(req)
		if r.Status == 304 && len(r.Body) == 0 {
			break
		}
		if try == 5 || r.Status != 200 || r.Header.Get("ETag") == tag {
			t.Fatalf("GET %s with its current ETag: %d %s, want 304", paths[0], r.Status, r.Body)
		}
	}
	// A unit sold: within the cache's second the item shows 4 left, under another tag.
	s.Redis.HIncrBy(context.Background(), stock.KeysOf(item.ID).Sale, "left", -1)
	testenv.EventuallySaw(t, 5*time.Second, "the item to show 4 left after a unit was sold", func() (bool, string) {
		r := b.do(req)
		if r.Status == 200 && r.json(t)["stock_left"] == 4.0 {
			if r.Header.Get("ETag") == tag {
				t.Errorf("stock left changed, the ETag did not: %s", tag)
			}
			return true, ""
		}
		return false, fmt.Sprintf("%d %s", r.Status, r.Body)
	})
}

// TestCaptchasComeFromThePool: with the pool worker running, captchas are drawn before they are asked
// for, handed out from the pool (as /metrics shows), and pass registration like any other.
func TestCaptchasComeFromThePool(t *testing.T) {
	s := startLive(t, liveOpts{only: []string{"captcha_pool"}, tune: func(c *Config) { c.CaptchaPool = 20 }})
	testenv.EventuallySaw(t, 30*time.Second, "the pool to hold 20 captchas", func() (bool, string) {
		held, _, _ := s.Srv.Captchas.PoolStats()
		return held >= 20, fmt.Sprintf("it holds %d", held)
	})
	b := newBrowser(t, s.URL)
	b.register("pooled_one", passwordOf("pooled"))
	for range 5 {
		b.captcha()
	}
	metrics := scrape(t, s.Srv)
	if !strings.Contains(metrics, `seckill_captchas_handed_out_total{from="pool"} 6`) ||
		!strings.Contains(metrics, `seckill_captchas_handed_out_total{from="demand"} 0`) {
		t.Errorf("six captchas handed out, all from the pool; /metrics says:\n%s", grepLines(metrics, "seckill_captcha"))
	}
}
