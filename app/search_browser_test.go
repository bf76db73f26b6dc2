package app

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"seckill/internal/testenv"
	"seckill/models"
)

// TestAdminFindsABuyersOrderInABrowser: an admin answers "what happened to this buyer's order?" without
// knowing its number. Part of the buyer's name finds the order; opened, its story says it was placed, paid
// and shipped (by whom, with which carrier). The parcel came back: the admin refunds it, is asked first
// (with the amount and the buyer), and the page says it is done. Then the audit log, filtered by who and
// paged by its script, and filtered by the order. In English and in Chinese.
func TestAdminFindsABuyersOrderInABrowser(t *testing.T) {
	testenv.Long(t)
	words := map[string]struct{ placed, paid, shipped, refunded, badge, asked, page1, page2, blocked, on, refundedRow string }{
		"en": {"placed the order", "paid", "shipped an order", "Refunded: ¥9.90 goes back to lucia_en_moreno", "Refunded",
			"Refund ¥9.90 to lucia_en_moreno?", "1–50 of 60", "51–60 of 60", "blocked an account", "Account: lucia_en_moreno", "refunded an order"},
		"zh": {"下单", "付款", "订单已发货", "已退款：¥9.90 将退还给 lucia_zh_moreno", "已退款",
			"确定向 lucia_zh_moreno 退款 ¥9.90 吗？", "第 1–50 条，共 60 条", "第 51–60 条，共 60 条", "封禁了账号", "账号：lucia_zh_moreno", "为订单退款"},
	}
	s := startLive(t, liveOpts{only: []string{"order_consumer"}})
	item, _ := newPaySale(t, s, 10)
	withRole(t, s, "tea_house", models.RoleMerchant)
	merchantID := userID(t, s, "tea_house")
	if err := s.DB.Model(&models.Activity{}).Where("id = ?", item.ActivityID).Update("merchant_id", merchantID).Error; err != nil {
		t.Fatal(err)
	}
	withRole(t, s, "night_admin", models.RoleAdmin)
	ctx := context.Background()
	for _, lang := range []string{"en", "zh"} {
		t.Run(lang, func(t *testing.T) {
			w := words[lang]
			buyer := "lucia_" + lang + "_moreno"
			_, o := paidOrderFor(t, s, item, buyer, homeAddress)
			// Another buyer's order of the same sale, which the search must leave out.
			paidOrderFor(t, s, item, "other_"+lang, homeAddress)
			if _, _, err := s.Srv.Orders.Ship(ctx, merchantID, o.OrderNo, models.Shipment{Carrier: "SF Express", TrackingNo: "SF10" + lang + "2345678"}); err != nil {
				t.Fatal(err)
			}

			cdp := chrome(t)
			if lang == "zh" {
				run(t, cdp, "Chinese", chromedp.Navigate(s.URL+"/lang/zh"))
			}
			signIn(t, cdp, s.URL, "night_admin")
			var found, story string
			var rows int
			run(t, cdp, "search by part of the buyer's name",
				chromedp.Navigate(s.URL+"/admin/orders"),
				chromedp.WaitVisible("#s-q", chromedp.ByID),
				chromedp.SendKeys("#s-q", "ia_"+lang+"_mor", chromedp.ByID),
				chromedp.Click(`#order-search button[type=submit]`, chromedp.ByQuery),
				// The list before the search has every buyer's orders; the one after says it found one.
				chromedp.WaitVisible(`//h2[@id="found-orders"][contains(., "1–1 ")]`),
				chromedp.Evaluate(`document.querySelectorAll("table.found-orders tbody tr").length`, &rows),
				chromedp.Text(`table.found-orders tbody`, &found, chromedp.ByQuery),
			)
			if rows != 1 || !strings.Contains(found, o.OrderNo) || !strings.Contains(found, buyer) {
				t.Fatalf("the search found %d rows: %q", rows, found)
			}
			shot(t, cdp, "admin-order-search-"+lang)
			run(t, cdp, "open the order, read its story",
				chromedp.Click(`//table[contains(@class,"found-orders")]//a[.="`+o.OrderNo+`"]`),
				chromedp.WaitVisible(`#found-order .story-list`, chromedp.ByQuery),
				chromedp.Text(`#found-order .story-list`, &story, chromedp.ByQuery),
			)
			for _, want := range []string{w.placed, w.paid, w.shipped, "tea_house", "SF Express", buyer} {
				if !strings.Contains(story, want) {
					t.Errorf("the order's story lacks %q: %q", want, story)
				}
			}
			shot(t, cdp, "admin-order-story-"+lang)

			// The refund of the return: asked first, then said.
			var mu sync.Mutex
			var asked []string
			lctx, stop := context.WithCancel(cdp)
			defer stop()
			chromedp.ListenTarget(lctx, func(ev any) {
				if d, ok := ev.(*page.EventJavascriptDialogOpening); ok {
					mu.Lock()
					asked = append(asked, d.Message)
					mu.Unlock()
					go func() { _ = chromedp.Run(cdp, page.HandleJavaScriptDialog(true)) }()
				}
			})
			var done, badge string
			run(t, cdp, "refund the return",
				chromedp.SendKeys("#refund-reason", "returned: the box was crushed", chromedp.ByID),
				chromedp.Click(`#refund-form button[type=submit]`, chromedp.ByQuery),
				chromedp.WaitVisible(`#refund-done`, chromedp.ByID),
				chromedp.Text(`#refund-done`, &done, chromedp.ByID),
				chromedp.Text(`#found-order h2 .badge`, &badge, chromedp.ByQuery),
			)
			stop()
			mu.Lock()
			if len(asked) != 1 || !strings.Contains(asked[0], w.asked) {
				t.Errorf("before refunding, the page asked %q; want %q", asked, w.asked)
			}
			mu.Unlock()
			if !strings.Contains(done, w.refunded) || badge != w.badge {
				t.Errorf("after the refund the page says %q, the order is %q", done, badge)
			}
			var status string
			s.DB.Model(&models.Order{}).Where("order_no = ?", o.OrderNo).Pluck("status", &status)
			if status != models.OrderRefunded {
				t.Errorf("the order is %s, want refunded", status)
			}
			shot(t, cdp, "admin-order-refunded-"+lang)

			// The audit log: 60 rows of one admin, filtered by who, 50 a page, paged by the script.
			pager := "pager_" + lang
			pid := userID(t, s, buyer)
			p, err := models.CreateUser(ctx, s.DB, pager, "x", models.RoleAdmin)
			if err != nil {
				t.Fatal(err)
			}
			at := s.Clock.Now().Add(-time.Hour)
			for i := 0; i < 60; i++ {
				if err := models.Audit(s.DB, models.Actor{ID: p.ID, Username: pager}, "user.block", fmt.Sprintf("user:%d", pid),
					map[string]any{"blocked": false}, map[string]any{"blocked": true, "reason": fmt.Sprintf("spam %d", i)}, at.Add(time.Duration(i)*time.Second)); err != nil {
					t.Fatal(err)
				}
			}
			var head, first, url string
			run(t, cdp, "the audit log, by who",
				chromedp.Navigate(s.URL+"/admin/audit"),
				chromedp.WaitVisible("#f-actor", chromedp.ByID),
				chromedp.SendKeys("#f-actor", pager, chromedp.ByID),
				chromedp.Click(`#audit-search button[type=submit]`, chromedp.ByQuery),
				chromedp.WaitVisible(`//h2[@id="audit-found"][.="`+w.page1+`"]`),
				chromedp.Evaluate(`document.querySelectorAll("#audit-rows tr").length`, &rows),
				chromedp.Text(`#audit-rows tr`, &first, chromedp.ByQuery),
			)
			if rows != 50 || !strings.Contains(first, w.blocked) || !strings.Contains(first, w.on) || !strings.Contains(first, "spam 59") {
				t.Errorf("the first page has %d rows, the first %q", rows, first)
			}
			run(t, cdp, "the next page",
				chromedp.Click(`#audit-pager a[rel=next]`, chromedp.ByQuery),
				chromedp.WaitVisible(`//h2[@id="audit-found"][.="`+w.page2+`"]`),
				chromedp.Evaluate(`document.querySelectorAll("#audit-rows tr").length`, &rows),
				chromedp.Evaluate(`location.search`, &url),
				chromedp.Text(`#audit-found`, &head, chromedp.ByID),
			)
			if rows != 10 || !strings.Contains(url, "page=2") || !strings.Contains(url, "actor="+pager) {
				t.Errorf("the second page has %d rows at %q (%q)", rows, url, head)
			}
			var byOrder string
			run(t, cdp, "the audit log of the order",
				chromedp.Navigate(s.URL+"/admin/audit?on="+o.OrderNo),
				chromedp.WaitVisible(`#audit-rows`, chromedp.ByID),
				chromedp.Text(`#audit-rows`, &byOrder, chromedp.ByID),
			)
			shot(t, cdp, "admin-audit-order-"+lang)
			for _, want := range []string{w.refundedRow, w.shipped, "returned: the box was crushed", "tea_house"} {
				if !strings.Contains(byOrder, want) {
					t.Errorf("the order's audit lacks %q: %q", want, byOrder)
				}
			}
		})
	}
}
