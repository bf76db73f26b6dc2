package app

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/template/html/v2"

	"seckill/assets"
	"seckill/handlers"
	"seckill/i18n"
	"seckill/internal/testenv"
	"seckill/models"
)

// remindPage serves, for the test, a page holding the remind_box partial of a sale and its scripts, as
// the item and home pages will once they include it.
func remindPage(t *testing.T, srv *Server) {
	files, err := assets.Load()
	if err != nil {
		t.Fatal(err)
	}
	engine := srv.Fiber.Config().Views.(*html.Engine)
	srv.Fiber.Get("/test/remind/:id", func(c *fiber.Ctx) error {
		id, _ := c.ParamsInt("id")
		a, err := models.ActivityByID(c.UserContext(), srv.Orders.DB, int64(id)) // the server's database

		if err != nil {
			return err
		}
		var box bytes.Buffer
		if err := engine.Templates.ExecuteTemplate(&box, "remind_box", map[string]any{"A": a, "Tr": i18n.For(handlers.Lang(c)), "Now": time.Now()}); err != nil {
			return err
		}
		c.Type("html")
		return c.SendString(`<!doctype html><html><head><meta charset="utf-8"></head><body>` + box.String() +
			`<script src="` + files.URL("js/api.js") + `"></script><script src="` + files.URL("js/remind.js") + `"></script></body></html>`)
	})
}

// "Remind me" in a browser, in English and Chinese: without a verified address the button offers to add
// one; with one it says the shopper is reminded, still after a reload (of a sale starting in ten minutes
// too, when its crowd gathers), and "Stop reminding me" undoes it; "Add to calendar" links the sale's .ics
// in the page's language.
func TestRemindMeInABrowser(t *testing.T) {
	s := startLive(t, liveOpts{only: []string{workerSessions, workerEmails}, setup: func(srv *Server) { remindPage(t, srv) }})
	now := s.Clock.Now()
	sale, _ := testenv.Sale(t, s.DB, 10, now.Add(2*time.Hour), now.Add(3*time.Hour))
	soon, _ := testenv.Sale(t, s.DB, 10, now.Add(10*time.Minute), now.Add(time.Hour))
	for _, lang := range []string{"en", "zh"} {
		t.Run(lang, func(t *testing.T) {
			tr := i18n.For(lang)
			b := chrome(t)
			name := "remind_browser_" + lang
			registerInBrowser(t, b, s.URL, name)
			if lang == "zh" {
				run(t, b, "Chinese", chromedp.Navigate(s.URL+"/lang/zh"))
			}
			page := s.URL + "/test/remind/" + itoa(sale.ID)
			var label, calendar string
			run(t, b, "the button",
				chromedp.Navigate(page),
				chromedp.WaitVisible("[data-remind-button]", chromedp.ByQuery),
				chromedp.Text("[data-remind-button]", &label, chromedp.ByQuery),
				chromedp.AttributeValue(".remind-calendar", "href", &calendar, nil, chromedp.ByQuery),
			)
			if label != tr.T("remind.button") || calendar != "/api/activities/"+itoa(sale.ID)+"/calendar.ics?lang="+lang {
				t.Errorf("the button says %q and the calendar links %q", label, calendar)
			}
			var offer string
			run(t, b, "remind me without an address",
				chromedp.Click("[data-remind-button]", chromedp.ByQuery),
				chromedp.WaitVisible(".remind-email", chromedp.ByQuery),
				chromedp.Text(".remind-email", &offer, chromedp.ByQuery),
			)
			if !strings.Contains(offer, tr.T("remind.addEmail")) {
				t.Errorf("the offer says %q; want a link to add an address", offer)
			}
			u, err := models.UserByUsername(context.Background(), s.DB, name)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if _, err := models.SetEmail(ctx, s.DB, u.ID, name+"@example.com", time.Now()); err != nil {
				t.Fatal(err)
			}
			if err := models.VerifyEmail(ctx, s.DB, u.ID, name+"@example.com", time.Now()); err != nil {
				t.Fatal(err)
			}
			s.Srv.Emails.Changed(ctx, u.ID)
			pressed := `[data-remind-button][aria-pressed="true"]`
			run(t, b, "remind me",
				chromedp.Click("[data-remind-button]", chromedp.ByQuery),
				chromedp.WaitVisible(pressed, chromedp.ByQuery),
				chromedp.WaitNotVisible(".remind-email", chromedp.ByQuery),
				chromedp.Navigate(page),
				chromedp.WaitVisible(pressed, chromedp.ByQuery),
				chromedp.Text("[data-remind-button]", &label, chromedp.ByQuery),
			)
			if label != tr.T("remind.on") {
				t.Errorf("after a reload the button says %q; want %q", label, tr.T("remind.on"))
			}
			run(t, b, "stop reminding me",
				chromedp.Click("[data-remind-off]", chromedp.ByQuery),
				chromedp.WaitVisible(`[data-remind-button][aria-pressed="false"]`, chromedp.ByQuery),
			)
			var n int64
			s.DB.Raw(`SELECT count(*) FROM reminders WHERE user_id = ?`, u.ID).Scan(&n)
			if n != 0 {
				t.Errorf("%d reminders are left after stopping", n)
			}

			// A sale ten minutes from its start: the page reads no list in its crowd's last quarter hour, and still
			// says what this browser asked (remind.js keeps it).
			soonPage := s.URL + "/test/remind/" + itoa(soon.ID)
			run(t, b, "remind me of a sale starting soon",
				chromedp.Navigate(soonPage),
				chromedp.WaitVisible(`[data-remind-button][aria-pressed="false"]`, chromedp.ByQuery),
				chromedp.Click("[data-remind-button]", chromedp.ByQuery),
				chromedp.WaitVisible(pressed, chromedp.ByQuery),
				chromedp.Navigate(soonPage),
			)
			wait, cancel := context.WithTimeout(b, 10*time.Second)
			defer cancel()
			if err := chromedp.Run(wait, chromedp.WaitVisible(pressed, chromedp.ByQuery),
				chromedp.Text("[data-remind-button]", &label, chromedp.ByQuery)); err != nil {
				t.Fatalf("after a reload ten minutes before the start, the button does not say the shopper is reminded: %v", err)
			}
			if label != tr.T("remind.on") {
				t.Errorf("ten minutes before the start, after a reload, the button says %q; want %q", label, tr.T("remind.on"))
			}
		})
	}
}
