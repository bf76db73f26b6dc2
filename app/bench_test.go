package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"
	"github.com/valyala/fasthttp"

	"seckill/auth"
	"seckill/handlers"
	"seckill/internal/testenv"
	"seckill/jobs"
	"seckill/models"
	"seckill/stock"
)

// The buy endpoint's speed goal is relative: measured in one run against a bare Fiber handler and a Fiber
// handler that makes one EVALSHA round trip on the same Redis. Each benchmark reports req/s; compare the
// ratios, not the absolute figures (the load generator shares the machine's cores with the server).

// benchConns is how many keep-alive connections the load generator holds (SECKILL_BENCH_CONNS changes it:
// make bench's scenarios use 1,000).
var benchConns = func() int {
	if n, err := strconv.Atoi(os.Getenv("SECKILL_BENCH_CONNS")); err == nil && n > 0 {
		return n
	}
	return 64
}()

// hammer sends n POST requests to the URLs that next gives, over benchConns connections, from a child
// process, and reports the server's CPU time and allocations a request. Every answer must have the
// status want.
func hammer(b *testing.B, addr string, n int, next func(i int) (path string, cookie string, csrf string), want int) serverCost {
	b.Helper()
	return hammerOut(b, "POST", addr, n, benchConns, next, want)
}

func hammerMethod(b *testing.B, method, addr string, n int, next func(i int) (path string, cookie string, csrf string), want int) serverCost {
	b.Helper()
	return hammerOut(b, method, addr, n, benchConns, next, want)
}

func listen(b *testing.B, f *fiber.App) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	return serveBench(b, f, ln)
}

// listenApp serves the app as seckill serve does: on its connection limiter's listener (the caps, the
// idle connections' list, the coarse deadlines), which the bare baselines do without.
func listenApp(b *testing.B, srv *Server) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	return serveBench(b, srv.Fiber, srv.Conns.Listen(ln))
}

func serveBench(b *testing.B, f *fiber.App, ln net.Listener) string {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = serve(ctx, f, ln, 5*time.Second) }()
	b.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

// BenchmarkBaselineBare is a Fiber handler that answers the buy's 202 body and does nothing else.
func BenchmarkBaselineBare(b *testing.B) {
	f := fiber.New(fiber.Config{DisableStartupMessage: true})
	f.Post("/buy", func(c *fiber.Ctx) error { return c.Status(202).JSON(fiber.Map{"status": "queued"}) })
	addr := listen(b, f)
	hammer(b, addr, b.N, func(int) (string, string, string) { return "/buy", "", "" }, 202)
}

// BenchmarkBaselineBareBuyRequest is BenchmarkBaselineBare sent the sold-out buy's very requests: the
// same session and CSRF cookies and header, so that what the two parse is the same.
func BenchmarkBaselineBareBuyRequest(b *testing.B) {
	srv, _, itemID := benchServer(b, 1)
	_, cookies, csrf := buyers(b, srv, itemID, 1000)
	f := fiber.New(fiber.Config{DisableStartupMessage: true})
	f.Post("/api/items/:id/buy/:path", func(c *fiber.Ctx) error { return c.Status(202).JSON(fiber.Map{"status": "queued"}) })
	addr := listen(b, f)
	path := fmt.Sprintf("/api/items/%d/buy/%s", itemID, strings.Repeat("a", 32))
	hammer(b, addr, b.N, func(i int) (string, string, string) { return path, cookies[i%len(cookies)], csrf }, 202)
}

// BenchmarkBaselineOneEvalsha is a Fiber handler that makes one EVALSHA round trip and answers 202.
func BenchmarkBaselineOneEvalsha(b *testing.B) {
	rdb := testenv.Redis(b)
	script := redis.NewScript(`return redis.call('HINCRBY', KEYS[1], 'n', 1)`)
	f := fiber.New(fiber.Config{DisableStartupMessage: true})
	f.Post("/buy", func(c *fiber.Ctx) error {
		if err := script.Run(c.UserContext(), rdb, []string{"bench:{item:1}:sale"}).Err(); err != nil {
			return err
		}
		return c.Status(202).JSON(fiber.Map{"status": "queued"})
	})
	addr := listen(b, f)
	before := testenv.RedisCPU(b, rdb)
	hammer(b, addr, b.N, func(int) (string, string, string) { return "/buy", "", "" }, 202)
	reportRedisCPU(b, testenv.RedisCPU(b, rdb)-before)
}

