package app

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"seckill/internal/testenv"
)

// requestsTo reads from /metrics how many GETs of a route the server answered 200.
func requestsTo(t *testing.T, srv *Server, route string) int {
	t.Helper()
	prefix := fmt.Sprintf(`seckill_http_requests_total{method="GET",route=%q,status="200"} `, route)
	for _, line := range strings.Split(scrape(t, srv), "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}

// A logged-in page's one request on load is /api/me, however many of its scripts ask who is there (the
// header and the item page), and its token serves the page's unsafe requests: no /api/csrf. A
// logged-out page's form (registration) still gets a token when it needs one.
func TestPageLoadAsksWhoAmIOnce(t *testing.T) {
	s := startLive(t, liveOpts{})
	now := s.Clock.Now()
	_, item := testenv.Sale(t, s.DB, 5, now.Add(-time.Minute), now.Add(time.Hour))
	ctx := chrome(t)
	csrfBefore := requestsTo(t, s.Srv, "/api/csrf")
	registerInBrowser(t, ctx, s.URL, "one_request")
	if requestsTo(t, s.Srv, "/api/csrf") <= csrfBefore {
		t.Error("the logged-out registration form asked no CSRF token")
	}

	meBefore, csrfBefore := requestsTo(t, s.Srv, "/api/me"), requestsTo(t, s.Srv, "/api/csrf")
	var who string
	run(t, ctx, "open the item logged in",
		chromedp.Navigate(s.URL+"/items/"+itoa(item.ID)),
		chromedp.WaitVisible("#nav-account .who", chromedp.ByQuery),
		chromedp.Text("#nav-account .who", &who, chromedp.ByQuery),
		// The item page's own question was answered too: it shows the captcha of a logged-in shopper.
		chromedp.WaitVisible(`#captcha-img[data-captcha-id]`, chromedp.ByQuery),
	)
	if who != "one_request" {
		t.Errorf("the header shows %q, want one_request", who)
	}
	meAfter := requestsTo(t, s.Srv, "/api/me")
	if n := meAfter - meBefore; n != 1 {
		t.Errorf("the item page asked /api/me %d times on load, want 1", n)
	}
	// Logging out (an unsafe request) uses /api/me's token.
	run(t, ctx, "log out",
		chromedp.Click("#nav-account button", chromedp.ByQuery),
		chromedp.WaitVisible(`#nav-account a[href="/login"]`, chromedp.ByQuery),
	)
	if n := requestsTo(t, s.Srv, "/api/csrf") - csrfBefore; n != 0 {
		t.Errorf("the logged-in page asked /api/csrf %d times, want none", n)
	}
	if requestsTo(t, s.Srv, "/api/me") != meAfter {
		t.Error("logging out, or the logged-out home page, asked /api/me")
	}
}
