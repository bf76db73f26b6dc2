package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"seckill/captcha"
	"seckill/internal/testenv"
	"seckill/jobs"
	"seckill/models"
)

// TestRegistrationShowsAWrongCaptchaWithTheFieldsInABrowser: a newcomer types a name with a space and a
// wrong captcha answer; the page shows both mistakes at once, beside their fields, in English and in
// Chinese; the name typed stays, the captcha is a new one with an empty answer, and the corrected form
// makes the account.
func TestRegistrationShowsAWrongCaptchaWithTheFieldsInABrowser(t *testing.T) {
	testenv.Long(t)
	s := startLive(t, liveOpts{noBackground: true})
	ctx := chrome(t)
	for _, c := range []struct{ lang, nameWhy, captchaWhy, home string }{
		{"en", "letters", "wrong", "Flash sales"},
		{"zh", "字母", "错误", "限时秒杀"},
	} {
		var firstID string
		run(t, ctx, c.lang+": the register page",
			chromedp.Navigate(s.URL+"/lang/"+c.lang),
			chromedp.Navigate(s.URL+"/register"),
			chromedp.WaitVisible(`#captcha-img[data-captcha-id]`, chromedp.ByQuery),
			chromedp.AttributeValue("#captcha-img", "data-captcha-id", &firstID, nil, chromedp.ByID),
		)
		var nameErr, captchaErr, typed, answerLeft, secondID string
		run(t, ctx, c.lang+": a bad name and a wrong captcha",
			chromedp.SendKeys("#username", "new shopper", chromedp.ByID),
			chromedp.SendKeys("#password", passwordOf("new_shopper_"+c.lang), chromedp.ByID),
			chromedp.SendKeys("#captcha-answer", "00000000", chromedp.ByID),
			chromedp.Click(`button[type=submit]`, chromedp.ByQuery),
			chromedp.WaitVisible(`//span[@data-error-for="captcha_answer"][normalize-space(.) != ""]`),
			chromedp.Text(`[data-error-for="username"]`, &nameErr, chromedp.ByQuery),
			chromedp.Text(`[data-error-for="captcha_answer"]`, &captchaErr, chromedp.ByQuery),
			chromedp.Value("#username", &typed, chromedp.ByID),
			chromedp.Poll(`document.getElementById("captcha-img").dataset.captchaId !== `+jsString(firstID), nil, chromedp.WithPollingTimeout(5*time.Second)),
			chromedp.AttributeValue("#captcha-img", "data-captcha-id", &secondID, nil, chromedp.ByID),
			chromedp.Value("#captcha-answer", &answerLeft, chromedp.ByID),
		)
		if !strings.Contains(nameErr, c.nameWhy) || !strings.Contains(captchaErr, c.captchaWhy) {
			t.Errorf("%s: beside the name %q, beside the captcha %q: want both mistakes at once", c.lang, nameErr, captchaErr)
		}
		if typed != "new shopper" || answerLeft != "" || secondID == firstID {
			t.Errorf("%s: the name field holds %q (want what was typed), the answer %q (want empty), captcha %s→%s (want a new one)",
				c.lang, typed, answerLeft, firstID, secondID)
		}
		answer, err := s.Redis.Get(context.Background(), captcha.Key(secondID)).Result()
		if err != nil {
			t.Fatal(err)
		}
		run(t, ctx, c.lang+": corrected",
			chromedp.SetValue("#username", "new_shopper_"+c.lang, chromedp.ByID),
			chromedp.SendKeys("#captcha-answer", answer, chromedp.ByID),
			chromedp.Click(`button[type=submit]`, chromedp.ByQuery),
			chromedp.WaitVisible(`//h1[contains(., "`+c.home+`")]`),
		)
		run(t, ctx, "log out", chromedp.Evaluate(`fetch("/api/csrf").then(r => r.json()).then(j => fetch("/api/auth/logout",
			{method: "POST", headers: {"X-CSRF-Token": j.token}}))`, nil))
	}
}

