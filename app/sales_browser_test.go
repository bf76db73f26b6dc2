package app

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"seckill/internal/testenv"
	"seckill/models"
)

// salesWords are what the merchant's and the admins' pages say of a sale, in each language.
var salesWords = map[string]map[string]string{
	"en": {"missing": "Give a reason first.", "pausedBy": "Paused by the merchant since", "endedBy": "Ended early by the merchant:",
		"over": "This sale is over", "inReview": "In review", "draft": "Draft", "mySales": "My sales", "newSale": "New sale",
		"upcoming": "Upcoming", "live": "Live", "paused": "Paused", "ended": "Over", "rejected": "Rejected", "new": "New",
		"approvedMail": "is approved", "rejectedMail": "was rejected", "doneRejected": "Rejected"},
	"zh": {"missing": "请先填写原因。", "pausedBy": "已被商家暂停，自", "endedBy": "已被商家提前结束：",
		"over": "此活动已结束", "inReview": "审核中", "draft": "草稿", "mySales": "我的活动", "newSale": "新建活动",
		"upcoming": "即将开始", "live": "进行中", "paused": "已暂停", "ended": "已结束", "rejected": "已驳回", "new": "新",
		"approvedMail": "已通过审核", "rejectedMail": "未通过审核", "doneRejected": "驳回"},
}

// inLanguage opens a browser logged in as username, reading the pages in lang.
func signedInLanguage(t *testing.T, s *liveServer, username, lang string) context.Context {
	t.Helper()
	ctx := chrome(t)
	signIn(t, ctx, s.URL, username)
	if lang == "zh" {
		run(t, ctx, "Chinese", chromedp.Navigate(s.URL+"/lang/zh"))
	}
	return ctx
}

// acceptDialogs answers every "are you sure?" of ctx's pages with OK and counts them.
func acceptDialogs(ctx context.Context) *atomic.Int32 {
	var n atomic.Int32
	chromedp.ListenTarget(ctx, func(ev any) {
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			n.Add(1)
			go func() { _ = chromedp.Run(ctx, page.HandleJavaScriptDialog(true)) }()
		}
	})
	return &n
}

