package app

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"seckill/i18n"
	"seckill/internal/testenv"
	"seckill/jobs"
	"seckill/models"
)

// A registration with bad fields and a wrong captcha answers them all at once, the captcha among them,
// in the reader's language; the captcha is used up all the same. One whose fields are good and whose
// captcha is wrong still answers bad_captcha; a right captcha with bad fields is used up too.
func TestRegistrationSaysAWrongCaptchaWithTheFields(t *testing.T) {
	s := startLive(t, liveOpts{noBackground: true})
	for _, c := range []struct{ lang, captchaWhy, nameWhy string }{
		{"en", "wrong", "letters"},
		{"zh", "错误", "字母"},
	} {
		t.Run(c.lang, func(t *testing.T) {
			b := newBrowser(t, s.URL)
			b.setCookie("lang", c.lang)
			body := b.registration("no spaces allowed", "short")
			right := body["captcha_answer"]
			body["captcha_answer"] = right + "1"
			r := b.call("POST", "/api/auth/register", body)
			expect(t, "bad fields and a wrong captcha", r, 400, "bad_request")
			fields, _ := r.json(t)["fields"].(map[string]any)
			for field, want := range map[string]string{"username": c.nameWhy, "password": "", "captcha_answer": c.captchaWhy} {
				if why, _ := fields[field].(string); why == "" || !strings.Contains(why, want) {
					t.Errorf("fields.%s = %q, want a reason with %q (all: %v)", field, why, want, fields)
				}
			}
			// The captcha was used: its right answer, with good fields, is refused now.
			body["username"], body["password"], body["captcha_answer"] = "captcha_"+c.lang, passwordOf("captcha_"+c.lang), right
			body["altcha"] = b.altcha("purpose=register")
			expect(t, "the used captcha again", b.call("POST", "/api/auth/register", body), 400, "bad_captcha")

			// Good fields, wrong captcha: bad_captcha, as the contract says.
			body = b.registration("captcha_"+c.lang, passwordOf("captcha_"+c.lang))
			body["captcha_answer"] += "1"
			expect(t, "good fields, wrong captcha", b.call("POST", "/api/auth/register", body), 400, "bad_captcha")

			// A right captcha with a bad field: the field alone, and neither the captcha nor the proof of
			// work is used up: the person fixes the name and sends the same form again.
			body = b.registration("bad name!", passwordOf("captcha_"+c.lang))
			r = b.call("POST", "/api/auth/register", body)
			expect(t, "a right captcha, a bad name", r, 400, "bad_request")
			if fields, _ := r.json(t)["fields"].(map[string]any); fields["username"] == nil || fields["captcha_answer"] != nil || fields["password"] != nil {
				t.Errorf("a right captcha and a bad name: fields %v", fields)
			}
			body["username"] = "captcha_" + c.lang
			if r := b.call("POST", "/api/auth/register", body); r.Status != 201 {
				t.Errorf("the name fixed, the same captcha and proof: %d %s", r.Status, r.Body)
			}
			expect(t, "that captcha once more", b.call("POST", "/api/auth/register", body), 400, "bad_pow")
		})
	}
}