func jsString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// TestAddressBookInABrowser: a shopper adds an address whose phone is 12345 and is told why beside the
// field; with 138-0013-8000 it is saved as +8613800138000 and shown as +86 138 0013 8000; Edit opens the address filled in and saves a
// change; Delete asks first, "Keep it" keeps it, and Delete removes it. In English, then in Chinese.
func TestAddressBookInABrowser(t *testing.T) {
	testenv.Long(t)
	s := startLive(t, liveOpts{noBackground: true})
	newBrowser(t, s.URL).register("book_keeper", passwordOf("book_keeper"))
	ctx := chrome(t)
	loginInBrowser(t, ctx, s.URL, "book_keeper", passwordOf("book_keeper"))
	for _, c := range []struct{ lang, short, ask, keep, empty, cancel string }{
		{"en", "too short for a phone number of +86", "Delete this address?", "Keep it", "No addresses yet", "Cancel"},
		{"zh", "位数太少，不是 +86 的电话号码", "删除这个地址？", "保留", "还没有", "取消"},
	} {
		var phoneErr, shown string
		run(t, ctx, c.lang+": a phone of five digits",
			chromedp.Navigate(s.URL+"/lang/"+c.lang),
			chromedp.Navigate(s.URL+"/account/addresses"),
			chromedp.WaitVisible("#addr-recipient", chromedp.ByID),
			chromedp.SendKeys("#addr-recipient", "Zhang Wei", chromedp.ByID),
			chromedp.SendKeys("#addr-phone", "12345", chromedp.ByID),
			chromedp.SendKeys("#addr-region", "Zhejiang", chromedp.ByID),
			chromedp.SendKeys("#addr-city", "Hangzhou", chromedp.ByID),
			chromedp.SendKeys("#addr-street", "90 Wensan Road", chromedp.ByID),
			chromedp.Click(`form[data-address-form]:not([data-edit]) button[type=submit]`, chromedp.ByQuery),
			chromedp.WaitVisible(`//form[not(@data-edit)]//span[@data-error-for="phone"][normalize-space(.) != ""]`),
			chromedp.Text(`form[data-address-form]:not([data-edit]) [data-error-for="phone"]`, &phoneErr, chromedp.ByQuery),
		)
		if !strings.Contains(phoneErr, c.short) {
			t.Errorf("%s: 12345 is explained as %q, want %q", c.lang, phoneErr, c.short)
		}
		run(t, ctx, c.lang+": a mobile number",
			chromedp.SetValue("#addr-phone", "138-0013-8000", chromedp.ByID),
			chromedp.Click(`form[data-address-form]:not([data-edit]) button[type=submit]`, chromedp.ByQuery),
			chromedp.WaitVisible(".address-book address.delivery", chromedp.ByQuery),
			chromedp.Text(".address-book address.delivery", &shown, chromedp.ByQuery),
		)
		if !strings.Contains(shown, "+86 138 0013 8000") {
			t.Errorf("%s: the saved address shows %q, want the phone +86 138 0013 8000", c.lang, shown)
		}

		var formShown bool
		var city, phone, cancel string
		run(t, ctx, c.lang+": edit",
			chromedp.Click(".address-book [data-edit-address]", chromedp.ByQuery),
			chromedp.WaitVisible(".address-book form[data-edit] input[name=city]", chromedp.ByQuery),
			chromedp.Value(".address-book form[data-edit] input[name=city]", &city, chromedp.ByQuery),
			chromedp.Value(".address-book form[data-edit] input[name=phone]", &phone, chromedp.ByQuery),
			chromedp.Text(".address-book form[data-edit] [data-edit-cancel]", &cancel, chromedp.ByQuery),
		)
		// The phone as it was typed (grouped, no +86), not its stored +8613800138000; leaving the form
		// says what it does (the review found "Keep it", the delete question's answer, there).
		if city != "Hangzhou" || phone != "138 0013 8000" || cancel != c.cancel {
			t.Errorf("%s: the edit form's city is %q, phone %q, its way out %q; want the address's own, 138 0013 8000, and %q",
				c.lang, city, phone, cancel, c.cancel)
		}
		run(t, ctx, c.lang+": save the edit",
			chromedp.SetValue(".address-book form[data-edit] input[name=city]", "Ningbo", chromedp.ByQuery),
			chromedp.Click(".address-book form[data-edit] button[type=submit]", chromedp.ByQuery),
			chromedp.WaitVisible(`//ul[@class="address-book"]//address[contains(., "Ningbo")]`),
			chromedp.Evaluate(`!document.querySelector(".address-book form[data-edit]").hidden`, &formShown),
		)
		if formShown {
			t.Errorf("%s: after saving, the edit form is still open", c.lang)
		}
		run(t, ctx, c.lang+": the phone saved back",
			chromedp.Text(".address-book address.delivery", &shown, chromedp.ByQuery),
		)
		if !strings.Contains(shown, "+86 138 0013 8000") {
			t.Errorf("%s: the edited address shows %q, want the phone +86 138 0013 8000 still", c.lang, shown)
		}

		var ask, keep string
		run(t, ctx, c.lang+": Delete asks",
			chromedp.Click(".address-book [data-delete-address]", chromedp.ByQuery),
			chromedp.WaitVisible(".address-book .ask", chromedp.ByQuery),
			chromedp.Text(".address-book .ask strong", &ask, chromedp.ByQuery),
			chromedp.Text(".address-book .ask [data-delete-no]", &keep, chromedp.ByQuery),
		)
		if ask != c.ask || keep != c.keep {
			t.Errorf("%s: Delete asks %q with %q, want %q and %q", c.lang, ask, keep, c.ask, c.keep)
		}
		run(t, ctx, c.lang+": keep it",
			chromedp.Click(".address-book .ask [data-delete-no]", chromedp.ByQuery),
			chromedp.WaitNotVisible(".address-book .ask", chromedp.ByQuery),
			chromedp.Sleep(300*time.Millisecond),
			chromedp.WaitVisible(`//ul[@class="address-book"]//address[contains(., "Ningbo")]`),
		)
		var book string
		run(t, ctx, c.lang+": delete it",
			chromedp.Click(".address-book [data-delete-address]", chromedp.ByQuery),
			chromedp.WaitVisible(".address-book .ask [data-delete-yes]", chromedp.ByQuery),
			chromedp.Click(".address-book .ask [data-delete-yes]", chromedp.ByQuery),
			chromedp.WaitNotPresent(".address-book", chromedp.ByQuery),
			chromedp.Text(`section[aria-labelledby="book-title"]`, &book, chromedp.ByQuery),
		)
		if !strings.Contains(book, c.empty) {
			t.Errorf("%s: after the delete the book says %q", c.lang, book)
		}
	}
}

