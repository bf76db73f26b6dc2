package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"seckill/captcha"
	"seckill/i18n"
	"seckill/internal/testenv"
	"seckill/models"
)

// The item page's small lies, each told the truth in English and in Chinese (issue 33).

var langs = []string{"en", "zh"}

// itemText reads an element's text once it shows something.
func itemText(t *testing.T, ctx context.Context, id string) string {
	t.Helper()
	var text string
	within(t, ctx, 15*time.Second, "read #"+id,
		chromedp.WaitVisible(`//*[@id="`+id+`"][normalize-space(.)!=""]`),
		chromedp.Text("#"+id, &text, chromedp.ByID),
	)
	return strings.TrimSpace(text)
}

// A shopper whose order was cancelled (unpaid, or by them) opens the item again: the page says the order
// was cancelled, with its number, not "Success!".
func TestItemPageAfterACancel(t *testing.T) {
	testenv.Long(t)
	s := startLive(t, liveOpts{only: []string{"order_consumer", "preheat"}})
	now := s.Clock.Now()
	_, item := testenv.Sale(t, s.DB, 5, now.Add(-time.Minute), now.Add(time.Hour))
	for _, lang := range langs {
		t.Run(lang, func(t *testing.T) {
			name := "cancel_" + lang
			b := newBrowser(t, s.URL)
			b.register(name, passwordOf(name))
			path := getPath(t, s, b, item.ID)
			expect(t, "a path", path, 200, "")
			expect(t, "the buy", b.call("POST", "/api/items/"+itoa(item.ID)+"/buy/"+path.json(t)["path"].(string), nil), 202, "")
			var orderNo string
			testenv.Eventually(t, 10*time.Second, "the order", func() bool {
				r := b.call("GET", "/api/items/"+itoa(item.ID)+"/result", nil).json(t)
				orderNo, _ = r["order_no"].(string)
				return r["status"] == "success"
			})
			expect(t, "the cancel", b.call("POST", "/api/orders/"+orderNo+"/cancel", nil), 200, "")
			ctx := chrome(t)
			loginInBrowser(t, ctx, s.URL, name, passwordOf(name))
			run(t, ctx, "open the item in "+lang, chromedp.Navigate(s.URL+"/lang/"+lang), chromedp.Navigate(s.URL+"/items/"+itoa(item.ID)))
			said := itemText(t, ctx, "buy-status")
			tr := i18n.For(lang)
			if want := strings.Replace(tr.T("buy.cancelled"), "%s", orderNo, 1); !strings.HasPrefix(said, want) {
				t.Errorf("after the cancel the page says %q, want %q", said, want)
			}
			if strings.Contains(said, tr.T("buy.success")) {
				t.Errorf("after the cancel the page still says %q", said)
			}
		})
	}
}

// queueRigFor is a queue sale of one unit (turns of ten seconds, seen within a minute) with the line's
// workers and the stops running.
func queueRigFor(t *testing.T) (*liveServer, models.Activity, models.Item) {
	t.Helper()
	s := startLive(t, liveOpts{only: []string{"queue", "sold_out_flags", "preheat", "order_consumer", "stops"},
		tune: func(c *Config) { c.QueueOverbook, c.QueueTurn, c.QueueTurnSeen = 1, 10*time.Second, time.Minute }})
	act, item := queueSale(t, s.DB, s, 1)
	return s, act, item
}

// joinHere joins the item's line from the page open in ctx.
func joinHere(t *testing.T, s *liveServer, ctx context.Context, itemID int64) {
	t.Helper()
	var captchaID string
	run(t, ctx, "open the item",
		chromedp.Navigate(s.URL+"/items/"+itoa(itemID)),
		chromedp.WaitVisible(`#captcha-img[data-captcha-id]`, chromedp.ByQuery),
		chromedp.WaitEnabled("#buy", chromedp.ByID),
		chromedp.AttributeValue("#captcha-img", "data-captcha-id", &captchaID, nil, chromedp.ByID),
	)
	answer, err := s.Redis.Get(context.Background(), captcha.Key(captchaID)).Result()
	if err != nil {
		t.Fatalf("captcha answer: %v", err)
	}
	within(t, ctx, 20*time.Second, "join", chromedp.SendKeys("#captcha-answer", answer, chromedp.ByID), chromedp.Click("#buy", chromedp.ByID),
		chromedp.WaitVisible("#turn-alerts", chromedp.ByID))
}

