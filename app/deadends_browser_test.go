package app

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"seckill/captcha"
	"seckill/handlers"
	"seckill/internal/testenv"
)

// TestRegisteringFromAnItemReturnsToIt: a new shopper on an item page follows "Log in to buy", then
// "Create an account", registers, and is back on the item they came for.
func TestRegisteringFromAnItemReturnsToIt(t *testing.T) {
	testenv.Long(t)
	s := startLive(t, liveOpts{})
	now := s.Clock.Now()
	_, item := testenv.Sale(t, s.DB, 5, now.Add(-time.Minute), now.Add(time.Hour))
	ctx := chrome(t)
	var captchaID string
	run(t, ctx, "from the item to the register page",
		chromedp.Navigate(s.URL+"/lang/en"),
		chromedp.Navigate(s.URL+"/items/"+itoa(item.ID)),
		chromedp.WaitVisible("#login-to-buy", chromedp.ByID),
		chromedp.Click("#login-to-buy", chromedp.ByID),
		chromedp.WaitVisible(`//a[contains(., "Create an account")]`),
		chromedp.Click(`//a[contains(., "Create an account")]`),
		chromedp.WaitVisible(`#captcha-img[data-captcha-id]`, chromedp.ByQuery),
		chromedp.AttributeValue("#captcha-img", "data-captcha-id", &captchaID, nil, chromedp.ByID),
	)
	answer, err := s.Redis.Get(context.Background(), captcha.Key(captchaID)).Result()
	if err != nil {
		t.Fatal(err)
	}
	var url string
	run(t, ctx, "register",
		chromedp.SendKeys("#username", "came_for_item", chromedp.ByID),
		chromedp.SendKeys("#password", passwordOf("browser"), chromedp.ByID),
		chromedp.SendKeys("#captcha-answer", answer, chromedp.ByID),
		chromedp.Click(`button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible("#buy-form", chromedp.ByID),
		chromedp.Location(&url),
	)
	if !strings.HasSuffix(url, "/items/"+itoa(item.ID)) {
		t.Errorf("after registering the shopper is at %s, want the item", url)
	}
}

// TestQRLoginFromALoggedOutPhone: a phone that is not logged in scans a computer's login code: it is told
// what it is approving (and shown no code of its own), logs in, is back at the confirmation, picks the
// number the computer shows, confirms, and the computer is logged in.
func TestQRLoginFromALoggedOutPhone(t *testing.T) {
	testenv.Long(t)
	s := startLive(t, liveOpts{})
	newBrowser(t, s.URL).register("phone_person", passwordOf("phone"))
	pc := newBrowser(t, s.URL)
	id := newQR(t, s, pc)
	phone := chrome(t)
	var notice string
	var panels int
	run(t, phone, "the code's address on a logged-out phone",
		chromedp.Navigate(s.URL+"/lang/en"),
		chromedp.Navigate(s.URL+"/m/qr/"+id),
		chromedp.WaitVisible(".phone-approval", chromedp.ByQuery),
		chromedp.Text(".phone-approval", &notice, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll("#qr-panel").length`, &panels),
	)
	if !strings.Contains(notice, "A computer asked to log in") || panels != 0 {
		t.Errorf("the phone's login page says %q and shows %d login codes of its own", notice, panels)
	}
	run(t, phone, "log in, back at the confirmation",
		chromedp.SendKeys("#username", "phone_person", chromedp.ByID),
		chromedp.SendKeys("#password", passwordOf("phone"), chromedp.ByID),
		chromedp.Click(`form[data-account] button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible("#qr-phone .actions button.confirm", chromedp.ByQuery),
	)
	run(t, phone, "pick the computer's number, confirm",
		chromedp.Click(qrChoice(qrNumber(t, pc, id))),
		chromedp.Click("#qr-phone .actions button.confirm", chromedp.ByQuery),
		chromedp.WaitVisible(`//p[contains(@class, "qr-message")][normalize-space(.) != ""]`),
	)
	testenv.Eventually(t, 10*time.Second, "the computer logged in", func() bool {
		pc.call("GET", "/api/qr/login/"+id, nil)
		status, name := pc.me()
		return status == 200 && name == "phone_person"
	})
}

// TestCancelledPaymentOffersANewOne: the payer presses Cancel on the provider's page; the order page
// stops showing that code, says so, and Pay makes a new one.
func TestCancelledPaymentOffersANewOne(t *testing.T) {
	testenv.Long(t)
	s := startLive(t, liveOpts{tune: func(c *Config) { c.PayPollInterval = 200 * time.Millisecond }})
	item, _ := newPaySale(t, s, 3)
	b, o := orderFor(t, s, item, "cancel_payer")
	ctx := chrome(t)
	u, _ := url.Parse(s.URL)
	run(t, ctx, "the shopper's session in the browser",
		chromedp.Navigate(s.URL+"/lang/en"),
		network.SetCookie(handlers.SessionCookie, b.cookie(handlers.SessionCookie)).WithDomain(u.Hostname()).WithPath("/").WithHTTPOnly(true),
	)
	var first, second, said string
	run(t, ctx, "pay",
		chromedp.Navigate(s.URL+"/orders/"+o.OrderNo),
		chromedp.WaitVisible("#pay-start", chromedp.ByID),
		chromedp.Click("#pay-start", chromedp.ByID),
		chromedp.WaitVisible("#pay-qr img[src^='data:image/png']", chromedp.ByQuery),
		chromedp.AttributeValue("#pay-link", "href", &first, nil, chromedp.ByID),
	)
	// The payer, on the phone, presses Cancel on the provider's page.
	if r := b.call("POST", strings.TrimPrefix(first, s.URL)+"/cancel", nil); r.Status != 302 {
		t.Fatalf("Cancel at the provider: %d", r.Status)
	}
	run(t, ctx, "the page offers a new payment",
		chromedp.WaitVisible(`//p[@id="pay-error"][contains(., "cancelled")]`),
		chromedp.Text("#pay-error", &said, chromedp.ByID),
		chromedp.WaitEnabled("#pay-start", chromedp.ByID),
		chromedp.Click("#pay-start", chromedp.ByID),
		chromedp.WaitVisible("#pay-qr img[src^='data:image/png']", chromedp.ByQuery),
		chromedp.AttributeValue("#pay-link", "href", &second, nil, chromedp.ByID),
	)
	if second == first || second == "" {
		t.Errorf("Pay after the cancel gave %q, want a new payment (the cancelled one was %q)", second, first)
	}
}