// benchServer is the real app with its middleware and its access log on (as LOG_LEVEL's default has it),
// on real Redis and PostgreSQL, without background work (no consumer: the benchmark measures the web
// tier alone, as SERVE_ROLE=web runs it), and one item with stock for every request.
func benchServer(b *testing.B, stockTotal int64) (*Server, string, int64) {
	return benchServerLogging(b, stockTotal, true)
}

// benchServerLogging is benchServer with the access log on (LOG_LEVEL=info) or off (warn); on, it is
// written as serve writes it, through the log buffer, to /dev/null (a file: each write a system call).
func benchServerLogging(b *testing.B, stockTotal int64, logging bool) (*Server, string, int64) {
	b.Helper()
	db, rdb := testenv.Postgres(b), testenv.Redis(b)
	cfg := testConfig()
	cfg.RateLimitIP = false
	cfg.LogLevel = "warn"
	var w io.Writer = discard{}
	if logging {
		cfg.LogLevel = "info"
		null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			b.Fatal(err)
		}
		logs := newLogBuffer(null)
		b.Cleanup(func() { logs.Close(); null.Close() })
		w = logs
	}
	srv, err := NewServer(context.Background(), cfg, Deps{DB: db, Redis: rdb, Log: newLogger(cfg, w)})
	if err != nil {
		b.Fatal(err)
	}
	_, item := testenv.Sale(b, db, stockTotal, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	if _, err := srv.Ledger.Preheat(context.Background(), jobs.DBBooks{DB: db}, item.ID); err != nil {
		b.Fatal(err)
	}
	return srv, listenApp(b, srv), item.ID
}

// reportRedisCPU reports Redis's CPU time a request (Redis's own count, server-wide: nothing else should
// use that Redis meanwhile).
func reportRedisCPU(b *testing.B, used time.Duration) {
	b.Helper()
	b.ReportMetric(float64(used.Nanoseconds())/1e3/float64(b.N), "redis-cpu-µs/req")
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// buyers makes n logged-in buyers (sessions only: the buy path never reads the users table), each with a
// fresh path for the item.
func buyers(b *testing.B, srv *Server, itemID int64, n int) (paths, cookies []string, csrfTok string) {
	b.Helper()
	csrf := auth.NewCSRF(testConfig().SessionSecret)
	csrfTok, _ = csrf.Token()
	paths, cookies = make([]string, n), make([]string, n)
	var wg sync.WaitGroup
	var next atomic.Int64
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				u := models.User{ID: int64(1_000_000 + i), Role: models.RoleShopper, SessionVersion: 1}
				_, cookie, err := srv.Sessions.Issue(&u)
				if err != nil {
					b.Error(err)
					return
				}
				tok, _ := auth.RandomToken(16)
				if err := srv.Ledger.IssuePath(context.Background(), itemID, u.ID, tok); err != nil {
					b.Error(err)
					return
				}
				paths[i] = "/api/items/" + strconv.FormatInt(itemID, 10) + "/buy/" + tok
				cookies[i] = handlers.SessionCookie + "=" + cookie + "; " + handlers.CSRFCookie + "=" + csrfTok
			}
		}()
	}
	wg.Wait()
	return paths, cookies, csrfTok
}

// BenchmarkBuyWhileStockLasts: every request is a successful buy (202), through the whole middleware chain.
// Besides req/s it reports buys per second of Redis CPU (Redis's own count, server-wide: nothing else
// should use that Redis meanwhile), the figure group commit raises.
func BenchmarkBuyWhileStockLasts(b *testing.B) {
	srv, addr, itemID := benchServer(b, int64(b.N)+1)
	paths, cookies, csrf := buyers(b, srv, itemID, b.N)
	rdb := testenv.Redis(b)
	before := testenv.RedisCPU(b, rdb)
	hammer(b, addr, b.N, func(i int) (string, string, string) { return paths[i], cookies[i], csrf }, 202)
	reportRedisCPU(b, testenv.RedisCPU(b, rdb)-before)
	calls, takes := srv.Ledger.BatchStats()
	if calls > 0 {
		b.ReportMetric(float64(takes)/float64(calls), "buys/script-call")
	}
}

