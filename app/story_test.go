package app

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"seckill/models"
)

// storyOf is the story an admin reads on an order's page (/admin/orders?no=), as text.
func storyOf(t *testing.T, admin *browser, no string) string {
	t.Helper()
	r := admin.call("GET", "/admin/orders?no="+no, nil)
	body := string(r.Body)
	start := strings.Index(body, `<section class="story"`)
	end := strings.Index(body[max(start, 0):], "</section>")
	if r.Status != 200 || start < 0 || end < 0 {
		t.Fatalf("order %s's page: %d, no story", no, r.Status)
	}
	return body[start : start+end]
}

// An order's story tells every thing done to it: a cancel by its buyer or for want of payment (when, and
// why in words), its shipping and its correction, its refund; a shipping correction's audit row keeps the
// carrier and number it replaced and names only what changed.
func TestOrderStoryTellsCancelsShippingAndRefunds(t *testing.T) {
	s := startLive(t, liveOpts{only: []string{"order_consumer"}})
	merchant, sale, item := merchantSale(t, s, "story_shop", 10)
	admin := withRole(t, s, "story_admin", models.RoleAdmin)
	admin.setCookie("lang", "zh")

	// Cancelled by its buyer.
	buyer, byBuyer := orderFor(t, s, item, "story_buyer")
	expect(t, "the buyer's cancel", buyer.call("POST", "/api/orders/"+byBuyer.OrderNo+"/cancel", nil), 200, "")
	st := storyOf(t, admin, byBuyer.OrderNo)
	if !strings.Contains(st, "story_buyer · <strong>取消了订单</strong>") || !strings.Contains(st, "原因：买家取消") || strings.Contains(st, "此后没有其他操作") {
		t.Errorf("the story of an order its buyer cancelled: %s", st)
	}

	// Cancelled because it was not paid in time (as the unpaid timeout leaves it).
	_, unpaid := orderFor(t, s, item, "story_late")
	at := s.Clock.Now().UTC()
	if err := s.DB.Model(&models.Order{}).Where("order_no = ?", unpaid.OrderNo).Updates(map[string]any{
		"status": models.OrderCancelled, "cancelled_at": at, "cancel_reason": models.CancelUnpaid}).Error; err != nil {
		t.Fatal(err)
	}
	st = storyOf(t, admin, unpaid.OrderNo)
	if !strings.Contains(st, "系统（自动） · <strong>取消了订单</strong>") || !strings.Contains(st, "超时未支付") ||
		!strings.Contains(st, at.Format("2006-01-02T15:04:05")) || strings.Contains(st, "此后没有其他操作") {
		t.Errorf("the story of an order not paid in time: %s", st)
	}

	// Shipped, corrected one by one and by the CSV, refunded.
	_, o := paidOrderFor(t, s, item, "story_paid", homeAddress)
	ship := func(carrier, tracking, want string) {
		t.Helper()
		r := merchant.call("POST", "/api/merchant/orders/"+o.OrderNo+"/ship", map[string]any{"carrier": carrier, "tracking_no": tracking})
		if r.Status != 200 || r.json(t)["outcome"] != want {
			t.Fatalf("shipping %s %s: %d %s", carrier, tracking, r.Status, r.Body)
		}
	}
	ship("顺丰速运", "SF1234567890", "shipped")
	ship("顺丰速运", "SF1234567899", "corrected")
	csv := writeCSV([][]string{{"order_no", "carrier", "tracking_no"}, {o.OrderNo, "圆通速递", "SF1234567899"}})
	if j := merchant.upload("/api/merchant/activities/"+itoa(sale.ID)+"/shipments", "file", "orders.csv", csv).json(t); j["corrected"] != 1.0 {
		t.Fatalf("a correction by CSV: %v", j)
	}
	fixes := admin.call("GET", "/api/admin/audit?action=order.ship_fix&on="+o.OrderNo, nil).json(t)
	entries, _ := fixes["entries"].([]any)
	if len(entries) != 2 {
		t.Fatalf("the corrections' rows: %v", fixes)
	}
	for i, want := range []string{"[{快递公司 顺丰速运 圆通速递}]", "[{运单号 SF1234567890 SF1234567899}]"} { // newest first
		var got []string
		for _, c := range entries[i].(map[string]any)["changes"].([]any) {
			c := c.(map[string]any)
			got = append(got, fmt.Sprintf("{%v %v %v}", c["field"], c["before"], c["after"]))
		}
		if fmt.Sprint(got) != want {
			t.Errorf("correction %d changed %v, want %s", 2-i, got, want)
		}
	}
	if _, _, err := s.Srv.Orders.Refund(context.Background(), models.Actor{ID: userID(t, s, "story_admin"), Username: "story_admin"}, o.OrderNo, "寄丢了"); err != nil {
		t.Fatal(err)
	}
	st = storyOf(t, admin, o.OrderNo)
	for _, want := range []string{"订单已发货", "SF1234567890", "更正", "圆通速递", "为订单退款", "寄丢了"} {
		if !strings.Contains(st, want) {
			t.Errorf("the story of a shipped and refunded order lacks %q: %s", want, st)
		}
	}
	if n := strings.Count(st, "<strong>订单已发货</strong>"); n != 1 {
		t.Errorf("the shipping is told %d times, want once (its audit row, not the order's columns too): %s", n, st)
	}

	// Shipped before the log kept shipping: the order's own columns tell it.
	_, old := paidOrderFor(t, s, item, "story_old", homeAddress)
	if err := s.DB.Model(&models.Order{}).Where("order_no = ?", old.OrderNo).Updates(map[string]any{
		"status": models.OrderShipped, "shipped_at": s.Clock.Now(), "carrier": "中国邮政", "tracking_no": "EA123456789CN"}).Error; err != nil {
		t.Fatal(err)
	}
	if st := storyOf(t, admin, old.OrderNo); !strings.Contains(st, "<strong>订单已发货</strong>") || !strings.Contains(st, "EA123456789CN") {
		t.Errorf("the story of an order shipped without an audit row: %s", st)
	}
}
