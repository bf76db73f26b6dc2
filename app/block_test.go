package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"seckill/internal/testenv"
	"seckill/models"

	"github.com/chromedp/chromedp"
)

// An admin blocks a shopper: the shopper's sessions end on every instance at once, it cannot log in (a
// right password says blocked, a wrong one says no more than ever), join a line or buy; its orders stay.
// Unblocked, it logs in again.
func TestBlockedUserIsLoggedOutEverywhere(t *testing.T) {
	db := testenv.Postgres(t)
	rdb := testenv.Redis(t)
	workers := []string{"sessions", "order_consumer"}
	a := startLive(t, liveOpts{db: db, rdb: rdb, only: workers})
	b := startLive(t, liveOpts{db: db, rdb: rdb, only: workers})
	admin := withRole(t, a, "block_chief", models.RoleAdmin)
	item, _ := newPaySale(t, a, 5)
	onA, order := bareOrderFor(t, a, item, "Block_Shopper")
	// The same browser on the other instance (the cookie is good on every instance).
	onB := newBrowser(t, b.URL)
	onB.setCookie("sk_session", onA.cookie("sk_session"))
	for name, br := range map[string]*browser{"a": onA, "b": onB} {
		if status, who := br.me(); status != 200 || who != "Block_Shopper" {
			t.Fatalf("before the block, instance %s: %d %q", name, status, who)
		}
	}

	// Found by part of its name, in any case; a % in the search is a character, not a wildcard.
	found := admin.call("GET", "/api/admin/users?q=shopp", nil)
	if found.Status != 200 || !strings.Contains(string(found.Body), `"username":"Block_Shopper"`) || found.Header.Get("X-Total-Count") != "1" {
		t.Fatalf("searching for shopp: %d %s", found.Status, found.Body)
	}
	if r := admin.call("GET", "/api/admin/users?q=%25", nil); r.Status != 200 || r.Header.Get("X-Total-Count") != "0" {
		t.Errorf("searching for %%: %d %s", r.Status, r.Body)
	}
	id := onA.call("GET", "/api/me", nil).json(t)["id"].(float64)
	path := "/api/admin/users/" + itoa(int64(id))

	expect(t, "a shopper blocking", onA.call("POST", path+"/block", map[string]any{"reason": "x"}), 403, "forbidden")
	expect(t, "a block without a reason", admin.call("POST", path+"/block", map[string]any{"reason": ""}), 400, "bad_request")
	adminID := admin.call("GET", "/api/me", nil).json(t)["id"].(float64)
	expect(t, "an admin blocking itself", admin.call("POST", "/api/admin/users/"+itoa(int64(adminID))+"/block", map[string]any{"reason": "oops"}), 409, "conflict")
	const reason = "bot traffic from this account"
	r := admin.call("POST", path+"/block", map[string]any{"reason": reason})
	if r.Status != 200 || r.json(t)["blocked_at"] == nil || r.json(t)["block_reason"] != reason {
		t.Fatalf("block: %d %s", r.Status, r.Body)
	}
	testenv.Eventually(t, 10*time.Second, "the blocked shopper's session to end on both instances", func() bool {
		sa, _ := onA.me()
		sb, _ := onB.me()
		return sa == 401 && sb == 401
	})
	login := newBrowser(t, b.URL)
	expect(t, "logging in blocked", login.call("POST", "/api/auth/login", map[string]any{"username": "Block_Shopper", "password": passwordOf("Block_Shopper")}), 403, "blocked")
	expect(t, "a wrong password for a blocked account", login.call("POST", "/api/auth/login", map[string]any{"username": "Block_Shopper", "password": "not it at all"}), 401, "bad_credentials")
	expect(t, "buying blocked", onB.call("POST", "/api/items/"+itoa(item.ID)+"/buy/"+strings.Repeat("0", 32), nil), 401, "unauthenticated")
	if _, err := models.OrderByNo(context.Background(), db, order.OrderNo); err != nil {
		t.Errorf("the blocked shopper's order is gone: %v", err)
	}
	var row models.AuditLog
	db.Where("action = ? AND target = ?", "user.block", "user:"+itoa(int64(id))).Take(&row)
	if row.Actor != "block_chief" || !strings.Contains(row.After, reason) {
		t.Errorf("the block's audit row: %+v", row)
	}
	if pg := admin.call("GET", "/admin/users?q=block_sh", nil); pg.Status != 200 || !strings.Contains(string(pg.Body), reason) {
		t.Errorf("the users page does not show the block: %d", pg.Status)
	}

	// Unblocked: it logs in again.
	expect(t, "unblock", admin.call("POST", path+"/unblock", nil), 200, "")
	if r := login.call("POST", "/api/auth/login", map[string]any{"username": "Block_Shopper", "password": passwordOf("Block_Shopper")}); r.Status != 200 {
		t.Errorf("logging in after the unblock: %d %s", r.Status, r.Body)
	}
}

// TestBlockInABrowser: an admin, in Chinese, finds a shopper and blocks it on one instance; the shopper,
// on another, is logged out at its next page.
func TestBlockInABrowser(t *testing.T) {
	testenv.Long(t)
	db := testenv.Postgres(t)
	rdb := testenv.Redis(t)
	a := startLive(t, liveOpts{db: db, rdb: rdb})
	b := startLive(t, liveOpts{db: db, rdb: rdb})
	withRole(t, a, "block_admin", models.RoleAdmin)
	shopper := chrome(t)
	registerInBrowser(t, shopper, b.URL, "browser_blocked")
	run(t, shopper, "the orders page", chromedp.Navigate(b.URL+"/orders"), chromedp.WaitVisible(".orders, main p", chromedp.ByQuery))

	admin := chrome(t)
	loginInBrowser(t, admin, a.URL, "block_admin", passwordOf("block_admin"))
	var notice string
	run(t, admin, "block in Chinese",
		chromedp.Navigate(a.URL+"/lang/zh"),
		chromedp.Navigate(a.URL+"/admin/users?q=browser_bl"),
		chromedp.WaitVisible(".block-form input[name=reason]", chromedp.ByQuery),
		chromedp.SendKeys(".block-form input[name=reason]", "刷单", chromedp.ByQuery),
		chromedp.Click(".block-form button[type=submit]", chromedp.ByQuery),
		chromedp.WaitVisible("tr.blocked .notice", chromedp.ByQuery),
		chromedp.Text("tr.blocked .notice", &notice, chromedp.ByQuery),
	)
	if !strings.Contains(notice, "封禁于") || !strings.Contains(notice, "刷单") {
		t.Errorf("the users page says %q after the block", notice)
	}
	shot(t, admin, "admin-user-blocked")
	var url string
	run(t, shopper, "the next page on the other instance",
		chromedp.Navigate(b.URL+"/orders"),
		chromedp.WaitVisible("#username", chromedp.ByID),
		chromedp.Location(&url),
	)
	if !strings.Contains(url, "/login") {
		t.Errorf("the blocked shopper's next page is %s, want the login page", url)
	}
}
