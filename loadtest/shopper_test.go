package loadtest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	altcha "github.com/altcha-org/altcha-lib-go"
	"github.com/redis/go-redis/v9"

	"seckill/internal/testenv"
	"seckill/loadtest"
)

// lineServer is a waiting room as the contract and the line's public document describe it, small
// enough to read: everyone joins before the draw, which places them in the order they joined; the line
// lets in as many places as there are units; a shopper whose turn came buys once. It records what each
// shopper (by session) asked, and what a page must not do.
type lineServer struct {
	t      *testing.T
	rdb    redis.UniversalClient
	starts time.Time // the draw
	stock  int64

	mu       sync.Mutex
	joined   []string            // sessions, in the order they joined: the drawn order
	asked    map[string][]string // session → "METHOD route" of each request
	bought   map[string]bool
	lineGets int
	itemGets int
	letIn    int64 // the most the line was let in
	// firstCome: the sale sells first come (path, then buy) from the start instead of through the line.
	firstCome bool
	wrong     []string // requests a page of the rule would not send
}

func newLineServer(t *testing.T, rdb redis.UniversalClient, starts time.Time, stock int64) *lineServer {
	return &lineServer{t: t, rdb: rdb, starts: starts, stock: stock, asked: map[string][]string{}, bought: map[string]bool{}}
}

func (l *lineServer) position(session string) int64 {
	for i, s := range l.joined {
		if s == session {
			return int64(i + 1)
		}
	}
	return 0
}

