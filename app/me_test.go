package app

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"testing"
	"time"

	"seckill/handlers"
	"seckill/models"
)

// GET /api/me answers who is logged in, in the role the session check knows now, and a CSRF token that
// a POST takes, all from memory: not one database statement, whatever the page asks it.
func TestMeAnswersFromTheSessionWithoutTheDatabase(t *testing.T) {
	s := startLive(t, liveOpts{noBackground: true})
	shopper := newBrowser(t, s.URL)
	shopperID := shopper.register("Mei_Shopper", passwordOf("mei"))
	admin := newBrowser(t, s.URL)
	adminID := admin.register("me_boss", passwordOf("boss"))
	if _, err := models.SetRole(t.Context(), s.DB, models.Actor{ID: adminID, Username: "me_boss"}, adminID, models.RoleAdmin, time.Now()); err != nil {
		t.Fatal(err)
	}
	admin.getCSRF()
	expect(t, "the admin's login", admin.call("POST", "/api/auth/login", map[string]string{"username": "me_boss", "password": passwordOf("boss")}), 200, "")

	// A page loads: it has the session and nothing else (no CSRF cookie, no token).
	page := newBrowser(t, s.URL)
	page.name = "the shopper's page"
	page.setCookie(handlers.SessionCookie, shopper.cookie(handlers.SessionCookie))
	page.noAutoCSRF = true
	me := func(what string) map[string]any {
		t.Helper()
		before := dbCounts(t, s.Srv)
		r := page.call("GET", "/api/me", nil)
		if d := dbDelta(before, dbCounts(t, s.Srv)); len(d) > 0 {
			t.Errorf("%s: /api/me made database statements: %v", what, d)
		}
		if r.Status != 200 {
			t.Fatalf("%s: /api/me = %d %s", what, r.Status, r.Body)
		}
		if cc := r.Header.Get("Cache-Control"); cc != "no-store" {
			t.Errorf("%s: /api/me's Cache-Control is %q, want no-store", what, cc)
		}
		return r.json(t)
	}
	j := me("a first load")
	tok, _ := j["csrf_token"].(string)
	if j["id"] != float64(shopperID) || j["username"] != "Mei_Shopper" || j["role"] != models.RoleShopper || tok == "" {
		t.Fatalf("/api/me = %v, want the shopper %d Mei_Shopper with a CSRF token", j, shopperID)
	}
	if c := page.cookie(handlers.CSRFCookie); c != tok {
		t.Errorf("/api/me's token %q is not the CSRF cookie it set (%q)", tok, c)
	}
	// A second load keeps the browser's token.
	if again := me("a second load"); again["csrf_token"] != tok {
		t.Errorf("a second /api/me changed the token: %v, had %q", again["csrf_token"], tok)
	}

	// An admin makes the shopper a merchant: the next /api/me says so, still without a query.
	expect(t, "the role change", admin.call("POST", "/api/admin/users/"+itoa(shopperID)+"/role", map[string]string{"role": models.RoleMerchant}), 200, "")
	if j := me("after the role change"); j["role"] != models.RoleMerchant || j["username"] != "Mei_Shopper" {
		t.Errorf("after the role change /api/me = %v, want the merchant Mei_Shopper", j)
	}

	// The token /api/me gave is the one a POST needs: the page logs out with it, and then /api/me is 401.
	page.csrf = tok
	expect(t, "logout with /api/me's token", page.call("POST", "/api/auth/logout", nil), 204, "")
	expect(t, "/api/me after logout", page.call("GET", "/api/me", nil), 401, "unauthenticated")
	expect(t, "/api/me of the shopper's other device after logout", shopper.call("GET", "/api/me", nil), 401, "unauthenticated")

	// A blocked account's session answers 401 too.
	victim := newBrowser(t, s.URL)
	victimID := victim.register("me_blocked", passwordOf("blocked"))
	expect(t, "/api/me before the block", victim.call("GET", "/api/me", nil), 200, "")
	expect(t, "the block", admin.call("POST", "/api/admin/users/"+itoa(victimID)+"/block", map[string]any{"reason": "a test"}), 200, "")
	expect(t, "/api/me of a blocked account", victim.call("GET", "/api/me", nil), 401, "unauthenticated")
}

// formatOneSession spells a session cookie as builds before names were in it did (format 1).
func formatOneSession(secret string, userID, version int64, role byte, expires time.Time) string {
	buf := make([]byte, 42)
	buf[0] = 1
	binary.BigEndian.PutUint64(buf[1:], uint64(userID))
	binary.BigEndian.PutUint64(buf[9:], uint64(version))
	binary.BigEndian.PutUint64(buf[17:], uint64(expires.Unix()))
	buf[25] = role
	copy(buf[26:], "sixteen byte id!")
	k := hmac.New(sha256.New, []byte(secret))
	k.Write([]byte("session"))
	m := hmac.New(sha256.New, k.Sum(nil))
	m.Write(buf)
	return base64.RawURLEncoding.EncodeToString(m.Sum(buf))
}

// A session cookie made by the build before this one still works: its first /api/me reads the name
// (one statement) and gives the cookie back in the current format, and the next costs nothing.
func TestMeUpgradesAnOldSessionCookie(t *testing.T) {
	s := startLive(t, liveOpts{noBackground: true})
	id := newBrowser(t, s.URL).register("Old_Cookie", passwordOf("old"))

	page := newBrowser(t, s.URL)
	old := formatOneSession(s.Cfg.SessionSecret, id, 1, 1, s.Clock.Now().Add(time.Hour))
	page.setCookie(handlers.SessionCookie, old)
	before := dbCounts(t, s.Srv)
	r := page.call("GET", "/api/me", nil)
	if r.Status != 200 || r.json(t)["username"] != "Old_Cookie" || r.json(t)["role"] != models.RoleShopper || r.json(t)["csrf_token"] == "" {
		t.Fatalf("/api/me with an old cookie: %d %s", r.Status, r.Body)
	}
	if d := dbDelta(before, dbCounts(t, s.Srv)); d["users/read"] != 1 || d[""] != 1 {
		t.Errorf("/api/me with an old cookie made %v, want one read of users", d)
	}
	upgraded := page.cookie(handlers.SessionCookie)
	if upgraded == old || upgraded == "" {
		t.Fatalf("the old cookie was not given back in the current format: %q", upgraded)
	}
	before = dbCounts(t, s.Srv)
	if r := page.call("GET", "/api/me", nil); r.Status != 200 || r.json(t)["username"] != "Old_Cookie" {
		t.Fatalf("/api/me with the upgraded cookie: %d %s", r.Status, r.Body)
	}
	if d := dbDelta(before, dbCounts(t, s.Srv)); len(d) > 0 {
		t.Errorf("/api/me with the upgraded cookie made statements: %v", d)
	}
	// The upgraded cookie is the same session: logging out ends it, and the old spelling with it.
	page.getCSRF()
	expect(t, "logout", page.call("POST", "/api/auth/logout", nil), 204, "")
	replay := newBrowser(t, s.URL)
	replay.setCookie(handlers.SessionCookie, old)
	expect(t, "the old cookie after logout", replay.call("GET", "/api/me", nil), 401, "unauthenticated")
}
