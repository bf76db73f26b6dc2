package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"seckill/models"
)

// withRole registers a user in a new browser and gives it role, as an admin would.
func withRole(t *testing.T, s *liveServer, username, role string) *browser {
	t.Helper()
	b := newBrowser(t, s.URL)
	id := b.register(username, passwordOf(username))
	if _, err := s.Srv.Sessions.SetRole(context.Background(), models.Actor{ID: id, Username: username}, id, role); err != nil {
		t.Fatal(err)
	}
	return b
}

func activityBody(starts, ends time.Time) map[string]any {
	return map[string]any{"name": "Double 11", "description": "Big sale", "starts_at": starts.UTC().Format(time.RFC3339), "ends_at": ends.UTC().Format(time.RFC3339)}
}

var goodItem = map[string]any{"name": "Kettle", "title": "1.7 L", "description": "Boils.", "image_url": "/assets/img/demo-1.svg",
	"original_price_cents": 19900, "seckill_price_cents": 990, "stock": 50}

func TestMerchantToApprovalFlow(t *testing.T) {
	s := startLive(t, liveOpts{})
	now := s.Clock.Now()
	merchant := withRole(t, s, "shop_one", models.RoleMerchant)
	admin := withRole(t, s, "reviewer", models.RoleAdmin)
	shopper := newBrowser(t, s.URL)
	shopper.register("just_looking", "just looking")

	r := merchant.call("POST", "/api/merchant/activities", activityBody(now.Add(5*time.Minute), now.Add(2*time.Hour)))
	if r.Status != 201 || r.json(t)["state"] != "draft" {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	id := itoa(int64(r.json(t)["id"].(float64)))
	expect(t, "submit without items", merchant.call("POST", "/api/merchant/activities/"+id+"/submit", nil), 400, "bad_request")
	r = merchant.call("POST", "/api/merchant/activities/"+id+"/items", goodItem)
	if r.Status != 201 || r.json(t)["name"] != "Kettle" || r.json(t)["stock_total"] != 50.0 || r.json(t)["seckill_price_cents"] != 990.0 {
		t.Fatalf("add item: %d %s", r.Status, r.Body)
	}
	itemID := itoa(int64(r.json(t)["id"].(float64)))
	if r := merchant.call("GET", "/api/activities/"+id, nil); r.Status != 404 {
		t.Errorf("a draft is public: %d", r.Status)
	}

	// Rejected with a reason, fixed, resubmitted.
	expect(t, "submit", merchant.call("POST", "/api/merchant/activities/"+id+"/submit", nil), 200, "")
	expect(t, "editing while in review", merchant.call("PUT", "/api/merchant/activities/"+id, activityBody(now.Add(5*time.Minute), now.Add(3*time.Hour))), 409, "activity_state")
	reviews := admin.call("GET", "/api/admin/reviews", nil)
	if reviews.Status != 200 || !strings.Contains(string(reviews.Body), `"merchant":"shop_one"`) || !strings.Contains(string(reviews.Body), "Kettle") {
		t.Fatalf("the review queue lacks the activity, its merchant or its items: %s", reviews.Body)
	}
	expect(t, "reject without a reason", admin.call("POST", "/api/admin/activities/"+id+"/reject", map[string]string{"reason": " "}), 400, "bad_request")
	r = admin.call("POST", "/api/admin/activities/"+id+"/reject", map[string]string{"reason": "The price is too good to be true"})
	if r.Status != 200 || r.json(t)["state"] != "rejected" {
		t.Fatalf("reject: %d %s", r.Status, r.Body)
	}
	mine := merchant.call("GET", "/api/merchant/activities/"+id, nil).json(t)
	if mine["state"] != "rejected" || mine["review_reason"] != "The price is too good to be true" {
		t.Errorf("the merchant does not see the rejection and its reason: %v", mine)
	}
	fixed := map[string]any{}
	for k, v := range goodItem {
		fixed[k] = v
	}
	fixed["seckill_price_cents"] = 9900
	fixed["stock_shards"] = 5 // a hot item: its stock split over five Redis shards
	if r := merchant.call("PUT", "/api/merchant/activities/"+id+"/items/"+itemID, fixed); r.Status != 200 || r.json(t)["stock_shards"] != 5.0 {
		t.Fatalf("fix the item: %d %s", r.Status, r.Body)
	}
	expect(t, "resubmit", merchant.call("POST", "/api/merchant/activities/"+id+"/submit", nil), 200, "")

	// Approved: public, preheated at once (it starts within the preheat window), no longer editable.
	r = admin.call("POST", "/api/admin/activities/"+id+"/approve", nil)
	if r.Status != 200 || r.json(t)["state"] != "approved" {
		t.Fatalf("approve: %d %s", r.Status, r.Body)
	}
	if r := shopper.call("GET", "/api/activities", nil); !strings.Contains(string(r.Body), "Double 11") {
		t.Errorf("the approved activity is not on GET /api/activities: %s", r.Body)
	}
	if left, loaded, _ := s.Srv.Ledger.Left(context.Background(), mustInt(t, itemID)); !loaded || left != 50 {
		t.Errorf("approving a sale that starts within the preheat window did not load it: %d %v", left, loaded)
	}
	if n, _ := s.Srv.Ledger.Shards(context.Background(), mustInt(t, itemID)); n != 5 {
		t.Errorf("the sale was loaded over %d shards, want the item's 5", n)
	}
	expect(t, "editing an approved activity", merchant.call("PUT", "/api/merchant/activities/"+id, activityBody(now.Add(5*time.Minute), now.Add(3*time.Hour))), 409, "activity_state")
	expect(t, "adding an item to an approved activity", merchant.call("POST", "/api/merchant/activities/"+id+"/items", goodItem), 409, "activity_state")
	expect(t, "submitting an approved activity", merchant.call("POST", "/api/merchant/activities/"+id+"/submit", nil), 409, "activity_state")
	expect(t, "approving it again", admin.call("POST", "/api/admin/activities/"+id+"/approve", nil), 409, "activity_state")

	// Every action is in the audit log, with who did it.
	audit := string(admin.call("GET", "/api/admin/audit", nil).Body)
	for _, want := range []string{`"action":"activity.create","target":"activity:` + id, `"action":"activity.submit"`, `"action":"activity.reject"`,
		`"action":"activity.approve"`, `"actor":"reviewer"`, `"actor":"shop_one"`, `"action":"user.role"`, "too good to be true"} {
		if !strings.Contains(audit, want) {
			t.Errorf("the audit log lacks %s", want)
		}
	}

	// The live figures.
	st := admin.call("GET", "/api/admin/activities/"+id+"/stats", nil)
	for _, field := range []string{`"stock_total":50`, `"stock_left":50`, `"queued":0`, `"orders_pending":0`, `"orders_paid":0`, `"orders_cancelled":0`} {
		if !strings.Contains(string(st.Body), field) {
			t.Errorf("stats lack %s: %s", field, st.Body)
		}
	}
	expect(t, "the merchant's own stats", merchant.call("GET", "/api/merchant/activities/"+id+"/stats", nil), 200, "")
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	var n int64
	for _, c := range s {
		n = n*10 + int64(c-'0')
	}
	return n
}

func TestMerchantValidation(t *testing.T) {
	s := startLive(t, liveOpts{})
	now := s.Clock.Now()
	merchant := withRole(t, s, "shop_two", models.RoleMerchant)
	act := func(mod func(m map[string]any)) map[string]any {
		m := activityBody(now.Add(time.Hour), now.Add(2*time.Hour))
		mod(m)
		return m
	}
	for _, tt := range []struct {
		name, field string
		body        map[string]any
	}{
		{"empty name", "name", act(func(m map[string]any) { m["name"] = "  " })},
		{"no start", "starts_at", act(func(m map[string]any) { delete(m, "starts_at") })},
		{"end before start", "ends_at", act(func(m map[string]any) { m["ends_at"] = now.Add(30 * time.Minute).Format(time.RFC3339) })},
		{"end in the past", "ends_at", act(func(m map[string]any) {
			m["starts_at"] = now.Add(-2 * time.Hour).Format(time.RFC3339)
			m["ends_at"] = now.Add(-time.Hour).Format(time.RFC3339)
		})},
		// Found by fuzzing: PostgreSQL refuses NUL, and a year past 9999 cannot be written back as JSON.
		{"a NUL in the name", "name", act(func(m map[string]any) { m["name"] = "a\x00b" })},
		{"a line break in the name", "name", act(func(m map[string]any) { m["name"] = "a\nb" })},
		{"a NUL in the description", "description", act(func(m map[string]any) { m["description"] = "a\x00b" })},
		{"an end past the year 9999", "ends_at", act(func(m map[string]any) { m["ends_at"] = "9999-12-31T23:10:00-00:50" })},
		{"a start before the year 0", "starts_at", act(func(m map[string]any) { m["starts_at"] = "0000-01-01T00:00:00+00:01" })},
	} {
		r := merchant.call("POST", "/api/merchant/activities", tt.body)
		if f, _ := r.json(t)["fields"].(map[string]any); r.Status != 400 || f[tt.field] == nil {
			t.Errorf("%s: %d %s, want 400 naming %s", tt.name, r.Status, r.Body, tt.field)
		}
	}
	if r := merchant.call("POST", "/api/merchant/activities", "not an object"); r.Status != 400 {
		t.Errorf("a body that is not an object: %d", r.Status)
	}

	id := itoa(int64(merchant.call("POST", "/api/merchant/activities", act(func(map[string]any) {})).json(t)["id"].(float64)))
	item := func(k string, v any) map[string]any {
		m := map[string]any{}
		for kk, vv := range goodItem {
			m[kk] = vv
		}
		m[k] = v
		return m
	}
	for _, tt := range []struct {
		field string
		body  map[string]any
	}{
		{"name", item("name", "")},
		{"original_price_cents", item("original_price_cents", 0)},
		{"seckill_price_cents", item("seckill_price_cents", -5)},
		{"seckill_price_cents", item("seckill_price_cents", 20000)},
		{"stock", item("stock", 0)},
		{"stock", item("stock", 1_000_001)},
		{"stock_shards", item("stock_shards", 65)},
		{"stock_shards", item("stock_shards", -1)},
		{"stock_shards", item("stock_shards", 51)}, // more shards than units
		{"image_url", item("image_url", "javascript:alert(1)")},
		{"name", item("name", "a\x00b")},
		{"title", item("title", "a\x00b")},
		{"description", item("description", "a\x00b")},
	} {
		r := merchant.call("POST", "/api/merchant/activities/"+id+"/items", tt.body)
		if f, _ := r.json(t)["fields"].(map[string]any); r.Status != 400 || f[tt.field] == nil {
			t.Errorf("item with bad %s: %d %s", tt.field, r.Status, r.Body)
		}
	}
	var n int64
	s.DB.Model(&models.Item{}).Count(&n)
	if n != 0 {
		t.Errorf("bad items were stored: %d", n)
	}
	if r := merchant.call("GET", "/api/merchant/activities", nil); r.Status != 200 {
		t.Errorf("the merchant's list after the refusals: %d %s", r.Status, r.Body)
	}
}

func TestConsoleBoundaries(t *testing.T) {
	s := startLive(t, liveOpts{})
	now := s.Clock.Now()
	owner := withRole(t, s, "owner", models.RoleMerchant)
	rival := withRole(t, s, "rival", models.RoleMerchant)
	shopper := newBrowser(t, s.URL)
	shopper.register("shopper_x", passwordOf("shopper"))
	id := itoa(int64(owner.call("POST", "/api/merchant/activities", activityBody(now.Add(time.Hour), now.Add(2*time.Hour))).json(t)["id"].(float64)))

	for _, tt := range []struct{ method, path string }{
		{"GET", "/api/merchant/activities/" + id},
		{"PUT", "/api/merchant/activities/" + id},
		{"POST", "/api/merchant/activities/" + id + "/items"},
		{"POST", "/api/merchant/activities/" + id + "/submit"},
		{"GET", "/api/merchant/activities/" + id + "/stats"},
	} {
		var body any
		if tt.method != "GET" {
			body = map[string]any{}
			if strings.HasSuffix(tt.path, "/items") {
				body = goodItem
			} else if tt.method == "PUT" {
				body = activityBody(now.Add(time.Hour), now.Add(2*time.Hour))
			}
		}
		expect(t, "another merchant's "+tt.method+" "+tt.path, rival.call(tt.method, tt.path, body), 404, "not_found")
	}
	if r := rival.call("GET", "/api/merchant/activities", nil); strings.Contains(string(r.Body), "Double 11") {
		t.Error("a merchant sees another's activities")
	}
	for _, who := range []*browser{shopper, owner} {
		for _, tt := range []struct{ method, path string }{
			{"GET", "/api/admin/reviews"}, {"POST", "/api/admin/activities/" + id + "/approve"},
			{"POST", "/api/admin/activities/" + id + "/reject"}, {"GET", "/api/admin/activities/" + id + "/stats"},
			{"GET", "/api/admin/users"}, {"GET", "/api/admin/audit"},
		} {
			expect(t, tt.method+" "+tt.path, who.call(tt.method, tt.path, map[string]string{"reason": "x"}), 403, "forbidden")
		}
	}
	expect(t, "a shopper on the merchant console", shopper.call("GET", "/api/merchant/activities", nil), 403, "forbidden")
	admin := withRole(t, s, "admin_z", models.RoleAdmin)
	expect(t, "approving a draft", admin.call("POST", "/api/admin/activities/"+id+"/approve", nil), 409, "activity_state")
}

// The review queue shows what a reviewer checks (each item's image, description and prices, and the
// last rejection's reason), and the audit log says what changed, field by field, in words.
func TestReviewQueueAndAuditInWords(t *testing.T) {
	s := startLive(t, liveOpts{})
	now := s.Clock.Now()
	merchant := withRole(t, s, "words_shop", models.RoleMerchant)
	admin := withRole(t, s, "words_admin", models.RoleAdmin)
	id := itoa(int64(merchant.call("POST", "/api/merchant/activities", activityBody(now.Add(time.Hour), now.Add(2*time.Hour))).json(t)["id"].(float64)))
	itemID := itoa(int64(merchant.call("POST", "/api/merchant/activities/"+id+"/items", goodItem).json(t)["id"].(float64)))
	expect(t, "submit", merchant.call("POST", "/api/merchant/activities/"+id+"/submit", nil), 200, "")
	expect(t, "reject", admin.call("POST", "/api/admin/activities/"+id+"/reject", map[string]string{"reason": "the price looks wrong"}), 200, "")
	fixed := map[string]any{}
	for k, v := range goodItem {
		fixed[k] = v
	}
	fixed["seckill_price_cents"], fixed["description"] = 9900, "Boils fast. Now at its real price."
	expect(t, "fix", merchant.call("PUT", "/api/merchant/activities/"+id+"/items/"+itemID, fixed), 200, "")
	expect(t, "resubmit", merchant.call("POST", "/api/merchant/activities/"+id+"/submit", nil), 200, "")

	queue := string(admin.call("GET", "/admin", nil).Body)
	for _, want := range []string{"the price looks wrong", "Boils fast. Now at its real price.", "/assets/img/demo-1.svg", "¥99.00", "¥199.00"} {
		if !strings.Contains(queue, want) {
			t.Errorf("the review queue lacks %q", want)
		}
	}
	admin.setCookie("lang", "zh")
	audit := string(admin.call("GET", "/admin/audit", nil).Body)
	for _, want := range []string{"修改了商品“", "秒杀价", "¥9.90", "¥99.00", "驳回了活动", "the price looks wrong"} {
		if !strings.Contains(audit, want) {
			t.Errorf("the Chinese audit log lacks %q", want)
		}
	}
	if strings.Contains(audit, "seckill_price_cents") || strings.Contains(audit, `{&#34;`) {
		t.Error("the audit log shows raw JSON or field names")
	}
}

func TestAdminSearchRefusesTextPostgreSQLCannotTake(t *testing.T) {
	s := startLive(t, liveOpts{})
	admin := withRole(t, s, "search_chief", models.RoleAdmin)
	admin.setCookie("lang", "zh")
	for _, tt := range []struct{ name, path string }{
		{"a NUL", "/api/admin/users?q=a%00b"},
		{"invalid UTF-8", "/api/admin/users?q=%ff%fe"},
		{"a control character", "/api/admin/users?q=a%01"},
		{"a NUL on the console's page", "/admin/users?q=%00"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := admin.call("GET", tt.path, nil)
			if r.Status != 400 {
				t.Fatalf("%s: %d %s; want 400 bad_request", tt.path, r.Status, r.Body)
			}
			if !strings.HasPrefix(tt.path, "/api/") {
				return
			}
			body := r.json(t)
			fields, _ := body["fields"].(map[string]any)
			if body["error"] != "bad_request" || fields["q"] == nil || !strings.Contains(fields["q"].(string), "控制字符") {
				t.Errorf("%s: %s; want bad_request naming fields.q in Chinese", tt.path, r.Body)
			}
		})
	}
}