// Phone numbers are checked by the rules of the country they name, a number without a country code
// being one of PHONE_REGION's (CN): 12345 is refused with the reason, in the reader's language, and the
// spellings of one number are stored as one E.164 number, on adding and on editing.
func TestAddressPhonesByTheirCountrysRules(t *testing.T) {
	s := startLive(t, liveOpts{noBackground: true})
	b := newBrowser(t, s.URL)
	b.register("phone_rules", passwordOf("phone_rules"))
	addr := func(phone string) map[string]any {
		return map[string]any{"recipient": "张伟", "phone": phone, "region": "浙江省", "city": "杭州市", "street": "文三路 90 号", "postcode": ""}
	}
	for _, c := range []struct{ lang, phone, want string }{
		{"en", "12345", "too short for a phone number of +86"},
		{"zh", "12345", "位数太少，不是 +86 的电话号码"},
		{"en", "+86 100 0000 0000", "not a phone number of +86"},
		{"en", "138 0013 8000 0000", "too long"},
		{"en", "call me", "must be a phone number"},
	} {
		b.setCookie("lang", c.lang)
		r := b.call("POST", "/api/addresses", addr(c.phone))
		expect(t, c.phone, r, 400, "bad_request")
		if why, _ := r.json(t)["fields"].(map[string]any)["phone"].(string); !strings.Contains(why, c.want) {
			t.Errorf("%s in %s: the phone's reason is %q, want %q", c.phone, c.lang, why, c.want)
		}
	}
	var ids []int64
	for _, p := range []string{"+86 138 0013 8000", "13800138000"} {
		r := b.call("POST", "/api/addresses", addr(p))
		if r.Status != 201 || r.json(t)["phone"] != "+8613800138000" {
			t.Fatalf("adding %q: %d %s, want the phone +8613800138000", p, r.Status, r.Body)
		}
		ids = append(ids, int64(r.json(t)["id"].(float64)))
	}
	path := "/api/addresses/" + strconv.FormatInt(ids[0], 10)
	expect(t, "an edit with a bad phone", b.call("PUT", path, addr("12345")), 400, "bad_request")
	if r := b.call("PUT", path, addr("+1 (650) 253-0000")); r.Status != 200 || r.json(t)["phone"] != "+16502530000" {
		t.Fatalf("editing to an American number: %d %s", r.Status, r.Body)
	}
	book := string(b.call("GET", "/api/addresses", nil).Body)
	if !strings.Contains(book, `"phone":"+16502530000"`) || !strings.Contains(book, `"phone":"+8613800138000"`) {
		t.Errorf("the book after the edit: %s", book)
	}
	page := string(b.call("GET", "/account/addresses", nil).Body)
	// The edit forms show each phone as a person types it: the shop's country's without its code, another
	// country's with it, grouped.
	if !strings.Contains(page, `value="&#43;1 650-253-0000"`) || !strings.Contains(page, `value="138 0013 8000"`) ||
		!strings.Contains(page, "Delete this address?") {
		t.Errorf("the address book page has no edit form filled in with the phones as typed, or no question before deleting")
	}
}

// A cancelled order says why and when, in the API, on its page and in the list (in both languages); the
// list shows the item's picture and the order's date, and filters by status from the URL.
func TestCancelledOrderSaysWhyAndTheListFilters(t *testing.T) {
	s := startLive(t, liveOpts{only: []string{"order_consumer"}})
	now := s.Clock.Now()
	_, item := testenv.Sale(t, s.DB, 5, now.Add(-time.Minute), now.Add(24*time.Hour))
	_, other := testenv.Sale(t, s.DB, 5, now.Add(-time.Minute), now.Add(24*time.Hour))
	s.DB.Model(&models.Item{}).Where("id = ?", item.ID).Update("image_url", "https://img.example.com/watch.jpg")
	for _, it := range []int64{item.ID, other.ID} {
		if _, err := s.Srv.Ledger.Preheat(context.Background(), jobs.DBBooks{DB: s.DB}, it); err != nil {
			t.Fatal(err)
		}
	}
	b, first := bareOrderFor(t, s, item, "why_cancelled")
	me, _ := models.UserByUsername(context.Background(), s.DB, "why_cancelled")
	if _, err := s.Srv.Ledger.Take(context.Background(), other.ID, me.ID, issuePath(t, s, other.ID, me.ID), "SKwhy_second"); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 20*time.Second, "the second order", func() bool {
		_, err := models.OrderByNo(context.Background(), s.DB, "SKwhy_second")
		return err == nil
	})

	// The note about paying in time is there while an order waits for its payment, and only then (the
	// review found it above lists of cancelled orders).
	payNote := map[string]string{"en": "Pay before the deadline", "zh": i18n.For("zh").T("orders.payNote")}
	for lang, note := range payNote {
		b.setCookie("lang", lang)
		if list := string(b.call("GET", "/orders", nil).Body); !strings.Contains(list, note) {
			t.Errorf("%s: the list of two unpaid orders does not say %q", lang, note)
		}
	}

	r := b.call("POST", "/api/orders/"+first.OrderNo+"/cancel", nil)
	if j := r.json(t); r.Status != 200 || j["cancel_reason"] != models.CancelByBuyer || j["cancelled_at"] == nil {
		t.Fatalf("the buyer's cancel: %d %s", r.Status, r.Body)
	}
	s.Clock.Advance(s.Cfg.PayTimeout + time.Minute)
	if err := s.Srv.UnpaidTimeout.Once(context.Background()); err != nil {
		t.Fatal(err)
	}
	if j := b.call("GET", "/api/orders/SKwhy_second", nil).json(t); j["cancel_reason"] != models.CancelUnpaid || j["cancelled_at"] == nil {
		t.Fatalf("the timeout's cancel: %v", j)
	}
	if j := b.call("GET", "/api/orders/"+first.OrderNo, nil).json(t); j["picture"] != "https://img.example.com/watch.jpg" {
		t.Errorf("the order's picture is %v", j["picture"])
	}

	for _, c := range []struct{ lang, buyer, unpaid, filter string }{
		{"en", "You cancelled it", "Not paid in time", "All"},
		{"zh", "您已取消", "超时未支付", "全部"},
	} {
		b.setCookie("lang", c.lang)
		list := string(b.call("GET", "/orders", nil).Body)
		for _, want := range []string{c.buyer, c.unpaid, c.filter, `src="https://img.example.com/watch.jpg"`, `class="order-date"`,
			`href="/orders?status=cancelled"`} {
			if !strings.Contains(list, want) {
				t.Errorf("%s: the orders list does not show %q", c.lang, want)
			}
		}
		if one := string(b.call("GET", "/orders/"+first.OrderNo, nil).Body); !strings.Contains(one, c.buyer) || !strings.Contains(one, `class="cancel-why"`) {
			t.Errorf("%s: the order page does not say why it was cancelled", c.lang)
		}
		for _, path := range []string{"/orders", "/orders?status=cancelled", "/orders/" + first.OrderNo} {
			if page := string(b.call("GET", path, nil).Body); strings.Contains(page, payNote[c.lang]) {
				t.Errorf("%s: %s, with nothing to pay, says %q", c.lang, path, payNote[c.lang])
			}
		}
	}
	if r := b.call("GET", "/api/orders?status=cancelled", nil); r.Status != 200 || strings.Count(string(r.Body), `"order_no"`) != 2 {
		t.Errorf("?status=cancelled: %d %s", r.Status, r.Body)
	}
	if r := b.call("GET", "/api/orders?status=paid", nil); string(r.Body) != "[]" {
		t.Errorf("?status=paid: %s", r.Body)
	}
	r = b.call("GET", "/api/orders?status=lost", nil)
	expect(t, "an unknown filter", r, 400, "bad_request")
	if r.json(t)["fields"].(map[string]any)["status"] == nil {
		t.Errorf("an unknown filter does not name the field: %s", r.Body)
	}
	b.setCookie("lang", "en")
	if page := string(b.call("GET", "/orders?status=paid", nil).Body); strings.Contains(page, first.OrderNo) || !strings.Contains(page, "No orders here.") ||
		!strings.Contains(page, `href="/orders?status=paid" aria-current="page"`) {
		t.Errorf("the orders page filtered to paid shows a cancelled order, or does not say the filter")
	}
}