// TestOrdersListInABrowser: a shopper with an order cancelled by themself and one cancelled by the
// unpaid timeout, and one awaiting payment, sees each with its picture and date in their own words; the
// filter's tabs change the URL and the list; a cancelled order says why and when, in the list and on its
// page. In English and in Chinese.
func TestOrdersListInABrowser(t *testing.T) {
	testenv.Long(t)
	s := startLive(t, liveOpts{only: []string{"order_consumer"}})
	now := s.Clock.Now()
	var items []models.Item
	for range 3 {
		_, it := testenv.Sale(t, s.DB, 5, now.Add(-time.Minute), now.Add(24*time.Hour))
		if _, err := s.Srv.Ledger.Preheat(context.Background(), jobs.DBBooks{DB: s.DB}, it.ID); err != nil {
			t.Fatal(err)
		}
		items = append(items, it)
	}
	b, mine := bareOrderFor(t, s, items[0], "list_reader")
	me, _ := models.UserByUsername(context.Background(), s.DB, "list_reader")
	take := func(it models.Item, no string) {
		if _, err := s.Srv.Ledger.Take(context.Background(), it.ID, me.ID, issuePath(t, s, it.ID, me.ID), no); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 20*time.Second, "order "+no, func() bool {
			_, err := models.OrderByNo(context.Background(), s.DB, no)
			return err == nil
		})
	}
	take(items[1], "SKlist_late")
	expect(t, "cancel", b.call("POST", "/api/orders/"+mine.OrderNo+"/cancel", nil), 200, "")
	s.Clock.Advance(s.Cfg.PayTimeout + time.Minute)
	if err := s.Srv.UnpaidTimeout.Once(context.Background()); err != nil {
		t.Fatal(err)
	}
	take(items[2], "SKlist_open")

	ctx := chrome(t)
	loginInBrowser(t, ctx, s.URL, "list_reader", passwordOf("list_reader"))
	for _, c := range []struct{ lang, cancelledTab, toPayTab, buyer, unpaid, awaiting, yearMark string }{
		{"en", "Cancelled", "To pay", "You cancelled it", "Not paid in time", "Awaiting payment", "2026"},
		{"zh", "已取消", "待支付", "您已取消", "超时未支付", "待支付", "年"},
	} {
		var n, pictures int
		var date, list string
		run(t, ctx, c.lang+": every order",
			chromedp.Navigate(s.URL+"/lang/"+c.lang),
			chromedp.Navigate(s.URL+"/orders"),
			chromedp.WaitVisible(".orders", chromedp.ByQuery),
			chromedp.Sleep(300*time.Millisecond), // the pictures load, the dates are written in the reader's words
			chromedp.Evaluate(`document.querySelectorAll(".orders > li").length`, &n),
			chromedp.Evaluate(`[...document.querySelectorAll(".orders > li .order-pic img")].filter(i => i.complete && i.naturalWidth > 0 && i.getBoundingClientRect().width > 0).length`, &pictures),
			chromedp.Text(".orders > li .order-date time", &date, chromedp.ByQuery),
			chromedp.Text(".orders", &list, chromedp.ByQuery),
		)
		if n != 3 || pictures != 3 {
			t.Errorf("%s: %d orders with %d pictures shown, want 3 and 3", c.lang, n, pictures)
		}
		if strings.Contains(date, "T") || strings.HasSuffix(date, "Z") || !strings.Contains(date, c.yearMark) {
			t.Errorf("%s: an order's date reads %q", c.lang, date)
		}
		for _, want := range []string{c.buyer, c.unpaid, c.awaiting} {
			if !strings.Contains(list, want) {
				t.Errorf("%s: the list does not say %q: %q", c.lang, want, list)
			}
		}

		var url, filtered string
		run(t, ctx, c.lang+": the Cancelled tab",
			chromedp.Click(`//nav[contains(@class, "order-tabs")]/a[normalize-space(.) = "`+c.cancelledTab+`"]`),
			chromedp.WaitVisible(`nav.order-tabs a.current[href="/orders?status=cancelled"]`, chromedp.ByQuery),
			chromedp.Location(&url),
			chromedp.Evaluate(`document.querySelectorAll(".orders > li").length`, &n),
			chromedp.Text(".orders", &filtered, chromedp.ByQuery),
		)
		if !strings.HasSuffix(url, "/orders?status=cancelled") || n != 2 || strings.Contains(filtered, "SKlist_open") {
			t.Errorf("%s: the Cancelled tab is at %s with %d orders: %q", c.lang, url, n, filtered)
		}
		run(t, ctx, c.lang+": the To pay tab",
			chromedp.Click(`//nav[contains(@class, "order-tabs")]/a[normalize-space(.) = "`+c.toPayTab+`"]`),
			chromedp.WaitVisible(`nav.order-tabs a.current[href="/orders?status=pending_payment"]`, chromedp.ByQuery),
			chromedp.Evaluate(`document.querySelectorAll(".orders > li").length`, &n),
			chromedp.Text(".orders", &filtered, chromedp.ByQuery),
		)
		if n != 1 || !strings.Contains(filtered, "SKlist_open") {
			t.Errorf("%s: the To pay tab shows %d orders: %q", c.lang, n, filtered)
		}

		var why string
		run(t, ctx, c.lang+": the cancelled order's page",
			chromedp.Navigate(s.URL+"/orders/"+mine.OrderNo),
			chromedp.WaitVisible(".order-detail .cancel-why time", chromedp.ByQuery),
			chromedp.Sleep(200*time.Millisecond),
			chromedp.Text(".order-detail .cancel-why", &why, chromedp.ByQuery),
		)
		if !strings.Contains(why, c.buyer) || !strings.Contains(why, c.yearMark) || strings.Contains(why, "Z") {
			t.Errorf("%s: the cancelled order's page says %q, want why and when", c.lang, why)
		}
	}
}

