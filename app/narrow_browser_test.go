package app

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"seckill/internal/testenv"
	"seckill/models"
)

// TestEveryPageFitsAPhone opens every page each kind of user has on a 375 px screen, in English and in
// Chinese, with data in them (a sale, an order paid and shipped, a blocked user, audit rows): none is
// wider than the screen, so nothing needs scrolling sideways. Wide tables scroll inside their own box.
func TestEveryPageFitsAPhone(t *testing.T) {
	testenv.Long(t)
	s := startLive(t, liveOpts{only: []string{"order_consumer", "payment_poll", "stops"}})
	merchant, sale, item := merchantSale(t, s, "narrow_merchant_with_a_long_name", 10)
	_, order := paidOrderFor(t, s, item, "narrow_shopper", homeAddress)
	admin := withRole(t, s, "narrow_admin", models.RoleAdmin)
	expect(t, "ship", merchant.call("POST", "/api/merchant/orders/"+order.OrderNo+"/ship",
		map[string]any{"carrier": "顺丰速运 SF Express", "tracking_no": "SF1234567890123"}), 200, "")
	expect(t, "block", admin.call("POST", "/api/admin/users/"+itoa(order.UserID)+"/block",
		map[string]any{"reason": "a very long reason that goes on and on without a break: 刷单刷单刷单刷单刷单刷单"}), 200, "")
	expect(t, "unblock", admin.call("POST", "/api/admin/users/"+itoa(order.UserID)+"/unblock",
		map[string]any{"reason": "appeal"}), 200, "")
	expect(t, "pause", admin.call("POST", "/api/admin/activities/"+itoa(sale.ID)+"/pause",
		map[string]any{"reason": "价格标错了，正在核对"}), 200, "")

	id, no := itoa(sale.ID), order.OrderNo
	pages := map[string][]string{
		"":                                 {"/", "/items/" + itoa(item.ID), "/login", "/register"},
		"narrow_shopper":                   {"/", "/items/" + itoa(item.ID), "/orders", "/orders/" + no, "/account/addresses", "/account"},
		"narrow_merchant_with_a_long_name": {"/merchant", "/merchant/activities/" + id, "/merchant/activities/" + id + "/live", "/merchant/activities/" + id + "/orders?status=all"},
		"narrow_admin":                     {"/admin", "/admin/activities/" + id + "/live", "/admin/users", "/admin/audit", "/admin/orders?no=" + no},
	}
	ctx := chrome(t)
	run(t, ctx, "a phone's screen", chromedp.EmulateViewport(375, 800))
	var wide []string
	for _, who := range []string{"", "narrow_shopper", "narrow_merchant_with_a_long_name", "narrow_admin"} {
		run(t, ctx, "log out", chromedp.Evaluate(`fetch("/api/csrf").then(r => r.json()).then(j => fetch("/api/auth/logout",
			{method: "POST", headers: {"X-CSRF-Token": j.token}}))`, nil))
		if who != "" {
			run(t, ctx, "language en", chromedp.Navigate(s.URL+"/lang/en"))
			loginInBrowser(t, ctx, s.URL, who, passwordOf(who))
		}
		for _, lang := range []string{"en", "zh"} {
			run(t, ctx, "language "+lang, chromedp.Navigate(s.URL+"/lang/"+lang))
			for _, path := range pages[who] {
				var width int
				run(t, ctx, "open "+path,
					chromedp.Navigate(s.URL+path),
					chromedp.WaitVisible("main", chromedp.ByQuery),
					chromedp.Sleep(600*time.Millisecond), // scripts fill in lists and times
					chromedp.Evaluate(`document.documentElement.scrollWidth`, &width),
				)
				if width > 375 {
					var culprits string
					run(t, ctx, "what sticks out", chromedp.Evaluate(`[...document.querySelectorAll("body *")]
						.filter(e => e.getBoundingClientRect().right > 376 && e.parentElement.getBoundingClientRect().right <= 376)
						.slice(0, 4).map(e => e.tagName + "." + e.className + " " + Math.round(e.getBoundingClientRect().right)).join("; ")`, &culprits))
					wide = append(wide, fmt.Sprintf("%s %s as %q: %d px (%s)", lang, path, who, width, culprits))
				}
			}
		}
	}
	if len(wide) > 0 {
		t.Errorf("pages wider than a 375 px phone:\n%s", strings.Join(wide, "\n"))
	}
}
