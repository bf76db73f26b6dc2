package app

import (
	"context"
	"encoding/csv"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"

	"seckill/captcha"
	"seckill/internal/testenv"
	"seckill/jobs"
	"seckill/models"
)

// chrome starts Debian's Chromium, headless, with a fresh profile. It never downloads a browser: a
// machine without Chromium fails the test with the command that installs it.
func chrome(t *testing.T) context.Context {
	t.Helper()
	path := os.Getenv("CHROMIUM")
	if path == "" {
		for _, name := range []string{"chromium", "chromium-browser"} {
			if p, err := exec.LookPath(name); err == nil {
				path = p
				break
			}
		}
	}
	if path == "" {
		t.Fatal("Chromium is not installed: apt-get install -y chromium (.ci/run installs it)")
	}
	// Not t.TempDir: Chromium's helpers may still be writing to the profile when the test ends, and a
	// profile left behind should not fail the test.
	profile, err := os.MkdirTemp("", "seckill-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(profile), chromedp.WindowSize(1280, 900),
	)
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
		t.Fatalf("start Chromium at %s: %v", path, err)
	}
	return ctx
}

func run(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action) {
	t.Helper()
	if err := chromedp.Run(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func registerInBrowser(t *testing.T, ctx context.Context, base, username string) {
	t.Helper()
	var captchaID string
	run(t, ctx, "open the register page",
		chromedp.Navigate(base+"/register"),
		chromedp.WaitVisible("#username", chromedp.ByID),
		chromedp.WaitVisible(`#captcha-img[data-captcha-id]`, chromedp.ByQuery),
		chromedp.AttributeValue("#captcha-img", "data-captcha-id", &captchaID, nil, chromedp.ByID),
	)
	rdb, _ := liveRedis.Load(base)
	answer, err := rdb.(*redis.Client).Get(context.Background(), captcha.Key(captchaID)).Result()
	if err != nil {
		t.Fatalf("captcha answer: %v", err)
	}
	run(t, ctx, "register",
		chromedp.SendKeys("#username", username, chromedp.ByID),
		chromedp.SendKeys("#password", passwordOf("browser"), chromedp.ByID),
		chromedp.SendKeys("#captcha-answer", answer, chromedp.ByID),
		chromedp.Click(`button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`//h1[contains(., "Flash sales")]`),
	)
}

// TestShopperBuysInABrowser: a shopper registers, opens the home page and an item, waits for the
// countdown to reach zero, passes the captcha, buys, sees success with an order number and finds the order,
// gives it a delivery address and pays; the merchant exports the paid orders, marks this one shipped by
// sending the CSV back, and the shopper sees it shipped with its tracking number.
func TestShopperBuysInABrowser(t *testing.T) {
	testenv.Long(t)
	s := startLive(t, liveOpts{})
	ctx := chrome(t)
	registerInBrowser(t, ctx, s.URL, "browser_buyer")

	// The sale is made once the browser is up, so that a slow start of Chromium cannot eat the time
	// before it opens; the home page is drawn at most once a second, so it may take a reload to show.
	now := s.Clock.Now()
	act, item := testenv.Sale(t, s.DB, 5, now.Add(8*time.Second).Truncate(time.Second), now.Add(time.Hour))
	var home string
	for try := 0; ; try++ {
		run(t, ctx, "home page", chromedp.Navigate(s.URL+"/"), chromedp.Text("main", &home, chromedp.ByQuery))
		if strings.Contains(home, act.Name) && strings.Contains(home, item.Name) {
			break
		}
		if try == 10 {
			t.Fatalf("the home page does not list the sale: %q", home)
		}
		time.Sleep(300 * time.Millisecond)
	}
	var countdown string
	run(t, ctx, "open the item",
		chromedp.Click(`a[href="/items/`+itoa(item.ID)+`"].btn`, chromedp.ByQuery),
		chromedp.WaitVisible("#buy-form", chromedp.ByID),
		chromedp.Text("#countdown", &countdown, chromedp.ByID),
	)
	if !strings.HasPrefix(countdown, "Starts in") {
		t.Errorf("before the start the countdown reads %q", countdown)
	}
	var disabled bool
	run(t, ctx, "buy button before the start", chromedp.Evaluate(`document.getElementById("buy").disabled`, &disabled))
	if !disabled {
		t.Error("the Buy button is enabled before the sale starts")
	}

	// The countdown reaches zero and the button comes alive; the captcha answer is read from Redis as
	// the contract allows.
	var captchaID string
	run(t, ctx, "wait for the start",
		chromedp.WaitEnabled("#buy", chromedp.ByID),
		chromedp.WaitVisible(`#captcha-img[data-captcha-id]`, chromedp.ByQuery),
		chromedp.AttributeValue("#captcha-img", "data-captcha-id", &captchaID, nil, chromedp.ByID),
	)
	// The page sets its clock by the server's, give or take half a round trip.
	if time.Now().Add(250 * time.Millisecond).Before(act.StartsAt) {
		t.Errorf("the Buy button came alive %v before the start", act.StartsAt.Sub(time.Now()))
	}
	answer, err := s.Redis.Get(context.Background(), captcha.Key(captchaID)).Result()
	if err != nil {
		t.Fatalf("captcha answer: %v", err)
	}
	var orderNo string
	run(t, ctx, "buy",
		chromedp.SendKeys("#captcha-answer", answer, chromedp.ByID),
		chromedp.Click("#buy", chromedp.ByID),
		chromedp.WaitVisible("#buy-status .order-no", chromedp.ByQuery),
		chromedp.Text("#buy-status .order-no", &orderNo, chromedp.ByQuery),
	)
	if !strings.HasPrefix(orderNo, "SK") {
		t.Fatalf("the page shows order number %q", orderNo)
	}
	var orders string
	run(t, ctx, "orders page",
		chromedp.Navigate(s.URL+"/orders"),
		chromedp.WaitVisible(".orders", chromedp.ByQuery),
		chromedp.Text("main", &orders, chromedp.ByQuery),
	)
	if !strings.Contains(orders, orderNo) || !strings.Contains(orders, "Awaiting payment") {
		t.Errorf("the orders page does not show order %s awaiting payment: %q", orderNo, orders)
	}

	if dir := os.Getenv("SCREENSHOTS_DIR"); dir != "" {
		screenshots(t, ctx, s.URL, dir, item.ID)
	}

	// The address step: Pay waits for a delivery address. A first try with a bad phone number shows the
	// reason beside the field; the corrected address goes to the book and to the order.
	var phoneErr, payDisabled, shown string
	var payIsDisabled bool
	run(t, ctx, "address",
		chromedp.Navigate(s.URL+"/lang/en"),
		chromedp.Navigate(s.URL+"/orders/"+orderNo),
		chromedp.WaitVisible("#addr-recipient", chromedp.ByID),
		chromedp.AttributeValue("#pay-start", "disabled", &payDisabled, &payIsDisabled, chromedp.ByID),
		chromedp.SendKeys("#addr-recipient", "Zhang Wei", chromedp.ByID),
		chromedp.SendKeys("#addr-phone", "call me", chromedp.ByID),
		chromedp.SendKeys("#addr-region", "Zhejiang", chromedp.ByID),
		chromedp.SendKeys("#addr-city", "Hangzhou", chromedp.ByID),
		chromedp.SendKeys("#addr-street", "90 Wensan Road, building 3, flat 501", chromedp.ByID),
		chromedp.Click(".address-form button[type=submit]", chromedp.ByQuery),
		chromedp.WaitVisible(`//span[@data-error-for="phone"][normalize-space(.) != ""]`),
		chromedp.Text(`[data-error-for="phone"]`, &phoneErr, chromedp.ByQuery),
	)
	if !payIsDisabled {
		t.Error("Pay is enabled before the order has an address")
	}
	if !strings.Contains(phoneErr, "phone number") {
		t.Errorf("the bad phone number is explained as %q", phoneErr)
	}
	shot(t, ctx, "order-address")
	run(t, ctx, "a good address",
		chromedp.SetValue("#addr-phone", "+86 138 0013 8000", chromedp.ByID),
		chromedp.Click(".address-form button[type=submit]", chromedp.ByQuery),
		chromedp.WaitVisible("address.delivery", chromedp.ByQuery),
		chromedp.Text("address.delivery", &shown, chromedp.ByQuery),
	)
	if !strings.Contains(shown, "Zhang Wei") || !strings.Contains(shown, "90 Wensan Road") {
		t.Errorf("the order page shows the address %q", shown)
	}

	// Paying: the order page shows the payment's QR code; its URL opens the provider's page, where
	// pressing Pay makes the order paid (the page follows it).
	var payURL, status string
	run(t, ctx, "pay",
		chromedp.WaitVisible("#pay-start", chromedp.ByID),
		chromedp.Click("#pay-start", chromedp.ByID),
		chromedp.WaitVisible("#pay-qr img[src^='data:image/png']", chromedp.ByQuery),
		chromedp.AttributeValue("#pay-link", "href", &payURL, nil, chromedp.ByID),
	)
	shot(t, ctx, "order-pay-qr")
	run(t, ctx, "the provider's page",
		chromedp.Navigate(payURL),
		chromedp.WaitVisible("#pay", chromedp.ByID),
	)
	shot(t, ctx, "sandbox-pay")
	run(t, ctx, "press Pay",
		chromedp.Click("#pay", chromedp.ByID),
		chromedp.WaitVisible(`//p[@id="pay-state"][contains(., "Paid")]`),
		chromedp.Navigate(s.URL+"/orders/"+orderNo),
		chromedp.WaitVisible(".badge", chromedp.ByQuery),
		chromedp.Text(".badge", &status, chromedp.ByQuery),
	)
	if status != "Paid" {
		t.Errorf("after paying, the order page says %q", status)
	}

	// The merchant, in a browser of its own, finds the paid order with its address, exports the CSV,
	// fills in the carrier and tracking number and sends it back.
	merchant := chrome(t)
	registerInBrowser(t, merchant, s.URL, "browser_merchant")
	u, err := models.UserByUsername(context.Background(), s.DB, "browser_merchant")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Srv.Sessions.SetRole(context.Background(), models.Actor{ID: u.ID, Username: u.Username}, u.ID, models.RoleMerchant); err != nil {
		t.Fatal(err)
	}
	s.DB.Model(&models.Activity{}).Where("id = ?", act.ID).Update("merchant_id", u.ID)
	ordersPage := s.URL + "/merchant/activities/" + itoa(act.ID) + "/orders"
	var row, exported string
	run(t, merchant, "the merchant's orders page",
		chromedp.Navigate(ordersPage),
		chromedp.WaitVisible("#order-"+orderNo, chromedp.ByID),
		chromedp.Text("#order-"+orderNo, &row, chromedp.ByID),
		chromedp.Evaluate(`fetch(document.querySelector("a[download]").href).then(r => r.text())`, &exported,
			func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }),
	)
	if !strings.Contains(row, "90 Wensan Road") {
		t.Errorf("the merchant's row of the order lacks its address: %q", row)
	}
	shot(t, merchant, "merchant-orders")
	rows, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(exported, "\uFEFF"))).ReadAll()
	if err != nil || len(rows) != 2 || rows[1][0] != orderNo {
		t.Fatalf("the exported CSV: %v %q", err, exported)
	}
	for i, h := range rows[0] {
		switch h {
		case "carrier":
			rows[1][i] = "SF Express"
		case "tracking_no":
			rows[1][i] = "SF1000200030"
		}
	}
	file := filepath.Join(t.TempDir(), "orders.csv")
	var filled strings.Builder
	csv.NewWriter(&filled).WriteAll(rows)
	if err := os.WriteFile(file, []byte(filled.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var result string
	run(t, merchant, "send the CSV back",
		chromedp.SetUploadFiles("#shipments-file", []string{file}, chromedp.ByID),
		chromedp.Click("#shipments-form button[type=submit]", chromedp.ByQuery),
		chromedp.WaitVisible("#shipments-form .upload-result .notice", chromedp.ByQuery),
		chromedp.Text("#shipments-form .upload-result", &result, chromedp.ByQuery),
	)
	if !strings.Contains(result, "Shipped 1,") || !strings.Contains(result, "not applied 0") {
		t.Errorf("sending the CSV back says %q", result)
	}

	// The shopper sees it shipped, with the tracking number.
	var shipment string
	run(t, ctx, "the shipped order",
		chromedp.Navigate(s.URL+"/orders/"+orderNo),
		chromedp.WaitVisible(".shipment", chromedp.ByQuery),
		chromedp.Text(".badge", &status, chromedp.ByQuery),
		chromedp.Text(".shipment", &shipment, chromedp.ByQuery),
	)
	if status != "Shipped" || !strings.Contains(shipment, "SF Express") || !strings.Contains(shipment, "SF1000200030") {
		t.Errorf("the shopper's order page says %q, %q", status, shipment)
	}
}

// TestSoldOutItemInABrowser: a sold-out item says so, and its Buy button stays disabled.
func TestSoldOutItemInABrowser(t *testing.T) {
	testenv.Long(t)
	s := startLive(t, liveOpts{})
	now := s.Clock.Now()
	_, item := testenv.Sale(t, s.DB, 1, now.Add(-time.Minute), now.Add(time.Hour))
	first := makeShoppers(t, s, "first", 1)[0]
	if _, err := s.Srv.Ledger.Preheat(context.Background(), jobs.DBBooks{DB: s.DB}, item.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Srv.Ledger.Take(context.Background(), item.ID, first.id, issuePath(t, s, item.ID, first.id), "SKfirst"); err != nil {
		t.Fatal(err)
	}
	ctx := chrome(t)
	registerInBrowser(t, ctx, s.URL, "too_late")
	var status string
	var disabled bool
	run(t, ctx, "open the sold-out item",
		chromedp.Navigate(s.URL+"/items/"+itoa(item.ID)),
		chromedp.WaitVisible(`//p[@id="buy-status"][contains(., "Sold out")]`),
		chromedp.Sleep(2500*time.Millisecond), // a stock refresh and many button updates later
		chromedp.Text("#buy-status", &status, chromedp.ByID),
		chromedp.Evaluate(`document.getElementById("buy").disabled`, &disabled),
	)
	if !strings.Contains(status, "Sold out") || !disabled {
		t.Errorf("sold-out item: status %q, button disabled %v", status, disabled)
	}
}

// screenshots saves home, detail and orders at phone and desktop widths, in English and Chinese.
func screenshots(t *testing.T, ctx context.Context, base, dir string, itemID int64) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	pages := map[string]string{"home": "/", "item": "/items/" + itoa(itemID), "orders": "/orders"}
	for _, lang := range []string{"en", "zh"} {
		run(t, ctx, "language "+lang, chromedp.Navigate(base+"/lang/"+lang))
		for _, width := range []int64{375, 1280} {
			for name, path := range pages {
				var png []byte
				run(t, ctx, "screenshot "+name,
					chromedp.EmulateViewport(width, 900),
					chromedp.Navigate(base+path),
					chromedp.WaitVisible("main", chromedp.ByQuery),
					chromedp.Sleep(1200*time.Millisecond), // scripts fill in the account, countdown and captcha
					chromedp.FullScreenshot(&png, 100),
				)
				file := filepath.Join(dir, name+"-"+lang+"-"+itoa(width)+".png")
				if err := os.WriteFile(file, png, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// TestQueueShopperInABrowser: in a queue sale, a shopper joins the line with the captcha during the
// countdown, sees that places are drawn at the start, then their place, gets their turn and buys with it.
func TestQueueShopperInABrowser(t *testing.T) {
	testenv.Long(t)
	db := testenv.Postgres(t)
	s := startLive(t, liveOpts{db: db})
	ctx := chrome(t)
	registerInBrowser(t, ctx, s.URL, "browser_queuer")

	now := s.Clock.Now()
	act, item := testenv.Sale(t, db, 3, now.Add(12*time.Second).Truncate(time.Second), now.Add(time.Hour))
	opens := now.Add(-time.Minute)
	if err := db.Model(&act).Updates(map[string]any{"sale_mode": models.SaleQueue, "queue_opens_at": opens}).Error; err != nil {
		t.Fatal(err)
	}
	var captchaID, label string
	run(t, ctx, "open the item",
		chromedp.Navigate(s.URL+"/items/"+itoa(item.ID)),
		chromedp.WaitVisible(`#captcha-img[data-captcha-id]`, chromedp.ByQuery),
		chromedp.WaitEnabled("#buy", chromedp.ByID),
		chromedp.Text("#buy", &label, chromedp.ByID),
		chromedp.AttributeValue("#captcha-img", "data-captcha-id", &captchaID, nil, chromedp.ByID),
	)
	if label != "Join the line" {
		t.Errorf("during the countdown the button reads %q, want Join the line", label)
	}
	answer, err := s.Redis.Get(context.Background(), captcha.Key(captchaID)).Result()
	if err != nil {
		t.Fatalf("captcha answer: %v", err)
	}
	var waiting string
	run(t, ctx, "join the line",
		chromedp.SendKeys("#captcha-answer", answer, chromedp.ByID),
		chromedp.Click("#buy", chromedp.ByID),
		chromedp.WaitVisible(`//p[@id="queue-status"][contains(., "in line")]`),
		chromedp.Text("#queue-status", &waiting, chromedp.ByID),
	)
	if !strings.Contains(waiting, "drawn at random at the start") {
		t.Errorf("before the start, in line, the page says %q", waiting)
	}
	shot(t, ctx, "queue-waiting")
	var orderNo string
	run(t, ctx, "the turn comes at the start",
		chromedp.WaitVisible(`//button[@id="buy"][contains(., "Your turn")]`),
		chromedp.WaitEnabled("#buy", chromedp.ByID),
	)
	shot(t, ctx, "queue-turn")
	run(t, ctx, "buy with the turn",
		chromedp.Click("#buy", chromedp.ByID),
		chromedp.WaitVisible("#buy-status .order-no", chromedp.ByQuery),
		chromedp.Text("#buy-status .order-no", &orderNo, chromedp.ByQuery),
	)
	if !strings.HasPrefix(orderNo, "SK") {
		t.Fatalf("the page shows order number %q", orderNo)
	}
	if time.Now().Add(250 * time.Millisecond).Before(act.StartsAt) {
		t.Errorf("the turn came %v before the start", act.StartsAt.Sub(time.Now()))
	}
}