// TestMerchantStopsItsSaleInABrowser (issue 34, rows 1, 11 and 12): a merchant pauses its own live sale
// from its page, asked first for the reason it left out; the admins' dashboard says the merchant paused
// it and why; the merchant resumes it with no reason, then ends it; then neither its page nor the
// admins' dashboard offers Pause or End any more.
func TestMerchantStopsItsSaleInABrowser(t *testing.T) {
	testenv.Long(t)
	s := startLive(t, liveOpts{})
	for _, lang := range []string{"en", "zh"} {
		t.Run(lang, func(t *testing.T) {
			w := salesWords[lang]
			shopName, bossName := "stopper_shop_"+lang, "stopper_boss_"+lang
			_, sale, _ := merchantSale(t, s, shopName, 5)
			withRole(t, s, bossName, models.RoleAdmin)
			shop := signedInLanguage(t, s, shopName, lang)
			dialogs := acceptDialogs(shop)
			mine := s.URL + "/merchant/activities/" + itoa(sale.ID)
			var said string
			run(t, shop, "Pause with no reason",
				chromedp.Navigate(mine),
				chromedp.WaitVisible(`form[data-stop] button[data-action="pause"]`, chromedp.ByQuery),
				chromedp.Click(`form[data-stop] button[data-action="pause"]`, chromedp.ByQuery),
				chromedp.WaitVisible(`form[data-stop] [data-error-for="reason"]:not(:empty)`, chromedp.ByQuery),
				chromedp.Text(`form[data-stop] [data-error-for="reason"]`, &said, chromedp.ByQuery),
			)
			if said != w["missing"] {
				t.Errorf("Pause with no reason says %q, want %q", said, w["missing"])
			}
			reason := "Price typo " + lang
			var notice string
			run(t, shop, "Pause with a reason",
				chromedp.SendKeys(`form[data-stop] input[name=reason]`, reason, chromedp.ByQuery),
				chromedp.Click(`form[data-stop] button[data-action="pause"]`, chromedp.ByQuery),
				chromedp.WaitVisible(`form[data-stop] button[data-action="resume"]`, chromedp.ByQuery),
				chromedp.Text(`p.stop-notice`, &notice, chromedp.ByQuery),
			)
			if !strings.Contains(notice, w["pausedBy"]) || !strings.Contains(notice, reason) {
				t.Errorf("the merchant's page says %q after its pause", notice)
			}
			if lang == "en" {
				shot(t, shop, "merchant-paused-own-sale")
			} else {
				shot(t, shop, "merchant-paused-own-sale-zh")
			}

			boss := signedInLanguage(t, s, bossName, lang)
			run(t, boss, "the admins' dashboard",
				chromedp.Navigate(s.URL+"/admin"),
				chromedp.WaitVisible(`form[data-stop="/api/admin/activities/`+itoa(sale.ID)+`"] .notice`, chromedp.ByQuery),
				chromedp.Text(`form[data-stop="/api/admin/activities/`+itoa(sale.ID)+`"] .notice`, &notice, chromedp.ByQuery),
			)
			if !strings.Contains(notice, w["pausedBy"]) || !strings.Contains(notice, reason) {
				t.Errorf("the admins' dashboard says %q of the merchant's pause", notice)
			}

			run(t, shop, "Resume with no reason",
				chromedp.Click(`form[data-stop] button[data-action="resume"]`, chromedp.ByQuery),
				chromedp.WaitVisible(`form[data-stop] button[data-action="pause"]`, chromedp.ByQuery),
			)
			run(t, shop, "End",
				chromedp.SendKeys(`form[data-stop] input[name=reason]`, "Stock recalled", chromedp.ByQuery),
				chromedp.Click(`form[data-stop] button[data-action="end"]`, chromedp.ByQuery),
				chromedp.WaitVisible(`p.stop-over`, chromedp.ByQuery),
				chromedp.Text(`p.stop-notice`, &notice, chromedp.ByQuery),
			)
			if dialogs.Load() != 1 || !strings.Contains(notice, w["endedBy"]) || !strings.Contains(notice, "Stock recalled") {
				t.Errorf("ending: %d dialogs (want End's one), then the page says %q", dialogs.Load(), notice)
			}
			for who, ctx := range map[string]context.Context{"merchant": shop, "admin": boss} {
				base := map[string]string{"merchant": "/merchant", "admin": "/admin"}[who]
				var over string
				var buttons int
				run(t, ctx, "the ended sale's live page",
					chromedp.Navigate(s.URL+base+"/activities/"+itoa(sale.ID)+"/live"),
					chromedp.WaitVisible(`p.stop-over`, chromedp.ByQuery),
					chromedp.Text(`p.stop-over`, &over, chromedp.ByQuery),
					chromedp.Evaluate(`document.querySelectorAll("button[data-action]").length`, &buttons),
				)
				if buttons != 0 || !strings.Contains(over, w["over"]) {
					t.Errorf("the %s's live page of an ended sale: %d stop buttons, says %q", who, buttons, over)
				}
			}
			var actors []string
			s.DB.Model(&models.AuditLog{}).Where("target = ? AND action LIKE 'activity.%'", "activity:"+itoa(sale.ID)).Order("id").Pluck("actor", &actors)
			if strings.Join(actors, ",") != shopName+","+shopName+","+shopName {
				t.Errorf("the audit's actors of the pause, resume and end: %v", actors)
			}
		})
	}
}

// TestWithdrawInABrowser (issue 34, row 2): a merchant takes a sale in review back to its drafts from its
// page, and can change it again.
func TestWithdrawInABrowser(t *testing.T) {
	testenv.Long(t)
	s := startLive(t, liveOpts{})
	for _, lang := range []string{"en", "zh"} {
		t.Run(lang, func(t *testing.T) {
			w := salesWords[lang]
			name := "withdrawer_" + lang
			api := withRole(t, s, name, models.RoleMerchant)
			id := draftWithItem(t, s, api, "Sale with a typo "+lang)
			expect(t, "submit", api.call("POST", "/api/merchant/activities/"+itoa(id)+"/submit", nil), 200, "")
			shop := signedInLanguage(t, s, name, lang)
			dialogs := acceptDialogs(shop)
			var before, after string
			var locked bool
			run(t, shop, "withdraw",
				chromedp.Navigate(s.URL+"/merchant/activities/"+itoa(id)),
				chromedp.WaitVisible(`#withdraw`, chromedp.ByID),
				chromedp.Text(`h1 .badge`, &before, chromedp.ByQuery),
				chromedp.Click(`#withdraw`, chromedp.ByID),
				chromedp.WaitVisible(`button[data-api-click$="/submit"]`, chromedp.ByQuery),
				chromedp.Text(`h1 .badge`, &after, chromedp.ByQuery),
				chromedp.Evaluate(`document.getElementById("a-name").disabled`, &locked),
			)
			if before != w["inReview"] || after != w["draft"] || locked || dialogs.Load() != 1 {
				t.Errorf("withdrawing: %q then %q, the name locked %v, %d dialogs (want 1)", before, after, locked, dialogs.Load())
			}
		})
	}
}

