package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"seckill/auth"
	"seckill/errs"
	"seckill/i18n"
	"seckill/internal/jobreport"
	"seckill/models"
)

// Consoles renders the merchant console and the admin pages. The data changes they make go through the
// JSON API; these pages only show.
type Consoles struct {
	DB    *gorm.DB
	Stats *Live
	Jobs  jobRuns
	Books booksCheck
	Now   func() time.Time
}

// jobRuns answers every background job's last round (the jobs' Runs).
type jobRuns interface {
	All(ctx context.Context) ([]jobreport.Run, error)
}

// booksCheck answers the items whose books did not add up in the reconciler's last round.
type booksCheck interface {
	Mismatches() []jobreport.Mismatch
}

// pageRole lets a page through for the roles listed: without a session it sends to log in and back,
// with another role it shows a page saying so.
func pageRole(c *fiber.Ctx, now time.Time, roles ...string) (auth.Session, bool, error) {
	s, ok := SessionOf(c)
	if !ok {
		return s, false, redirectLocal(c, "/login?next="+url.QueryEscape(c.OriginalURL()))
	}
	for _, r := range roles {
		if s.Role == r {
			return s, true, nil
		}
	}
	c.Status(fiber.StatusForbidden)
	return s, false, c.Render("forbidden", PageData(c, now, "forbidden.title"), Layout)
}

func noStore(c *fiber.Ctx) { c.Set(fiber.HeaderCacheControl, "no-store") }

// MerchantHome lists the merchant's activities, with the form for a new one.
func (h *Consoles) MerchantHome(c *fiber.Ctx) error {
	s, ok, err := pageRole(c, h.Now(), models.RoleMerchant)
	if !ok {
		return err
	}
	acts, err := models.MerchantActivities(c.UserContext(), h.DB, s.UserID)
	if err != nil {
		return err
	}
	// The list shows every decision with its reason, the new ones marked: seen from now on (the badge
	// of the console's link goes).
	if err := models.SeeDecisions(c.UserContext(), h.DB, s.UserID); err != nil {
		return err
	}
	noStore(c)
	return c.Render("merchant", PageData(c, h.Now(), "nav.merchant", "Activities", acts), Layout)
}

// MerchantActivity shows one activity: its form, its items, the review's reason, Submit.
func (h *Consoles) MerchantActivity(c *fiber.Ctx) error {
	s, ok, err := pageRole(c, h.Now(), models.RoleMerchant)
	if !ok {
		return err
	}
	id, err := pathID(c, "id", "activity")
	if err != nil {
		return err
	}
	a, err := models.MerchantActivity(c.UserContext(), h.DB, s.UserID, id)
	if err != nil {
		return err
	}
	if a.DecisionUnseen { // its page shows the decision (the mail's link leads here)
		if err := models.SeeDecisions(c.UserContext(), h.DB, s.UserID, a.ID); err != nil {
			return err
		}
	}
	itemJSON := map[int64]string{}
	for _, it := range a.Items {
		b, _ := json.Marshal(map[string]any{"id": it.ID, "name": it.Name, "title": it.Title, "description": it.Description,
			"image_url": it.ImageURL, "original_price_cents": it.OriginalPriceCents, "seckill_price_cents": it.SeckillPriceCents, "stock": it.StockTotal,
			"stock_shards": max(it.StockShards, 1)})
		itemJSON[it.ID] = string(b)
	}
	_, editErr := models.NextActivityState(a.State, models.ActEdit)
	noStore(c)
	data := PageData(c, h.Now(), "nav.merchant", "Activity", a, "Locked", editErr != nil, "ItemJSON", itemJSON)
	data["Title"] = a.Name
	return c.Render("merchant_activity", data, Layout)
}

// live renders the dashboard of an activity for its merchant or an admin.
func (h *Consoles) live(c *fiber.Ctx, a *models.Activity, base, back, backLabel string) error {
	noStore(c)
	data := PageData(c, h.Now(), "live.title", "Activity", a, "Back", back, "BackLabel", backLabel, "Admin", base == "/admin",
		"StopBase", "/api"+base+"/activities", "StatsURL", fmt.Sprintf("/api%s/activities/%d/stats", base, a.ID), "ChartURL", fmt.Sprintf("%s/activities/%d/chart.svg", base, a.ID))
	data["Title"] = a.Name
	return c.Render("live", data, Layout)
}

func (h *Consoles) chart(c *fiber.Ctx, a *models.Activity) error {
	st, err := h.Stats.of(c, a)
	if err != nil {
		return err
	}
	noStore(c)
	c.Set(fiber.HeaderContentType, "image/svg+xml")
	return c.Send(chartSVG(st.Answers, a.Name, i18n.For(Lang(c))))
}

func (h *Consoles) merchantOwn(c *fiber.Ctx) (*models.Activity, bool, error) {
	s, ok, err := pageRole(c, h.Now(), models.RoleMerchant)
	if !ok {
		return nil, false, err
	}
	id, err := pathID(c, "id", "activity")
	if err != nil {
		return nil, false, err
	}
	a, err := models.MerchantActivity(c.UserContext(), h.DB, s.UserID, id)
	return a, err == nil, err
}

