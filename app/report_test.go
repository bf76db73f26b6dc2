package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"seckill/internal/testenv"
	"seckill/models"
)

// The fairness report: its merchant and the admins see it during the sale, everyone once it is over; it
// counts the entrants, what each rule refused, the buyers, the units returned and sold again, and when
// the stock first ran out, as the line and the books say.
func TestFairnessReportAgreesWithTheBooks(t *testing.T) {
	s := startLive(t, liveOpts{})
	act, item := queueSale(t, s.DB, s, 2)
	merchant := withRole(t, s, "report_shop", models.RoleMerchant)
	admin := withRole(t, s, "report_chief", models.RoleAdmin)
	var shopID int64
	if err := s.DB.Model(&models.User{}).Where("username = ?", "report_shop").Pluck("id", &shopID).Error; err != nil {
		t.Fatal(err)
	}
	if err := s.DB.Model(&act).Updates(map[string]any{"rule_one_per_address": true, "merchant_id": shopID}).Error; err != nil {
		t.Fatal(err)
	}
	// The rule was written behind the server's catalog, which a join reads: a snapshot older than its
	// second is rebuilt by the request that finds it, which is answered from the old one meanwhile. The
	// joins below are the rule's, once the catalog shows it.
	testenv.Eventually(t, 20*time.Second, "the catalog to show the rule", func() bool {
		r := newBrowser(t, s.URL).call("GET", "/api/activities/"+itoa(act.ID), nil)
		rules, _ := r.json(t)["rules"].(map[string]any)
		return rules["one_per_address"] == true
	})
	path := "/api/activities/" + itoa(act.ID) + "/report"
	anyone := newBrowser(t, s.URL)
	expect(t, "the public during the sale", anyone.call("GET", path, nil), 403, "forbidden")

	var ids []int64
	for i, street := range []string{"1 Wensan Road", "2 Wensan Road", "3 Wensan Road", "1 WENSAN ROAD"} {
		b := newBrowser(t, s.URL)
		ids = append(ids, b.register("reported_"+itoa(int64(i)), passwordOf("reported")))
		addr := b.addAddress("1380013800"+itoa(int64(i)), "Zhejiang", "Hangzhou", street)
		id, answer := b.captcha()
		want := 200
		if i == 3 {
			want = 409 // the first entrant's place
		}
		expect(t, "joining", b.joinFrom(item.ID, addr, id, answer), want, "")
	}
	expect(t, "staff joining", admin.join(item.ID), 403, "staff")

	// The books: two orders took the stock, one was cancelled (its unit back on sale) and sold again.
	starts := act.StartsAt
	for i, o := range []struct {
		user   int64
		status string
		after  time.Duration
	}{{ids[0], models.OrderPaid, 3 * time.Second}, {ids[1], models.OrderCancelled, 5 * time.Second}, {ids[2], models.OrderPendingPayment, 9 * time.Second}} {
		at := starts.Add(o.after)
		if err := s.DB.Create(&models.Order{OrderNo: "SKREPORT" + itoa(int64(i)), UserID: o.user, ItemID: item.ID, ActivityID: act.ID,
			PriceCents: 100, Status: o.status, PayDeadline: at.Add(15 * time.Minute), CreatedAt: at, UpdatedAt: at}).Error; err != nil {
			t.Fatal(err)
		}
	}
	for who, b := range map[string]*browser{"its merchant": merchant, "an admin": admin} {
		r := b.call("GET", path, nil)
		if r.Status != 200 {
			t.Fatalf("%s during the sale: %d %s", who, r.Status, r.Body)
		}
	}
	s.Clock.Advance(2 * time.Hour) // the sale is over
	r := anyone.call("GET", path, nil)
	if r.Status != 200 {
		t.Fatalf("the public after the sale: %d %s", r.Status, r.Body)
	}
	rep := r.json(t)
	items := rep["items"].([]any)
	if len(items) != 1 || rep["activity_id"] != float64(act.ID) {
		t.Fatalf("the report: %s", r.Body)
	}
	got := items[0].(map[string]any)
	refused := got["refused"].(map[string]any)
	for field, want := range map[string]any{"item_id": float64(item.ID), "entrants": float64(3), "buyers": float64(3), "returned": float64(1),
		"sold_again": float64(1), "refunds": float64(0), "sold_out_after_seconds": float64(5), "flagged": float64(0)} {
		if got[field] != want {
			t.Errorf("%s = %v; want %v (report %s)", field, got[field], want, r.Body)
		}
	}
	if refused["address_limit"] != float64(1) || refused["staff"] != float64(1) {
		t.Errorf("refused = %v; want one address_limit and one staff", refused)
	}
}

// The report's page says the same figures in words, in English and Chinese.
func TestFairnessReportPage(t *testing.T) {
	s := startLive(t, liveOpts{})
	act, item := queueSale(t, s.DB, s, 2)
	b := newBrowser(t, s.URL)
	b.register("page_reader", passwordOf("page_reader"))
	expect(t, "joining", b.join(item.ID), 200, "")
	page := "/activities/" + itoa(act.ID) + "/report"
	if r := b.call("GET", page, nil); r.Status != 403 {
		t.Errorf("the page during the sale: %d", r.Status)
	}
	s.Clock.Advance(2 * time.Hour)
	for lang, want := range map[string]string{"en": "Entrants in the line", "zh": "排队人数"} {
		b.setCookie("lang", lang)
		r := b.call("GET", page, nil)
		body := string(r.Body)
		if r.Status != 200 || !strings.Contains(body, want) || !strings.Contains(body, `data-figure="entrants">1<`) || !strings.Contains(body, item.Name) {
			t.Errorf("the %s page: %d, want %q, one entrant and the item's name:\n%.3000s", lang, r.Status, want, body)
		}
	}
}

// Shoppers who join a queue sale after its start (behind the draw) joined its line all the same: the
// report's entrants and the line's document count them with the draw's, as the merchant's figures do,
// and name the draw's own count apart.
func TestReportCountsWhoJoinedAfterTheStart(t *testing.T) {
	s := startLive(t, liveOpts{})
	act, item := queueSale(t, s.DB, s, 5)
	early := newBrowser(t, s.URL)
	early.register("joined_early", passwordOf("joined_early"))
	expect(t, "joining before the start", early.join(item.ID), 200, "")
	s.Clock.Set(act.StartsAt.Add(time.Second))
	if _, err := s.Srv.Line.Draw(context.Background(), item.ID); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		b := newBrowser(t, s.URL)
		b.register("joined_late_"+itoa(int64(i)), passwordOf("joined_late"))
		expect(t, "joining after the start", b.join(item.ID), 200, "")
	}
	admin := withRole(t, s, "joined_admin", models.RoleAdmin)
	r := admin.call("GET", "/api/activities/"+itoa(act.ID)+"/report", nil)
	if r.Status != 200 {
		t.Fatalf("the report: %d %s", r.Status, r.Body)
	}
	got := r.json(t)["items"].([]any)[0].(map[string]any)
	if got["entrants"] != 3.0 || got["in_draw"] != 1.0 {
		t.Errorf("the report says entrants %v, in_draw %v; want 3 who joined, 1 in the draw", got["entrants"], got["in_draw"])
	}
	testenv.Eventually(t, 5*time.Second, "the line's document to count the 3 who joined", func() bool {
		doc, _ := lineDoc(t, s.URL, item.ID)
		return doc["joined"] == 3.0 && doc["entrants"] == 1.0
	})
}