// TestMerchantListInABrowser (issue 34, rows 3, 4 and 16): the merchant's list says where each sale is
// as a person says it (upcoming, live, paused, over, in review, rejected with its reason, draft), in the
// pages' one word for a sale; a reviewer's decisions are mailed to the merchant's verified address in its
// language, counted on the console's link until the list is opened, and marked new there.
func TestMerchantListInABrowser(t *testing.T) {
	testenv.Long(t)
	s := startLive(t, liveOpts{})
	for _, lang := range []string{"en", "zh"} {
		t.Run(lang, func(t *testing.T) {
			w := salesWords[lang]
			name := "lister_" + lang
			api := withRole(t, s, name, models.RoleMerchant)
			boss := withRole(t, s, "lister_boss_"+lang, models.RoleAdmin)
			merchantID := userID(t, s, name)
			now := s.Clock.Now()
			email := name + "@example.com"
			s.DB.Model(&models.User{}).Where("id = ?", merchantID).Updates(map[string]any{"email": email, "email_verified_at": now})
			if lang == "zh" { // its address was verified by a mail in Chinese: the shop mails it in Chinese
				s.DB.Create(&models.Mail{MessageID: "verify-" + name, Kind: "verify_email", UserID: &merchantID, ToAddr: email, Lang: "zh",
					Subject: "验证", State: models.MailSent, NextAt: now, CreatedAt: now, UpdatedAt: now})
			}
			sales := map[string]string{} // name → the phase the list says
			approved := draftWithItem(t, s, api, "Approved "+lang)
			rejected := draftWithItem(t, s, api, "Refused "+lang)
			for _, id := range []int64{approved, rejected} {
				expect(t, "submit", api.call("POST", "/api/merchant/activities/"+itoa(id)+"/submit", nil), 200, "")
			}
			expect(t, "approve", boss.call("POST", "/api/admin/activities/"+itoa(approved)+"/approve", nil), 200, "")
			expect(t, "reject", boss.call("POST", "/api/admin/activities/"+itoa(rejected)+"/reject", map[string]any{"reason": "Blurry photos"}), 200, "")
			sales["Approved "+lang], sales["Refused "+lang] = w["upcoming"], w["rejected"]
			inReview := draftWithItem(t, s, api, "Waiting "+lang)
			expect(t, "submit", api.call("POST", "/api/merchant/activities/"+itoa(inReview)+"/submit", nil), 200, "")
			sales["Waiting "+lang] = w["inReview"]
			draftWithItem(t, s, api, "Sketch "+lang)
			sales["Sketch "+lang] = w["draft"]
			for sale, set := range map[string]map[string]any{
				"Running " + lang: {"starts_at": now.Add(-time.Hour), "ends_at": now.Add(time.Hour)},
				"Halted " + lang:  {"starts_at": now.Add(-time.Hour), "ends_at": now.Add(time.Hour), "paused_at": now, "stop_reason": "Wrong price"},
				"Done " + lang:    {"starts_at": now.Add(-2 * time.Hour), "ends_at": now.Add(-time.Hour)},
			} {
				a, _ := testenv.Sale(t, s.DB, 5, now, now.Add(time.Hour))
				set["merchant_id"], set["name"] = merchantID, sale
				s.DB.Model(&models.Activity{}).Where("id = ?", a.ID).Updates(set)
			}
			sales["Running "+lang], sales["Halted "+lang], sales["Done "+lang] = w["live"], w["paused"], w["ended"]

			// The mails, one a decision, in the merchant's language.
			var mails []models.Mail
			s.DB.Where("to_addr = ? AND kind LIKE 'sale_%'", email).Order("id").Find(&mails)
			if len(mails) != 2 || !strings.Contains(mails[0].Subject, "Approved "+lang) || !strings.Contains(mails[0].Subject, w["approvedMail"]) ||
				!strings.Contains(mails[1].Subject, w["rejectedMail"]) || !strings.Contains(mails[1].TextBody, "Blurry photos") {
				t.Errorf("the decisions' mails: %+v", mails)
			}

			shop := signedInLanguage(t, s, name, lang)
			var badge string
			run(t, shop, "the console's link counts the decisions",
				chromedp.Navigate(s.URL+"/"),
				chromedp.WaitVisible(`#unseen-decisions`, chromedp.ByID),
				chromedp.Text(`#unseen-decisions`, &badge, chromedp.ByID),
			)
			if badge != "2" {
				t.Errorf("the console's badge says %q, want 2", badge)
			}
			var heading, newSale, text string
			run(t, shop, "the list",
				chromedp.Navigate(s.URL+"/merchant"),
				chromedp.WaitVisible(`h2#mine`, chromedp.ByQuery),
				chromedp.Text(`h2#mine`, &heading, chromedp.ByQuery),
				chromedp.Text(`h2#new`, &newSale, chromedp.ByQuery),
				chromedp.Text(`main`, &text, chromedp.ByQuery),
			)
			if heading != w["mySales"] || newSale != w["newSale"] || (lang == "en" && strings.Contains(strings.ToLower(text), "activit")) {
				t.Errorf("the list's headings are %q and %q (want %q, %q), and the page says \"activity\": %v",
					heading, newSale, w["mySales"], w["newSale"], strings.Contains(strings.ToLower(text), "activit"))
			}
			for sale, phase := range sales {
				var cell string
				run(t, shop, "the row of "+sale, chromedp.Text(`//tr[td[1][.="`+sale+`"]]/td[@class="phase"]`, &cell))
				if !strings.HasPrefix(strings.TrimSpace(cell), phase) {
					t.Errorf("%s: the list says %q, want %q", sale, cell, phase)
				}
				isNew := strings.Contains(cell, " "+w["new"])
				if wantNew := sale == "Approved "+lang || sale == "Refused "+lang; isNew != wantNew {
					t.Errorf("%s: marked new %v, want %v (%q)", sale, isNew, wantNew, cell)
				}
				if sale == "Refused "+lang && !strings.Contains(cell, "Blurry photos") {
					t.Errorf("the rejected sale's row does not give the reason: %q", cell)
				}
			}
			if lang == "en" {
				shot(t, shop, "merchant-sales-list")
			} else {
				shot(t, shop, "merchant-sales-list-zh")
			}
			var gone bool
			run(t, shop, "seen: the badge goes",
				chromedp.Navigate(s.URL+"/"),
				chromedp.WaitVisible(`#nav-account a[href="/merchant"]`, chromedp.ByQuery),
				chromedp.Evaluate(`document.getElementById("unseen-decisions") === null`, &gone),
			)
			if !gone {
				t.Error("the console's badge stays after the list was seen")
			}
		})
	}
}