func (h *Consoles) anyActivity(c *fiber.Ctx) (*models.Activity, bool, error) {
	if _, ok, err := pageRole(c, h.Now(), models.RoleAdmin); !ok {
		return nil, false, err
	}
	id, err := pathID(c, "id", "activity")
	if err != nil {
		return nil, false, err
	}
	a, err := models.ActivityByID(c.UserContext(), h.DB, id)
	return a, err == nil, err
}

// MerchantLive is the merchant's live dashboard of an activity.
func (h *Consoles) MerchantLive(c *fiber.Ctx) error {
	a, ok, err := h.merchantOwn(c)
	if !ok {
		return err
	}
	return h.live(c, a, "/merchant", "/merchant", "con.myActivities")
}

// MerchantChart draws the merchant's activity's chart.
func (h *Consoles) MerchantChart(c *fiber.Ctx) error {
	a, ok, err := h.merchantOwn(c)
	if !ok {
		return err
	}
	return h.chart(c, a)
}

// AdminLive is an admin's live dashboard of an activity.
func (h *Consoles) AdminLive(c *fiber.Ctx) error {
	a, ok, err := h.anyActivity(c)
	if !ok {
		return err
	}
	return h.live(c, a, "/admin", "/admin", "nav.admin")
}

// AdminChart draws an activity's chart for admins.
func (h *Consoles) AdminChart(c *fiber.Ctx) error {
	a, ok, err := h.anyActivity(c)
	if !ok {
		return err
	}
	return h.chart(c, a)
}

// AdminHome is the review queue, with the approved sales and their dashboards.
func (h *Consoles) AdminHome(c *fiber.Ctx) error {
	if _, ok, err := pageRole(c, h.Now(), models.RoleAdmin); !ok {
		return err
	}
	ctx := c.UserContext()
	reviews, err := models.PendingReviews(ctx, h.DB)
	if err != nil {
		return err
	}
	approved, err := models.ApprovedEndingAfter(ctx, h.DB, h.Now())
	if err != nil {
		return err
	}
	// A sale ended early before its start still ends after now (at its start): it is over all the same.
	approved = slices.DeleteFunc(approved, func(a models.Activity) bool { return a.Over(h.Now()) })
	decided, err := models.RecentlyReviewed(ctx, h.DB, 30)
	if err != nil {
		return err
	}
	ids := make([]int64, 0, len(reviews)+len(decided))
	for _, a := range append(append([]models.Activity{}, reviews...), decided...) {
		ids = append(ids, a.MerchantID)
	}
	merchants, err := models.Usernames(ctx, h.DB, ids)
	if err != nil {
		return err
	}
	runs, err := h.Jobs.All(ctx)
	if err != nil {
		return err
	}
	openAppeals, err := models.CountAppeals(ctx, h.DB, models.AppealOpen)
	if err != nil {
		return err
	}
	noStore(c)
	done := c.Query("done")
	if done != "approved" && done != "rejected" {
		done = ""
	}
	return c.Render("admin", PageData(c, h.Now(), "nav.admin", "Reviews", reviews, "Approved", approved, "Decided", decided, "Done", done, "Merchants", merchants,
		"Runs", runs, "Mismatches", h.Books.Mismatches(), "OpenAppeals", openAppeals), Layout)
}

// AdminUsers lists users with a role switch each.
func (h *Consoles) AdminUsers(c *fiber.Ctx) error {
	if _, ok, err := pageRole(c, h.Now(), models.RoleAdmin); !ok {
		return err
	}
	users, total, page, err := searchUsers(c, h.DB)
	if err != nil {
		return err
	}
	last := max(int((total+usersPerPage-1)/usersPerPage), 1)
	noStore(c)
	return c.Render("admin_users", PageData(c, h.Now(), "adm.users", "Users", users, "Query", c.Query("q"), "Total", total,
		"Page", page, "Prev", page-1, "Next", page+1, "Last", last,
		"Roles", []string{models.RoleShopper, models.RoleMerchant, models.RoleAdmin}), Layout)
}

// AdminAudit shows the audit log a page at a time, newest first, found by who, what, on what and when
// (the filters of GET /api/admin/audit, in a form that works without a script).
func (h *Consoles) AdminAudit(c *fiber.Ctx) error {
	if _, ok, err := pageRole(c, h.Now(), models.RoleAdmin); !ok {
		return err
	}
	tr := i18n.For(Lang(c))
	data := PageData(c, h.Now(), "adm.audit", "Filter", searchForm(c, "actor", "action", "on", "from", "to"), "Actions", auditActions(tr))
	s, none, err := auditSearchOf(c, h.DB)
	if err != nil {
		if errs.Code(err) != errs.BadRequest {
			return err
		}
		data["SearchError"] = localized(c, err)
		s, none = models.AuditSearch{Page: 1}, true
	}
	page, views, err := auditPage(c, h.DB, s, none, tr)
	if err != nil {
		return err
	}
	data["Audit"], data["Pager"] = views, pagerOf(c, tr, page.Page, page.PerPage, page.Total, page.Capped, len(page.Rows))
	noStore(c)
	return c.Render("admin_audit", data, Layout)
}
