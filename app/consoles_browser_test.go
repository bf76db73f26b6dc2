package app

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"seckill/internal/testenv"
	"seckill/models"
)

// The consoles as a shop's staff use them (issue 34, rows 5 to 8 and 13 to 15), each in both languages.

// inLanguage switches the browser's language (the cookie /lang/ sets).
func inLanguage(t *testing.T, ctx context.Context, base, lang string) {
	t.Helper()
	run(t, ctx, "language "+lang, chromedp.Navigate(base+"/lang/"+lang))
}

// TestDashboardAccountsForEveryUnit: on the merchant's live dashboard a refunded unit has its own column,
// the unit columns add up to the stock, and the money paid and refunded is shown.
func TestDashboardAccountsForEveryUnit(t *testing.T) {
	testenv.Long(t)
	s := startLive(t, liveOpts{only: []string{"order_consumer", "payment_poll"}})
	_, sale, item := merchantSale(t, s, "units_merchant", 10)
	admin := withRole(t, s, "units_admin", models.RoleAdmin)
	paidOrderFor(t, s, item, "units_kept", homeAddress)
	_, refunded := paidOrderFor(t, s, item, "units_refunded", homeAddress)
	bareOrderFor(t, s, item, "units_pending")
	expect(t, "the refund", admin.call("POST", "/api/admin/orders/"+refunded.OrderNo+"/refund", map[string]any{"reason": "价格标错了"}), 200, "")
	price := fmt.Sprintf("¥%d.%02d", item.SeckillPriceCents/100, item.SeckillPriceCents%100)

	ctx := chrome(t)
	loginInBrowser(t, ctx, s.URL, "units_merchant", passwordOf("units_merchant"))
	for lang, words := range map[string][]string{"en": {"Refunded", "Revenue paid", "Money refunded"}, "zh": {"已退款", "已收款", "已退款金额"}} {
		inLanguage(t, ctx, s.URL, lang)
		var raw string
		run(t, ctx, lang+": the live dashboard",
			chromedp.Navigate(s.URL+"/merchant/activities/"+itoa(sale.ID)+"/live"),
			chromedp.WaitVisible(`//tr[@data-item="all"]/td[@data-f="stock_left"][normalize-space(text())!=""]`),
			chromedp.Evaluate(`(() => {
				const row = document.querySelector('tr[data-item="all"]');
				const f = k => { const td = row.querySelector('td[data-f="' + k + '"]'); return td ? td.textContent.trim() : ""; };
				return JSON.stringify({units: [...row.querySelectorAll("td[data-unit]")].map(td => td.dataset.f + "=" + td.textContent.trim()),
					total: f("stock_total"), refunded: f("orders_refunded"), paid: f("revenue_paid_cents"), back: f("revenue_refunded_cents"),
					head: document.querySelector("table.live thead").textContent});
			})()`, &raw),
		)
		var got struct {
			Units                       []string
			Total, Refunded, Paid, Back string
			Head                        string
		}
		if err := json.Unmarshal([]byte(raw), &got); err != nil {
			t.Fatal(err)
		}
		sum := 0
		for _, u := range got.Units {
			var n int
			fmt.Sscanf(u[strings.Index(u, "=")+1:], "%d", &n)
			sum += n
		}
		if got.Total != "10" || fmt.Sprint(sum) != got.Total || got.Refunded != "1" {
			t.Errorf("%s: the unit columns %v add up to %d of a stock of %q; refunded %q, want 1", lang, got.Units, sum, got.Total, got.Refunded)
		}
		if got.Paid != price || got.Back != price {
			t.Errorf("%s: revenue paid %q and refunded %q, want %s each", lang, got.Paid, got.Back, price)
		}
		for _, w := range words {
			if !strings.Contains(got.Head, w) {
				t.Errorf("%s: the dashboard's columns %q do not say %q", lang, got.Head, w)
			}
		}
	}
}

