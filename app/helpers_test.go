package app

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	altcha "github.com/altcha-org/altcha-lib-go"
	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"seckill/captcha"
	"seckill/handlers"
	"seckill/internal/testenv"
	"seckill/payment"
	"seckill/pow"
)

// safeWriter lets a server goroutine log into a buffer the test reads.
type safeWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *safeWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// String is what was written, when the writer is a fmt.Stringer (a bytes.Buffer).
func (s *safeWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprint(s.w)
}

// clock is a server clock that tests move forward instead of sleeping.
type clock struct{ offset atomic.Int64 }

func (c *clock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

func (c *clock) Advance(d time.Duration) { c.offset.Add(int64(d)) }

// Set moves the clock to t, from where it runs on: a step of a test that takes a while (a bcrypt, a
// captcha under -race) cannot carry a later moment past the one the test means.
func (c *clock) Set(t time.Time) { c.offset.Store(int64(time.Until(t))) }

// liveServer is a real app served on a free port, on the real services, with a clock the test moves.
type liveServer struct {
	URL   string
	Srv   *Server
	DB    *gorm.DB
	Redis *redis.Client
	Clock *clock
	Cfg   Config
}

// liveOpts are the ways a test may change the server it starts; the zero value is a server with fresh
// services and all its background work running.
type liveOpts struct {
	db           *gorm.DB                // nil: a fresh database
	rdb          *redis.Client           // nil: a fresh Redis
	tune         func(*Config)           // changes the configuration before the server is built
	setup        func(*Server)           // adds test routes before the server starts serving
	noBackground bool                    // no background work (for tests that count Redis commands, and the fuzzers)
	log          *slog.Logger            // nil: discarded
	only         []string                // the background workers to run (all when empty)
	payClients   map[string]*http.Client // the named providers' HTTP clients (to their fakes)
	failover     *redis.FailoverOptions  // rdb's options when it is a failover client (Redis Sentinel)
}

// startLive serves a real app until the test (or the fuzz run) ends.
func startLive(t testing.TB, o liveOpts) *liveServer {
	t.Helper()
	db, rdb := o.db, o.rdb
	if db == nil {
		db = testenv.Postgres(t)
	}
	if rdb == nil {
		rdb = testenv.Redis(t)
	}
	clk := &clock{}
	cfg := testConfig()
	// Listen first: the payment provider is this server's own sandbox, reached over HTTP at BASE_URL.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.BaseURL = "http://" + ln.Addr().String()
	if o.tune != nil {
		o.tune(&cfg)
	}
	log := o.log
	if log == nil {
		log = newLogger(Config{}, io.Discard)
	}
	srv, err := NewServer(context.Background(), cfg, Deps{DB: db, Redis: rdb, Log: log, Now: clk.Now, PayClients: o.payClients, RedisFailover: o.failover})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	if !o.noBackground {
		ctx, cancel := context.WithCancel(context.Background())
		bg, err := srv.Start(ctx, o.only...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cancel(); <-bg })
	}
	if o.setup != nil {
		o.setup(srv)
	}
	serveOn(t, srv.Fiber, ln)
	liveRedis.Store(cfg.BaseURL, rdb)
	t.Cleanup(func() { liveRedis.Delete(cfg.BaseURL) })
	return &liveServer{URL: cfg.BaseURL, Srv: srv, DB: db, Redis: rdb, Clock: clk, Cfg: cfg}
}

// browser is one cookie jar: a PC, a phone, an attacker.
type browser struct {
	t    testing.TB
	name string // who this is, in failure messages
	base string
	c    *http.Client
	csrf string

	noAutoCSRF bool // send unsafe requests without fetching a token first (to test the refusal)
}

func newBrowser(t testing.TB, base string) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, name: "a browser", base: base, c: &http.Client{Jar: jar, Timeout: 15 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// in is this browser (the same cookies and token) reporting to t: a fuzz input's own test.
func (b *browser) in(t testing.TB) *browser {
	c := *b
	c.t = t
	return &c
}

// reply is an answer, however it was asked: by a browser over HTTP, or handed to the app in-process (do).
type reply struct {
	Status int
	Header http.Header
	Body   []byte
}

// readReply reads an answer whole; a request that got none fails the test (the server crashed or hung).
func readReply(t testing.TB, req *http.Request, resp *http.Response, err error) reply {
	t.Helper()
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", req.Method, req.URL.Path, err)
	}
	return reply{resp.StatusCode, resp.Header, body}
}

