package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"seckill/internal/testenv"
	"seckill/models"
)

// A merchant's emergency stop is the admins' on its own sales only: another merchant's answers 404, a
// resume of an admin's pause 403 (an admin resumes it), and each step is audited with its actor.
func TestMerchantStopsOnlyItsOwnSale(t *testing.T) {
	s := startLive(t, liveOpts{noBackground: true})
	shop, sale, _ := merchantSale(t, s, "own_stop_shop", 5)
	other := withRole(t, s, "other_stop_shop", models.RoleMerchant)
	admin := withRole(t, s, "own_stop_admin", models.RoleAdmin)
	mine := "/api/merchant/activities/" + itoa(sale.ID)

	noToken := newBrowser(t, s.URL)
	noToken.c.Jar = shop.c.Jar
	noToken.noAutoCSRF = true
	expect(t, "a pause without the CSRF token", noToken.call("POST", mine+"/pause", map[string]any{"reason": "x"}), 403, "csrf")
	expect(t, "a withdraw without the CSRF token", noToken.call("POST", mine+"/withdraw", nil), 403, "csrf")
	expect(t, "a reason over 2,000 characters", shop.call("POST", mine+"/pause", map[string]any{"reason": strings.Repeat("价", 2001)}), 400, "bad_request")
	expect(t, "another merchant pausing", other.call("POST", mine+"/pause", map[string]any{"reason": "x"}), 404, "not_found")
	expect(t, "another merchant ending", other.call("POST", mine+"/end", map[string]any{"reason": "x"}), 404, "not_found")
	expect(t, "a pause without a reason", shop.call("POST", mine+"/pause", map[string]any{"reason": " "}), 400, "bad_request")
	r := shop.call("POST", mine+"/pause", map[string]any{"reason": "a wrong price"})
	if j := r.json(t); r.Status != 200 || j["paused_at"] == nil || j["stopped_by"] != "merchant" || j["phase"] != "paused" {
		t.Fatalf("the merchant's pause: %d %s", r.Status, r.Body)
	}
	// The admins see who paused it and why.
	seen := admin.call("GET", "/admin", nil)
	if pg := string(seen.Body); !strings.Contains(pg, "Paused by the merchant since") || !strings.Contains(pg, "a wrong price") {
		t.Errorf("the admins' dashboard does not say the merchant paused it: %s", pg)
	}
	// Resumed by the merchant itself, with no reason (no body at all).
	expect(t, "the merchant resumes its own pause", shop.call("POST", mine+"/resume", nil), 200, "")
	// A reason is counted as the page's field counts it: 2,000 Chinese characters (6,000 bytes) pass.
	expect(t, "a pause with 2,000 Chinese characters", shop.call("POST", mine+"/pause", map[string]any{"reason": strings.Repeat("价", 2000)}), 200, "")
	// An admin takes the merchant's pause over (outside review: it answered "paused already"), and an
	// admin's pause only an admin resumes.
	expect(t, "an admin takes the merchant's pause over", admin.call("POST", "/api/admin/activities/"+itoa(sale.ID)+"/pause", map[string]any{"reason": "bots"}), 200, "")
	expect(t, "the merchant pauses it again", shop.call("POST", mine+"/pause", map[string]any{"reason": "mine"}), 409, "activity_state")
	expect(t, "the merchant resumes the admin's pause", shop.call("POST", mine+"/resume", map[string]any{}), 403, "forbidden")
	expect(t, "the admin resumes without a reason", admin.call("POST", "/api/admin/activities/"+itoa(sale.ID)+"/resume", map[string]any{"reason": ""}), 200, "")
	r = shop.call("POST", mine+"/end", map[string]any{"reason": "stock recalled"})
	if j := r.json(t); r.Status != 200 || j["ended_early"] != true || j["stopped_by"] != "merchant" || j["phase"] != "over" {
		t.Fatalf("the merchant's end: %d %s", r.Status, r.Body)
	}
	expect(t, "pausing an ended sale", shop.call("POST", mine+"/pause", map[string]any{"reason": "x"}), 409, "activity_state")

	var rows []models.AuditLog
	s.DB.Where("target = ? AND action LIKE 'activity.%'", "activity:"+itoa(sale.ID)).Order("id").Find(&rows)
	var got []string
	for _, row := range rows {
		got = append(got, row.Action+" by "+row.Actor)
	}
	want := "activity.pause by own_stop_shop, activity.resume by own_stop_shop, " +
		"activity.pause by own_stop_shop, activity.pause by own_stop_admin, " +
		"activity.resume by own_stop_admin, activity.end by own_stop_shop"
	if strings.Join(got, ", ") != want {
		t.Errorf("the audit says %q, want %q", strings.Join(got, ", "), want)
	}
}

