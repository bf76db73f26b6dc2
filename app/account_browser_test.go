package app

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// The account page, in English and in Chinese: a shopper logged in on two browsers sees both sessions,
// this one marked; "Log out" of the other ends it (its next /api/me is 401) and this one goes on; a
// password form with two mistakes shows both beside their fields, in the page's language.
func TestAccountPageEndsAnotherDevice(t *testing.T) {
	s := startLive(t, liveOpts{only: []string{"sessions"}})
	// Two browsers that share nothing: the shopper's own, and another where the same account is logged in.
	// (A second browser context of one Chromium cannot open a tab when headless.)
	mine, other := chrome(t), chrome(t)
	for _, tt := range []struct {
		lang, user, title, thisDevice, short string
	}{
		{"en", "devices_en", "Your account", "This device", "must be 8 to 72 bytes long"},
		{"zh", "devices_zh", "我的账号", "本设备", "长度须为 8 到 72 字节"},
	} {
		t.Run(tt.lang, func(t *testing.T) {
			registerInBrowser(t, mine, s.URL, tt.user)
			loginInBrowser(t, other, s.URL, tt.user, passwordOf("browser"))

			var title, marked string
			var rows int
			run(t, mine, "open the account page",
				chromedp.Navigate(s.URL+"/lang/"+tt.lang),
				chromedp.Navigate(s.URL+"/account"),
				chromedp.WaitVisible("#devices li[data-current]", chromedp.ByQuery),
				chromedp.Text("h1", &title, chromedp.ByQuery),
				chromedp.Text("#devices li[data-current] .this-device", &marked, chromedp.ByQuery),
				chromedp.Evaluate(`document.querySelectorAll("#devices li").length`, &rows),
			)
			if title != tt.title || marked != tt.thisDevice || rows != 2 {
				t.Fatalf("the account page says %q, marks %q, lists %d sessions; want %q, %q, 2", title, marked, rows, tt.title, tt.thisDevice)
			}
			shot(t, mine, "account-devices-"+tt.lang)

			run(t, mine, "log the other browser out",
				chromedp.Click("#devices li:not([data-current]) button[data-end-session]", chromedp.ByQuery),
				chromedp.WaitNotPresent("#devices li:not([data-current])", chromedp.ByQuery),
			)
			var otherMe, mineMe int
			run(t, other, "the other browser asks who it is",
				chromedp.Evaluate(`fetch("/api/me").then(r => r.status)`, &otherMe, awaitPromise),
			)
			run(t, mine, "this browser asks who it is",
				chromedp.Evaluate(`fetch("/api/me").then(r => r.status)`, &mineMe, awaitPromise),
			)
			if otherMe != 401 || mineMe != 200 {
				t.Errorf("after logging the other browser out: its /api/me %d (want 401), this one's %d (want 200)", otherMe, mineMe)
			}

			var currentErr, newErr, typed string
			run(t, mine, "a password form with two mistakes",
				chromedp.SendKeys("#new_password", "short", chromedp.ByID),
				chromedp.Click("#password-form button[type=submit]", chromedp.ByQuery),
				chromedp.WaitVisible(`[data-error-for="new_password"]:not(:empty)`, chromedp.ByQuery),
				chromedp.Text(`[data-error-for="current_password"]`, &currentErr, chromedp.ByQuery),
				chromedp.Text(`[data-error-for="new_password"]`, &newErr, chromedp.ByQuery),
				chromedp.Value("#new_password", &typed, chromedp.ByID),
			)
			if currentErr == "" || !strings.Contains(newErr, tt.short) || typed != "short" {
				t.Errorf("the form says %q and %q, keeps %q; want the current password required, %q, and what was typed", currentErr, newErr, typed, tt.short)
			}
		})
	}
}
