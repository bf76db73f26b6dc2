package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"seckill/captcha"
	"seckill/internal/testenv"
	"seckill/jobs"
	"seckill/models"
)

// waitingRoom makes an approved queue sale of one item whose room is open and whose sale starts in
// startsIn, loaded into Redis as the preheat job would.
func waitingRoom(t *testing.T, s *liveServer, stockTotal int64, startsIn time.Duration) (models.Activity, models.Item) {
	t.Helper()
	now := s.Clock.Now()
	act, item := testenv.Sale(t, s.DB, stockTotal, now.Add(startsIn), now.Add(startsIn+time.Hour))
	opens := now.Add(-time.Minute)
	if err := s.DB.Model(&act).Updates(map[string]any{"sale_mode": models.SaleQueue, "queue_opens_at": opens}).Error; err != nil {
		t.Fatal(err)
	}
	act.SaleMode, act.QueueOpensAt = models.SaleQueue, &opens
	if _, err := s.Srv.Ledger.Preheat(context.Background(), jobs.DBBooks{DB: s.DB}, item.ID); err != nil {
		t.Fatal(err)
	}
	return act, item
}

// signIn logs in on the login page as username, in whatever language the browser reads, and waits for
// the header to name the account.
func signIn(t *testing.T, ctx context.Context, base, username string) {
	t.Helper()
	loginInBrowser(t, ctx, base, username, passwordOf(username))
}

// joinInBrowser opens the item page and joins its line with the captcha; the page then says the place.
func joinInBrowser(t *testing.T, ctx context.Context, s *liveServer, itemID int64) {
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
	run(t, ctx, "join the line",
		chromedp.SendKeys("#captcha-answer", answer, chromedp.ByID),
		chromedp.Click("#buy", chromedp.ByID),
		chromedp.WaitVisible(`#queue-status:not([hidden])`, chromedp.ByQuery),
	)
}

// TestAppealInABrowser: a shopper waiting in a line finds "Something wrong? Ask us to look" under their
// place, asks; an admin finds the appeal from the dashboard and answers it; the shopper reads the answer
// on the item page. In English and in Chinese.
func TestAppealInABrowser(t *testing.T) {
	testenv.Long(t)
	words := map[string]struct{ ask, waiting, link, answered string }{
		"en": {"Something wrong? Ask us to look", "A person will look", "Appeals to answer", "Our answer:"},
		"zh": {"遇到问题？请我们查看", "工作人员会查看", "待答复的申诉", "我们的答复："},
	}
	for _, lang := range []string{"en", "zh"} {
		t.Run(lang, func(t *testing.T) {
			w := words[lang]
			s := startLive(t, liveOpts{})
			_, item := waitingRoom(t, s, 5, 10*time.Minute)
			shopper, boss := chrome(t), chrome(t)
			name := "appealer_" + lang
			registerInBrowser(t, shopper, s.URL, name)
			withRole(t, s, "appeal_boss_"+lang, models.RoleAdmin)
			signIn(t, boss, s.URL, "appeal_boss_"+lang)
			if lang == "zh" {
				run(t, shopper, "Chinese", chromedp.Navigate(s.URL+"/lang/zh"))
				run(t, boss, "Chinese", chromedp.Navigate(s.URL+"/lang/zh"))
			}

			joinInBrowser(t, shopper, s, item.ID)
			message := "My place looks wrong (" + lang + "): I joined as soon as the room opened."
			var summary, waiting string
			run(t, shopper, "ask us to look",
				chromedp.WaitVisible("#appeal-ask summary", chromedp.ByQuery),
				chromedp.Text("#appeal-ask summary", &summary, chromedp.ByQuery),
				chromedp.Click("#appeal-ask summary", chromedp.ByQuery),
				chromedp.WaitVisible("#appeal-message", chromedp.ByID),
				chromedp.SendKeys("#appeal-message", message, chromedp.ByID),
				chromedp.Click("#appeal-send", chromedp.ByID),
				chromedp.WaitVisible("#appeal-state", chromedp.ByID),
				chromedp.Text("#appeal-state", &waiting, chromedp.ByID),
			)
			if summary != w.ask || !strings.Contains(waiting, w.waiting) || !strings.Contains(waiting, message) {
				t.Errorf("the appeal on the page: %q, then %q", summary, waiting)
			}
			var askHidden bool
			run(t, shopper, "the ask is gone while the appeal waits",
				chromedp.Evaluate(`document.getElementById("appeal-ask").hidden`, &askHidden))
			if !askHidden {
				t.Error("the page offers a second appeal while one waits for its answer")
			}
			if lang == "zh" {
				shot(t, shopper, "appeal-waiting-zh")
			}

			var link, got string
			answer := "We looked (" + lang + "): your place is the draw's, and it stands."
			run(t, boss, "the dashboard's link to the appeals",
				chromedp.Navigate(s.URL+"/admin"),
				chromedp.WaitVisible("#appeals-link", chromedp.ByID),
				chromedp.Text("#appeals-link", &link, chromedp.ByID),
				chromedp.Click("#appeals-link", chromedp.ByID),
				chromedp.WaitVisible(`//article[contains(., "`+message+`")]`),
				chromedp.Text(`//article[contains(., "`+message+`")]`, &got),
			)
			if !strings.Contains(link, w.link) || !strings.Contains(link, "1") || !strings.Contains(got, name) {
				t.Errorf("the dashboard's link %q; the appeal %q (want its author %s)", link, got, name)
			}
			if lang == "en" {
				shot(t, boss, "admin-appeals-en")
			}
			run(t, boss, "answer",
				chromedp.SendKeys(`//article[contains(., "`+message+`")]//textarea`, answer),
				chromedp.Click(`//article[contains(., "`+message+`")]//button[@type="submit"]`),
				chromedp.WaitNotPresent(`//article[contains(., "`+message+`")]`),
				chromedp.Navigate(s.URL+"/admin/appeals?state=answered"),
				chromedp.WaitVisible(`//article[contains(., "`+answer+`")]`),
			)

			var said string
			run(t, shopper, "the answer on the item page",
				chromedp.Reload(),
				chromedp.WaitVisible("#appeal-answer", chromedp.ByID),
				chromedp.Text("#appeal-answer", &said, chromedp.ByID),
			)
			if !strings.Contains(said, w.answered) || !strings.Contains(said, answer) {
				t.Errorf("the page says %q; want the answer %q", said, answer)
			}
			if lang == "en" {
				shot(t, shopper, "appeal-answered-en")
			}

			// On another device the page does not ask for the appeal by itself, but shows the answer when told to.
			other := chrome(t)
			loginInBrowser(t, other, s.URL, name, passwordOf("browser")) // registerInBrowser's password
			var elsewhere bool
			run(t, other, "the item page on another device",
				chromedp.Navigate(s.URL+"/items/"+itoa(item.ID)),
				chromedp.WaitVisible("#appeal-check", chromedp.ByID),
				chromedp.Evaluate(`document.getElementById("appeal-answer").hidden`, &elsewhere),
				chromedp.Click("#appeal-check", chromedp.ByID),
				chromedp.WaitVisible("#appeal-answer", chromedp.ByID),
				chromedp.Text("#appeal-answer", &said, chromedp.ByID),
			)
			if !elsewhere || !strings.Contains(said, answer) {
				t.Errorf("on another device: the answer shown before asking %v; after asking %q, want %q", !elsewhere, said, answer)
			}
		})
	}
}