// A sale in review goes back to the drafts by withdraw, and only from review; another merchant's
// answers 404.
func TestWithdrawTakesASaleBackFromReview(t *testing.T) {
	s := startLive(t, liveOpts{noBackground: true})
	shop := withRole(t, s, "withdraw_shop", models.RoleMerchant)
	other := withRole(t, s, "withdraw_other", models.RoleMerchant)
	id := draftWithItem(t, s, shop, "Typo sale")
	path := "/api/merchant/activities/" + itoa(id)
	expect(t, "withdrawing a draft", shop.call("POST", path+"/withdraw", nil), 409, "activity_state")
	expect(t, "submit", shop.call("POST", path+"/submit", nil), 200, "")
	expect(t, "another merchant withdrawing", other.call("POST", path+"/withdraw", nil), 404, "not_found")
	r := shop.call("POST", path+"/withdraw", nil)
	if r.Status != 200 || r.json(t)["state"] != "draft" {
		t.Fatalf("withdraw: %d %s", r.Status, r.Body)
	}
	expect(t, "changing it again", shop.call("PUT", path, map[string]any{"name": "Fixed sale",
		"starts_at": s.Clock.Now().Add(time.Hour), "ends_at": s.Clock.Now().Add(2 * time.Hour)}), 200, "")
	var n int64
	s.DB.Model(&models.AuditLog{}).Where("action = ? AND target = ?", "activity.withdraw", "activity:"+itoa(id)).Count(&n)
	if n != 1 {
		t.Errorf("%d audit rows of the withdraw, want 1", n)
	}
}

// draftWithItem makes a draft sale with one item through the merchant's API and answers its id.
func draftWithItem(t *testing.T, s *liveServer, shop *browser, name string) int64 {
	t.Helper()
	now := s.Clock.Now()
	r := shop.call("POST", "/api/merchant/activities", map[string]any{"name": name, "starts_at": now.Add(time.Hour), "ends_at": now.Add(2 * time.Hour)})
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	id := int64(r.json(t)["id"].(float64))
	it := shop.call("POST", "/api/merchant/activities/"+itoa(id)+"/items", map[string]any{"name": "Tea set", "image_url": "/assets/img/demo-3.svg",
		"original_price_cents": 59900, "seckill_price_cents": 5990, "stock": 10})
	if it.Status != 201 {
		t.Fatalf("add item: %d %s", it.Status, it.Body)
	}
	return id
}

// A rejection the merchant had not looked at is no decision to see once the sale is sent again: the
// console's badge stops counting it (outside review: a resubmitted sale still counted, marked "New").
func TestAResubmittedSaleLeavesTheBadge(t *testing.T) {
	s := startLive(t, liveOpts{noBackground: true})
	shop := withRole(t, s, "badge_shop", models.RoleMerchant)
	admin := withRole(t, s, "badge_admin", models.RoleAdmin)
	id := draftWithItem(t, s, shop, "Badge sale")
	path := "/api/merchant/activities/" + itoa(id)
	unseen := func() float64 {
		r := shop.call("GET", "/api/merchant/decisions", nil)
		if r.Status != 200 {
			t.Fatalf("decisions: %d %s", r.Status, r.Body)
		}
		return r.json(t)["unseen"].(float64)
	}
	expect(t, "submit", shop.call("POST", path+"/submit", nil), 200, "")
	expect(t, "reject", admin.call("POST", "/api/admin/activities/"+itoa(id)+"/reject", map[string]any{"reason": "a wrong price"}), 200, "")
	if n := unseen(); n != 1 {
		t.Fatalf("after the rejection the badge counts %v, want 1", n)
	}
	expect(t, "submit again", shop.call("POST", path+"/submit", nil), 200, "")
	if n := unseen(); n != 0 {
		t.Errorf("after sending it again the badge counts %v, want 0", n)
	}
}