func (l *lineServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	session, csrf := "", ""
	if c, err := r.Cookie("sk_session"); err == nil {
		session = c.Value
	}
	if c, err := r.Cookie("sk_csrf"); err == nil {
		csrf = c.Value
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	route := r.Method + " " + r.URL.Path
	if strings.HasPrefix(r.URL.Path, "/api/items/1/buy/") {
		route = r.Method + " /api/items/1/buy"
	}
	if session != "" {
		l.asked[session] = append(l.asked[session], route)
	}
	if r.Method == http.MethodPost && (r.Header.Get("X-CSRF-Token") != "tok-"+session || csrf != "tok-"+session) {
		l.wrong = append(l.wrong, fmt.Sprintf("%s by %s without the token /api/me gave", route, session))
	}
	drawn := !time.Now().Before(l.starts)
	letIn := int64(0)
	if drawn { // two places at the draw, one more each second
		letIn = min(2+int64(time.Since(l.starts)/time.Second), int64(len(l.joined)))
		l.letIn = max(l.letIn, letIn)
	}
	soldOut := int64(len(l.bought)) >= l.stock
	reply := func(v any) { _ = json.NewEncoder(w).Encode(v) }
	pos := l.position(session)
	switch route {
	case "GET /api/me":
		reply(map[string]any{"id": 1, "username": session, "role": "shopper", "csrf_token": "tok-" + session})
	case "GET /api/captcha":
		id := fmt.Sprintf("%s-%d", session, len(l.asked[session]))
		if err := l.rdb.Set(r.Context(), "captcha:"+id, "42", time.Minute).Err(); err != nil {
			l.t.Error(err)
		}
		reply(map[string]any{"captcha_id": id, "image": ""})
	case "GET /api/altcha":
		if r.URL.Query().Get("purpose") != "join" || r.URL.Query().Get("item_id") != "1" {
			l.wrong = append(l.wrong, fmt.Sprintf("%s asked a challenge for %s", session, r.URL.RawQuery))
		}
		// A real challenge of a few tries: the shopper solves it with ALTCHA's library, as against a shop.
		n := int64(3)
		c, _ := altcha.CreateChallenge(altcha.ChallengeOptions{HMACKey: "test", MaxNumber: 10, Number: &n})
		reply(map[string]any{"algorithm": c.Algorithm, "challenge": c.Challenge, "maxnumber": c.MaxNumber, "salt": c.Salt, "signature": c.Signature})
	case "POST /api/items/1/queue":
		var body struct{ Altcha string }
		if json.NewDecoder(r.Body).Decode(&body) != nil || body.Altcha == "" {
			l.wrong = append(l.wrong, session+" joined without a proof of work")
		}
		if drawn {
			l.wrong = append(l.wrong, session+" joined after the draw")
		}
		if pos == 0 {
			l.joined = append(l.joined, session)
		}
		reply(map[string]any{"state": "waiting", "position": nil, "place_token": nil})
	case "GET /api/items/1/line":
		l.lineGets++
		state := map[bool]string{true: "moving", false: "open"}[drawn]
		if soldOut {
			state = "sold_out"
		}
		w.Header().Set("Cache-Control", "public, max-age=1")
		reply(map[string]any{"item_id": 1, "state": state, "let_in": letIn, "stock_left": l.stock - int64(len(l.bought)), "sold_out": soldOut,
			"rate": 0, "drawn": drawn, "readmitted": 0, "held": 0, "turn_seconds": 30, "server_time": time.Now()})
	case "GET /api/items/1/queue":
		var place *string
		if drawn {
			p := fmt.Sprintf("place-%s-%d", session, pos)
			place = &p
			if n := count(l.asked[session], route); n > 1 && r.Header.Get("X-Line-Place") != p {
				l.wrong = append(l.wrong, fmt.Sprintf("%s asked its standing without its place (%q)", session, r.Header.Get("X-Line-Place")))
			}
			if n := count(l.asked[session], route); n > 1 && pos > letIn {
				l.wrong = append(l.wrong, fmt.Sprintf("%s at place %d asked its standing with the line let in to %d", session, pos, letIn))
			}
		} else {
			l.wrong = append(l.wrong, session+" asked its standing before the draw")
		}
		state, path := "waiting", ""
		switch {
		case l.bought[session]:
			state = "bought"
		case soldOut:
			state = "sold_out"
		case drawn && pos <= letIn:
			state, path = "your_turn", "p"+session
		}
		reply(map[string]any{"state": state, "position": pos, "path": path, "place_token": place})
	case "POST /api/items/1/path": // first come
		if soldOut {
			w.WriteHeader(http.StatusConflict)
			reply(map[string]string{"error": "sold_out"})
			return
		}
		reply(map[string]string{"path": "p" + session})
	case "GET /api/items/1":
		l.itemGets++
		reply(map[string]any{"id": 1, "stock_left": l.stock - int64(len(l.bought)), "server_time": time.Now()})
	case "POST /api/items/1/buy":
		if soldOut || !l.firstCome && pos > letIn || l.bought[session] {
			w.WriteHeader(http.StatusConflict)
			reply(map[string]string{"error": "sold_out"})
			return
		}
		l.bought[session] = true
		w.WriteHeader(http.StatusAccepted)
		reply(map[string]string{"status": "queued"})
	case "GET /api/items/1/result":
		reply(map[string]string{"status": map[bool]string{true: "success", false: "none"}[l.bought[session]]})
	default:
		w.WriteHeader(http.StatusNotFound)
		reply(map[string]string{"error": "not_found"})
	}
}

func count(routes []string, route string) int {
	n := 0
	for _, r := range routes {
		if r == route {
			n++
		}
	}
	return n
}

// The waiting room's shopper asks what the page rule lets it ask (INTERFACE.md, "When a page asks its
// own standing"): who it is once, a captcha and a join; its place once after the draw; its standing only
// near the front, with its signed place; winners buy and follow their result; the rest learn the sale is
// over from the public document, which the process fetches once a second however many poll it.
func TestQueueShopperAsksOnlyNearTheFront(t *testing.T) {
	rdb := testenv.Redis(t)
	const shoppers, stock = 12, 4
	starts := time.Now().Add(2500 * time.Millisecond)
	srv := newLineServer(t, rdb, starts, stock)
	ts := httptest.NewServer(srv)
	defer ts.Close()

	plan := &loadtest.CrowdPlan{Mode: "queue", Sale: loadtest.Sale{ItemID: 1, StartsAt: starts, Stock: stock}, Until: time.Now().Add(time.Minute)}
	for i := range shoppers {
		plan.Shoppers = append(plan.Shoppers, loadtest.PlannedShopper{ID: int64(i + 1), Name: fmt.Sprint("s", i), Session: fmt.Sprint("s", i),
			Arrive: time.Now().Add(time.Duration(i) * 50 * time.Millisecond)})
	}
	c := loadtest.NewClient(ts.URL, 8)
	defer c.Close()
	began := time.Now()
	outs, _ := c.Shop(context.Background(), rdb, plan, 0, 1)
	elapsed := time.Since(began)

	srv.mu.Lock()
	defer srv.mu.Unlock()
	for _, w := range srv.wrong {
		t.Error(w)
	}
	finals := map[string]int{}
	polls, lagged, asked2 := 0, 0, 0
	for _, o := range outs {
		session := plan.Shoppers[o.Who].Session
		asked := srv.asked[session]
		got := map[string]int{}
		for _, r := range asked {
			got[r]++
		}
		pos := srv.position(session)
		if got["GET /api/items/1/queue"] == 2 {
			asked2++
		}
		// Who it is, a captcha, a proof of work, a join; its place once after the draw (unless the document said sold out
		// first); its standing once more only if the line was let in to its place.
		standings := 1
		if pos <= srv.letIn {
			standings = 2
		}
		if got["GET /api/me"] != 1 || got["GET /api/captcha"] != 1 || got["GET /api/altcha"] != 1 || got["POST /api/items/1/queue"] != 1 || got["GET /api/items/1/queue"] > standings {
			t.Errorf("%s at place %d (let in to %d) asked %v", session, pos, srv.letIn, got)
		}
		switch {
		case o.Final == "bought":
			if got["POST /api/items/1/buy"] != 1 || got["GET /api/items/1/result"] == 0 {
				t.Errorf("%s bought, having asked %v", session, got)
			}
		case o.Final == "sold out":
			if got["GET /api/items/1/result"] != 0 || pos > srv.letIn && got["POST /api/items/1/buy"] != 0 {
				t.Errorf("%s at place %d (let in to %d) was sold out, having asked %v", session, pos, srv.letIn, got)
			}
		default:
			t.Errorf("%s has no final answer", session)
		}
		finals[o.Final]++
		polls += o.Reqs - o.Own
		if o.Lagged {
			lagged++
		}
		if o.Own != len(asked) {
			t.Errorf("%s: the tool counted %d own requests, the server saw %d", session, o.Own, len(asked))
		}
	}
	if asked2 == 0 {
		t.Error("no shopper asked its standing after its place: the line never reached a waiting one")
	}
	t.Logf("let in to %d; %d shoppers asked their standing after their place; the document fetched %d times for %d polls", srv.letIn, asked2, srv.lineGets, polls)
	if lagged == 0 {
		t.Error("no shopper measured the lag from the document's change to seeing it")
	}
	if finals["bought"] != stock || finals["sold out"] != shoppers-stock {
		t.Errorf("final answers %v, want %d bought and the rest sold out", finals, stock)
	}
	// One fetch a second for the whole process, at most, however many pages poll.
	if most := int(elapsed/time.Second) + 2; srv.lineGets > most || polls <= srv.lineGets {
		t.Errorf("the line's document was fetched %d times in %v for %d polls; want at most %d, fewer than the polls", srv.lineGets, elapsed, polls, most)
	}
	if c.Fetched() != int64(srv.lineGets) {
		t.Errorf("the client counted %d fetches, the server %d", c.Fetched(), srv.lineGets)
	}
}

// What reached the instances is read from their own counters, summed over them, between two readings.
func TestRequestsReachedFromMetrics(t *testing.T) {
	var mu sync.Mutex
	served := []float64{100, 50} // requests each instance has answered
	statements := []float64{7, 3}
	var urls []string
	for i := range served {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(w, "# HELP seckill_http_requests_total HTTP requests.\n# TYPE seckill_http_requests_total counter\n")
			fmt.Fprintf(w, "seckill_http_requests_total{method=\"GET\",route=\"/api/me\",status=\"200\"} %g\n", served[i]*0.4)
			fmt.Fprintf(w, "seckill_http_requests_total{method=\"POST\",route=\"/api/items/:id/queue\",status=\"200\"} %g\n", served[i]*0.6)
			fmt.Fprintf(w, "seckill_db_statements_total{table=\"orders\",kind=\"write\"} %g\n", statements[i])
			fmt.Fprintf(w, "seckill_db_statements_total{table=\"users\",kind=\"read\"} 1\n")
		}))
		defer ts.Close()
		urls = append(urls, ts.URL+"/metrics")
	}
	ctx := context.Background()
	before, err := loadtest.ScrapeMetrics(ctx, urls)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	served[0] += 300 // 250 shoppers, 500 requests over the two instances
	served[1] += 200
	statements[0] += 5
	mu.Unlock()
	after, err := loadtest.ScrapeMetrics(ctx, urls)
	if err != nil {
		t.Fatal(err)
	}
	d := after.Since(before)
	if got := d.RequestsReached(); got != 500 {
		t.Errorf("%v requests reached the instances, want 500", got)
	}
	if got := d.Sum("seckill_db_statements_total", `table="orders"`); got != 5 {
		t.Errorf("%v statements on orders, want 5", got)
	}
	r := &loadtest.Report{Scenario: "queue", Result: &loadtest.Result{}, Crowd: &loadtest.CrowdReport{Mode: "queue", Shoppers: 250, Requests: 5000,
		Reached: d, Final: map[string]int{"bought": 10, "sold out": 240}}}
	if got := r.Crowd.ReachedPerShopper(); got != 2 {
		t.Errorf("%v requests reached the instances a shopper, want 2", got)
	}
	g := loadtest.Goals([]*loadtest.Report{r})
	if !strings.Contains(g, "| requests reaching the instances ≤ 6 a shopper (queue, 250 shoppers) | 2.00 (20.00 made) | met |") {
		t.Errorf("the goals lack the requests a shopper:\n%s", g)
	}
	if md := loadtest.Markdown([]*loadtest.Report{r}, nil); !strings.Contains(md, "| POST /api/items/:id/queue | 300 | 1.20 |") {
		t.Errorf("the report lacks the routes that reached the instances:\n%s", md)
	}
}