// TestImageOverTheLimitInABrowser: an image over 5 MB is refused with the image's limit in the
// merchant's language, both by the page (before sending) and by the API.
func TestImageOverTheLimitInABrowser(t *testing.T) {
	testenv.Long(t)
	s := startLive(t, liveOpts{only: []string{"order_consumer"}})
	now := s.Clock.Now()
	merchant := withRole(t, s, "limit_merchant", models.RoleMerchant)
	id := itoa(int64(merchant.call("POST", "/api/merchant/activities", activityBody(now.Add(time.Hour), now.Add(2*time.Hour))).json(t)["id"].(float64)))
	item := itoa(int64(merchant.call("POST", "/api/merchant/activities/"+id+"/items", goodItem).json(t)["id"].(float64)))
	path := "/api/merchant/activities/" + id + "/items/" + item + "/image"
	want := map[string]string{"en": "The image is larger than 5 MB", "zh": "图片大于 5 MB"}

	// The API: a file just over 5 MB, and a body over the upload's room, say the image's limit.
	for lang, w := range want {
		merchant.call("GET", "/lang/"+lang, nil)
		over := append(encodePNG(t, picture(10, 10)), make([]byte, 5<<20)...)
		r := merchant.upload(path, "image", "big.png", over)
		f, _ := r.json(t)["fields"].(map[string]any)
		if r.Status != 413 || r.code(t) != "too_large" || !strings.Contains(fmt.Sprint(f["image"]), w) {
			t.Errorf("%s: a 5 MB and a bit image: %d %s, want 413 too_large with %q beside the image", lang, r.Status, r.Body, w)
		}
	}

	photo := filepath.Join(t.TempDir(), "huge.png")
	if err := os.WriteFile(photo, append(encodePNG(t, picture(10, 10)), make([]byte, 6<<20)...), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := chrome(t)
	loginInBrowser(t, ctx, s.URL, "limit_merchant", passwordOf("limit_merchant"))
	for _, lang := range []string{"en", "zh"} {
		inLanguage(t, ctx, s.URL, lang)
		var said string
		run(t, ctx, lang+": upload a 6 MB image",
			chromedp.Navigate(s.URL+"/merchant/activities/"+id),
			chromedp.WaitReady(`form[data-upload-image] input[type=file]`, chromedp.ByQuery),
			chromedp.SetUploadFiles(`form[data-upload-image] input[type=file]`, []string{photo}, chromedp.ByQuery),
			chromedp.Poll(`document.querySelector("form[data-upload-image] .form-error").textContent !== ""`, nil, chromedp.WithPollingTimeout(15*time.Second)),
			chromedp.Text(`form[data-upload-image] .form-error`, &said, chromedp.ByQuery),
		)
		if !strings.Contains(said, want[lang]) {
			t.Errorf("%s: a 6 MB image says %q, want %q", lang, said, want[lang])
		}
	}
}

// TestShippingSummaryInABrowser: the CSV's summary stays (through the reload that shows the orders
// shipped) until dismissed; a row naming no order of the sale says so first; and "To ship", once every
// paid order is shipped, says nothing is left rather than that none is paid.
func TestShippingSummaryInABrowser(t *testing.T) {
	testenv.Long(t)
	s := startLive(t, liveOpts{only: []string{"order_consumer", "payment_poll"}})
	ctx := chrome(t)
	words := map[string]struct{ unknown, summary, nothingLeft string }{
		"en": {"is not an order of this sale", "Shipped 1,", "Nothing left to ship"},
		"zh": {"不是本活动的订单", "发货 1，", "没有待发货的订单"},
	}
	for _, lang := range []string{"en", "zh"} {
		w := words[lang]
		name := "csv_merchant_" + lang
		_, sale, item := merchantSale(t, s, name, 5)
		_, order := paidOrderFor(t, s, item, "csv_buyer_"+lang, homeAddress)
		dir := t.TempDir()
		unknown, good := filepath.Join(dir, "unknown.csv"), filepath.Join(dir, "good.csv")
		os.WriteFile(unknown, writeCSV([][]string{{"order_no", "carrier", "tracking_no"}, {"SKnosuchorder" + lang, "SF", "!"}}), 0o644)
		os.WriteFile(good, writeCSV([][]string{{"order_no", "carrier", "tracking_no"}, {order.OrderNo, "顺丰速运", "SF1234567890"}}), 0o644)

		loginInBrowser(t, ctx, s.URL, name, passwordOf(name))
		inLanguage(t, ctx, s.URL, lang)
		page := s.URL + "/merchant/activities/" + itoa(sale.ID) + "/orders?status=to_ship"
		var why string
		run(t, ctx, lang+": send a row of an unknown order",
			chromedp.Navigate(page),
			chromedp.WaitVisible("#shipments-file", chromedp.ByID),
			chromedp.SetUploadFiles("#shipments-file", []string{unknown}, chromedp.ByID),
			chromedp.Click(`#shipments-form button[type=submit]`, chromedp.ByQuery),
			chromedp.WaitVisible(".upload-result .row-errors li", chromedp.ByQuery),
			chromedp.Text(".upload-result .row-errors li", &why, chromedp.ByQuery),
		)
		if !strings.Contains(why, w.unknown) {
			t.Errorf("%s: an unknown order's row says %q, want %q first", lang, why, w.unknown)
		}

		var summary, after string
		var notReloaded bool
		run(t, ctx, lang+": send the good file",
			chromedp.SetUploadFiles("#shipments-file", []string{good}, chromedp.ByID),
			chromedp.Evaluate(`window.beforeReload = true`, nil),
			chromedp.Click(`#shipments-form button[type=submit]`, chromedp.ByQuery),
			chromedp.Sleep(3500*time.Millisecond), // past the reload, 1.5 s after the answer
			chromedp.WaitVisible("#shipments-file", chromedp.ByID),
			chromedp.Evaluate(`window.beforeReload === true`, &notReloaded),
			chromedp.Text(".upload-result", &summary, chromedp.ByQuery),
			chromedp.Text("main", &after, chromedp.ByQuery),
		)
		if notReloaded {
			t.Errorf("%s: the page did not reload to show the order shipped", lang)
		}
		if !strings.Contains(summary, w.summary) {
			t.Errorf("%s: after the reload the summary reads %q, want %q", lang, summary, w.summary)
		}
		if !strings.Contains(after, w.nothingLeft) {
			t.Errorf("%s: with every paid order shipped, To ship reads %q, want %q", lang, after, w.nothingLeft)
		}
		var left int
		var dismissable bool
		run(t, ctx, lang+": the summary's Dismiss", chromedp.Evaluate(`!!document.querySelector(".upload-result button.dismiss")`, &dismissable))
		if !dismissable {
			t.Fatalf("%s: the summary has no Dismiss button", lang)
		}
		run(t, ctx, lang+": dismiss the summary",
			chromedp.Click(".upload-result button.dismiss", chromedp.ByQuery),
			chromedp.Reload(),
			chromedp.WaitVisible("#shipments-file", chromedp.ByID),
			chromedp.Sleep(300*time.Millisecond),
			chromedp.Evaluate(`document.querySelector(".upload-result").children.length`, &left),
		)
		if left != 0 {
			t.Errorf("%s: the summary is back after being dismissed", lang)
		}
		if got := orderStatus(t, s, order.OrderNo); got != models.OrderShipped {
			t.Errorf("%s: the order is %s after the CSV", lang, got)
		}
	}
}

// offScreen lists the actions of a page's main part (buttons, links, fields) that are not wholly within
// the screen's width: each needs sideways scrolling to be seen.
const offScreen = `(() => {
	const w = document.documentElement.clientWidth, out = [];
	document.querySelectorAll("main button, main a[href], main select, main input:not([type=hidden]), main textarea, main label.linkish").forEach(e => {
		if (e.classList.contains("sr")) return;
		const r = e.getBoundingClientRect();
		if (r.width === 0 && r.height === 0) return; // not shown
		if (r.left < -0.5 || r.right > w + 0.5) out.push((e.textContent.trim() || e.name || e.tagName).slice(0, 30) + " at " + Math.round(r.left) + "–" + Math.round(r.right));
	});
	return out.join("; ");
})()`

// TestConsoleActionsOnAPhone: at 375 px, in English and in Chinese, every action of the merchant's and
// the admin's pages (Block, the role's Save, Ship, Open and Orders, Edit, Pause and End) lies within the
// screen: the tables turn into cards, so nothing hides beside the page.
func TestConsoleActionsOnAPhone(t *testing.T) {
	testenv.Long(t)
	s := startLive(t, liveOpts{only: []string{"order_consumer", "payment_poll"}})
	merchant, sale, item := merchantSale(t, s, "phone_merchant_with_a_long_name", 10)
	_, order := paidOrderFor(t, s, item, "phone_shopper", homeAddress)
	withRole(t, s, "phone_admin", models.RoleAdmin)
	now := s.Clock.Now()
	draft := itoa(int64(merchant.call("POST", "/api/merchant/activities", activityBody(now.Add(time.Hour), now.Add(2*time.Hour))).json(t)["id"].(float64)))
	merchant.call("POST", "/api/merchant/activities/"+draft+"/items", goodItem)
	id := itoa(sale.ID)
	pages := map[string][]string{
		"phone_merchant_with_a_long_name": {"/merchant", "/merchant/activities/" + draft, "/merchant/activities/" + id + "/live",
			"/merchant/activities/" + id + "/orders?status=to_ship"},
		"phone_admin": {"/admin", "/admin/users", "/admin/orders?no=" + order.OrderNo, "/admin/activities/" + id + "/live"},
	}
	ctx := chrome(t)
	run(t, ctx, "a phone's screen", chromedp.EmulateViewport(375, 800))
	var hidden []string
	for _, who := range []string{"phone_merchant_with_a_long_name", "phone_admin"} {
		loginInBrowser(t, ctx, s.URL, who, passwordOf(who))
		for _, lang := range []string{"en", "zh"} {
			inLanguage(t, ctx, s.URL, lang)
			for _, path := range pages[who] {
				var off string
				var actions int
				run(t, ctx, "open "+path,
					chromedp.Navigate(s.URL+path),
					chromedp.WaitVisible("main", chromedp.ByQuery),
					chromedp.Sleep(600*time.Millisecond), // scripts fill in lists and label the cards
					chromedp.Evaluate(offScreen, &off),
					chromedp.Evaluate(`document.querySelectorAll("main button, main select, main a[href]").length`, &actions),
				)
				if actions == 0 {
					t.Errorf("%s %s as %s: no action on the page to check", lang, path, who)
				}
				if off != "" {
					hidden = append(hidden, fmt.Sprintf("%s %s as %s: %s", lang, path, who, off))
				}
			}
		}
	}
	if len(hidden) > 0 {
		t.Errorf("actions off a 375 px screen:\n%s", strings.Join(hidden, "\n"))
	}
}

// TestConsoleWordsInChinese: role names and payment statuses on the admin's pages are said in the
// reader's language, not as the API's values.
func TestConsoleWordsInChinese(t *testing.T) {
	testenv.Long(t)
	s := startLive(t, liveOpts{only: []string{"order_consumer", "payment_poll"}})
	_, act, item := merchantSale(t, s, "words_merchant", 5)
	_, order := paidOrderFor(t, s, item, "words_shopper", homeAddress)
	withRole(t, s, "words_admin", models.RoleAdmin)
	ctx := chrome(t)
	loginInBrowser(t, ctx, s.URL, "words_admin", passwordOf("words_admin"))
	for lang, want := range map[string]struct{ roles, payment, job, counts string }{
		"en": {"Shopper|Merchant|Admin", "Paid", "Payment check", `^([a-z ,-]+ \d+( · |$))+$`},
		"zh": {"顾客|商家|管理员", "已支付", "支付核对", `^([^\x00-\x7f]+ \d+(，|$))+$`},
	} {
		inLanguage(t, ctx, s.URL, lang)
		var roles, payment string
		var jobs [][]string
		var ascii string
		run(t, ctx, lang+": the background jobs",
			chromedp.Navigate(s.URL+"/admin"),
			chromedp.WaitVisible("#jobs", chromedp.ByID),
			chromedp.Evaluate(`[...document.getElementById("jobs").parentElement.querySelectorAll("tbody tr")].map(r => [r.cells[0].textContent.trim(), r.cells[3].textContent.trim()])`, &jobs),
			chromedp.Navigate(s.URL+"/admin/activities/"+itoa(act.ID)+"/live"),
			chromedp.WaitVisible("#live", chromedp.ByID),
			chromedp.Evaluate(`(document.body.innerText.match(/[\u4e00-\u9fff][:(]|[:(][\u4e00-\u9fff]|[\u4e00-\u9fff]: /g) || []).join(" | ")`, &ascii),
		)
		if lang == "zh" && ascii != "" {
			t.Errorf("zh: the live page writes ASCII punctuation beside Chinese: %s", ascii)
		}
		named := false
		for _, j := range jobs {
			if strings.Contains(j[0], "_") || j[0] == "preheat" {
				t.Errorf("%s: a job reads as its code %q", lang, j[0])
			}
			named = named || j[0] == want.job
			if j[1] != "" && !regexp.MustCompile(want.counts).MatchString(j[1]) {
				t.Errorf("%s: the job %q's counts read %q, not words and numbers", lang, j[0], j[1])
			}
		}
		if !named {
			t.Errorf("%s: no job reads %q among %q", lang, want.job, jobs)
		}
		run(t, ctx, lang+": the users and the order",
			chromedp.Navigate(s.URL+"/admin/users?q=words_"),
			chromedp.WaitVisible("table.users", chromedp.ByQuery),
			chromedp.Evaluate(`[...document.querySelector("tr[id^=user-] select[name=role]").options].map(o => o.textContent).join("|")`, &roles),
			chromedp.Navigate(s.URL+"/admin/orders?no="+order.OrderNo),
			chromedp.WaitVisible("#found-order", chromedp.ByID),
			chromedp.Evaluate(`[...document.querySelectorAll("#found-order table")].find(t => t.querySelector("code")).querySelector("tbody td:nth-child(3)").textContent.trim()`, &payment),
		)
		if roles != want.roles {
			t.Errorf("%s: the roles read %q, want %q", lang, roles, want.roles)
		}
		if payment != want.payment {
			t.Errorf("%s: the payment's status reads %q, want %q", lang, payment, want.payment)
		}
	}
}

// TestBlockedAccountIsToldTheContact: a blocked account's login names the shop's contact (SHOP_CONTACT)
// in the reader's language, as the "forgot your password" page does; without one, no support desk that
// does not exist is promised.
func TestBlockedAccountIsToldTheContact(t *testing.T) {
	testenv.Long(t)
	const contact = "help@tea-shop.example"
	s := startLive(t, liveOpts{only: []string{"sessions"}, tune: func(c *Config) { c.ShopContact = contact }})
	admin := withRole(t, s, "contact_admin", models.RoleAdmin)
	id := newBrowser(t, s.URL).register("contact_blocked", passwordOf("contact_blocked"))
	expect(t, "block", admin.call("POST", "/api/admin/users/"+itoa(id)+"/block", map[string]any{"reason": "刷单"}), 200, "")

	ctx := chrome(t)
	for lang, want := range map[string]string{"en": "write to " + contact, "zh": "请联系 " + contact} {
		inLanguage(t, ctx, s.URL, lang)
		var said, forgot string
		run(t, ctx, lang+": log in blocked",
			chromedp.Navigate(s.URL+"/login"),
			chromedp.WaitVisible("#username", chromedp.ByID),
			chromedp.SendKeys("#username", "contact_blocked", chromedp.ByID),
			chromedp.SendKeys("#password", passwordOf("contact_blocked"), chromedp.ByID),
			chromedp.Click(`form[data-account] button[type=submit]`, chromedp.ByQuery),
			chromedp.Poll(`document.querySelector("form[data-account] .form-error").textContent !== ""`, nil, chromedp.WithPollingTimeout(10*time.Second)),
			chromedp.Text("form[data-account] .form-error", &said, chromedp.ByQuery),
			chromedp.Navigate(s.URL+"/forgot"),
			chromedp.WaitVisible("main", chromedp.ByQuery),
			chromedp.Text("main", &forgot, chromedp.ByQuery),
		)
		if !strings.Contains(said, want) || strings.Contains(said, "support") || strings.Contains(said, "客服") {
			t.Errorf("%s: a blocked login says %q, want %q", lang, said, want)
		}
		if !strings.Contains(forgot, contact) {
			t.Errorf("%s: the forgot page does not name the contact: %q", lang, forgot)
		}
	}

	// Without SHOP_CONTACT: blocked, said plainly, with no address that does not exist.
	bare := startLive(t, liveOpts{db: s.DB, rdb: s.Redis, noBackground: true})
	r := newBrowser(t, bare.URL).call("POST", "/api/auth/login", map[string]any{"username": "contact_blocked", "password": passwordOf("contact_blocked")})
	expect(t, "blocked, no contact set", r, 403, "blocked")
	if msg := fmt.Sprint(r.json(t)["message"]); strings.Contains(msg, "support") || !strings.Contains(msg, "blocked") {
		t.Errorf("blocked with no contact set says %q", msg)
	}
}
