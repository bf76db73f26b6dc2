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

// TestJoiningWithAnAddressInABrowser: on a sale of one entrant per address the item page says who may
// take part, asks for a delivery address (or to add one), refuses in words an address another entrant
// gave, and lets the shopper in with one of their own, in English and in Chinese.
func TestJoiningWithAnAddressInABrowser(t *testing.T) {
	testenv.Long(t)
	for _, lang := range []string{"en", "zh"} {
		t.Run(lang, func(t *testing.T) {
			s := startLive(t, liveOpts{})
			ctx := context.Background()
			act, item := queueSale(t, s.DB, s, 5)
			if err := s.DB.Model(&act).Update("rule_one_per_address", true).Error; err != nil {
				t.Fatal(err)
			}
			first := newBrowser(t, s.URL)
			first.register("first_at_home_"+lang, passwordOf("first"))
			home := first.addAddress("+86 138 0013 8000", "Zhejiang", "Hangzhou", "No. 18, Wensan Road, Flat 3-201")
			id, answer := first.captcha()
			expect(t, "the first entrant", first.joinFrom(item.ID, home, id, answer), 200, "")

			cdp := chrome(t)
			username := "page_entrant_" + lang
			registerInBrowser(t, cdp, s.URL, username)
			if lang == "zh" {
				run(t, cdp, "Chinese", chromedp.Navigate(s.URL+"/lang/zh"))
			}
			u, err := models.UserByUsername(ctx, s.DB, username)
			if err != nil {
				t.Fatal(err)
			}
			words := map[string][3]string{ // the rule, no address yet, the refusal
				"en": {"One entry per delivery address", "Add a delivery address", "already entered this sale"},
				"zh": {"每个收货地址", "请先添加收货地址", "已参加过本次活动"},
			}[lang]
			var rules, none string
			run(t, cdp, "the item page before an address",
				chromedp.Navigate(s.URL+"/items/"+itoa(item.ID)),
				chromedp.WaitVisible("#sale-rules", chromedp.ByID),
				chromedp.Text("#sale-rules", &rules, chromedp.ByID),
				chromedp.WaitVisible("#no-address", chromedp.ByID),
				chromedp.Text("#no-address", &none, chromedp.ByID),
			)
			if !strings.Contains(rules, words[0]) || !strings.Contains(none, words[1]) {
				t.Errorf("the page says %q and %q; want the rule and the ask for an address", rules, none)
			}
			// The same place as the first entrant's, spelled otherwise, then a place of the shopper's own.
			if _, err := models.AddAddress(ctx, s.DB, u.ID, "", models.Delivery{Recipient: "Wang", Phone: "13900139000", Region: "ZHEJIANG",
				City: "hangzhou", Street: "no 18 wensan road flat 3 201", Postcode: "310012"}); err != nil {
				t.Fatal(err)
			}
			say := joinInPage(t, cdp, s, item.ID, "")
			if !strings.Contains(say, words[2]) {
				t.Errorf("joining with the first entrant's place, the page says %q; want %q", say, words[2])
			}
			own, err := models.AddAddress(ctx, s.DB, u.ID, "", models.Delivery{Recipient: "Wang", Phone: "13900139000", Region: "Jiangsu",
				City: "Nanjing", Street: "1 Zhongshan Road", Postcode: "210000"})
			if err != nil {
				t.Fatal(err)
			}
			inLine := joinInPage(t, cdp, s, item.ID, itoa(own.ID))
			var refused string
			run(t, cdp, "read the page", chromedp.Text("#buy-status", &refused, chromedp.ByID))
			if inLine == "" || strings.TrimSpace(refused) != "" {
				t.Errorf("joining with an address of one's own: the line says %q, the page %q", inLine, refused)
			}
			if n, err := s.Redis.Exists(ctx, "sk:{act:"+itoa(act.ID)+"}:claims").Result(); err != nil || n != 1 {
				t.Errorf("the sale's claims: %d, %v", n, err)
			}
			shot(t, cdp, "join-with-address-"+lang)
		})
	}
}

// joinInPage reloads the item page, chooses the address (the first offered when addressID is ""),
// answers the captcha and joins: it answers what the page then says (the status of the line once in it).
func joinInPage(t *testing.T, cdp context.Context, s *liveServer, itemID int64, addressID string) string {
	t.Helper()
	var captchaID string
	run(t, cdp, "open the item page",
		chromedp.Navigate(s.URL+"/items/"+itoa(itemID)),
		chromedp.WaitReady(`#join-address option`, chromedp.ByQuery),
		chromedp.WaitVisible(`#captcha-img[data-captcha-id]`, chromedp.ByQuery),
		chromedp.WaitEnabled("#buy", chromedp.ByID),
		chromedp.AttributeValue("#captcha-img", "data-captcha-id", &captchaID, nil, chromedp.ByID),
	)
	if addressID != "" {
		run(t, cdp, "choose the address", chromedp.SetValue("#join-address", addressID, chromedp.ByID))
	}
	answer, err := s.Redis.Get(context.Background(), captcha.Key(captchaID)).Result()
	if err != nil {
		t.Fatal(err)
	}
	var said string
	if addressID == "" {
		run(t, cdp, "join, refused",
			chromedp.SendKeys("#captcha-answer", answer, chromedp.ByID),
			chromedp.Click("#buy", chromedp.ByID),
			chromedp.WaitVisible(`//p[@id="buy-status"][string-length(normalize-space(.)) > 0]`),
			chromedp.Text("#buy-status", &said, chromedp.ByID),
		)
		return said
	}
	run(t, cdp, "join",
		chromedp.SendKeys("#captcha-answer", answer, chromedp.ByID),
		chromedp.Click("#buy", chromedp.ByID),
		chromedp.WaitVisible(`#queue-status:not([hidden])`, chromedp.ByQuery),
		chromedp.Sleep(200*time.Millisecond),
		chromedp.Text("#queue-status", &said, chromedp.ByID),
	)
	return said
}

// TestStaffAreToldInABrowser: a merchant opening an item page is told staff do not take part, and is
// offered neither the line nor Buy.
func TestStaffAreToldInABrowser(t *testing.T) {
	testenv.Long(t)
	s := startLive(t, liveOpts{})
	_, item := queueSale(t, s.DB, s, 5)
	withRole(t, s, "staff_viewer", models.RoleMerchant)
	cdp := chrome(t)
	loginInBrowser(t, cdp, s.URL, "staff_viewer", passwordOf("staff_viewer"))
	var note string
	var formHidden bool
	run(t, cdp, "the item page",
		chromedp.Navigate(s.URL+"/items/"+itoa(item.ID)),
		chromedp.WaitVisible("#staff-note", chromedp.ByID),
		chromedp.Text("#staff-note", &note, chromedp.ByID),
		chromedp.Evaluate(`document.getElementById("buy-form").hidden`, &formHidden),
	)
	if !strings.Contains(note, "Merchants and admins") || !formHidden {
		t.Errorf("the staff note %q, the form hidden %v", note, formHidden)
	}
}