// A click in a turn's last moment: the buy arrives after the turn's end. The page says the turn ran out,
// and only that: not "try again", and a second click (the person thought the first did nothing) does not
// send a join without the captcha ("Captcha answer: is required"); a join asked without the captcha's
// answer is told what to type.
func TestClickInATurnsLastSeconds(t *testing.T) {
	testenv.Long(t)
	for _, lang := range langs {
		t.Run(lang, func(t *testing.T) {
			s, _, item := queueRigFor(t)
			ctx := chrome(t)
			registerInBrowser(t, ctx, s.URL, "late_"+lang)
			run(t, ctx, "speak "+lang, chromedp.Navigate(s.URL+"/lang/"+lang))
			joinHere(t, s, ctx, item.ID)
			tr := i18n.For(lang)
			letIn(t, s, item.ID)
			within(t, ctx, 15*time.Second, "the turn", chromedp.WaitVisible(`//button[@id="buy"][contains(., "`+tr.T("queue.turn")+`")]`), chromedp.WaitEnabled("#buy", chromedp.ByID))
			s.Clock.Advance(13 * time.Second) // the turn and its grace are over; the page has not heard yet
			within(t, ctx, 15*time.Second, "click, and click again",
				chromedp.Click("#buy", chromedp.ByID),
				chromedp.Sleep(300*time.Millisecond),
				chromedp.Evaluate(`document.getElementById("buy").click()`, nil),
				chromedp.WaitVisible(`//p[@id="queue-status"][contains(., "`+tr.T("queue.missed")+`")]`),
				chromedp.Sleep(600*time.Millisecond),
				chromedp.Evaluate(`document.getElementById("buy").click()`, nil),
				chromedp.Sleep(1500*time.Millisecond),
			)
			var status string
			run(t, ctx, "what the buy says", chromedp.Text("#buy-status", &status, chromedp.ByID))
			if strings.TrimSpace(status) != "" {
				t.Errorf("beside \"%s\" the page says %q; want nothing more", tr.T("queue.missed"), status)
			}
			within(t, ctx, 10*time.Second, "join without the captcha's answer",
				chromedp.WaitEnabled("#buy", chromedp.ByID),
				chromedp.Click("#buy", chromedp.ByID),
			)
			if said := itemText(t, ctx, "buy-status"); said != tr.T("queue.typeCaptcha") {
				t.Errorf("a join without the captcha's answer: the page says %q, want %q", said, tr.T("queue.typeCaptcha"))
			}
		})
	}
}

// A paused sale tells a shopper who never joined that buying and joining wait, not that their place in
// the line is kept (they have none). A wait under a minute is said as such, never "about 0 s".
func TestPausedAndShortWaitWords(t *testing.T) {
	testenv.Long(t)
	s, act, item := queueRigFor(t)
	first := newBrowser(t, s.URL)
	first.register("short_first", passwordOf("short"))
	if r := first.join(item.ID); r.Status != 200 {
		t.Fatalf("join: %d %s", r.Status, r.Body)
	}
	letIn(t, s, item.ID) // the first's turn, which they do not look at: the line waits for it
	ctx := chrome(t)
	registerInBrowser(t, ctx, s.URL, "short_waiter")
	joinHere(t, s, ctx, item.ID)
	for _, lang := range langs {
		tr := i18n.For(lang)
		run(t, ctx, "the waiting page in "+lang, chromedp.Navigate(s.URL+"/lang/"+lang), chromedp.Navigate(s.URL+"/items/"+itoa(item.ID)))
		said := itemText(t, ctx, "queue-status")
		if !strings.Contains(said, tr.T("queue.waitSoon")) || strings.Contains(said, strings.Replace(tr.T("queue.wait"), "%d", "0", 1)) {
			t.Errorf("%s: second in line behind one turn, the page says %q; want %q", lang, said, tr.T("queue.waitSoon"))
		}
	}

	admin := withRole(t, s, "pause_words", models.RoleAdmin)
	expect(t, "pause", admin.call("POST", "/api/admin/activities/"+itoa(act.ID)+"/pause", map[string]any{"reason": "a wrong price"}), 200, "")
	outside := chrome(t)
	registerInBrowser(t, outside, s.URL, "never_joined")
	for _, lang := range langs {
		tr := i18n.For(lang)
		run(t, outside, "the paused item in "+lang, chromedp.Navigate(s.URL+"/lang/"+lang), chromedp.Navigate(s.URL+"/items/"+itoa(item.ID)))
		var said string
		testenv.Eventually(t, 10*time.Second, "the pause said", func() bool {
			run(t, outside, "read", chromedp.Text("#buy-status", &said, chromedp.ByID))
			return strings.TrimSpace(said) != ""
		})
		if strings.TrimSpace(said) != tr.T("queue.pausedOut") {
			t.Errorf("%s: to a shopper not in line the paused sale says %q, want %q", lang, said, tr.T("queue.pausedOut"))
		}
		// In line, the place is kept, and the page says so.
		run(t, ctx, "the waiting page, paused, in "+lang, chromedp.Navigate(s.URL+"/lang/"+lang), chromedp.Navigate(s.URL+"/items/"+itoa(item.ID)))
		testenv.Eventually(t, 10*time.Second, "the pause said in line", func() bool {
			run(t, ctx, "read", chromedp.Text("#buy-status", &said, chromedp.ByID))
			return strings.TrimSpace(said) == tr.T("err.paused")
		})
	}
}