// A sale ended before its start (its window moves to start..start, still in the future) is over for the
// stop in both roles' hands: pausing, resuming or ending it again answers 409 activity_state, writes no
// audit row and keeps the end's reason; the admins' dashboard no longer lists it among the running sales,
// the merchant's pages offer no stop, and the shoppers' catalog leaves it out.
func TestSaleEndedBeforeItsStartIsOver(t *testing.T) {
	s := startLive(t, liveOpts{noBackground: true})
	admin := withRole(t, s, "early_end_admin", models.RoleAdmin)
	for _, by := range []string{"admin", "merchant"} {
		t.Run("ended by the "+by, func(t *testing.T) {
			shop := withRole(t, s, "early_shop_"+by, models.RoleMerchant)
			now := s.Clock.Now()
			a, _ := testenv.Sale(t, s.DB, 5, now.Add(4*time.Hour), now.Add(6*time.Hour))
			u, err := models.UserByUsername(context.Background(), s.DB, "early_shop_"+by)
			if err != nil {
				t.Fatal(err)
			}
			s.DB.Model(&models.Activity{}).Where("id = ?", a.ID).Update("merchant_id", u.ID)
			adminBase, mine := "/api/admin/activities/"+itoa(a.ID), "/api/merchant/activities/"+itoa(a.ID)
			ender, endBase := admin, adminBase
			if by == "merchant" {
				ender, endBase = shop, mine
			}
			r := ender.call("POST", endBase+"/end", map[string]any{"reason": "x"})
			if j := r.json(t); r.Status != 200 || j["phase"] != "over" || j["ended_early"] != true {
				t.Fatalf("the end before the start: %d %s", r.Status, r.Body)
			}
			for _, who := range []struct {
				b    *browser
				base string
			}{{admin, adminBase}, {shop, mine}} {
				expect(t, "pausing it", who.b.call("POST", who.base+"/pause", map[string]any{"reason": "y"}), 409, "activity_state")
				expect(t, "resuming it", who.b.call("POST", who.base+"/resume", nil), 409, "activity_state")
				expect(t, "ending it again", who.b.call("POST", who.base+"/end", map[string]any{"reason": "again"}), 409, "activity_state")
			}
			var n int64
			s.DB.Model(&models.AuditLog{}).Where("target = ? AND action LIKE 'activity.%'", "activity:"+itoa(a.ID)).Count(&n)
			if n != 1 {
				t.Errorf("%d audit rows, want the end's only", n)
			}
			got := shop.call("GET", mine, nil).json(t)
			if got["stop_reason"] != "x" || got["phase"] != "over" {
				t.Errorf("the merchant sees reason %v, phase %v; want the end's reason x, over", got["stop_reason"], got["phase"])
			}
			stopForm := `data-stop="/api/admin/activities/` + itoa(a.ID) + `"`
			if pg := string(admin.call("GET", "/admin", nil).Body); strings.Contains(pg, stopForm) {
				t.Error("the admins' dashboard offers to pause or end a sale that is over")
			}
			if cat := string(newBrowser(t, s.URL).call("GET", "/api/activities", nil).Body); strings.Contains(cat, `"id":`+itoa(a.ID)+`,`) {
				t.Error("the shoppers' catalog still lists a sale that is over")
			}
			pg := string(shop.call("GET", "/merchant/activities/"+itoa(a.ID), nil).Body)
			if strings.Contains(pg, `data-stop="/api/merchant/activities/`+itoa(a.ID)+`"`) || !strings.Contains(pg, "This sale is over") {
				t.Error("the merchant's page offers to pause or end a sale that is over")
			}
		})
	}
}
