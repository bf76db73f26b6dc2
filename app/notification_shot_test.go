package app

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"seckill/internal/testenv"
)

// desktopChrome is Chromium with a window on the X display of $DISPLAY (not headless), so that a page's
// notifications go to the desktop's notification daemon over the D-Bus session bus of
// $DBUS_SESSION_BUS_ADDRESS, as a shopper's do. It speaks lang, as its person's would (its menus too,
// where Debian's chromium-l10n is installed), and so offers no translation of the shop's pages.
func desktopChrome(t *testing.T, lang string) context.Context {
	t.Helper()
	path := os.Getenv("CHROMIUM")
	if path == "" {
		path = "chromium"
	}
	profile, err := os.MkdirTemp("", "seckill-chromium-desktop-")
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.Flag("headless", false), chromedp.Flag("hide-scrollbars", false),
		// No "controlled by automated test software" bar over the page.
		chromedp.Flag("enable-automation", false),
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-component-update", true), chromedp.UserDataDir(profile),
		chromedp.Flag("window-position", "0,0"), chromedp.WindowSize(1280, 800),
	)
	if lang == "zh" {
		// English first all the same: the shared registration step reads the English page; the shopper
		// then picks Chinese on the page (the shop's language switch), as openTurnTabIn does.
		opts = append(opts, chromedp.Env("LANGUAGE=zh_CN"), chromedp.Flag("lang", "zh-CN"), chromedp.Flag("accept-lang", "en-US,en,zh-CN,zh"))
	} else {
		opts = append(opts, chromedp.Env("LANGUAGE=en_US"), chromedp.Flag("lang", "en-US"), chromedp.Flag("accept-lang", "en-US,en"))
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() {
		cancelTimeout()
		cancel()
		cancelAlloc()
		for range 5 {
			if os.RemoveAll(profile) == nil {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("start Chromium at %s on display %s: %v", path, os.Getenv("DISPLAY"), err)
	}
	return ctx
}

// dunstctl asks the notification daemon (dunst) what it shows, or tells it to close all.
func dunstctl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("dunstctl", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("dunstctl %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestTurnNotificationOnTheDesktop takes the README's screenshot of the turn's notification as a desktop
// shows it: the item page in a background tab, the turn coming, and the notification drawn by the
// desktop's daemon over the browser, the whole X screen taken. It needs a desktop: an X display, a D-Bus
// session and dunst, which scripts/notification-shot.sh starts (Xvfb) before it runs this test with
// NOTIFICATION_SHOT_DIR set; without that variable it is skipped (CI has no display).
func TestTurnNotificationOnTheDesktop(t *testing.T) {
	dir := os.Getenv("NOTIFICATION_SHOT_DIR")
	if dir == "" {
		t.Skip("NOTIFICATION_SHOT_DIR is not set: scripts/notification-shot.sh runs this test on a desktop of its own")
	}
	testenv.Long(t)
	if os.Getenv("DISPLAY") == "" || os.Getenv("DBUS_SESSION_BUS_ADDRESS") == "" {
		t.Fatal("no DISPLAY or no DBUS_SESSION_BUS_ADDRESS: run scripts/notification-shot.sh")
	}
	for _, lang := range []string{"en", "zh"} {
		t.Run(lang, func(t *testing.T) {
			dunstctl(t, "close-all")
			s, item := turnRig(t)
			p := openTurnTabIn(t, desktopChrome(t, lang), s, "desk_"+lang, lang)
			p.join(item.ID)
			p.away()
			start := letIn(t, s, item.ID)
			s.Clock.Set(start.Add(5 * time.Second))
			// The shopper looks at the shop's home page meanwhile, in another tab.
			run(t, p.other, "the home page in front", chromedp.Navigate(s.URL+"/"))
			p.thaw()
			testenv.Eventually(t, 15*time.Second, "the page to announce the turn", func() bool {
				n, _, _ := p.alerts()
				return len(n) == 1
			})
			// The page made it; the daemon must show it (Chromium sends it over D-Bus, not drawn by itself).
			testenv.EventuallySaw(t, 5*time.Second, "the notification on the desktop", func() (bool, string) {
				got := dunstctl(t, "count", "displayed")
				n, _ := strconv.Atoi(got)
				return n == 1, "dunst displays " + got
			})
			time.Sleep(time.Second) // the title's countdown in the tab strip, the notification drawn
			file := filepath.Join(dir, "turn-notification-"+lang+".png")
			if out, err := exec.Command("import", "-window", "root", file).CombinedOutput(); err != nil {
				t.Fatalf("import -window root: %v: %s", err, out)
			}
			if n, _, _ := p.alerts(); !n[0].Hidden {
				t.Errorf("the notification was made while the page was visible: %+v", n)
			}
		})
	}
}