func (r reply) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("body %q: %v", r.Body, err)
	}
	return m
}

func (r reply) code(t testing.TB) string {
	t.Helper()
	c, _ := r.json(t)["error"].(string)
	return c
}

// call sends a request as this browser, with body as JSON; state-changing ones carry its CSRF token,
// fetched first if it has none (as the pages' api.js does).
func (b *browser) call(method, path string, body any) reply {
	b.t.Helper()
	if method != "GET" && b.csrf == "" && !b.noAutoCSRF {
		b.getCSRF()
	}
	var raw []byte
	if body != nil {
		raw, _ = json.Marshal(body)
	}
	return b.send(method, path, raw, nil)
}

// send sends a request as this browser with a body of its own (as JSON, when there is one) and header;
// a state-changing one carries the browser's CSRF token, if it has one.
func (b *browser) send(method, path string, body []byte, header map[string]string) reply {
	b.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, b.base+path, rd)
	if err != nil {
		b.t.Fatalf("%s %s as %s: %v", method, path, b.name, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if b.csrf != "" && method != "GET" {
		req.Header.Set(handlers.CSRFHeader, b.csrf)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return b.do(req)
}

// do sends req as it is, with this browser's cookies.
func (b *browser) do(req *http.Request) reply {
	b.t.Helper()
	resp, err := b.c.Do(req)
	return readReply(b.t, req, resp, err)
}

func (b *browser) getCSRF() {
	b.t.Helper()
	r := b.call("GET", "/api/csrf", nil)
	if r.Status != 200 {
		b.t.Fatalf("GET /api/csrf: %d", r.Status)
	}
	tok, _ := r.json(b.t)["token"].(string)
	if tok == "" {
		b.t.Fatalf("GET /api/csrf: no token in %s", r.Body)
	}
	b.csrf = tok
}

func (b *browser) cookie(name string) string {
	u, _ := url.Parse(b.base)
	for _, c := range b.c.Jar.Cookies(u) {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

func (b *browser) setCookie(name, value string) {
	u, _ := url.Parse(b.base)
	b.c.Jar.SetCookies(u, []*http.Cookie{{Name: name, Value: value, Path: "/"}})
}

// liveRedis finds a live server's Redis by its URL, so that a browser can read a captcha's answer as the
// operator's load tool does (the contract keeps it at captcha:{id}).
var liveRedis sync.Map // base URL → *redis.Client

// captcha draws a captcha and reads its answer.
func (b *browser) captcha() (id, answer string) {
	b.t.Helper()
	r := b.call("GET", "/api/captcha", nil)
	if r.Status != 200 {
		b.t.Fatalf("GET /api/captcha: %d %s", r.Status, r.Body)
	}
	j := r.json(b.t)
	id = j["captcha_id"].(string)
	if !strings.HasPrefix(j["image"].(string), "data:image/png;base64,") {
		b.t.Errorf("captcha image is not a PNG data URL")
	}
	rdb, ok := liveRedis.Load(b.base)
	if !ok {
		b.t.Fatalf("no Redis known for %s", b.base)
	}
	answer, err := rdb.(*redis.Client).Get(context.Background(), captcha.Key(id)).Result()
	if err != nil {
		b.t.Fatalf("the answer of captcha %s: %v", id, err)
	}
	return id, answer
}

// passwordOf is the tests' password for username: one that the rules take (not common, and not holding
// the name), and another for each name.
func passwordOf(username string) string {
	return fmt.Sprintf("lantern %08x harbour", crc32.ChecksumIEEE([]byte(username)))
}

// registration is a registration's body with a freshly solved captcha and proof of work.
func (b *browser) registration(username, password string) map[string]string {
	b.t.Helper()
	id, answer := b.captcha()
	return map[string]string{"username": username, "password": password, "captcha_id": id, "captcha_answer": answer,
		"altcha": b.altcha("purpose=register")}
}

// altcha asks GET /api/altcha?query for a challenge and solves it, as a page's solver does; it answers
// the contract's altcha field.
func (b *browser) altcha(query string) string {
	b.t.Helper()
	return solvePow(b.t, b.challengeOf(query))
}

// solvePow solves c with ALTCHA's library and spells the solution as the contract's altcha field.
func solvePow(t testing.TB, c pow.Challenge) string {
	t.Helper()
	s, err := altcha.SolveChallenge(c.Challenge, c.Salt, altcha.Algorithm(c.Algorithm), int(c.MaxNumber), 0, nil)
	if err != nil || s == nil {
		t.Fatalf("no solution of %+v: %v", c, err)
	}
	p, _ := json.Marshal(altcha.Payload{Algorithm: c.Algorithm, Challenge: c.Challenge, Number: int64(s.Number), Salt: c.Salt, Signature: c.Signature})
	return base64.StdEncoding.EncodeToString(p)
}

// register makes an account in this browser and logs it in.
func (b *browser) register(username, password string) int64 {
	b.t.Helper()
	b.getCSRF()
	r := b.call("POST", "/api/auth/register", b.registration(username, password))
	if r.Status != 201 {
		b.t.Fatalf("register %s: %d %s", username, r.Status, r.Body)
	}
	return int64(r.json(b.t)["id"].(float64))
}

func (b *browser) me() (int, string) {
	b.t.Helper()
	r := b.call("GET", "/api/me", nil)
	if r.Status != 200 {
		return r.Status, ""
	}
	return r.Status, r.json(b.t)["username"].(string)
}

// testPow is the tests' proof of work: a few hundred tries (under -race the Go solver does about 100 k
// a second), so that a test that registers a hundred accounts still runs in moments.
const testPow = 500

// testNow is the clock of the app tests: sale windows are set around it.
var testNow = time.Date(2026, 11, 11, 10, 0, 0, 0, time.UTC)

func testConfig() Config {
	cfg, err := LoadConfig(func(string) string { return "" })
	if err != nil {
		panic(err)
	}
	cfg.BcryptCost = 4
	cfg.CaptchaPool = 0 // drawn on demand: the pool has tests of its own, and each server would fill one
	cfg.PowMaxNumber = testPow
	cfg.SessionSecret = goodSecret
	cfg.GroupCommit = testenv.GroupCommit() // .ci/run runs the buy tests both ways
	return cfg
}

func newTestApp(t testing.TB) (*fiber.App, Deps) {
	t.Helper()
	d := Deps{
		DB:    testenv.Postgres(t),
		Redis: testenv.Redis(t),
		Log:   newLogger(Config{}, io.Discard),
		Now:   func() time.Time { return testNow },
	}
	f, err := New(context.Background(), testConfig(), d)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return f, d
}

// do hands a request to the app in-process, as a client with no cookies would send it.
func do(t testing.TB, f *fiber.App, method, path string, body io.Reader) reply {
	t.Helper()
	req := httptest.NewRequest(method, path, body)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return doRequest(t, f, req)
}

// doRequest hands req to the app in-process.
func doRequest(t testing.TB, f *fiber.App, req *http.Request) reply {
	t.Helper()
	resp, err := f.Test(req, 10_000)
	return readReply(t, req, resp, err)
}

// errorOf reads the contract's error body.
func errorOf(t testing.TB, a reply) (code, message string) {
	t.Helper()
	var e struct{ Error, Message string }
	if err := json.Unmarshal(a.Body, &e); err != nil {
		t.Fatalf("body %q is not the contract's error JSON: %v", a.Body, err)
	}
	return e.Error, e.Message
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// startServer serves f on a free port until the test ends and returns its base URL.
func startServer(t testing.TB, f *fiber.App) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serveOn(t, f, ln)
	return "http://" + ln.Addr().String()
}

// serveOn serves f on ln until the test ends.
func serveOn(t testing.TB, f *fiber.App, ln net.Listener) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, f, ln, 5*time.Second) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// only is a set of providers with p alone, as the sandbox (and the payments of before, provider "").
func only(p payment.Provider) *payment.Providers {
	return payment.NewProviders().Add(payment.NameSandbox, p)
}
