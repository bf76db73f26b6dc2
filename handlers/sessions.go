package handlers

import (
	"log/slog"
	"net/url"
	"sort"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"seckill/errs"
	"seckill/internal/hexid"
	sendmail "seckill/mail"
	"seckill/models"
	"seckill/ratelimit"
)

// A password change is limited per account, every attempt counted (as a login's): a stolen session
// cannot try passwords at bcrypt's pace.
var passwordPerUser = ratelimit.Limit{Rate: 5, Burst: 5, Period: 15 * time.Minute}

// sessionJSON is one of the caller's sessions as the API shows it.
type sessionJSON struct {
	ID         string    `json:"id"`
	Current    bool      `json:"current"`
	Browser    string    `json:"browser"`
	System     string    `json:"system"`
	IP         string    `json:"ip"`
	CreatedAt  time.Time `json:"created_at"`
	LastSeenAt time.Time `json:"last_seen_at"`
}

// liveSessions answers the caller's live sessions, newest first, the caller's own marked.
func liveSessions(c *fiber.Ctx, db *gorm.DB, now time.Time) ([]sessionJSON, error) {
	s, _ := SessionOf(c)
	rows, err := models.LiveSessionsOf(c.UserContext(), db, s.UserID, now)
	if err != nil {
		return nil, err
	}
	mine := s.PublicID()
	out := make([]sessionJSON, 0, len(rows))
	for _, r := range rows {
		out = append(out, sessionJSON{ID: r.PublicID, Current: r.PublicID == mine, Browser: r.Browser, System: r.System, IP: r.IP,
			CreatedAt: r.CreatedAt.UTC(), LastSeenAt: r.LastSeenAt.UTC()})
	}
	return out, nil
}

// ListSessions answers the caller's live sessions (GET /api/me/sessions).
func (h *Accounts) ListSessions(c *fiber.Ctx) error {
	out, err := liveSessions(c, h.DB, h.Now())
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(out)
}

// errNoSuchSession says which thing was not found, in the reader's language (not the generic not_found).
var errNoSuchSession = errs.Say(errs.NotFound, "no_such_session")

// EndSession ends one of the caller's live sessions (DELETE /api/me/sessions/{id}), on every instance;
// ending the caller's own is a logout.
func (h *Accounts) EndSession(c *fiber.Ctx) error {
	s, _ := SessionOf(c)
	id := c.Params("id")
	if !hexid.Valid(id) {
		return errNoSuchSession
	}
	own, err := h.Sessions.EndPublic(c.UserContext(), s, id)
	if err != nil {
		return err
	}
	if own {
		h.clearSession(c)
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// EndOtherSessions ends every session of the caller but this one (POST /api/me/sessions/end-others).
func (h *Accounts) EndOtherSessions(c *fiber.Ctx) error {
	s, _ := SessionOf(c)
	kept, value, err := h.Sessions.EndOthers(c.UserContext(), s)
	if err != nil {
		return err
	}
	h.setSession(c, kept, value)
	return c.SendStatus(fiber.StatusNoContent)
}

var errWrongPassword = errs.Say(errs.BadCredentials, "current_password_wrong")

// ChangePassword sets a new password when the current one is right (POST /api/me/password), and ends
// every other session of the account. The fields' mistakes come first, all at once, before any hash: the
// current password missing, the new one too short, common or holding the name (registration's rules).
// Then the per-account limit, the current password's check, and the new hash, each in a bounded turn.
func (h *Accounts) ChangePassword(c *fiber.Ctx) error {
	var in struct {
		Current string `json:"current_password"`
		New     string `json:"new_password"`
	}
	if err := parseJSON(c, &in); err != nil {
		return err
	}
	s, _ := SessionOf(c)
	ctx := c.UserContext()
	u, err := models.UserByID(ctx, h.DB, s.UserID)
	if errs.Is(err, errs.NotFound) {
		return errNeedLogin
	}
	if err != nil {
		return err
	}
	var why []errs.Why
	if in.Current == "" {
		why = append(why, errs.W("current_password", "required"))
	}
	bad, err := h.Passwords.Vet(ctx, "new_password", u.Username, in.New)
	if err != nil {
		return err
	}
	if why = append(why, bad...); len(why) > 0 {
		return errs.Bad(why...)
	}
	key := "password:account:" + strconv.FormatInt(u.ID, 10)
	if err := h.Limits.Check(ctx, key, passwordPerUser); err != nil {
		return err
	}
	count := func() error { return h.Limits.Allow(ctx, key, passwordPerUser) }
	ok := false
	if len(in.Current) > maxLoginLength { // cannot be one (bcrypt reads 72 bytes): counted, not checked
		if err := count(); err != nil {
			return err
		}
	} else if ok, err = h.Passwords.Check(ctx, u.PasswordHash, in.Current, count); err != nil {
		return err
	}
	if !ok {
		return errWrongPassword
	}
	hash, err := h.Passwords.Hash(ctx, in.New)
	if err != nil {
		return err
	}
	kept, value, err := h.Sessions.ChangePassword(ctx, s, hash)
	if err != nil {
		return err
	}
	h.setSession(c, kept, value)
	// The owner is told at the verified address, as after a reset. After the change, not in its
	// transaction: a lost notice is logged, and never undoes the change.
	if h.Mail != nil && u.Email != nil && u.EmailVerifiedAt != nil {
		if err := h.Mail.Enqueue(ctx, nil, sendmail.Message{Kind: sendmail.KindPasswordChanged, To: *u.Email, Lang: Lang(c), UserID: u.ID,
			Data: map[string]string{"Username": u.Username}}); err != nil {
			slog.WarnContext(ctx, "password changed: the notice was not queued", "user_id", u.ID, "err", err)
		}
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// Account renders the account page: the devices logged in (this one marked, each with "Log out", and
// "Log out everywhere else"), the password form, and links to the e-mail and address pages.
func (h *Pages) Account(c *fiber.Ctx) error {
	if _, ok := SessionOf(c); !ok {
		return redirectLocal(c, "/login?next="+url.QueryEscape("/account"))
	}
	sessions, err := liveSessions(c, h.DB, h.Now())
	if err != nil {
		return err
	}
	// This device first, then the others newest first.
	sort.SliceStable(sessions, func(i, j int) bool { return sessions[i].Current && !sessions[j].Current })
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Render("account", PageData(c, h.Now(), "account.title", "Sessions", sessions), Layout)
}
