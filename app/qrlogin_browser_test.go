package app

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"seckill/handlers"
	"seckill/internal/geo/geotest"
	"seckill/internal/testenv"
)

// awaitPromise lets chromedp.Evaluate wait for the promise a script returns.
func awaitPromise(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }

// TestQRLoginPhonePicksTheNumberInABrowser: a computer (behind the proxy at 203.0.113.7, in Paris by the
// location database) opens the login page; a logged-in phone on another network (198.51.100.9), on a
// 375 px screen, opens the address in its QR code and is shown the computer's address, city, browser
// and time, the warning that the computer is not on its network, and a box to type the number in, with
// Confirm off until two digits are typed. The computer's page shows its number once the phone has
// scanned; the phone types it and confirms; the computer is logged in. In Chinese, a phone that types
// another number is told the login was cancelled and the computer is not logged in. A phone on the
// computer's own network is shown no warning and three numbers; it picks the computer's and confirms.
func TestQRLoginPhonePicksTheNumberInABrowser(t *testing.T) {
	testenv.Long(t)
	db := filepath.Join(t.TempDir(), "cities.mmdb")
	err := geotest.Write(db, map[string]geotest.Place{
		"203.0.113.0/24": {CityEN: "Paris", CityZH: "巴黎", CountryEN: "France", CountryZH: "法国"},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := startLive(t, liveOpts{only: []string{"stops"}, tune: func(c *Config) { c.TrustedProxies, c.GeoIPDB = "127.0.0.1", db }})
	owner := newBrowser(t, s.URL)
	owner.register("qr_browser_owner", "owner password")
	u, _ := url.Parse(s.URL)
	from := func(ip string) chromedp.Action {
		return chromedp.Tasks{network.Enable(), network.SetExtraHTTPHeaders(network.Headers{"X-Real-IP": ip})}
	}

	// Two browsers, each with its own cookies. (A second browser context in one headless Chromium would
	// be lighter, but Debian's build refuses to open a tab in one: "no browser is open".)
	pc, phone := chrome(t), chrome(t)
	var src string
	run(t, pc, "the computer opens the login page",
		from("203.0.113.7"),
		chromedp.Navigate(s.URL+"/lang/en"),
		chromedp.Navigate(s.URL+"/login"),
		chromedp.WaitVisible("#qr-panel img[src^='data:image/png']", chromedp.ByQuery),
		chromedp.AttributeValue("#qr-panel img", "src", &src, nil, chromedp.ByQuery),
	)
	phoneURL := decodeQR(t, src)

	var warning, ip, city, ua string
	var choices []string
	var confirmOff, typeShown bool
	var width int
	run(t, phone, "the phone, logged in on another network, opens the code's address",
		from("198.51.100.9"),
		chromedp.EmulateViewport(375, 800),
		chromedp.Navigate(s.URL+"/lang/en"),
		network.SetCookie(handlers.SessionCookie, owner.cookie(handlers.SessionCookie)).WithDomain(u.Hostname()).WithPath("/").WithHTTPOnly(true),
		chromedp.Navigate(phoneURL),
		chromedp.WaitVisible("#qr-typed", chromedp.ByQuery),
		chromedp.WaitVisible(".qr-elsewhere", chromedp.ByQuery),
		chromedp.Text(".qr-elsewhere", &warning, chromedp.ByQuery),
		chromedp.Text("dd.pc-ip", &ip, chromedp.ByQuery),
		chromedp.Text("dd.pc-city", &city, chromedp.ByQuery),
		chromedp.Text("dd.pc-ua", &ua, chromedp.ByQuery),
		chromedp.Evaluate(`[...document.querySelectorAll(".qr-choices label")].map(l => l.textContent.trim())`, &choices),
		chromedp.Evaluate(`document.querySelector("#qr-phone .confirm").disabled`, &confirmOff),
		chromedp.Evaluate(`document.documentElement.scrollWidth`, &width),
	)
	if !strings.Contains(warning, "This computer is not on the same network as your phone") || !strings.Contains(warning, "cancel") {
		t.Errorf("the phone warns %q", warning)
	}
	if ip != "203.0.113.7" || city != "Paris, France" || !strings.Contains(ua, "Chrome") {
		t.Errorf("the phone shows the computer at %q in %q with %q", ip, city, ua)
	}
	if len(choices) != 0 || !confirmOff {
		t.Errorf("the phone elsewhere offers %q with Confirm disabled %v, want no numbers to tap and Confirm off until one is typed", choices, confirmOff)
	}
	if width > 375 {
		t.Errorf("the phone's page is %d px wide on a 375 px screen", width)
	}
	shot(t, phone, "qr-phone-elsewhere")

	var number string
	var imgHidden bool
	run(t, pc, "the computer shows its number",
		chromedp.WaitVisible("#qr-panel .qr-number", chromedp.ByQuery),
		chromedp.Text("#qr-panel .qr-number", &number, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector("#qr-panel img").hidden`, &imgHidden),
	)
	if !twoDigits.MatchString(number) || !imgHidden {
		t.Fatalf("the computer shows %q (its QR code hidden: %v)", number, imgHidden)
	}
	shot(t, pc, "qr-computer-number")

	var said string
	run(t, phone, "type the computer's number, confirm",
		chromedp.SendKeys("#qr-typed", number, chromedp.ByQuery),
		chromedp.Click("#qr-phone .confirm", chromedp.ByQuery),
		chromedp.WaitVisible(`//p[contains(@class, "qr-message")][normalize-space(.) != ""]`),
		chromedp.Text(".qr-message", &said, chromedp.ByQuery),
	)
	if !strings.Contains(said, "the computer is now logged in") {
		t.Errorf("after Confirm the phone says %q", said)
	}
	var me string
	run(t, pc, "the computer is logged in and leaves the login page",
		chromedp.WaitVisible(`//h1[contains(., "Flash sales")]`),
		chromedp.Evaluate(`fetch("/api/me").then(r => r.json()).then(j => j.username || "")`, &me, awaitPromise),
	)
	if me != "qr_browser_owner" {
		t.Errorf("the computer is logged in as %q, want the phone's user", me)
	}

	// In Chinese, a wrong number: the phone says so, the computer is not logged in, the code is dead.
	other := behind(newBrowser(t, s.URL), "203.0.113.7")
	id := scannedBy(t, s, other, phone, "zh", "#qr-typed")
	right := qrNumber(t, other, id)
	wrong := fmt.Sprintf("%02d", (atoi(t, right)+1)%100)
	run(t, phone, "the Chinese page",
		chromedp.Text(".qr-elsewhere", &warning, chromedp.ByQuery),
		chromedp.Text("dd.pc-city", &city, chromedp.ByQuery),
		chromedp.Evaluate(`document.documentElement.scrollWidth`, &width),
	)
	if !strings.Contains(warning, "这台电脑与您的手机不在同一网络") || city != "法国 巴黎" || width > 375 {
		t.Errorf("the Chinese phone page warns %q, shows the city %q and is %d px wide", warning, city, width)
	}
	run(t, phone, "type another number, confirm",
		chromedp.SendKeys("#qr-typed", wrong, chromedp.ByQuery),
		chromedp.Click("#qr-phone .confirm", chromedp.ByQuery),
		chromedp.WaitVisible(`//p[contains(@class, "qr-message")][normalize-space(.) != ""]`),
		chromedp.Text(".qr-message", &said, chromedp.ByQuery),
	)
	if !strings.Contains(said, "数字不对：本次登录已取消") {
		t.Errorf("after a wrong pick the phone says %q", said)
	}
	if r := other.call("GET", "/api/qr/login/"+id, nil); r.json(t)["state"] != "cancelled" {
		t.Errorf("the computer's code after a wrong pick: %s, want cancelled", r.Body)
	}
	if status, _ := other.me(); status != 401 {
		t.Error("the computer got logged in by a wrong pick")
	}

	// A computer on the phone's own network: no warning, no city the database does not know, three
	// numbers to tap; the phone picks the computer's and confirms.
	near := behind(newBrowser(t, s.URL), "198.51.100.20")
	id = scannedBy(t, s, near, phone, "en", ".qr-choices label")
	number = qrNumber(t, near, id)
	var warned, cityShown bool
	run(t, phone, "no warning on the same network, three numbers",
		chromedp.Evaluate(`!document.querySelector(".qr-elsewhere").hidden`, &warned),
		chromedp.Evaluate(`!document.querySelector("dd.pc-city").hidden`, &cityShown),
		chromedp.Evaluate(`!document.querySelector(".qr-type").hidden`, &typeShown),
		chromedp.Evaluate(`[...document.querySelectorAll(".qr-choices label")].map(l => l.textContent.trim())`, &choices),
		chromedp.Evaluate(`document.querySelector("#qr-phone .confirm").disabled`, &confirmOff),
		chromedp.Evaluate(`document.documentElement.scrollWidth`, &width),
	)
	if warned || cityShown || typeShown {
		t.Errorf("a computer on the phone's network: warned %v, a city shown %v, a box to type in %v", warned, cityShown, typeShown)
	}
	if len(choices) != 3 || !slices.Contains(choices, number) || !confirmOff || width > 375 {
		t.Errorf("the phone offers %q (the computer's is %s), Confirm off %v, %d px wide", choices, number, confirmOff, width)
	}
	shot(t, phone, "qr-phone-same-network")
	run(t, phone, "pick the computer's number, confirm",
		chromedp.Click(qrChoice(number)),
		chromedp.Click("#qr-phone .confirm", chromedp.ByQuery),
		chromedp.WaitVisible(`//p[contains(@class, "qr-message")][normalize-space(.) != ""]`),
		chromedp.Text(".qr-message", &said, chromedp.ByQuery),
	)
	near.call("GET", "/api/qr/login/"+id, nil)
	if status, name := near.me(); status != 200 || name != "qr_browser_owner" || !strings.Contains(said, "logged in") {
		t.Errorf("after picking the number the phone says %q and the computer's /api/me is %d %q", said, status, name)
	}
}

// scannedBy has the computer make a code and the phone open its page in lang, scanning it, until what
// shows the phone's way to give the number (ready) is visible.
func scannedBy(t *testing.T, s *liveServer, pc *browser, phone context.Context, lang, ready string) string {
	t.Helper()
	id := newQR(t, s, pc)
	run(t, phone, "the phone opens another code in "+lang,
		chromedp.Navigate(s.URL+"/lang/"+lang),
		chromedp.Navigate(s.URL+"/m/qr/"+id),
		chromedp.WaitVisible(ready, chromedp.ByQuery),
	)
	return id
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
