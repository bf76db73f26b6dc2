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
	"seckill/errs"
	"seckill/i18n"
	"seckill/internal/testenv"
	"seckill/jobs"
	"seckill/models"
	"seckill/stock"
)

// TestUnconfirmedAnswersInABrowser: a shop that waits for a Redis replica (REDIS_WAIT_REPLICAS=1) whose
// master has none answers every buy and join unconfirmed (issue 36), and the item page says so:
//   - a buy's 202 unconfirmed reads "not confirmed yet" while its result is followed, also once the
//     result reads none (what a promoted replica that never had the take answers); when the take is found
//     lost, the page says the purchase did not go through and Buy is usable again;
//   - a join answered unconfirmed says the place is not confirmed yet while the line's document is all
//     the page reads, and the ordinary words (the place) once the shopper's own standing, read from Redis
//     after the draw, finds the place.
func TestUnconfirmedAnswersInABrowser(t *testing.T) {
	testenv.Long(t)
	master, _ := testenv.RedisServer(t, "lonely") // a master no replica acknowledges
	logs := &safeWriter{w: &bytes.Buffer{}}
	// No order consumer and no reconciliation: the test decides what became of the take. No waiting-room
	// job: the test draws the line itself and lets nobody in, so that the shopper waits with a place.
	s := startLive(t, liveOpts{rdb: master, log: newLogger(Config{}, logs),
		only: []string{workerSessions, workerSoldOutFlags, workerBuyLimiter, workerBuyAnswers, workerStops},
		tune: func(c *Config) {
			c.RateLimitIP = false
			c.RedisWaitReplicas = 1
			c.RedisWaitTimeout = 100 * time.Millisecond
		}})
	ctx := context.Background()
	tr := i18n.For("en")
	b := chrome(t)
	registerInBrowser(t, b, s.URL, "unsure_shopper")
	var u models.User
	if err := s.DB.Where("username = ?", "unsure_shopper").Take(&u).Error; err != nil {
		t.Fatal(err)
	}
	// requests counts the access log's lines of a request so far.
	requests := func(method, path string) int {
		return strings.Count(logs.String(), "method="+method+" path="+path+" ")
	}
	// sees waits until the element's text is want, within d.
	sees := func(what, sel, want string, d time.Duration) {
		t.Helper()
		within(t, b, d, what, chromedp.Poll(`document.querySelector(`+jsString(sel)+`).textContent === `+jsString(want), nil))
	}
	textOf := func(sel string) string {
		t.Helper()
		var s string
		run(t, b, "read "+sel, chromedp.Text(sel, &s, chromedp.ByQuery, chromedp.NodeReady))
		return s
	}
	answerTo := func() (string, string) {
		t.Helper()
		var id string
		run(t, b, "the captcha", chromedp.WaitVisible(`#captcha-img[data-captcha-id]`, chromedp.ByQuery),
			chromedp.AttributeValue("#captcha-img", "data-captcha-id", &id, nil, chromedp.ByID))
		answer, err := s.Redis.Get(ctx, captcha.Key(id)).Result()
		if err != nil {
			t.Fatalf("captcha answer: %v", err)
		}
		return id, answer
	}

	// A first-come sale, on now.
	now := s.Clock.Now()
	_, item := testenv.Sale(t, s.DB, 5, now.Add(-time.Minute), now.Add(time.Hour))
	if _, err := s.Srv.Ledger.Preheat(ctx, jobs.DBBooks{DB: s.DB}, item.ID); err != nil {
		t.Fatal(err)
	}
	itemURL := s.URL + "/items/" + itoa(item.ID)
	run(t, b, "open the item", chromedp.Navigate(itemURL), chromedp.WaitEnabled("#buy", chromedp.ByID))
	first, answer := answerTo()
	run(t, b, "buy", chromedp.SendKeys("#captcha-answer", answer, chromedp.ByID), chromedp.Click("#buy", chromedp.ByID))
	sees("the buy's 202 unconfirmed", "#buy-status", tr.T("buy.unconfirmed"), 20*time.Second)

	// A failover to a replica that never had the take: the buyer's mark, order message and unit are not
	// there. The result reads none, which after an unconfirmed buy is not an answer: the page goes on.
	k := stock.ShardKeys(item.ID, stock.HomeShard(u.ID, 1))
	if err := forgetTake(ctx, s, k, u.ID); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Srv.Ledger.ResultOf(ctx, item.ID, u.ID); err != nil || r.Status != stock.ResultNone {
		t.Fatalf("the buyer's result with the take forgotten: %+v %v, want none", r, err)
	}
	resultPath := "/api/items/" + itoa(item.ID) + "/result"
	polled := requests("GET", resultPath)
	testenv.Eventually(t, 20*time.Second, "the page polls the result twice more", func() bool { return requests("GET", resultPath) >= polled+2 })
	var disabled bool
	run(t, b, "the button while the result is followed", chromedp.Evaluate(`document.getElementById("buy").disabled`, &disabled))
	if got := textOf("#buy-status"); got != tr.T("buy.unconfirmed") || !disabled {
		t.Errorf("with the result reading none the page says %q (Buy disabled: %v), want %q and Buy disabled: the take may still be found",
			got, disabled, tr.T("buy.unconfirmed"))
	}

	// Once the take is old enough, the instance that answered it finds it gone and tells the buyer.
	s.Clock.Advance(stock.UnconfirmedGrace + time.Second)
	lost, _, err := s.Srv.Ledger.SettleUnconfirmed(ctx, func(ctx context.Context, orderNo string) (bool, error) {
		_, err := models.OrderByNo(ctx, s.DB, orderNo)
		if errs.Code(err) == errs.NotFound {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil || lost != 1 {
		t.Fatalf("settling the unconfirmed takes: %d lost, %v; want 1", lost, err)
	}
	sees("the lost purchase", "#buy-status", tr.T("buy.lost"), 20*time.Second)
	within(t, b, 20*time.Second, "Buy usable again, with a new captcha", chromedp.WaitEnabled("#buy", chromedp.ByID),
		chromedp.Poll(`document.getElementById("captcha-img").dataset.captchaId !== `+jsString(first), nil))
	_, answer = answerTo()
	run(t, b, "buy again", chromedp.SendKeys("#captcha-answer", answer, chromedp.ByID), chromedp.Click("#buy", chromedp.ByID))
	sees("the second buy's 202 unconfirmed", "#buy-status", tr.T("buy.unconfirmed"), 20*time.Second)

	// A queue sale in its countdown: the join is unconfirmed, and the page says so beside its standing.
	// Made by the server's clock, which the lost take moved on.
	now = s.Clock.Now()
	act, qitem := testenv.Sale(t, s.DB, 3, now.Add(2*time.Minute), now.Add(time.Hour))
	opens := now.Add(-time.Minute)
	if err := s.DB.Model(&act).Updates(map[string]any{"sale_mode": models.SaleQueue, "queue_opens_at": opens}).Error; err != nil {
		t.Fatal(err)
	}
	act.SaleMode, act.QueueOpensAt = models.SaleQueue, &opens
	if _, err := s.Srv.Ledger.Preheat(ctx, jobs.DBBooks{DB: s.DB}, qitem.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.Srv.Line.OpenRoom(ctx, qitem.ID, stock.Window{Opens: *act.QueueOpensAt, Starts: act.StartsAt, Ends: act.EndsAt}); err != nil {
		t.Fatal(err)
	}
	run(t, b, "open the queue item", chromedp.Navigate(s.URL+"/items/"+itoa(qitem.ID)), chromedp.WaitEnabled("#buy", chromedp.ByID))
	_, answer = answerTo()
	run(t, b, "join", chromedp.SendKeys("#captcha-answer", answer, chromedp.ByID), chromedp.Click("#buy", chromedp.ByID))
	sees("the join's unconfirmed note", "#queue-status", tr.T("queue.unconfirmed"), 30*time.Second)
	linePath := "/api/items/" + itoa(qitem.ID) + "/line"
	docs := requests("GET", linePath)
	testenv.Eventually(t, 20*time.Second, "the page polls the line's document twice more", func() bool { return requests("GET", linePath) >= docs+2 })
	if got := textOf("#queue-status"); got != tr.T("queue.unconfirmed") {
		t.Errorf("in the countdown, reading the line's document, the page says %q, want the note %q", got, tr.T("queue.unconfirmed"))
	}

	// The start: the draw places the shopper (first, alone), and nobody is let in yet. The page asks its
	// own standing, read from Redis: the place is there, and the page says it as ever.
	s.Clock.Set(act.StartsAt.Add(time.Second))
	if drawn, err := s.Srv.Line.Draw(ctx, qitem.ID); err != nil || !drawn {
		t.Fatalf("draw: %v %v", drawn, err)
	}
	place := strings.Replace(tr.T("queue.place"), "%d", "1", 1)
	within(t, b, 30*time.Second, "the place, said as ever",
		chromedp.Poll(`document.getElementById("queue-status").textContent.indexOf(`+jsString(place)+`) === 0`, nil))
	got := textOf("#queue-status")
	if strings.Contains(got, tr.T("queue.unconfirmed")) || !strings.Contains(got, strings.Replace(tr.T("queue.left"), "%d", "3", 1)) {
		t.Errorf("with the place read back the page says %q, want %q and the stock left, without the note", got, place)
	}
}

// forgetTake makes Redis forget a buyer's take as a promoted replica that never had it would: no mark,
// no order message, the unit not taken.
func forgetTake(ctx context.Context, s *liveServer, k stock.Keys, userID int64) error {
	if n, err := s.Redis.SRem(ctx, k.Buyers, userID).Result(); err != nil || n != 1 {
		return fmt.Errorf("the buyer's mark: %d removed, %v", n, err)
	}
	if n, err := s.Redis.XTrimMaxLen(ctx, k.Stream, 0).Result(); err != nil || n != 1 {
		return fmt.Errorf("the order message: %d removed, %v", n, err)
	}
	return s.Redis.HIncrBy(ctx, k.Sale, "left", 1).Err()
}