// TestReviewsCheckBeforeAskingInABrowser (issue 34, row 11): Reject without a reason says so before
// any "are you sure?"; with one it asks, then rejects. Resume needs no reason.
func TestReviewsCheckBeforeAskingInABrowser(t *testing.T) {
	testenv.Long(t)
	s := startLive(t, liveOpts{})
	for _, lang := range []string{"en", "zh"} {
		t.Run(lang, func(t *testing.T) {
			w := salesWords[lang]
			shop := withRole(t, s, "reviewed_"+lang, models.RoleMerchant)
			bossName := "reviewer_" + lang
			api := withRole(t, s, bossName, models.RoleAdmin)
			id := draftWithItem(t, s, shop, "For review "+lang)
			expect(t, "submit", shop.call("POST", "/api/merchant/activities/"+itoa(id)+"/submit", nil), 200, "")
			_, live, _ := merchantSale(t, s, "paused_shop_"+lang, 5)
			expect(t, "pause", api.call("POST", "/api/admin/activities/"+itoa(live.ID)+"/pause", map[string]any{"reason": "bots"}), 200, "")

			boss := signedInLanguage(t, s, bossName, lang)
			dialogs := acceptDialogs(boss)
			form := `form[data-api="/api/admin/activities/` + itoa(id) + `/reject"]`
			var said string
			run(t, boss, "Reject with no reason",
				chromedp.Navigate(s.URL+"/admin"),
				chromedp.WaitVisible(form, chromedp.ByQuery),
				chromedp.Click(form+` button[type=submit]`, chromedp.ByQuery),
				chromedp.WaitVisible(form+` [data-error-for="reason"]:not(:empty)`, chromedp.ByQuery),
				chromedp.Text(form+` [data-error-for="reason"]`, &said, chromedp.ByQuery),
			)
			if said != w["missing"] || dialogs.Load() != 0 {
				t.Errorf("Reject with no reason: %d dialogs (want none), then %q (want %q)", dialogs.Load(), said, w["missing"])
			}
			var done string
			run(t, boss, "Reject with a reason",
				chromedp.SendKeys(form+` input[name=reason]`, "Blurry photos", chromedp.ByQuery),
				chromedp.Click(form+` button[type=submit]`, chromedp.ByQuery),
				chromedp.WaitVisible(`p[role="status"]`, chromedp.ByQuery),
				chromedp.Text(`p[role="status"]`, &done, chromedp.ByQuery),
			)
			if dialogs.Load() != 1 || !strings.Contains(done, w["doneRejected"]) {
				t.Errorf("Reject with a reason: %d dialogs (want 1), then %q", dialogs.Load(), done)
			}
			stop := `form[data-stop="/api/admin/activities/` + itoa(live.ID) + `"]`
			run(t, boss, "Resume with no reason",
				chromedp.WaitVisible(stop+` button[data-action="resume"]`, chromedp.ByQuery),
				chromedp.Click(stop+` button[data-action="resume"]`, chromedp.ByQuery),
				chromedp.WaitVisible(stop+` button[data-action="pause"]`, chromedp.ByQuery),
			)
			var a models.Activity
			s.DB.Take(&a, "id = ?", live.ID)
			if a.PausedAt != nil {
				t.Error("the sale is still paused after Resume")
			}
		})
	}
}