// The login page offers no QR code to a phone's browser: a phone cannot scan its own screen.
func TestLoginPageOnAPhoneHasNoQRCode(t *testing.T) {
	s := startLive(t, liveOpts{noBackground: true})
	for ua, qr := range map[string]bool{
		"Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1": false,
		"Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36":                   false,
		"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36":                                   true,
		"Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1":          true,
	} {
		r := newBrowser(t, s.URL).send("GET", "/login", nil, map[string]string{"User-Agent": ua})
		page := string(r.Body)
		if strings.Contains(page, `id="qr-panel"`) != qr || !strings.Contains(page, `id="password"`) {
			t.Errorf("%s: the login page shows a QR code %v (want %v), or no password form", ua, !qr, qr)
		}
		if !strings.Contains(r.Header.Get("Vary"), "User-Agent") {
			t.Errorf("the login page does not vary by User-Agent: %q", r.Header.Get("Vary"))
		}
	}
}

// The home page says a sold-out item is sold out, and offers to view it, not to buy it.
func TestHomeSaysSoldOut(t *testing.T) {
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
	for _, c := range []struct{ lang, soldOut, view, buy string }{
		{"en", "Sold out", ">View<", "View and buy"},
		{"zh", "已售罄", ">查看<", "查看并抢购"},
	} {
		b := newBrowser(t, s.URL)
		b.setCookie("lang", c.lang)
		testenv.EventuallySaw(t, 5*time.Second, c.lang+" home page with a sold-out badge", func() (bool, string) {
			page := string(b.call("GET", "/", nil).Body)
			goneCard := cardOf(page, gone.ID)
			leftCard := cardOf(page, left.ID)
			ok := strings.Contains(goneCard, c.soldOut) && strings.Contains(goneCard, c.view) && !strings.Contains(goneCard, c.buy) &&
				strings.Contains(leftCard, c.buy) && !strings.Contains(leftCard, c.soldOut)
			return ok, "sold out: " + goneCard + "\nwith stock: " + leftCard
		})
	}
}

// cardOf is the home page's <article> of an item.
func cardOf(page string, itemID int64) string {
	i := strings.Index(page, `href="/items/`+itoa(itemID)+`"`)
	if i < 0 {
		return ""
	}
	start := strings.LastIndex(page[:i], "<article")
	end := strings.Index(page[i:], "</article>")
	if start < 0 || end < 0 {
		return ""
	}
	return page[start : i+end]
}
