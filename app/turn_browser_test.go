package app

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"seckill/captcha"
	"seckill/i18n"
	"seckill/internal/testenv"
	"seckill/models"
)

// watchAlerts is run in the page before its own scripts: it keeps what the page asks of the browser when a
// turn comes (each notification made, each tone, each vibration), and lets the page's calls through.
const watchAlerts = `(function () {
  window.__notes = []; window.__tones = 0; window.__buzz = [];
  var N = window.Notification;
  if (N) {
    var W = function (title, opts) {
      window.__notes.push({ title: title, body: (opts || {}).body, hidden: document.hidden });
      try { return new N(title, opts); } catch (e) { return { close: function () {} }; }
    };
    Object.defineProperty(W, "permission", { get: function () { return N.permission; } });
    W.requestPermission = function (cb) { return N.requestPermission(cb); };
    window.Notification = W;
  }
  var AC = window.AudioContext;
  if (AC) {
    var osc = AC.prototype.createOscillator;
    AC.prototype.createOscillator = function () { window.__tones++; return osc.apply(this, arguments); };
  }
  navigator.vibrate = function (p) { window.__buzz.push(p); return true; };
})();`

// turnTab is a shopper's item page in Chromium, with notifications allowed for the shop and the page's
// alerts watched, that can be sent to the background (another tab in front, the page frozen as a browser
// freezes a background tab: no timer, no request) and brought back.
// within runs the actions with a bound of their own (a wait that cannot end fails in seconds, not at the
// browser's three minutes).
func within(t *testing.T, ctx context.Context, d time.Duration, what string, actions ...chromedp.Action) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	if err := chromedp.Run(c, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

type turnTab struct {
	t     *testing.T
	ctx   context.Context
	other context.Context
	s     *liveServer
	tr    i18n.Tr
}

func openTurnTab(t *testing.T, s *liveServer, username, lang string) *turnTab {
	t.Helper()
	return openTurnTabIn(t, chrome(t), s, username, lang)
}

// openTurnTabIn is openTurnTab in a browser of the caller's (one on a desktop, for its notifications).
func openTurnTabIn(t *testing.T, ctx context.Context, s *liveServer, username, lang string) *turnTab {
	t.Helper()
	run(t, ctx, "watch the alerts", chromedp.ActionFunc(func(c context.Context) error {
		_, err := page.AddScriptToEvaluateOnNewDocument(watchAlerts).Do(c)
		return err
	}))
	registerInBrowser(t, ctx, s.URL, username)
	if lang != "en" {
		run(t, ctx, "speak "+lang, chromedp.Navigate(s.URL+"/lang/"+lang))
	}
	return &turnTab{t: t, ctx: ctx, s: s, tr: i18n.For(lang)}
}

// join opens the item and joins its line with the captcha, then asks to be told when the turn comes.
func (p *turnTab) join(itemID int64) {
	p.t.Helper()
	var captchaID, offer string
	run(p.t, p.ctx, "open the item",
		chromedp.Navigate(p.s.URL+"/items/"+itoa(itemID)),
		chromedp.WaitVisible(`#captcha-img[data-captcha-id]`, chromedp.ByQuery),
		chromedp.WaitEnabled("#buy", chromedp.ByID),
		chromedp.AttributeValue("#captcha-img", "data-captcha-id", &captchaID, nil, chromedp.ByID),
	)
	answer, err := p.s.Redis.Get(context.Background(), captcha.Key(captchaID)).Result()
	if err != nil {
		p.t.Fatalf("captcha answer: %v", err)
	}
	within(p.t, p.ctx, 20*time.Second, "join the line",
		chromedp.SendKeys("#captcha-answer", answer, chromedp.ByID),
		chromedp.Click("#buy", chromedp.ByID),
		chromedp.WaitVisible("#turn-notify", chromedp.ByID),
		chromedp.Text("#turn-notify", &offer, chromedp.ByID),
	)
	if offer != p.tr.T("queue.notifyOffer") {
		p.t.Errorf("in line, the page offers %q, want %q", offer, p.tr.T("queue.notifyOffer"))
	}
	shot(p.t, p.ctx, "turn-offer-"+p.tr.Lang)
	// The person allows the notifications when the browser asks (a headless browser cannot be answered:
	// the test allows them for the shop just before the click that asks).
	within(p.t, p.ctx, 10*time.Second, "ask to be told",
		chromedp.ActionFunc(func(c context.Context) error {
			return cdpbrowser.SetPermission(&cdpbrowser.PermissionDescriptor{Name: "notifications"}, cdpbrowser.PermissionSettingGranted).
				WithOrigin(p.s.URL).Do(cdp.WithExecutor(c, chromedp.FromContext(c).Browser))
		}),
		chromedp.Evaluate(`document.getElementById("turn-notify").click()`, nil),
		chromedp.WaitVisible(`//span[@id="turn-notify-note"][normalize-space(.)!=""]`),
		chromedp.Text("#turn-notify-note", &offer, chromedp.ByID),
	)
	if offer != p.tr.T("queue.notifyOn") {
		p.t.Errorf("with notifications allowed the page says %q, want %q", offer, p.tr.T("queue.notifyOn"))
	}
}

// away sends the page to the background: another tab in front (the page is hidden), and the page's
// requests to the item's API held back, as a browser that runs a background tab's timers once a minute
// holds its polls: the page does not ask its standing until thaw.
func (p *turnTab) away() {
	p.t.Helper()
	other, cancel := chromedp.NewContext(p.ctx)
	p.t.Cleanup(cancel)
	p.other = other
	run(p.t, other, "another tab in front", chromedp.Navigate("about:blank"), chromedp.ActionFunc(func(c context.Context) error {
		return target.ActivateTarget(chromedp.FromContext(other).Target.TargetID).Do(c)
	}))
	if v := p.visibility(); v != "hidden" {
		p.t.Fatalf("with another tab in front the item page is %q, want hidden", v)
	}
	run(p.t, p.ctx, "hold the page's polls", network.Enable(),
		network.SetBlockedURLs().WithURLPatterns([]*network.BlockPattern{{URLPattern: "*://*:*/api/items/*", Block: true}}))
}

// thaw lets the page's polls go again, the page still in the background.
func (p *turnTab) thaw() {
	p.t.Helper()
	run(p.t, p.ctx, "the page polls again", network.SetBlockedURLs().WithURLPatterns([]*network.BlockPattern{}))
}

// back brings the page to the front.
func (p *turnTab) back() {
	p.t.Helper()
	run(p.t, p.ctx, "the page in front again", chromedp.ActionFunc(func(c context.Context) error {
		return target.ActivateTarget(chromedp.FromContext(p.ctx).Target.TargetID).Do(c)
	}))
	testenv.Eventually(p.t, 5*time.Second, "the page to be visible", func() bool { return p.visibility() == "visible" })
}

func (p *turnTab) visibility() string {
	var v string
	within(p.t, p.ctx, 5*time.Second, "visibility", chromedp.Evaluate(`document.visibilityState`, &v))
	return v
}

type notes []struct {
	Title, Body string
	Hidden      bool
}

func (p *turnTab) alerts() (n notes, tones int, buzz int) {
	p.t.Helper()
	run(p.t, p.ctx, "the page's alerts",
		chromedp.Evaluate(`window.__notes`, &n), chromedp.Evaluate(`window.__tones`, &tones), chromedp.Evaluate(`window.__buzz.length`, &buzz))
	return n, tones, buzz
}

func (p *turnTab) title() string {
	var title string
	within(p.t, p.ctx, 5*time.Second, "title", chromedp.Title(&title))
	return title
}

// turnRig is a queue sale of one unit whose turns last ten seconds and wait a minute to be seen (the
// least an operator may set), with the line's own workers running.
func turnRig(t *testing.T) (*liveServer, models.Item) {
	t.Helper()
	s := startLive(t, liveOpts{only: []string{"queue", "sold_out_flags", "preheat", "order_consumer"},
		tune: func(c *Config) { c.QueueOverbook, c.QueueTurn, c.QueueTurnSeen = 1, 10*time.Second, time.Minute }})
	_, item := queueSale(t, s.DB, s, 1)
	return s, item
}

// letIn starts the sale (a minute after queueSale made it) and waits for the line to let its first in.
func letIn(t *testing.T, s *liveServer, itemID int64) time.Time {
	t.Helper()
	start := time.Now().Add(time.Minute + time.Second)
	s.Clock.Set(start)
	testenv.Eventually(t, 10*time.Second, "the first turn", func() bool {
		r, err := s.Srv.Line.RoomOf(context.Background(), itemID)
		return err == nil && r.LetIn == 1
	})
	return start
}

var turnTitle = regexp.MustCompile(`^\(0:\d\d\) `)

// TestTurnAnnouncedToABackgroundPage: a shopper joins and asks to be told; their page goes to the
// background and does not poll there (a browser's background tab runs its timers about once a minute). The
// turn begins while the page sleeps and passes its ten seconds unseen; when the page polls again, its first
// look gives the turn its full length from then: the notification names the item and the seconds left,
// the title counts down, a tone and a vibration go, the button is focused, and the shopper, back on the
// page, buys, 25 seconds after the turn began.
func TestTurnAnnouncedToABackgroundPage(t *testing.T) {
	testenv.Long(t)
	for _, lang := range []string{"en", "zh"} {
		t.Run(lang, func(t *testing.T) {
			s, item := turnRig(t)
			p := openTurnTab(t, s, "turn_"+lang, lang)
			p.join(item.ID)
			p.away()
			start := letIn(t, s, item.ID)
			s.Clock.Set(start.Add(25 * time.Second)) // past the turn's ten seconds, within the minute it waits
			time.Sleep(700 * time.Millisecond)       // the line's steps run meanwhile, and must not end the turn
			p.thaw()
			testenv.Eventually(t, 15*time.Second, "the title to count the turn down", func() bool { return turnTitle.MatchString(p.title()) })
			first := p.title()
			n, tones, buzz := p.alerts()
			body := regexp.MustCompile("^" + strings.Replace(regexp.QuoteMeta(p.tr.T("queue.alertBody")), "%d", "(10|9|8|7)", 1) + "$")
			if title := strings.Replace(p.tr.T("queue.alertTitle"), "%s", item.Name, 1); len(n) != 1 || n[0].Title != title || !body.MatchString(n[0].Body) || !n[0].Hidden {
				t.Errorf("the notifications made: %+v; want one, %q, with the seconds left, made while hidden", n, title)
			}
			if tones < 2 || buzz != 1 {
				t.Errorf("the turn's alerts: %d tones, %d vibrations; want the two-note sound and one vibration", tones, buzz)
			}
			if !strings.Contains(first, ") "+p.tr.T("queue.titleTurn")+" – "+item.Name) {
				t.Errorf("the title in the turn: %q", first)
			}
			time.Sleep(1200 * time.Millisecond)
			if second := p.title(); second == first || !turnTitle.MatchString(second) {
				t.Errorf("the title does not count down: %q, then %q", first, second)
			}
			p.back()
			shot(t, p.ctx, "turn-"+lang)
			var focused, orderNo string
			within(t, p.ctx, 15*time.Second, "buy with the turn",
				chromedp.Evaluate(`document.activeElement && document.activeElement.id`, &focused),
				chromedp.Click("#buy", chromedp.ByID),
				chromedp.WaitVisible("#buy-status .order-no", chromedp.ByQuery),
				chromedp.Text("#buy-status .order-no", &orderNo, chromedp.ByQuery),
			)
			if focused != "buy" {
				t.Errorf("when the turn came the focus was on %q, want the Buy button", focused)
			}
			if !strings.HasPrefix(orderNo, "SK") {
				t.Errorf("the page shows order number %q", orderNo)
			}
			testenv.Eventually(t, 5*time.Second, "the title back", func() bool { return !turnTitle.MatchString(p.title()) })
		})
	}
}

// TestTurnSeenAfterTheBoundHasMovedOn: the page stays asleep in the background past the minute a turn
// waits to be seen; the line ends the turn and lets the next in (another shopper, who joined after the
// start). Back, the page says the turn ran out, in Chinese, and announced nothing.
func TestTurnSeenAfterTheBoundHasMovedOn(t *testing.T) {
	testenv.Long(t)
	s, item := turnRig(t)
	p := openTurnTab(t, s, "turn_zh", "zh")
	p.join(item.ID)
	p.away()
	start := letIn(t, s, item.ID)
	next := newBrowser(t, s.URL)
	next.register("turn_next", passwordOf("turn"))
	if r := next.join(item.ID); r.Status != 200 {
		t.Fatalf("the next shopper joins: %d %s", r.Status, r.Body)
	}
	queue := "/api/items/" + itoa(item.ID) + "/queue"
	if st := next.call("GET", queue, nil).json(t)["state"]; st != "waiting" {
		t.Fatalf("while the first turn waits to be seen, the next shopper is %v, want waiting", st)
	}
	s.Clock.Set(start.Add(time.Minute + 3*time.Second)) // past the wait and its grace
	testenv.Eventually(t, 10*time.Second, "the turn not seen to be missed and the next let in", func() bool {
		return next.call("GET", queue, nil).json(t)["state"] == "your_turn"
	})
	p.thaw()
	p.back()
	missed := p.tr.T("queue.missed")
	if !strings.Contains(missed, "您的购买时间已过") {
		t.Fatalf("the Chinese words for a missed turn: %q", missed)
	}
	var said string
	within(t, p.ctx, 15*time.Second, "the page tells the turn moved on",
		chromedp.WaitVisible(`//p[@id="queue-status"][contains(., "`+missed+`")]`),
		chromedp.Text("#queue-status", &said, chromedp.ByID),
	)
	if n, tones, _ := p.alerts(); len(n) != 0 || tones != 0 {
		t.Errorf("a turn over before the page saw it announced %d notifications and %d tones", len(n), tones)
	}
	if title := p.title(); turnTitle.MatchString(title) {
		t.Errorf("after the turn moved on the title is %q", title)
	}
}
