package loadtest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/cookiejar"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"seckill/internal/testenv"
	"seckill/loadtest"
)

// reached counts the requests both instances answered on a route (its pattern, as /metrics labels it),
// whatever their status: what nginx did not answer itself.
func reached(t *testing.T, method, route string) int {
	t.Helper()
	n := 0
	for _, app := range clusterApps {
		host, port, _ := net.SplitHostPort(app)
		p, _ := strconv.Atoi(port)
		resp, err := http.Get("http://" + net.JoinHostPort(host, strconv.Itoa(p+1000)) + "/metrics")
		if err != nil {
			t.Fatalf("metrics of %s: %v", app, err)
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "seckill_http_requests_total{") && strings.Contains(line, `method="`+method+`"`) &&
				strings.Contains(line, `route="`+route+`"`) {
				v, _ := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
				n += int(v)
			}
		}
		resp.Body.Close()
	}
	return n
}

// edgeAnswer is an answer through nginx, headers and all.
type edgeAnswer struct {
	status int
	header http.Header
	body   string
}

// cached reports whether nginx answered from its cache (a fresh entry, or one being renewed).
func (a edgeAnswer) cached() bool {
	switch a.header.Get("X-Cache-Status") {
	case "HIT", "STALE", "UPDATING", "REVALIDATED":
		return true
	}
	return false
}

// browserAt is a client with a cookie jar, as a browser is, through nginx.
type browserAt struct {
	t    *testing.T
	http *http.Client
	csrf string
}

