package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"seckill/internal/testenv"
	"seckill/models"
)

// figure is the XPath of an item's cell of a figure in the dashboards' live fairness table.
func figure(name string, itemID int64) string {
	return `//section[@id="fairness-live"]//tr[@data-figure="` + name + `"]/td[@data-item="` + itoa(itemID) + `"]`
}

// TestFairnessFiguresLiveInABrowser: the merchant's console and the admin's dashboard show the fairness
// report's figures of an approved queue sale, and they change as the line does: a shopper joins, a
// staff account is refused, and both pages show it within seconds, without a reload. In English and in
// Chinese.
func TestFairnessFiguresLiveInABrowser(t *testing.T) {
	testenv.Long(t)
	words := map[string][2]string{"en": {"Fairness, live", "Entrants in the line"}, "zh": {"实时公平性数据", "排队人数"}}
	for _, lang := range []string{"en", "zh"} {
		t.Run(lang, func(t *testing.T) {
			s := startLive(t, liveOpts{})
			act, item := waitingRoom(t, s, 5, 10*time.Minute)
			shop := "fair_shop_" + lang
			withRole(t, s, shop, models.RoleMerchant)
			boss := withRole(t, s, "fair_boss_"+lang, models.RoleAdmin)
			if err := s.DB.Model(&act).Updates(map[string]any{"merchant_id": userID(t, s, shop), "name": "Night market " + lang}).Error; err != nil {
				t.Fatal(err)
			}
			_, firstCome := testenv.Sale(t, s.DB, 5, s.Clock.Now().Add(time.Minute), s.Clock.Now().Add(time.Hour))

			merchant, admin := chrome(t), chrome(t)
			signIn(t, merchant, s.URL, shop)
			signIn(t, admin, s.URL, "fair_boss_"+lang)
			if lang == "zh" {
				run(t, merchant, "Chinese", chromedp.Navigate(s.URL+"/lang/zh"))
				run(t, admin, "Chinese", chromedp.Navigate(s.URL+"/lang/zh"))
			}
			var title, rows string
			for who, page := range map[context.Context]string{merchant: "/merchant", admin: "/admin"} {
				run(t, who, "the figures before anyone joins on "+page,
					chromedp.Navigate(s.URL+page),
					chromedp.WaitVisible("#fairness-live", chromedp.ByID),
					chromedp.WaitVisible(figure("entrants", item.ID)+`[normalize-space(.)="0"]`),
					chromedp.Text("#fairness-title", &title, chromedp.ByID),
					chromedp.Text("#fairness-live tbody", &rows, chromedp.ByQuery),
				)
				if title != words[lang][0] || !strings.Contains(rows, words[lang][1]) {
					t.Errorf("%s says %q and %q; want %q", page, title, rows, words[lang])
				}
			}
			var sections int
			run(t, admin, "only the queue sale", chromedp.Evaluate(`document.querySelectorAll("#fairness-live [data-report]").length`, &sections))
			if sections != 1 {
				t.Errorf("the admin's dashboard shows %d sales' figures; want the queue sale's only (not item %d's first-come sale)", sections, firstCome.ID)
			}

			// The line moves: a shopper joins, a staff account is refused.
			shopper := newBrowser(t, s.URL)
			shopper.register("fair_entrant_"+lang, passwordOf("fair_entrant"))
			expect(t, "a shopper joining", shopper.join(item.ID), 200, "")
			expect(t, "staff joining", boss.join(item.ID), 403, "staff")
			for who, page := range map[context.Context]string{merchant: "/merchant", admin: "/admin"} {
				run(t, who, "the figures change on "+page+" without a reload",
					chromedp.WaitVisible(figure("entrants", item.ID)+`[normalize-space(.)="1"]`),
					chromedp.WaitVisible(figure("refused.staff", item.ID)+`[normalize-space(.)="1"]`),
				)
			}
			if lang == "zh" {
				shot(t, admin, "admin-fairness-zh")
			} else {
				shot(t, merchant, "merchant-fairness-en")
			}
		})
	}
}
