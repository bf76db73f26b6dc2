package app

import (
	"context"
	"fmt"
	"image"
	"image/color"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"seckill/internal/testenv"
	"seckill/models"
)

func loginInBrowser(t *testing.T, ctx context.Context, base, username, password string) {
	t.Helper()
	run(t, ctx, "log in as "+username,
		chromedp.Navigate(base+"/login"),
		chromedp.WaitVisible("#username", chromedp.ByID),
		chromedp.SendKeys("#username", username, chromedp.ByID),
		chromedp.SendKeys("#password", password, chromedp.ByID),
		chromedp.Click(`form[data-account] button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`//span[@class="who"][.="`+username+`"]`), // logged in, in whatever language the page reads
	)
}

func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("SCREENSHOTS_DIR")
	if dir == "" {
		return
	}
	var png []byte
	run(t, ctx, "screenshot "+name, chromedp.Sleep(800*time.Millisecond), chromedp.FullScreenshot(&png, 100))
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestMerchantAndAdminInABrowser: a merchant creates an activity with an item and submits it, an admin
// approves it, and it appears on the home page.
func TestMerchantAndAdminInABrowser(t *testing.T) {
	testenv.Long(t)
	s := startLive(t, liveOpts{})
	withRole(t, s, "acme_store", models.RoleMerchant)
	withRole(t, s, "chief", models.RoleAdmin)
	ctx := chrome(t)
	start := s.Clock.Now().Add(3 * time.Second)
	local := func(tm time.Time) string { return tm.Local().Format("2006-01-02T15:04") }

	loginInBrowser(t, ctx, s.URL, "acme_store", passwordOf("acme_store"))
	// A first try with the end before the start: the error shows beside its field, the typing stays.
	var endErr, typed string
	run(t, ctx, "new activity with a bad end",
		chromedp.Navigate(s.URL+"/merchant"),
		chromedp.WaitVisible("#a-name", chromedp.ByID),
		chromedp.SendKeys("#a-name", "Spring Flash Sale", chromedp.ByID),
		chromedp.SendKeys("#a-description", "Tea sets at a tenth of their price.", chromedp.ByID),
		chromedp.SetValue("#a-starts", local(start.Add(2*time.Hour)), chromedp.ByID),
		chromedp.SetValue("#a-ends", local(start.Add(time.Hour)), chromedp.ByID),
		chromedp.Click(`form[data-api] button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`//span[@data-error-for="ends_at"][contains(., "after the start")]`),
		chromedp.Text(`[data-error-for="ends_at"]`, &endErr, chromedp.ByQuery),
		chromedp.Value("#a-name", &typed, chromedp.ByID),
	)
	if typed != "Spring Flash Sale" {
		t.Errorf("the form lost what was typed: name %q", typed)
	}
	shot(t, ctx, "merchant-form-error")

	var state string
	run(t, ctx, "create, add an item, submit",
		chromedp.SetValue("#a-starts", local(start.Add(time.Minute)), chromedp.ByID),
		chromedp.SetValue("#a-ends", local(start.Add(2*time.Hour)), chromedp.ByID),
		chromedp.Click(`form[data-api] button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible("#item-form", chromedp.ByID),
		chromedp.SendKeys("#i-name", "Porcelain Tea Set", chromedp.ByID),
		chromedp.SendKeys("#i-title", "Six cups and a pot", chromedp.ByID),
		chromedp.SendKeys("#i-image", "/assets/img/demo-3.svg", chromedp.ByID),
		chromedp.SendKeys("#i-original", "599.00", chromedp.ByID),
		chromedp.SendKeys("#i-flash", "59.90", chromedp.ByID),
		chromedp.SendKeys("#i-stock", "20", chromedp.ByID),
		chromedp.SendKeys("#i-shards", "2", chromedp.ByID), // a hot item: its stock over two Redis shards
	)
	shot(t, ctx, "merchant-item-form")
	// The item saved, its photo uploaded from the list: the thumbnail comes from the server.
	photo := filepath.Join(t.TempDir(), "tea-set.png")
	if err := os.WriteFile(photo, encodePNG(t, teaSet(1200, 900)), 0o644); err != nil {
		t.Fatal(err)
	}
	var thumb string
	run(t, ctx, "add the item, upload its image",
		chromedp.Click(`#item-form button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`//td[contains(., "Porcelain Tea Set")]`),
		chromedp.SetUploadFiles(`form[data-upload-image] input[type=file]`, []string{photo}, chromedp.ByQuery),
		chromedp.WaitVisible(`img.thumb[src^="/images/"]`, chromedp.ByQuery),
		chromedp.AttributeValue(`img.thumb`, "src", &thumb, nil, chromedp.ByQuery),
	)
	if !strings.HasSuffix(thumb, "-480.jpg") {
		t.Errorf("the item's thumbnail is %q", thumb)
	}
	shot(t, ctx, "merchant-item-image")
	run(t, ctx, "submit",
		chromedp.Click(`button[data-api-click$="/submit"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`//h1/span[contains(., "In review")]`),
		chromedp.Text("h1 .badge", &state, chromedp.ByQuery),
	)
	if state != "In review" {
		t.Fatalf("after submitting, the activity is %q", state)
	}

	loginInBrowser(t, ctx, s.URL, "chief", passwordOf("chief"))
	run(t, ctx, "review queue", chromedp.Navigate(s.URL+"/admin"), chromedp.WaitVisible(`//article[contains(., "Porcelain Tea Set")]`))
	shot(t, ctx, "admin-review-queue")
	// Approve asks first, and says it was done.
	var asked atomic.Bool
	chromedp.ListenTarget(ctx, func(ev any) {
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			asked.Store(true)
			go func() { _ = chromedp.Run(ctx, page.HandleJavaScriptDialog(true)) }()
		}
	})
	var home, done string
	run(t, ctx, "approve",
		chromedp.Click(`button[data-api-click$="/approve"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`//p[contains(., "Nothing waits for review")]`),
		chromedp.Text(`p[role="status"]`, &done, chromedp.ByQuery),
	)
	if !asked.Load() || !strings.Contains(done, "Approved") {
		t.Errorf("approving: asked first %v, then said %q", asked.Load(), done)
	}
	run(t, ctx, "the home page",
		chromedp.Navigate(s.URL+"/"),
		chromedp.WaitVisible("main", chromedp.ByQuery),
		chromedp.Sleep(1100*time.Millisecond), // the home page is rendered at most once a second
		chromedp.Reload(),
		chromedp.Text("main", &home, chromedp.ByQuery),
	)
	if !strings.Contains(home, "Spring Flash Sale") || !strings.Contains(home, "Porcelain Tea Set") {
		t.Fatalf("the approved activity is not on the home page: %q", home)
	}
	var shown string
	run(t, ctx, "the item page shows the uploaded image",
		chromedp.Click(`//a[contains(., "Porcelain Tea Set")]`),
		chromedp.WaitVisible(`#item img[src$="-960.jpg"]`, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector("#item img").naturalWidth + "x" + document.querySelector("#item img").naturalHeight`, &shown),
	)
	if shown != "960x720" {
		t.Errorf("the item page's image is %s, want the 960x720 size of the upload", shown)
	}
	shot(t, ctx, "item-uploaded-image")
	run(t, ctx, "the audit log", chromedp.Navigate(s.URL+"/admin/audit"), chromedp.WaitVisible("table.audit", chromedp.ByQuery))
	shot(t, ctx, "admin-audit")

	if os.Getenv("SCREENSHOTS_DIR") != "" {
		dashboardDuringALoad(t, s, ctx)
	}
}

// dashboardDuringALoad buys the tea sets from many shoppers and shows the admin's live dashboard.
func dashboardDuringALoad(t *testing.T, s *liveServer, ctx context.Context) {
	t.Helper()
	var a models.Activity
	if err := s.DB.Preload("Items").Where("name = ?", "Spring Flash Sale").Take(&a).Error; err != nil {
		t.Fatal(err)
	}
	for s.Clock.Now().Before(a.StartsAt) {
		time.Sleep(100 * time.Millisecond)
	}
	item := a.Items[0]
	if item.StockShards != 2 {
		t.Errorf("the item the merchant split over 2 stock shards has %d", item.StockShards)
	}
	buyers := makeShoppers(t, s, "crowd", 300)
	client := &http.Client{Timeout: 10 * time.Second}
	paths := map[int]string{}
	for i := 0; i < 40; i++ { // 40 real buyers for 20 units; the rest of the crowd sends made-up paths
		paths[i*7] = issuePath(t, s, item.ID, buyers[i*7].id)
	}
	var wg sync.WaitGroup
	for round := 0; round < 3; round++ {
		for i, b := range buyers {
			path := strings.Repeat("0", 32)
			if p, ok := paths[i]; ok && round == 0 {
				path = p
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				b.post(t, client, s.URL, fmt.Sprintf("/api/items/%d/buy/%s", item.ID, path))
			}()
		}
		wg.Wait()
		time.Sleep(time.Second)
	}
	run(t, ctx, "live dashboard",
		chromedp.Navigate(fmt.Sprintf("%s/admin/activities/%d/live", s.URL, a.ID)),
		chromedp.WaitVisible(`//tr[@data-item="all"]/td[@data-f="stock_left"][normalize-space(text())!=""]`),
		chromedp.Sleep(2500*time.Millisecond),
	)
	shot(t, ctx, "admin-live-dashboard")
}

// teaSet draws a w × h picture for an item: a cup and saucer on a warm background.
func teaSet(w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	in := func(x, y, cx, cy, rx, ry float64) bool {
		dx, dy := (x-cx)/rx, (y-cy)/ry
		return dx*dx+dy*dy <= 1
	}
	fw, fh := float64(w), float64(h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			fx, fy := float64(x), float64(y)
			c := color.RGBA{uint8(250 - 60*fy/fh), uint8(200 - 90*fy/fh), uint8(150 - 60*fy/fh), 255}
			switch {
			case in(fx, fy, fw*0.5, fh*0.78, fw*0.34, fh*0.07): // the saucer
				c = color.RGBA{245, 245, 240, 255}
			case fy > fh*0.35 && in(fx, fy, fw*0.5, fh*0.35, fw*0.22, fh*0.4): // the cup
				c = color.RGBA{255, 255, 252, 255}
				if fy < fh*0.42 {
					c = color.RGBA{30, 90, 160, 255} // its blue rim
				}
			case in(fx, fy, fw*0.74, fh*0.52, fw*0.07, fh*0.1) && !in(fx, fy, fw*0.74, fh*0.52, fw*0.04, fh*0.06): // the handle
				c = color.RGBA{255, 255, 252, 255}
			}
			img.Set(x, y, c)
		}
	}
	return img
}