// A first-come shopper: who it is once (no separate CSRF request), a captcha, a path and a buy from the
// start; winners follow their result; a sold-out answer ends the try; the item page's polls share one
// fetch a second.
func TestFirstComeShopper(t *testing.T) {
	rdb := testenv.Redis(t)
	const shoppers, stock = 10, 3
	starts := time.Now().Add(time.Second)
	srv := newLineServer(t, rdb, starts, stock)
	srv.firstCome = true
	ts := httptest.NewServer(srv)
	defer ts.Close()
	plan := &loadtest.CrowdPlan{Mode: "first_come", Sale: loadtest.Sale{ItemID: 1, StartsAt: starts, Stock: stock}, Until: time.Now().Add(time.Minute)}
	for i := range shoppers {
		plan.Shoppers = append(plan.Shoppers, loadtest.PlannedShopper{ID: int64(i + 1), Session: fmt.Sprint("f", i), Arrive: time.Now()})
	}
	c := loadtest.NewClient(ts.URL, 8)
	defer c.Close()
	began := time.Now()
	outs, _ := c.Shop(context.Background(), rdb, plan, 0, 1)
	elapsed := time.Since(began)
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for _, w := range srv.wrong {
		t.Error(w)
	}
	finals := map[string]int{}
	for _, o := range outs {
		finals[o.Final]++
		got := map[string]int{}
		for _, r := range srv.asked[plan.Shoppers[o.Who].Session] {
			got[r]++
		}
		if got["GET /api/me"] != 1 || got["GET /api/csrf"] != 0 || got["GET /api/captcha"] < 1 || got["POST /api/items/1/path"] < 1 ||
			got["POST /api/items/1/buy"] > 1 || (o.Final == "bought") != (got["GET /api/items/1/result"] > 0) {
			t.Errorf("%s (%s) asked %v", plan.Shoppers[o.Who].Session, o.Final, got)
		}
	}
	if finals["bought"] != stock || finals["sold out"] != shoppers-stock {
		t.Errorf("final answers %v, want %d bought and the rest sold out", finals, stock)
	}
	if most := int(elapsed/time.Second) + 2; srv.itemGets > most {
		t.Errorf("the item was fetched %d times in %v; want at most %d", srv.itemGets, elapsed, most)
	}
}
