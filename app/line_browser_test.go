package app

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"seckill/captcha"
	"seckill/internal/testenv"
	"seckill/stock"
)

// TestWaitingPageAsksOnlyNearTheFront: a shopper who joins after the start waits behind the turns of
// those drawn before; while waiting, their item page polls the line's public document and shows its place
// from it, and asks its own standing only when the line reaches it, when the turn comes.
func TestWaitingPageAsksOnlyNearTheFront(t *testing.T) {
	testenv.Long(t)
	const turn = time.Minute
	db := testenv.Postgres(t)
	_, item := queueSale(t, db, nil, 3)
	logs := &safeWriter{w: &bytes.Buffer{}}
	s := startLive(t, liveOpts{db: db, only: []string{"queue", "sold_out_flags", "preheat"}, log: newLogger(Config{}, logs),
		// The three ahead never look at their standing: their turns run from their start, not waited for,
		// and run out when the test moves the clock past them (and their grace), once the page waits.
		tune: func(c *Config) { c.QueueOverbook, c.QueueTurn, c.QueueTurnSeen = 1, turn, 0 }})
	id := itoa(item.ID)
	for i := range 3 { // drawn before the start: they get the three turns, and let them run out
		b := newBrowser(t, s.URL)
		b.register(fmt.Sprintf("ahead_%d", i), passwordOf("ahead"))
		if r := b.join(item.ID); r.Status != 200 {
			t.Fatalf("join: %d %s", r.Status, r.Body)
		}
	}
	ctx := chrome(t)
	registerInBrowser(t, ctx, s.URL, "browser_waiter")
	s.Clock.Set(time.Now().Add(time.Minute + time.Second))
	testenv.Eventually(t, 10*time.Second, "the three drawn to be let in", func() bool {
		d, _ := lineDoc(t, s.URL, item.ID)
		return d["let_in"] == 3.0
	})
	var captchaID, waiting, label string
	run(t, ctx, "open the item",
		chromedp.Navigate(s.URL+"/items/"+id),
		chromedp.WaitVisible(`#captcha-img[data-captcha-id]`, chromedp.ByQuery),
		chromedp.WaitEnabled("#buy", chromedp.ByID),
		chromedp.AttributeValue("#captcha-img", "data-captcha-id", &captchaID, nil, chromedp.ByID),
	)
	answer, err := s.Redis.Get(context.Background(), captcha.Key(captchaID)).Result()
	if err != nil {
		t.Fatalf("captcha answer: %v", err)
	}
	run(t, ctx, "join the line after the start",
		chromedp.SendKeys("#captcha-answer", answer, chromedp.ByID),
		chromedp.Click("#buy", chromedp.ByID),
		chromedp.WaitVisible(`//p[@id="queue-status"][contains(., "#4")]`),
		chromedp.Text("#queue-status", &waiting, chromedp.ByID),
	)
	if !strings.Contains(waiting, "You're in line: #4") || !strings.Contains(waiting, "3 left") {
		t.Errorf("behind three turns, the page says %q", waiting)
	}
	joined := strings.Count(logs.String(), "\n")
	count := func(path string) int {
		n := 0
		for _, l := range strings.Split(logs.String(), "\n")[joined:] {
			if strings.Contains(l, "method=GET path=/api/items/"+id+path+" ") {
				n++
			}
		}
		return n
	}
	// The three turns run out by the server's clock, moved past them once the waiting page has polled the
	// line's document: on the wall clock, a Chromium slowed by a loaded machine could join after they
	// had run out, or have them run out before its first poll.
	testenv.EventuallySaw(t, 30*time.Second, "the waiting page to poll the line's document twice", func() (bool, string) {
		n := count("/line")
		return n >= 2, itoa(int64(n)) + " documents"
	})
	s.Clock.Advance(turn + stock.TurnGrace + time.Second)
	run(t, ctx, "the turn comes when the three run out",
		chromedp.WaitVisible(`//button[@id="buy"][contains(., "Your turn")]`),
		chromedp.WaitEnabled("#buy", chromedp.ByID),
		chromedp.Text("#buy", &label, chromedp.ByID),
	)
	own, docs := count("/queue"), count("/line")
	t.Logf("from joining to the turn: %d own standings, %d documents", own, docs)
	// The page polled the document while it waited, and asked its own standing once the line reached it
	// (twice at most, should its first answer come from a view a moment older than the document's).
	if own < 1 || own > 2 || docs < 2 {
		t.Errorf("from joining to the turn the page asked its own standing %d times and the document %d times; want 1 or 2, and the document every second", own, docs)
	}
}
