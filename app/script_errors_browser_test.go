package app

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"seckill/internal/testenv"
)

// The shoppers' pages, opened by someone not logged in, throw no script error: an item page's first
// answer (401 from /api/me) once came before countdown.js had set window.serverNow.
func TestPagesLoggedOutThrowNoScriptError(t *testing.T) {
	testenv.Long(t)
	s := startLive(t, liveOpts{})
	now := s.Clock.Now()
	_, first := testenv.Sale(t, s.DB, 5, now.Add(-time.Minute), now.Add(time.Hour))
	_, queued := queueSale(t, s.DB, s, 5)
	ctx := chrome(t)
	var mu sync.Mutex
	var thrown []string
	chromedp.ListenTarget(ctx, func(ev any) {
		if e, ok := ev.(*runtime.EventExceptionThrown); ok {
			mu.Lock()
			thrown = append(thrown, e.ExceptionDetails.Error())
			mu.Unlock()
		}
	})
	for _, path := range []string{"/", "/items/" + itoa(first.ID), "/items/" + itoa(queued.ID), "/login", "/register"} {
		run(t, ctx, "open "+path, chromedp.Navigate(s.URL+path), chromedp.WaitReady("body"), chromedp.Sleep(time.Second))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(thrown) > 0 {
		t.Errorf("script errors:\n%s", strings.Join(thrown, "\n"))
	}
}
