package handlers

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"seckill/auth"
	"seckill/errs"
	"seckill/i18n"
	sendmail "seckill/mail"
	"seckill/models"
	"seckill/ratelimit"
)

// reminderPerAccount bounds how often an account asks for or drops reminders.
var reminderPerAccount = ratelimit.Limit{Rate: 60, Burst: 30, Period: time.Minute}

// Reminders serves "remind me" of an upcoming sale (mailed by jobs.Reminders), the caller's list, and
// the unsubscribe page a reminder's mail links to.
type Reminders struct {
	DB     *gorm.DB
	Emails *auth.Emails // the caller's address and whether it is verified, from memory
	Links  *sendmail.Unsubscribes
	Limits *ratelimit.Shared
	Now    func() time.Time
}

// reminderJSON is a reminder as the API shows it.
type reminderJSON struct {
	ActivityID     int64      `json:"activity_id"`
	Name           string     `json:"name"`
	StartsAt       time.Time  `json:"starts_at"`
	QueueOpensAt   *time.Time `json:"queue_opens_at"`
	Lang           string     `json:"lang"`
	CreatedAt      time.Time  `json:"created_at"`
	LineOpenSentAt *time.Time `json:"line_open_sent_at"`
	StartSentAt    *time.Time `json:"start_sent_at"`
}

func reminderOf(r models.ReminderOfSale) reminderJSON {
	utc := func(t *time.Time) *time.Time {
		if t == nil {
			return nil
		}
		u := t.UTC()
		return &u
	}
	return reminderJSON{ActivityID: r.ActivityID, Name: r.Name, StartsAt: r.StartsAt.UTC(), QueueOpensAt: utc(r.QueueOpensAt), Lang: r.Lang,
		CreatedAt: r.CreatedAt.UTC(), LineOpenSentAt: utc(r.LineOpenSentAt), StartSentAt: utc(r.StartSentAt)}
}

var errEmailRequired = errs.Static(errs.EmailRequired, "a reminder is mailed: add an e-mail address to your account and verify it first (/account/email)")

// Add asks for the caller's reminder of an approved sale that has not started: 201, or 200 when it was
// asked for already. Someone the sale's rules keep out (staff, an account too new for it) is refused as
// the join would refuse them (403 staff, 403 not_eligible): a reminder of a sale one may not join is of
// no use. Mail needs a verified address: 409 email_required otherwise.
func (h *Reminders) Add(c *fiber.Ctx) error {
	s, _ := SessionOf(c)
	id, err := pathID(c, "id", "activity")
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	if err := h.Limits.Allow(ctx, "remind:account:"+strconv.FormatInt(s.UserID, 10), reminderPerAccount); err != nil {
		return err
	}
	a, err := models.ApprovedActivity(ctx, h.DB, id)
	if err != nil {
		return err
	}
	if err := mayTakePart(&s, a); err != nil {
		return err
	}
	now := h.Now()
	if a.EndedEarly || !now.Before(a.StartsAt) {
		return errs.Say(errs.ActivityState, "remind_started")
	}
	st, err := h.Emails.Of(ctx, s.UserID)
	if err != nil {
		return err
	}
	if !st.Verified {
		return errEmailRequired
	}
	created, err := models.AddReminder(ctx, h.DB, s.UserID, id, Lang(c), now)
	if err != nil {
		return err
	}
	r, err := h.one(c, s.UserID, id)
	if err != nil {
		return err
	}
	status := fiber.StatusOK
	if created {
		status = fiber.StatusCreated
	}
	return c.Status(status).JSON(r)
}

func (h *Reminders) one(c *fiber.Ctx, userID, activityID int64) (reminderJSON, error) {
	r, found, err := models.ReminderOf(c.UserContext(), h.DB, userID, activityID)
	if err != nil {
		return reminderJSON{}, err
	}
	if !found {
		return reminderJSON{}, errors.New("the reminder just made is not found")
	}
	return reminderOf(r), nil
}

// Delete drops the caller's reminder of a sale (nothing more is mailed about it): 204, whether or not
// there was one.
func (h *Reminders) Delete(c *fiber.Ctx) error {
	s, _ := SessionOf(c)
	id, err := pathID(c, "id", "activity")
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	if err := h.Limits.Allow(ctx, "remind:account:"+strconv.FormatInt(s.UserID, 10), reminderPerAccount); err != nil {
		return err
	}
	if err := models.DeleteReminder(ctx, h.DB, s.UserID, id); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// Mine lists the caller's reminders of sales that have not ended, soonest first.
func (h *Reminders) Mine(c *fiber.Ctx) error {
	s, _ := SessionOf(c)
	list, err := models.RemindersOf(c.UserContext(), h.DB, s.UserID, h.Now())
	if err != nil {
		return err
	}
	out := make([]reminderJSON, 0, len(list))
	for _, r := range list {
		out = append(out, reminderOf(r))
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(out)
}

// unsubscribeOf reads the page's token and the reminder it names; found is false for a token the shop
// did not sign or a reminder that is gone.
func (h *Reminders) unsubscribeOf(c *fiber.Ctx) (userID int64, r models.ReminderOfSale, found bool, err error) {
	userID, activityID, ok := h.Links.Check(c.Query("token"))
	if !ok {
		return 0, r, false, nil
	}
	r, found, err = models.ReminderOf(c.UserContext(), h.DB, userID, activityID)
	return userID, r, found, err
}

// UnsubscribePage renders /unsubscribe?token=… from a reminder's mail: which sale, and a button that
// stops its reminders by a POST, so that a mail scanner that opens the link stops nothing.
func (h *Reminders) UnsubscribePage(c *fiber.Ctx) error {
	_, r, found, err := h.unsubscribeOf(c)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set("Referrer-Policy", "no-referrer")
	ask := strings.ReplaceAll(i18n.For(Lang(c)).T("unsub.ask"), "{sale}", r.Name)
	return c.Render("unsubscribe", PageData(c, h.Now(), "unsub.title", "Found", found, "Ask", ask, "Token", c.Query("token")), Layout)
}

// Unsubscribe is the page's POST (and a mail client's one-click unsubscribe, RFC 8058, which posts to
// the same address): the reminder the token names is deleted. The token is the authority, as a link's
// is: no session or CSRF token is asked, and a second POST says it is done all the same.
func (h *Reminders) Unsubscribe(c *fiber.Ctx) error {
	userID, r, found, err := h.unsubscribeOf(c)
	if err != nil {
		return err
	}
	if found {
		if err := models.DeleteReminder(c.UserContext(), h.DB, userID, r.ActivityID); err != nil {
			return err
		}
	}
	_, _, signed := h.Links.Check(c.Query("token"))
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set("Referrer-Policy", "no-referrer")
	return c.Render("unsubscribe", PageData(c, h.Now(), "unsub.title", "Found", found, "Done", signed), Layout)
}