// BenchmarkBuySoldOut: every request finds the item sold out (409), answered from memory.
func BenchmarkBuySoldOut(b *testing.B) { benchSoldOut(b, true) }

// BenchmarkBuySoldOutUnlogged is BenchmarkBuySoldOut with the access log off (LOG_LEVEL=warn).
func BenchmarkBuySoldOutUnlogged(b *testing.B) { benchSoldOut(b, false) }

func benchSoldOut(b *testing.B, logging bool) {
	srv, addr, itemID := benchServerLogging(b, 1, logging)
	paths, cookies, csrf := buyers(b, srv, itemID, 1000)
	// The one unit goes; the item is flagged sold out.
	if _, err := srv.Ledger.Take(context.Background(), itemID, 1_000_000, paths[0][len(paths[0])-32:], "SKbench"); err != nil {
		b.Fatal(err)
	}
	srv.Flags.MarkSoldOut(context.Background(), itemID)
	hammer(b, addr, b.N, func(i int) (string, string, string) { return paths[1+i%999], cookies[1+i%999], csrf }, 409)
}

// BenchmarkBaselineBareGet is a Fiber handler that answers a fixed HTML page.
func BenchmarkBaselineBareGet(b *testing.B) {
	f := fiber.New(fiber.Config{DisableStartupMessage: true})
	page := []byte("<!doctype html><title>item</title><p>an item page</p>")
	f.Get("/items/1", func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
		return c.Send(page)
	})
	addr := listen(b, f)
	hammerMethod(b, "GET", addr, b.N, func(int) (string, string, string) { return "/items/1", "", "" }, 200)
}

// BenchmarkPageDetail is the item detail page for anonymous visitors, through the whole app.
func BenchmarkPageDetail(b *testing.B) {
	_, addr, itemID := benchServer(b, 100)
	path := fmt.Sprintf("/items/%d", itemID)
	hammerMethod(b, "GET", addr, b.N, func(int) (string, string, string) { return path, "", "" }, 200)
}

// BenchmarkBaselineBareJSON is a Fiber handler that answers a fixed JSON body the size of a status poll's.
func BenchmarkBaselineBareJSON(b *testing.B) {
	f := fiber.New(fiber.Config{DisableStartupMessage: true})
	body := []byte(`{"state":"waiting","ticket":"0123456789abcdef0123456789abcdef","position":1234,"ahead":1000,"stock_left":312,` +
		`"wait_seconds":20,"path":null,"turn_ends_at":null,"queue_opens_at":"2026-11-23T09:50:00Z","starts_at":"2026-11-23T10:00:00Z",` +
		`"seed_hash":"9b1e0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab","server_time":"2026-11-23T10:00:05Z"}`)
	f.Get("/status", func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		return c.Send(body)
	})
	addr := listen(b, f)
	hammerMethod(b, "GET", addr, b.N, func(int) (string, string, string) { return "/status", "", "" }, 200)
}

// BenchmarkBaselineBareJSONPollRequest is BenchmarkBaselineBareJSON sent a placed status poll's very
// requests: the same cookies and X-Line-Place header.
func BenchmarkBaselineBareJSONPollRequest(b *testing.B) {
	srv, _, path, cookies, _ := queueStatusServer(b)
	places, waiting := placesOf(b, srv, path, cookies)
	f := fiber.New(fiber.Config{DisableStartupMessage: true})
	body := []byte(strings.Repeat("x", 350))
	f.Get("/api/items/:id/queue", func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		return c.Send(body)
	})
	addr := listen(b, f)
	hammerRequests(b, "GET", addr, b.N, benchConns, func(i int) hammerRequest {
		k := waiting[i%len(waiting)]
		return hammerRequest{Path: path, Cookie: cookies[k], Place: places[k]}
	}, 200)
}

