package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"seckill/captcha"
	"seckill/internal/testenv"
	"seckill/models"
)

// TestNotEligibleAndTheReportInABrowser: on a sale for accounts made before its announcement, a shopper
// who registered later reads the rule before joining and, trying, is told why and since when; once the
// sale is over anyone reads its fairness report, the refusal counted, in English and in Chinese.
func TestNotEligibleAndTheReportInABrowser(t *testing.T) {
	testenv.Long(t)
	for _, lang := range []string{"en", "zh"} {
		t.Run(lang, func(t *testing.T) {
			s := startLive(t, liveOpts{})
			ctx := context.Background()
			early := newBrowser(t, s.URL)
			earlyID := early.register("early_"+lang, passwordOf("early"))
			act, item := queueSale(t, s.DB, s, 5)
			announced := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
			if err := s.DB.Model(&act).Updates(map[string]any{"rule_accounts_before_approval": true, "rule_one_per_address": false,
				"eligible_through": earlyID, "reviewed_at": announced}).Error; err != nil {
				t.Fatal(err)
			}
			testenv.Eventually(t, 5*time.Second, "the catalog to show the rule", func() bool {
				return newBrowser(t, s.URL).call("GET", "/api/activities/"+itoa(act.ID), nil).json(t)["rules"].(map[string]any)["accounts_before_approval"] == true
			})
			expect(t, "an account from before the announcement joins", early.join(item.ID), 200, "")

			cdp := chrome(t)
			registerInBrowser(t, cdp, s.URL, "latecomer_"+lang)
			if lang == "zh" {
				run(t, cdp, "Chinese", chromedp.Navigate(s.URL+"/lang/zh"))
			}
			words := map[string][3]string{ // the rule, the refusal, the report's line for it
				"en": {"Only accounts made before this sale was announced", "only for accounts made before it was announced, at 17:00 Beijing time (UTC+08:00), Fri 20 Nov 2026",
					"Accounts made after the announcement: 1"},
				"zh": {"仅限活动公布前注册的账号参加", "本次活动仅限 2026年11月20日 17:00（北京时间） 活动公布前注册的账号参加", "公布后注册的账号：1"},
			}[lang]
			var rules, captchaID, said string
			run(t, cdp, "the item page",
				chromedp.Navigate(s.URL+"/items/"+itoa(item.ID)),
				chromedp.WaitVisible("#sale-rules", chromedp.ByID),
				chromedp.Text("#sale-rules", &rules, chromedp.ByID),
				chromedp.WaitVisible(`#captcha-img[data-captcha-id]`, chromedp.ByQuery),
				chromedp.WaitEnabled("#buy", chromedp.ByID),
				chromedp.AttributeValue("#captcha-img", "data-captcha-id", &captchaID, nil, chromedp.ByID),
			)
			if !strings.Contains(rules, words[0]) {
				t.Errorf("the rules before joining say %q; want %q", rules, words[0])
			}
			answer, err := s.Redis.Get(ctx, captcha.Key(captchaID)).Result()
			if err != nil {
				t.Fatal(err)
			}
			run(t, cdp, "join, refused",
				chromedp.SendKeys("#captcha-answer", answer, chromedp.ByID),
				chromedp.Click("#buy", chromedp.ByID),
				chromedp.WaitVisible(`//p[@id="buy-status"][string-length(normalize-space(.)) > 0]`),
				chromedp.Text("#buy-status", &said, chromedp.ByID),
			)
			if !strings.Contains(said, words[1]) {
				t.Errorf("the refusal says %q; want %q", said, words[1])
			}
			shot(t, cdp, "not-eligible-"+lang)

			// The sale is over: its report is anyone's.
			if err := s.DB.Model(&models.Activity{}).Where("id = ?", act.ID).Update("ends_at", time.Now().Add(-time.Minute)).Error; err != nil {
				t.Fatal(err)
			}
			var refused, entrants, flagged string
			run(t, cdp, "the report page",
				chromedp.Navigate(s.URL+"/activities/"+itoa(act.ID)+"/report"),
				chromedp.WaitVisible(`[data-figure="refused"]`, chromedp.ByQuery),
				chromedp.Text(`[data-figure="refused"]`, &refused, chromedp.ByQuery),
				chromedp.Text(`[data-figure="entrants"]`, &entrants, chromedp.ByQuery),
				chromedp.Text(`[data-figure="flagged"]`, &flagged, chromedp.ByQuery),
			)
			if !strings.Contains(refused, words[2]) || strings.TrimSpace(entrants) != "1" || strings.TrimSpace(flagged) != "0" {
				t.Errorf("the report says refused %q, entrants %q, flagged %q; want %q, 1 and 0", refused, entrants, flagged, words[2])
			}
			shot(t, cdp, "report-"+lang)
		})
	}
}
