package handlers

import (
	"errors"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"seckill/errs"
	"seckill/i18n"
	"seckill/models"
)

// The admins' search of orders and of the audit log: GET forms whose filters are read here once, for the
// API and the pages alike, and answered a page at a time by the database (models.SearchOrders,
// models.SearchAudit).

// orderNoLike is what an order number looks like ("SK" and a snowflake id): a q of that shape is one.
var orderNoLike = regexp.MustCompile(`^[Ss][Kk][0-9]{6,30}$`)

// searchPage reads ?page=, from 1 to models.SearchMaxPage.
func searchPage(c *fiber.Ctx) (int, *errs.Why) {
	p := c.Query("page")
	if p == "" {
		return 1, nil
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > models.SearchMaxPage {
		w := errs.W("page", "search_page", models.SearchMaxPage)
		return 0, &w
	}
	return n, nil
}

// searchTime reads a time filter: RFC 3339, or a day (YYYY-MM-DD, UTC) whose start it means, or for
// ?to= its end (the day is included).
func searchTime(c *fiber.Ctx, key string) (time.Time, *errs.Why) {
	v := c.Query(key)
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil && t.Year() >= 2000 && t.Year() < 3000 {
		return t.UTC(), nil
	}
	if t, err := time.Parse("2006-01-02", v); err == nil && t.Year() >= 2000 && t.Year() < 3000 {
		if key == "to" {
			t = t.AddDate(0, 0, 1)
		}
		return t, nil
	}
	w := errs.W(key, "search_time")
	return time.Time{}, &w
}

// orderSearchOf reads GET /api/admin/orders' (and the page's) filters: every bad one at once.
func orderSearchOf(c *fiber.Ctx) (models.OrderSearch, error) {
	var s models.OrderSearch
	var why []errs.Why
	q := strings.TrimSpace(c.Query("q"))
	switch {
	case q == "":
	case orderNoLike.MatchString(q):
		s.OrderNo = "SK" + q[2:]
	case len(q) > 32 || !validOrderNo(q):
		why = append(why, errs.W("q", "buyer_part", models.BuyerPartLeast))
	case len(q) < models.BuyerPartLeast:
		why = append(why, errs.W("q", "buyer_part", models.BuyerPartLeast))
	default:
		s.Buyer = strings.Clone(q)
	}
	if st := c.Query("status"); st != "" && st != "all" {
		ok := false
		for _, f := range orderFilters {
			ok = ok || st == f
		}
		if ok {
			s.Status = strings.Clone(st)
		} else {
			why = append(why, errs.W("status", "my_orders_filter"))
		}
	}
	if a := c.Query("activity_id"); a != "" {
		n, err := strconv.ParseInt(a, 10, 64)
		if err != nil || n < 1 {
			why = append(why, errs.W("activity_id", "search_id"))
		}
		s.ActivityID = n
	}
	var w *errs.Why
	if s.From, w = searchTime(c, "from"); w != nil {
		why = append(why, *w)
	}
	if s.To, w = searchTime(c, "to"); w != nil {
		why = append(why, *w)
	}
	if s.Page, w = searchPage(c); w != nil {
		why = append(why, *w)
	}
	if len(why) > 0 {
		return s, errs.Bad(why...)
	}
	return s, nil
}

// foundOrderJSON is an order the admins' search found, with its buyer's name.
type foundOrderJSON struct {
	orderJSON
	Buyer string `json:"buyer"`
}

// foundOrders is a page of the orders found, as the API and the page show them.
func (h *AdminOrders) foundOrders(c *fiber.Ctx, s models.OrderSearch) (*models.Paged[models.Order], []foundOrderJSON, error) {
	page, err := models.SearchOrders(c.UserContext(), h.DB, s)
	if err != nil {
		return nil, nil, err
	}
	views, err := orderViews(c, h.DB, page.Rows)
	if err != nil {
		return nil, nil, err
	}
	ids := make([]int64, len(page.Rows))
	for i, o := range page.Rows {
		ids[i] = o.UserID
	}
	names, err := models.Usernames(c.UserContext(), h.DB, ids)
	if err != nil {
		return nil, nil, err
	}
	out := make([]foundOrderJSON, len(views))
	for i, v := range views {
		out[i] = foundOrderJSON{v, names[page.Rows[i].UserID]}
	}
	return page, out, nil
}

// List answers GET /api/admin/orders: a page of the orders found by number, part of the buyer's name,
// status, sale and date, newest first, and how many there are (at most 10,000: total_capped says more).
func (h *AdminOrders) List(c *fiber.Ctx) error {
	s, err := orderSearchOf(c)
	if err != nil {
		return err
	}
	page, out, err := h.foundOrders(c, s)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"orders": out, "total": page.Total, "total_capped": page.Capped, "page": page.Page, "per_page": page.PerPage})
}