// BenchmarkCatalogItem is GET /api/items/{id} through the whole app: from the catalog's snapshot and
// the stock-left cache.
func BenchmarkCatalogItem(b *testing.B) {
	_, addr, itemID := benchServer(b, 100)
	path := fmt.Sprintf("/api/items/%d", itemID)
	hammerMethod(b, "GET", addr, b.N, func(int) (string, string, string) { return path, "", "" }, 200)
}

// BenchmarkQueueStatus is the waiting room's status poll through the whole app, by 1,000 shoppers in
// line behind the ten let in, each of whom polled before: what a crowd's pages ask every two seconds.
func BenchmarkQueueStatus(b *testing.B) {
	_, addr, path, cookies, csrfTok := queueStatusServer(b)
	hammerMethod(b, "GET", addr, b.N, func(i int) (string, string, string) { return path, cookies[i%len(cookies)], csrfTok }, 200)
}

// BenchmarkQueueStatusPlaced is the status poll as a waiting page sends it since it holds its signed
// place (X-Line-Place): answered from memory while the line has not reached it. The shoppers polling
// are those waiting (990 of the 1,000): the ten let in ask for their turn's path, which reads Redis.
func BenchmarkQueueStatusPlaced(b *testing.B) {
	srv, addr, path, cookies, _ := queueStatusServer(b)
	places, waiting := placesOf(b, srv, path, cookies)
	hammerRequests(b, "GET", addr, b.N, benchConns, func(i int) hammerRequest {
		k := waiting[i%len(waiting)]
		return hammerRequest{Path: path, Cookie: cookies[k], Place: places[k]}
	}, 200)
}

// placesOf asks each shopper's standing once and answers the signed places the line gave them, and
// which of the shoppers wait (those not let in yet: a let-in shopper's page asks for its turn's path).
func placesOf(b *testing.B, srv *Server, path string, cookies []string) (places []string, waiting []int) {
	b.Helper()
	h := srv.Fiber.Handler()
	var rc fasthttp.RequestCtx
	places = make([]string, len(cookies))
	for i, c := range cookies {
		rc.Request.Reset()
		rc.Response.Reset()
		rc.Request.SetRequestURI(path)
		rc.Request.Header.Set("Cookie", c)
		h(&rc)
		var out struct {
			State      string `json:"state"`
			PlaceToken string `json:"place_token"`
		}
		if err := json.Unmarshal(rc.Response.Body(), &out); err != nil || out.PlaceToken == "" {
			b.Fatalf("no place: %d %s", rc.Response.StatusCode(), rc.Response.Body())
		}
		places[i] = out.PlaceToken
		if out.State == string(stock.LineWaiting) {
			waiting = append(waiting, i)
		}
	}
	if len(waiting) == 0 {
		b.Fatal("nobody waits in the line")
	}
	return places, waiting
}

// BenchmarkLineDocument is the line's public document (GET /api/items/{id}/line) through the whole app,
// asked by anonymous pages: what every waiting page polls once a second (nginx caches it; each instance
// still answers its misses).
func BenchmarkLineDocument(b *testing.B) {
	_, addr, path, _, _ := queueStatusServer(b)
	doc := strings.TrimSuffix(path, "/queue") + "/line"
	hammerMethod(b, "GET", addr, b.N, func(int) (string, string, string) { return doc, "", "" }, 200)
}