// TestHomeSoldOutInABrowser: on the home page a sold-out item shows a Sold out badge and a View button,
// an item with stock left its View and buy; in English and in Chinese.
func TestHomeSoldOutInABrowser(t *testing.T) {
	testenv.Long(t)
	s := startLive(t, liveOpts{noBackground: true})
	now := s.Clock.Now()
	_, gone := testenv.Sale(t, s.DB, 1, now.Add(-time.Minute), now.Add(time.Hour))
	_, left := testenv.Sale(t, s.DB, 5, now.Add(-time.Minute), now.Add(time.Hour))
	for _, it := range []int64{gone.ID, left.ID} {
		if _, err := s.Srv.Ledger.Preheat(context.Background(), jobs.DBBooks{DB: s.DB}, it); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Srv.Ledger.Take(context.Background(), gone.ID, 4242, issuePath(t, s, gone.ID, 4242), "SKgone"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(chrome(t), 30*time.Second) // a badge that never shows fails in moments
	defer cancel()
	for _, c := range []struct{ lang, soldOut, view, buy string }{
		{"en", "Sold out", "View", "View and buy"},
		{"zh", "已售罄", "查看", "查看并抢购"},
	} {
		var badge, goneButton, leftButton string
		var leftBadges int
		card := func(id int64) string { return `//article[.//a[@href="/items/` + itoa(id) + `"]]` }
		run(t, ctx, c.lang+": the home page",
			chromedp.Navigate(s.URL+"/lang/"+c.lang),
			chromedp.Navigate(s.URL+"/"),
			chromedp.WaitVisible(card(gone.ID)+`//span[contains(@class, "sold-out-badge")]`),
			chromedp.Text(card(gone.ID)+`//span[contains(@class, "sold-out-badge")]`, &badge),
			chromedp.Text(card(gone.ID)+`//a[contains(@class, "btn")]`, &goneButton),
			chromedp.Text(card(left.ID)+`//a[contains(@class, "btn")]`, &leftButton),
			chromedp.Evaluate(`document.querySelectorAll('article .sold-out-badge').length`, &leftBadges),
		)
		if badge != c.soldOut || goneButton != c.view || leftButton != c.buy || leftBadges != 1 {
			t.Errorf("%s: the sold-out item says %q with %q; the other %q; %d badges (want %q, %q, %q, 1)",
				c.lang, badge, goneButton, leftButton, leftBadges, c.soldOut, c.view, c.buy)
		}
	}
}

// TestLoginOnAPhoneInABrowser: the login page on a phone's screen (375 px) shows the password form and
// no QR code, and asks the server for none; a phone's browser (its User-Agent) gets no QR part at all; a
// computer's screen shows the code. In English and in Chinese.
func TestLoginOnAPhoneInABrowser(t *testing.T) {
	testenv.Long(t)
	s := startLive(t, liveOpts{noBackground: true})
	ctx := chrome(t)
	for _, c := range []struct{ lang, password, phone string }{
		{"en", "With your password", "With your phone"},
		{"zh", "密码登录", "扫码登录"},
	} {
		var text string
		var asked bool
		run(t, ctx, c.lang+": a phone's screen",
			chromedp.EmulateViewport(375, 800),
			chromedp.Navigate(s.URL+"/lang/"+c.lang),
			chromedp.Navigate(s.URL+"/login"),
			chromedp.WaitVisible("#password", chromedp.ByID),
			chromedp.Sleep(500*time.Millisecond),
			chromedp.Text("main", &text, chromedp.ByQuery),
			chromedp.Evaluate(`!!document.querySelector("#qr-panel img").getAttribute("src")`, &asked),
		)
		if !strings.Contains(text, c.password) || strings.Contains(text, c.phone) || asked {
			t.Errorf("%s: at 375 px the login page reads %q (a QR code asked for: %v), want the password form alone", c.lang, text, asked)
		}
		var present bool
		run(t, ctx, c.lang+": a phone's browser",
			emulation.SetUserAgentOverride("Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36"),
			chromedp.EmulateViewport(412, 915),
			chromedp.Navigate(s.URL+"/login"),
			chromedp.WaitVisible("#password", chromedp.ByID),
			chromedp.Text("main", &text, chromedp.ByQuery),
			chromedp.Evaluate(`!!document.getElementById("qr-panel")`, &present),
		)
		if !strings.Contains(text, c.password) || strings.Contains(text, c.phone) || present {
			t.Errorf("%s: a phone's browser reads %q (QR panel present: %v)", c.lang, text, present)
		}
		run(t, ctx, c.lang+": a computer",
			emulation.SetUserAgentOverride("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36"),
			chromedp.EmulateViewport(1280, 900),
			chromedp.Navigate(s.URL+"/login"),
			chromedp.WaitVisible("#qr-panel img[src^='data:image/png']", chromedp.ByQuery),
			chromedp.Text("main", &text, chromedp.ByQuery),
		)
		if !strings.Contains(text, c.phone) {
			t.Errorf("%s: a computer's login page reads %q, want the QR code's part", c.lang, text)
		}
	}
}