// auditSearchOf reads GET /api/admin/audit's (and the page's) filters: actor (a username, any case, or
// "system"), action, on (a target as the log names it, or an order number) and the times.
func auditSearchOf(c *fiber.Ctx, db *gorm.DB) (models.AuditSearch, bool, error) {
	var s models.AuditSearch
	var why []errs.Why
	none := false // the filters name no one: the answer is empty without asking
	if a := strings.TrimSpace(c.Query("actor")); a != "" && (len(a) > 32 || !validOrderNo(a)) {
		why = append(why, errs.W("actor", "search_actor"))
	} else if a != "" {
		switch u, err := models.UserByUsername(c.UserContext(), db, a); {
		case strings.EqualFold(a, models.System.Username):
			s.ActorID = &models.System.ID
		case err == nil:
			s.ActorID = &u.ID
		case errs.Code(err) == errs.NotFound || errors.Is(err, gorm.ErrRecordNotFound):
			none = true
		default:
			return s, false, err
		}
	}
	if a := c.Query("action"); a != "" {
		if !slices.Contains(auditActionList, a) { // the log writes no other: another finds nothing, say so
			why = append(why, errs.W("action", "search_action"))
		}
		s.Action = strings.Clone(a)
	}
	if on := strings.TrimSpace(c.Query("on")); on != "" {
		switch {
		case orderNoLike.MatchString(on):
			on = "order:SK" + on[2:]
		case !strings.Contains(on, ":"):
			on = "order:" + on // every target of the log has its kind: one without is an order's number
		case len(on) > len("order:") && strings.HasPrefix(on, "order:") && orderNoLike.MatchString(on[len("order:"):]):
			on = "order:SK" + on[len("order:SK"):]
		}
		if !auditTarget(on) {
			why = append(why, errs.W("on", "search_on"))
		}
		s.Target = strings.Clone(on)
	}
	var w *errs.Why
	if s.From, w = searchTime(c, "from"); w != nil {
		why = append(why, *w)
	}
	if s.To, w = searchTime(c, "to"); w != nil {
		why = append(why, *w)
	}
	if s.Page, w = searchPage(c); w != nil {
		why = append(why, *w)
	}
	if len(why) > 0 {
		return s, false, errs.Bad(why...)
	}
	return s, none, nil
}

// auditTarget says whether on is a target the log writes: an order's number after "order:", or the id of
// a sale, an account, an item or an appeal after its kind ("activity:2"). An order's number is only
// checked for its letters: one that was never an order finds nothing.
func auditTarget(on string) bool {
	kind, rest, _ := strings.Cut(on, ":")
	switch kind {
	case "order":
		return validOrderNo(rest)
	case "activity", "user", "item", "appeal":
		n, err := strconv.ParseInt(rest, 10, 64)
		return err == nil && n > 0 && rest[0] != '+'
	}
	return false
}

// auditEntryJSON is an audit row, as it is stored and in the words of the request's language.
type auditEntryJSON struct {
	ID      int64     `json:"id"`
	ActorID int64     `json:"actor_id"`
	Actor   string    `json:"actor"`
	Action  string    `json:"action"`
	Target  string    `json:"target"`
	Before  string    `json:"before"`
	After   string    `json:"after"`
	At      time.Time `json:"at"`
	// In words: what was done, on what (with the console's page of it, "" when there is none), and each
	// field it changed.
	ActorWords string            `json:"actor_words"` // "the shop (automatic)" for the system
	What       string            `json:"what"`
	On         string            `json:"on"`
	OnURL      string            `json:"on_url"`
	Changes    []auditChangeJSON `json:"changes"`
}

type auditChangeJSON struct {
	Field  string `json:"field"`
	Before string `json:"before"`
	After  string `json:"after"`
	Times  bool   `json:"times"`
}

// auditPage is a page of the audit log found, in tr's words.
func auditPage(c *fiber.Ctx, db *gorm.DB, s models.AuditSearch, none bool, tr i18n.Tr) (*models.Paged[models.AuditLog], []auditView, error) {
	if none {
		return &models.Paged[models.AuditLog]{Rows: []models.AuditLog{}, Page: s.Page, PerPage: models.SearchPerPage}, nil, nil
	}
	page, err := models.SearchAudit(c.UserContext(), db, s)
	if err != nil {
		return nil, nil, err
	}
	views, err := auditViews(c.UserContext(), db, page.Rows, tr)
	return page, views, err
}