// BenchmarkInProcess hands each hot answer's request to the app in memory, one at a time, without a
// connection: the app's own CPU time an answer (the chain and the handler), steady where the figures
// over loopback are not, beside a bare Fiber handler's answering the same body.
func BenchmarkInProcess(b *testing.B) {
	srv, _, path, cookies, _ := queueStatusServer(b)
	places, waiting := placesOf(b, srv, path, cookies)
	itemPath := strings.TrimSuffix(path, "/queue")
	bare := fiber.New(fiber.Config{DisableStartupMessage: true})
	body := []byte(strings.Repeat("x", 350))
	bare.Get("/status", func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		return c.Send(body)
	})
	for _, r := range []struct {
		name string
		app  *fiber.App
		req  hammerRequest
		want int
		each func(i int) hammerRequest // when set, request i (the crowd's shoppers in turn)
	}{
		{"bare-json", bare, hammerRequest{Path: "/status"}, 200, nil},
		{"status-placed", srv.Fiber, hammerRequest{Path: path, Cookie: cookies[waiting[0]], Place: places[waiting[0]]}, 200, nil}, // one in line, not let in
		{"status-placed-crowd", srv.Fiber, hammerRequest{}, 200, func(i int) hammerRequest {
			k := waiting[i%len(waiting)] // those waiting, in turn
			return hammerRequest{Path: path, Cookie: cookies[k], Place: places[k]}
		}},
		{"line", srv.Fiber, hammerRequest{Path: itemPath + "/line"}, 200, nil},
		{"item", srv.Fiber, hammerRequest{Path: itemPath}, 200, nil},
	} {
		b.Run(r.name, func(b *testing.B) {
			h := r.app.Handler()
			var rc fasthttp.RequestCtx
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				req := r.req
				if r.each != nil {
					req = r.each(i)
				}
				rc.Request.Reset()
				rc.Response.Reset()
				rc.Request.SetRequestURI(req.Path)
				if req.Cookie != "" {
					rc.Request.Header.Set("Cookie", req.Cookie)
				}
				if req.Place != "" {
					rc.Request.Header.Set(handlers.PlaceHeader, req.Place)
				}
				h(&rc)
				if rc.Response.StatusCode() != r.want {
					b.Fatalf("%s: %d %s", r.name, rc.Response.StatusCode(), rc.Response.Body())
				}
			}
		})
	}
}

// queueStatusServer is the app with one queue sale, drawn, its first ten let in and 1,000 shoppers in
// line behind them: their cookies and the poll's path.
func queueStatusServer(b *testing.B) (srv *Server, addr, path string, cookies []string, csrfTok string) {
	srv, addr, itemID := benchServer(b, 10)
	ctx := context.Background()
	opens := time.Now().Add(-time.Hour)
	if err := srv.OrderConsumer.DB.Model(&models.Activity{}).Where("id = (SELECT activity_id FROM items WHERE id = ?)", itemID).
		Updates(map[string]any{"sale_mode": models.SaleQueue, "queue_opens_at": opens}).Error; err != nil {
		b.Fatal(err)
	}
	w := stock.Window{Opens: opens, Starts: time.Now().Add(-time.Minute), Ends: time.Now().Add(time.Hour)}
	const n = 1000
	cookies = make([]string, n)
	csrf := auth.NewCSRF(testConfig().SessionSecret)
	csrfTok, _ = csrf.Token()
	for i := range cookies {
		u := models.User{ID: int64(2_000_000 + i), Role: models.RoleShopper, SessionVersion: 1}
		_, cookie, err := srv.Sessions.Issue(&u)
		if err != nil {
			b.Fatal(err)
		}
		cookies[i] = handlers.SessionCookie + "=" + cookie + "; " + handlers.CSRFCookie + "=" + csrfTok
		if _, err := srv.Line.Join(ctx, itemID, u.ID, w); err != nil {
			b.Fatal(err)
		}
	}
	if drawn, err := srv.Line.Draw(ctx, itemID); !drawn || err != nil {
		b.Fatalf("draw: %v %v", drawn, err)
	}
	if _, err := srv.Line.Admit(ctx, itemID, stock.Admission{Overbook: 1, Rate: 100, Turn: time.Hour}); err != nil {
		b.Fatal(err)
	}
	path = fmt.Sprintf("/api/items/%d/queue", itemID)
	// Each shopper's page has polled once (its first poll reads Redis; the waiting ones after it are
	// answered from memory): what is measured is the crowd's pages polling on, minutes into the line.
	h := srv.Fiber.Handler()
	var rc fasthttp.RequestCtx
	for _, c := range cookies {
		rc.Request.Reset()
		rc.Response.Reset()
		rc.Request.SetRequestURI(path)
		rc.Request.Header.Set("Cookie", c)
		h(&rc)
		if rc.Response.StatusCode() != 200 {
			b.Fatalf("first poll: %d %s", rc.Response.StatusCode(), rc.Response.Body())
		}
	}
	return srv, addr, path, cookies, csrfTok
}
