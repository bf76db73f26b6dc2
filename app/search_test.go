package app

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"seckill/models"
)

// The admins' search over HTTP: the contract's paged objects, orders found by part of a buyer's name
// with the buyer named, the audit log in words, and every bad filter a 400 naming it (in the reader's
// language) before any query; shoppers are refused.
func TestAdminSearchAnswersThePagedObjects(t *testing.T) {
	s := startLive(t, liveOpts{only: []string{"order_consumer"}})
	item, _ := newPaySale(t, s, 5)
	shopper, o := paidOrderFor(t, s, item, "Ramona_Flowers", homeAddress)
	paidOrderFor(t, s, item, "scott_pilgrim", homeAddress)
	admin := withRole(t, s, "search_admin", models.RoleAdmin)

	expect(t, "a shopper searching orders", shopper.call("GET", "/api/admin/orders", nil), 403, "forbidden")
	expect(t, "a shopper reading the audit log", shopper.call("GET", "/api/admin/audit", nil), 403, "forbidden")

	j := admin.call("GET", "/api/admin/orders?q=MONA_fl&status=paid&activity_id="+itoa(item.ActivityID), nil).json(t)
	found, _ := j["orders"].([]any)
	if len(found) != 1 || j["total"] != 1.0 || j["page"] != 1.0 || j["per_page"] != 50.0 || j["total_capped"] != false {
		t.Fatalf("part of a name: %v", j)
	}
	if f := found[0].(map[string]any); f["order_no"] != o.OrderNo || f["buyer"] != "Ramona_Flowers" || f["status"] != "paid" {
		t.Errorf("the order found: %v", f)
	}
	day := s.Clock.Now().UTC().Format("2006-01-02")
	if j := admin.call("GET", "/api/admin/orders?from="+day+"&to="+day, nil).json(t); j["total"] != 2.0 {
		t.Errorf("today's orders: %v", j["total"])
	}
	if j := admin.call("GET", "/api/admin/orders?to=2020-01-01", nil).json(t); j["total"] != 0.0 || len(j["orders"].([]any)) != 0 {
		t.Errorf("orders before 2020: %v", j)
	}

	admin.setCookie("lang", "zh")
	for _, c := range []struct{ path, field string }{
		{"/api/admin/orders?q=ab", "q"},
		{"/api/admin/orders?q=a%00b", "q"},
		{"/api/admin/orders?status=lost", "status"},
		{"/api/admin/orders?activity_id=x", "activity_id"},
		{"/api/admin/orders?from=yesterday", "from"},
		{"/api/admin/orders?page=201", "page"},
		{"/api/admin/audit?actor=a%00b", "actor"},
		{"/api/admin/audit?action=" + strings.Repeat("a", 41), "action"},
		{"/api/admin/audit?on=%ff%fe", "on"},
		{"/api/admin/audit?action=bogus", "action"},
		{"/api/admin/audit?action=order.cancel", "action"},
		{"/api/admin/audit?on=activity:abc", "on"},
		{"/api/admin/audit?on=planet:3", "on"},
		{"/api/admin/audit?on=order:" + strings.Repeat("1", 33), "on"},
		{"/api/admin/audit?to=2030-02-30", "to"},
		{"/api/admin/audit?page=0", "page"},
	} {
		r := admin.call("GET", c.path, nil)
		expect(t, c.path, r, 400, "bad_request")
		if f, _ := r.json(t)["fields"].(map[string]any); f[c.field] == nil || !strings.ContainsAny(fmt.Sprint(f[c.field]), "须不") {
			t.Errorf("%s names %v, want %s in Chinese", c.path, f, c.field)
		}
	}

	// The audit log: who, what, on what, in words; the shop's own rows by "system".
	if _, _, err := s.Srv.Orders.Refund(context.Background(), models.Actor{ID: userID(t, s, "search_admin"), Username: "search_admin"}, o.OrderNo, "lost in the post"); err != nil {
		t.Fatal(err)
	}
	a := admin.call("GET", "/api/admin/audit?actor=SEARCH_ADMIN&on="+o.OrderNo, nil).json(t)
	entries, _ := a["entries"].([]any)
	if len(entries) != 2 || a["total"] != 2.0 || a["per_page"] != 50.0 {
		t.Fatalf("the admin's rows of the order: %v", a)
	}
	e := entries[0].(map[string]any)
	if e["action"] != "order.refund" || e["what"] != "为订单退款" || e["on"] != "订单："+o.OrderNo || e["on_url"] != "/admin/orders?no="+o.OrderNo {
		t.Errorf("the refund's row: %v", e)
	}
	changes := fmt.Sprint(e["changes"])
	if !strings.Contains(changes, "状态") || !strings.Contains(changes, "已退款") || !strings.Contains(changes, "已支付") || strings.Contains(changes, "Which orders") {
		t.Errorf("the refund's changes: %s", changes)
	}
	if err := models.Audit(s.DB, models.System, "refund.done", "order:"+o.OrderNo, nil, map[string]any{"status": "done"}, s.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	sys := admin.call("GET", "/api/admin/audit?actor=system&action=refund.done", nil).json(t)
	if sys["total"] != 1.0 || sys["entries"].([]any)[0].(map[string]any)["actor_words"] != "系统（自动）" {
		t.Errorf("the shop's own rows: %v", sys)
	}
	if none := admin.call("GET", "/api/admin/audit?actor=nobody_here", nil).json(t); none["total"] != 0.0 || len(none["entries"].([]any)) != 0 {
		t.Errorf("an unknown actor: %v", none)
	}
}
