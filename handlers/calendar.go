package handlers

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	ics "github.com/arran4/golang-ical"
	"github.com/gofiber/fiber/v2"

	"seckill/catalog"
	"seckill/errs"
	"seckill/i18n"
	"seckill/models"
)

// Calendar answers an approved sale as an iCalendar file (RFC 5545): "add to calendar" for everyone,
// with or without an account. A queue sale has two events, the line's opening and the sale; each has an
// alarm ten minutes before. Read from the catalog in memory: no query.
type Calendar struct {
	Catalog *catalog.Catalog
	BaseURL string // the shop's address, for the events' links and ids
}

// errNoSale answers a sale that is not coming (ended early by an admin) as one that does not exist.
var errNoSale = errs.Static(errs.NotFound, "no such activity")

// calendarAlarm is how long before an event the calendar reminds.
const calendarAlarm = 10 * time.Minute

// Activity answers GET /api/activities/{id}/calendar.ics. ?lang=en|zh chooses the words (and makes the
// answer the same for everyone who asks it, so caches keep it); without it, the request's language.
func (h *Calendar) Activity(c *fiber.Ctx) error {
	id, err := pathID(c, "id", "activity")
	if err != nil {
		return err
	}
	a, err := h.Catalog.Activity(c.UserContext(), id)
	if err != nil {
		return err
	}
	if a.EndedEarly { // an admin ended it: nothing is coming
		return errNoSale
	}
	lang, shared := Lang(c), false
	if q := c.Query("lang"); q == "en" || q == "zh" {
		lang, shared = q, true
	}
	tr := i18n.For(lang)
	link := h.BaseURL + "/"
	if len(a.Items) == 1 {
		link = h.BaseURL + "/items/" + strconv.FormatInt(a.Items[0].ID, 10)
	}
	host := "seckill"
	if u, err := url.Parse(h.BaseURL); err == nil && u.Host != "" {
		host = u.Hostname()
	}

	cal := ics.NewCalendarFor("seckill")
	cal.SetMethod(ics.MethodPublish)
	cal.SetName(a.Name)
	stamp := a.UpdatedAt.UTC()
	event := func(uid, summary string, start, end time.Time) {
		e := cal.AddEvent(uid + "-" + strconv.FormatInt(a.ID, 10) + "@" + host)
		e.SetDtStampTime(stamp)
		e.SetStartAt(start.UTC())
		e.SetEndAt(end.UTC())
		e.SetSummary(summary)
		e.SetURL(link)
		e.SetDescription(strings.TrimSpace(clip(a.Description, 1000) + "\n\n" + link))
		alarm := e.AddAlarm()
		alarm.SetAction(ics.ActionDisplay)
		alarm.SetTrigger("-PT" + strconv.Itoa(int(calendarAlarm/time.Minute)) + "M")
		alarm.SetProperty(ics.ComponentPropertyDescription, summary)
	}
	if a.SaleMode == models.SaleQueue && a.QueueOpensAt != nil {
		event("line", tr.T("cal.lineOpens")+" · "+a.Name, *a.QueueOpensAt, a.StartsAt)
	}
	event("sale", tr.T("cal.saleStarts")+" · "+a.Name, a.StartsAt, a.EndsAt)

	c.Set(fiber.HeaderContentType, "text/calendar; charset=utf-8")
	c.Set(fiber.HeaderContentDisposition, `attachment; filename="sale-`+strconv.FormatInt(a.ID, 10)+`.ics"`)
	if shared {
		c.Set(fiber.HeaderCacheControl, "public, max-age=60")
	} else {
		c.Set(fiber.HeaderCacheControl, "private, max-age=60")
	}
	return c.SendString(cal.Serialize(ics.WithNewLineWindows)) // RFC 5545: lines end in CRLF
}

// clip answers s cut to at most n runes.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