// TestEndedSaleOffersNoStopInABrowser (issue 34, row 12): the live dashboard of a sale that ended
// (early, or on time) offers neither Pause nor End, to an admin or to its merchant, and says why.
func TestEndedSaleOffersNoStopInABrowser(t *testing.T) {
	testenv.Long(t)
	s := startLive(t, liveOpts{})
	for _, lang := range []string{"en", "zh"} {
		t.Run(lang, func(t *testing.T) {
			w := salesWords[lang]
			shopName, bossName := "ended_shop_"+lang, "ended_boss_"+lang
			_, sale, _ := merchantSale(t, s, shopName, 5)
			withRole(t, s, bossName, models.RoleAdmin)
			past := s.Clock.Now().Add(-time.Minute)
			s.DB.Model(&models.Activity{}).Where("id = ?", sale.ID).Updates(map[string]any{"ends_at": past, "starts_at": past.Add(-time.Hour)})
			for who, base := range map[string]string{bossName: "/admin", shopName: "/merchant"} {
				ctx := signedInLanguage(t, s, who, lang)
				var over string
				var buttons int
				run(t, ctx, "the ended sale's live page",
					chromedp.Navigate(s.URL+base+"/activities/"+itoa(sale.ID)+"/live"),
					chromedp.WaitVisible(`#live`, chromedp.ByID),
					chromedp.Evaluate(`document.querySelectorAll("button[data-action]").length`, &buttons),
					chromedp.WaitVisible(`p.stop-over`, chromedp.ByQuery),
					chromedp.Text(`p.stop-over`, &over, chromedp.ByQuery),
				)
				if buttons != 0 || !strings.Contains(over, w["over"]) {
					t.Errorf("%s's live page of an ended sale: %d stop buttons, says %q", base, buttons, over)
				}
			}
		})
	}
}