func newBrowserAt(t *testing.T) *browserAt {
	jar, _ := cookiejar.New(nil)
	return &browserAt{t: t, http: &http.Client{Jar: jar, Timeout: 15 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// do sends a request, and again a little later while nginx's limit per address answers 429 (every test
// request comes from one address): the test is about what is answered, not how fast it may ask.
func (b *browserAt) do(method, path string, header map[string]string, body string) edgeAnswer {
	b.t.Helper()
	for try := 0; ; try++ {
		a := b.once(method, path, header, body)
		if a.status != http.StatusTooManyRequests || try == 100 {
			return a
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (b *browserAt) once(method, path string, header map[string]string, body string) edgeAnswer {
	b.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, clusterNginx+path, rd)
	if err != nil {
		b.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if b.csrf != "" && method != http.MethodGet {
		req.Header.Set("X-CSRF-Token", b.csrf)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := b.http.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return edgeAnswer{resp.StatusCode, resp.Header, string(raw)}
}

// login logs the browser in as name, with the token and cookies a page gets.
func (b *browserAt) login(name, password string) {
	b.t.Helper()
	var tok struct{ Token string }
	a := b.do("GET", "/api/csrf", nil, "")
	if err := json.Unmarshal([]byte(a.body), &tok); err != nil || a.status != 200 {
		b.t.Fatalf("GET /api/csrf: %d %s", a.status, a.body)
	}
	b.csrf = tok.Token
	body, _ := json.Marshal(map[string]string{"username": name, "password": password})
	if a := b.do("POST", "/api/auth/login", nil, string(body)); a.status != 200 {
		b.t.Fatalf("login %s: %d %s", name, a.status, a.body)
	}
}

// TestTheEdgeThroughNginx runs `make cluster`'s nginx in front of two instances: what is the same for
// everyone is answered from nginx's cache about once a second per language however many ask, what
// belongs to one shopper never is, and a sold-out item's paths and buys are answered by nginx itself
// until a unit comes back.
func TestTheEdgeThroughNginx(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	client := loadtest.NewClient(clusterNginx, 16)
	defer client.Close()
	admin, merchant := &loadtest.User{Name: "admin", Password: "cluster-boss-pass"}, &loadtest.User{Name: "merchant", Password: "cluster-seller-pass"}
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for _, u := range []*loadtest.User{admin, merchant} {
		if err := client.Login(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	sale, err := client.SetUpSale(ctx, merchant, admin, loadtest.Name("edge"), 1, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	users, err := client.RegisterUsers(ctx, c.rdb, loadtest.Name("edge"), 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	item, act := strconv.FormatInt(sale.ItemID, 10), strconv.FormatInt(sale.ActivityID, 10)

	t.Run("pages and the catalog come from the cache", func(t *testing.T) {
		anyone := newBrowserAt(t)
		for _, tc := range []struct{ path, route string }{
			{"/", "/"},
			{"/items/" + item, "/items/:id"},
			{"/api/activities", "/api/activities"},
			{"/api/activities/" + act, "/api/activities/:id"},
			{"/api/items/" + item, "/api/items/:id"},
		} {
			for _, lang := range []string{"en", "zh"} {
				anyone.do("GET", tc.path, map[string]string{"Accept-Language": lang}, "")
				before, start := reached(t, "GET", tc.route), time.Now()
				const asks = 20
				fromCache := 0
				for range asks {
					a := anyone.do("GET", tc.path, map[string]string{"Accept-Language": lang}, "")
					if a.status != 200 {
						t.Fatalf("GET %s: %d %s", tc.path, a.status, a.body)
					}
					if a.cached() {
						fromCache++
					}
				}
				// An entry is renewed once it is a second old: the instances see at most one request a
				// second of the asking, and one more for an entry that expired as it began.
				took := time.Since(start)
				most := int(math.Ceil(took.Seconds())) + 1
				if n := reached(t, "GET", tc.route) - before; n > most {
					t.Errorf("%s in %s: %d asks in %v reached the instances %d times, want at most %d", tc.path, lang, asks, took, n, most)
				}
				if fromCache == 0 {
					t.Errorf("%s in %s: none of %d asks was answered from nginx's cache", tc.path, lang, asks)
				}
			}
		}
	})

	shopper := newBrowserAt(t)
	shopper.login(users[0].Name, users[0].Password)

	t.Run("what is one shopper's is never cached", func(t *testing.T) {
		for _, tc := range []struct{ path, route string }{
			{"/api/me", "/api/me"},
			{"/api/items/" + item + "/result", "/api/items/:id/result"},
			{"/api/orders", "/api/orders"},
			{"/orders", "/orders"},
			{"/account/addresses", "/account/addresses"},
		} {
			before := reached(t, "GET", tc.route)
			for range 3 {
				if a := shopper.do("GET", tc.path, nil, ""); a.cached() || a.header.Get("X-Cache-Status") == "MISS" {
					t.Errorf("GET %s with a session: X-Cache-Status %q, want it never looked up", tc.path, a.header.Get("X-Cache-Status"))
				}
			}
			if n := reached(t, "GET", tc.route) - before; n != 3 {
				t.Errorf("GET %s with a session three times: %d reached an instance, want 3", tc.path, n)
			}
		}
		// An answer that sets a cookie (a CSRF token, to a browser with none) is never stored: each
		// stranger gets a token of its own.
		tokens := map[string]bool{}
		for range 3 {
			a := newBrowserAt(t).do("GET", "/api/csrf", nil, "")
			if a.header.Get("Set-Cookie") == "" || a.cached() {
				t.Errorf("GET /api/csrf: Set-Cookie %q, X-Cache-Status %q", a.header.Get("Set-Cookie"), a.header.Get("X-Cache-Status"))
			}
			tokens[a.body] = true
		}
		if len(tokens) != 3 {
			t.Errorf("three strangers got %d CSRF tokens, want 3 (an answer with Set-Cookie was shared)", len(tokens))
		}
		// The item's page is the same for the shopper as for anyone: the session does not keep it from
		// the cache.
		shopper.do("GET", "/items/"+item, nil, "")
		if a := shopper.do("GET", "/items/"+item, nil, ""); !a.cached() {
			t.Errorf("the item page with a session: X-Cache-Status %q, want it from the cache", a.header.Get("X-Cache-Status"))
		}
	})

	t.Run("the cache key is the language the app picks", func(t *testing.T) {
		// A page of its own, not asked yet: its first answer in each language fills an entry.
		other, err := client.SetUpSale(ctx, merchant, admin, loadtest.Name("edge-lang"), 5, 1, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		page := "/items/" + strconv.FormatInt(other.ItemID, 10)
		b := newBrowserAt(t)
		zh := b.do("GET", page, map[string]string{"Accept-Language": "zh-CN,zh;q=0.9"}, "")
		if zh.status != 200 || zh.cached() || !strings.Contains(zh.body, `<html lang="zh-CN">`) {
			t.Fatalf("first ask in Chinese: %d, X-Cache-Status %q, Chinese %v", zh.status, zh.header.Get("X-Cache-Status"), strings.Contains(zh.body, `<html lang="zh-CN">`))
		}
		same := b.do("GET", page, map[string]string{"Cookie": "lang=zh", "Accept-Language": "en-US,en;q=0.9"}, "")
		if !same.cached() || same.body != zh.body {
			t.Errorf("lang=zh after Accept-Language zh-CN: X-Cache-Status %q, same body %v; want the same entry", same.header.Get("X-Cache-Status"), same.body == zh.body)
		}
		en := b.do("GET", page, map[string]string{"Accept-Language": "en-US,en;q=0.9"}, "")
		if en.cached() || !strings.Contains(en.body, `<html lang="en">`) || en.body == zh.body {
			t.Errorf("first ask in English: X-Cache-Status %q, English %v; want an entry of its own", en.header.Get("X-Cache-Status"), strings.Contains(en.body, `<html lang="en">`))
		}
		if bare := b.do("GET", page, nil, ""); !bare.cached() || bare.body != en.body {
			t.Errorf("no language asked: X-Cache-Status %q, English %v; want the English entry", bare.header.Get("X-Cache-Status"), bare.body == en.body)
		}
		// Cookies that nginx and the app would read differently are neither looked up nor stored: none
		// can put one language under the other's key (found by a review: lang="zh" stored the Chinese
		// page under the English key). A weight above 1 counts as 1 in the app, as nginx decides it.
		for _, odd := range []string{`lang="zh"`, "LANG=zh", "a=1,lang=zh", "lang=zh; lang=en", "xlang=zh"} {
			a := b.do("GET", page, map[string]string{"Cookie": odd}, "")
			if a.status != 200 || a.cached() || a.header.Get("X-Cache-Status") != "BYPASS" {
				t.Errorf("Cookie %s: %d, X-Cache-Status %q; want the instance's answer, not stored", odd, a.status, a.header.Get("X-Cache-Status"))
			}
			if bare := b.do("GET", page, nil, ""); bare.body != en.body {
				t.Errorf("after Cookie %s, a visitor asking no language got another page than the English one", odd)
			}
		}
		if a := b.do("GET", page, map[string]string{"Accept-Language": "zh, en;q=2"}, ""); a.body != zh.body {
			t.Errorf("Accept-Language zh, en;q=2: not the Chinese page (X-Cache-Status %q)", a.header.Get("X-Cache-Status"))
		}
	})

	t.Run("an asset's checksum is part of its key", func(t *testing.T) {
		b := newBrowserAt(t)
		home := b.do("GET", "/", nil, "")
		m := regexp.MustCompile(`/assets/[a-z/.-]+\.js\?v=[0-9a-f]+`).FindString(home.body)
		if m == "" {
			t.Fatalf("no checksummed script on the home page: %.300s", home.body)
		}
		b.do("GET", m, nil, "")
		if a := b.do("GET", m, nil, ""); !a.cached() {
			t.Errorf("%s asked twice: X-Cache-Status %q, want a hit", m, a.header.Get("X-Cache-Status"))
		}
		// Another release's checksum is another entry, never the old body marked immutable for a year.
		other := m[:strings.Index(m, "?v=")] + "?v=0123456789ab"
		if a := b.do("GET", other, nil, ""); a.cached() {
			t.Errorf("%s after %s: X-Cache-Status %q, want its own entry", other, m, a.header.Get("X-Cache-Status"))
		}
	})

	t.Run("sold out at the edge, and open again when a unit comes back", func(t *testing.T) {
		buyer, other := users[0], users[1]
		paths, err := client.GetPaths(ctx, c.rdb, []*loadtest.User{buyer}, sale.ItemID, nil)
		if err != nil {
			t.Fatal(err)
		}
		if a, err := client.Do(ctx, "POST", "/api/items/"+item+"/buy/"+paths[0], nil, buyer); err != nil || a.Status != 202 {
			t.Fatalf("the one unit's buy: %v %v", a, err)
		}
		stranger := newBrowserAt(t)
		pathURL := "/api/items/" + item + "/path"
		testenv.EventuallySaw(t, 10*time.Second, "nginx to answer the sold-out item's path itself", func() (bool, string) {
			a := stranger.do("POST", pathURL, nil, "{}")
			return a.status == 409 && a.header.Get("X-Seckill-Edge") == "sold_out", fmt.Sprintf("%d %s", a.status, a.body)
		})
		before := reached(t, "POST", "/api/items/:id/path") + reached(t, "POST", "/api/items/:id/buy/:path")
		for _, tc := range []struct {
			header  map[string]string
			message string
		}{
			{nil, "sold out"},
			{map[string]string{"Accept-Language": "en-US,en;q=0.9"}, "sold out"},
			{map[string]string{"Accept-Language": "zh-CN,zh;q=0.9"}, "已售罄。"},
			{map[string]string{"Cookie": "lang=zh"}, "已售罄。"},
		} {
			for _, path := range []string{pathURL, "/api/items/" + item + "/buy/" + strings.Repeat("ab", 16)} {
				a := stranger.do("POST", path, tc.header, "{}")
				want := fmt.Sprintf(`{"error":"sold_out","message":"%s"}`, tc.message)
				if a.status != 409 || a.body != want || a.header.Get("Content-Type") != "application/json" {
					t.Errorf("POST %s %v: %d %q %q, want 409 %s", path, tc.header, a.status, a.header.Get("Content-Type"), a.body, want)
				}
			}
		}
		if n := reached(t, "POST", "/api/items/:id/path") + reached(t, "POST", "/api/items/:id/buy/:path") - before; n != 0 {
			t.Errorf("%d of the sold-out item's paths and buys reached an instance, want none", n)
		}

		// The buyer cancels its order: the unit is back, and nginx lets paths through again.
		var orders []struct {
			OrderNo string `json:"order_no"`
			ItemID  int64  `json:"item_id"`
		}
		testenv.EventuallySaw(t, 15*time.Second, "the buyer's order", func() (bool, string) {
			err := client.JSON(ctx, "GET", "/api/orders", nil, buyer, &orders)
			return err == nil && len(orders) == 1, fmt.Sprint(orders, err)
		})
		if a, err := client.Do(ctx, "POST", "/api/orders/"+orders[0].OrderNo+"/cancel", nil, buyer); err != nil || a.Status != 200 {
			t.Fatalf("cancel: %v %v", a, err)
		}
		// After a quiet spell the first path through nginx is let through: an expired sold-out answer is
		// renewed before it is used, never handed out stale (found by a review: the first shopper after a
		// quiet spell was told sold out long after the unit came back).
		testenv.EventuallySaw(t, 10*time.Second, "the instances to say the item is on sale", func() (bool, string) {
			n := 0
			for _, app := range clusterApps {
				resp, err := http.Get("http://" + app + "/api/items/" + item + "/on-sale")
				if err == nil {
					resp.Body.Close()
					if resp.StatusCode == 204 {
						n++
					}
				}
			}
			return n == len(clusterApps), fmt.Sprintf("%d of %d", n, len(clusterApps))
		})
		time.Sleep(2100 * time.Millisecond) // quiet for longer than an entry lives (nginx counts whole seconds)
		if a, err := client.Do(ctx, "POST", pathURL, map[string]string{}, other); err != nil || a.Status != 400 {
			t.Errorf("the first path after a quiet spell: %v %v, want the instance's 400 (the item is on sale)", a, err)
		}
		testenv.EventuallySaw(t, 10*time.Second, "the item to be open at nginx again", func() (bool, string) {
			// Without a captcha: an instance answers 400 bad_request, which only an item on sale reaches.
			a, err := client.Do(ctx, "POST", pathURL, map[string]string{}, other)
			return err == nil && a.Status == 400, fmt.Sprintf("%d %s %v", a.Status, a.Body, err)
		})
		paths, err = client.GetPaths(ctx, c.rdb, []*loadtest.User{other}, sale.ItemID, nil)
		if err != nil {
			t.Fatal(err)
		}
		if a, err := client.Do(ctx, "POST", "/api/items/"+item+"/buy/"+paths[0], nil, other); err != nil || a.Status != 202 {
			t.Errorf("the unit that came back: %v %v, want 202", a, err)
		}
	})

	// nginx's totals (stub_status) and what it answered itself (its edge log, which instance 1 counts):
	// the tests above had it answer from its cache and say sold out.
	t.Run("nginx's counters reach /metrics", func(t *testing.T) {
		host, port, _ := net.SplitHostPort(clusterApps[0])
		p, _ := strconv.Atoi(port)
		metrics := func() string {
			resp, err := http.Get("http://" + net.JoinHostPort(host, strconv.Itoa(p+1000)) + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			return string(raw)
		}
		for _, want := range []string{"seckill_nginx_up 1\n", "seckill_nginx_requests_total ", `seckill_nginx_connections{state="active"} `} {
			if !strings.Contains(metrics(), want) {
				t.Errorf("/metrics of instance 1 lacks %q", want)
			}
		}
		counted := func(m, answer string) float64 {
			prefix := `seckill_nginx_answers_total{answer="` + answer + `"} `
			for _, line := range strings.Split(m, "\n") {
				if v, ok := strings.CutPrefix(line, prefix); ok {
					f, _ := strconv.ParseFloat(v, 64)
					return f
				}
			}
			return 0
		}
		testenv.EventuallySaw(t, 10*time.Second, "nginx's cache hits and sold-out answers in /metrics", func() (bool, string) {
			m := metrics()
			hit, soldOut := counted(m, "hit"), counted(m, "sold_out")
			return hit > 0 && soldOut >= 8, fmt.Sprintf("hit %v, sold_out %v", hit, soldOut)
		})
	})
}