// Audit answers GET /api/admin/audit: a page of the audit log found by who, what, on what and when,
// newest first, each row also in words.
func (h *Admin) Audit(c *fiber.Ctx) error {
	s, none, err := auditSearchOf(c, h.DB)
	if err != nil {
		return err
	}
	page, views, err := auditPage(c, h.DB, s, none, i18n.For(Lang(c)))
	if err != nil {
		return err
	}
	out := make([]auditEntryJSON, len(page.Rows))
	for i, r := range page.Rows {
		v := views[i]
		e := auditEntryJSON{ID: r.ID, ActorID: r.ActorID, Actor: r.Actor, Action: r.Action, Target: r.Target, Before: r.Before,
			After: r.After, At: r.CreatedAt.UTC(), ActorWords: v.Actor, What: v.Action, On: v.Target, OnURL: v.TargetURL, Changes: []auditChangeJSON{}}
		for _, ch := range v.Changes {
			e.Changes = append(e.Changes, auditChangeJSON{ch.Field, ch.Before, ch.After, ch.Times})
		}
		out[i] = e
	}
	return c.JSON(fiber.Map{"entries": out, "total": page.Total, "total_capped": page.Capped, "page": page.Page, "per_page": page.PerPage})
}

// searchForm is what a search page's form was filled with, to fill it again.
func searchForm(c *fiber.Ctx, keys ...string) map[string]string {
	out := make(map[string]string, len(keys))
	for _, k := range keys {
		out[k] = strings.Clone(c.Query(k))
	}
	return out
}

// localized is err's message in the request's language (a search form's bad filter, on the page).
func localized(c *fiber.Ctx, err error) string {
	var e *errs.Error
	if !errors.As(err, &e) {
		return err.Error()
	}
	lang := Lang(c)
	return e.Localize(lang, i18n.For(lang).T).Message
}

// pager is a search page's place among the pages: where it is, how many were found, the links before
// and after it (the same filters, another page).
type pager struct {
	Page, PerPage, Shown int
	From, To             int // the rows shown, counted from 1
	Total                int64
	Capped               bool
	Prev, Next           string
	Says                 string // "51–100 of 1,234", in words
}

func pagerOf(c *fiber.Ctx, tr i18n.Tr, page, perPage int, total int64, capped bool, shown int) pager {
	p := pager{Page: page, PerPage: perPage, Shown: shown, Total: total, Capped: capped}
	if shown > 0 {
		p.From, p.To = (page-1)*perPage+1, (page-1)*perPage+shown
		key := "srch.found"
		if capped {
			key = "srch.foundMore"
		}
		p.Says = strings.NewReplacer("{from}", strconv.Itoa(p.From), "{to}", strconv.Itoa(p.To), "{total}", thousands(total)).Replace(tr.T(key))
	}
	link := func(n int) string {
		q := url.Values{}
		c.Context().QueryArgs().VisitAll(func(k, v []byte) {
			if string(k) != "page" && len(v) > 0 {
				q.Add(string(k), string(v))
			}
		})
		q.Set("page", strconv.Itoa(n))
		return c.Path() + "?" + q.Encode()
	}
	if page > 1 {
		p.Prev = link(page - 1)
	}
	if int64(page*perPage) < total && page < models.SearchMaxPage {
		p.Next = link(page + 1)
	}
	return p
}

// auditActionList is every action the log writes, as the audit page's filter offers them.
var auditActionList = []string{
	"activity.create", "activity.edit", "activity.submit", "activity.approve", "activity.reject",
	"activity.pause", "activity.resume", "activity.end", "activity.withdraw",
	"order.ship", "order.ship_fix", "order.refund", "refund.request", "refund.done", "refund.failed", "refund.retry",
	"user.role", "user.block", "user.unblock", "appeal.answer", "cluster.cleared", "cluster.confirmed",
}

type auditActionOption struct{ Value, Words string }

func auditActions(tr i18n.Tr) []auditActionOption {
	out := make([]auditActionOption, len(auditActionList))
	for i, a := range auditActionList {
		out[i] = auditActionOption{a, words(tr, "audit."+a, a)}
	}
	return out
}

// thousands writes n with a comma every three digits (10,000).
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
