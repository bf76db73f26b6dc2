package app

import (
	"strings"
	"testing"

	"seckill/handlers"
)

// Every page's icon is there (no 404 on every page), and a logged-out page's script knows it need not ask
// /api/me (no 401 logged for every visitor): a readable hint comes with a session and goes with it.
func TestFaviconAndSignedInHint(t *testing.T) {
	s := startLive(t, liveOpts{noBackground: true})
	b := newBrowser(t, s.URL)
	if r := b.call("GET", "/favicon.ico", nil); r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "image/svg+xml") {
		t.Errorf("/favicon.ico: %d %s", r.Status, r.Header.Get("Content-Type"))
	}
	if b.cookie(handlers.SignedInCookie) != "" {
		t.Fatal("a new browser has the signed-in hint")
	}
	b.register("hinted", passwordOf("hinted"))
	if b.cookie(handlers.SignedInCookie) != "1" {
		t.Error("registering (a session) did not set the signed-in hint")
	}
	expect(t, "log out", b.call("POST", "/api/auth/logout", nil), 204, "")
	if b.cookie(handlers.SignedInCookie) != "" {
		t.Error("logging out left the signed-in hint")
	}
	// The Chinese footer says the name once.
	b.setCookie("lang", "zh")
	if page := string(b.call("GET", "/", nil).Body); strings.Count(page, "秒杀 · 绝不超卖的秒杀") != 0 || !strings.Contains(page, "绝不超卖") {
		t.Error("the Chinese footer repeats the name")
	}
}
