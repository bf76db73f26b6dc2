package handlers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/mail"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"seckill/auth"
	"seckill/errs"
	"seckill/internal/hexid"
	sendmail "seckill/mail"
	"seckill/models"
	"seckill/ratelimit"
)

// How long a mailed link works, and how often an account or an address may be mailed one.
const (
	verifyTTL = 24 * time.Hour
	resetTTL  = 30 * time.Minute
)

var (
	emailPerAccount = ratelimit.Limit{Rate: 5, Burst: 5, Period: time.Hour}
	emailPerAddress = ratelimit.Limit{Rate: 3, Burst: 3, Period: time.Hour}
	tokenPerIP      = ratelimit.Limit{Rate: 30, Burst: 30, Period: time.Minute}
)

// Email serves an account's e-mail address (add, change, verify), the pages for it, and the demo's
// outbox; password reset by mail is reset.go's.
type Email struct {
	DB          *gorm.DB
	Mail        *sendmail.Queue
	Emails      *auth.Emails
	Limits      *ratelimit.Shared
	Passwords   *auth.Passwords // checks the current password before a verified address is replaced
	Views       fiber.Views
	BaseURL     string
	RateLimitIP bool
	Outbox      bool // demo mode: /outbox lists the mails
	Now         func() time.Time
}

var errBadToken = errs.Static(errs.BadToken, "this link is unknown, used or expired: ask for a new one")

// emailJSON is an account's address as the API shows it.
type emailJSON struct {
	Email         *string `json:"email"` // null for none
	EmailVerified bool    `json:"email_verified"`
	// Pending is the address a verified one is being changed to, until its link is used (POST /api/me/email
	// only): the verified address stays the account's meanwhile.
	Pending string `json:"email_pending,omitempty"`
}

func emailOf(st auth.EmailState) emailJSON {
	out := emailJSON{EmailVerified: st.Verified}
	if st.Email != "" {
		e := st.Email
		out.Email = &e
	}
	return out
}

// normalEmail is addr trimmed and lowercased when it is one plain address (no name, no angle
// brackets), at most 254 bytes; ok is false otherwise.
func normalEmail(addr string) (string, bool) {
	addr = strings.TrimSpace(addr)
	if addr == "" || len(addr) > 254 || strings.ContainsAny(addr, "<>\" \t\r\n") {
		return "", false
	}
	a, err := mail.ParseAddress(addr)
	if err != nil || a.Address != addr || a.Name != "" {
		return "", false
	}
	local, domain, ok := strings.Cut(addr, "@")
	if !ok || local == "" || !strings.Contains(domain, ".") || strings.HasSuffix(domain, ".") {
		return "", false
	}
	return strings.ToLower(addr), true
}

// newToken is a mailed secret (256 random bits in hex) and the hash the database keeps of it.
func newToken() (token, hash string, err error) {
	token, err = auth.RandomToken(32)
	if err != nil {
		return "", "", err
	}
	return token, tokenHash(token), nil
}

func tokenHash(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// validToken reports whether t can be a token the shop made: 64 hex digits; nothing else reaches the
// database.
func validToken(t string) bool {
	return len(t) == 64 && hexid.Valid(t[:32]) && hexid.Valid(t[32:])
}

// addressKey names an e-mail address in a rate limit's key without writing it into Redis.
func emailKey(addr string) string {
	h := sha256.Sum256([]byte(addr))
	return hex.EncodeToString(h[:12])
}

// SetEmail gives the caller's account an address, not verified, and mails it a single-use link (24 h);
// the old address, when it was verified, is told of the change. 202: the link is on its way.
func (h *Email) SetEmail(c *fiber.Ctx) error {
	s, _ := SessionOf(c)
	var in struct {
		Email           string `json:"email"`
		CurrentPassword string `json:"current_password"`
	}
	if err := parseJSON(c, &in); err != nil {
		return err
	}
	addr, ok := normalEmail(in.Email)
	if !ok {
		return errs.Bad(errs.W("email", "email_format"))
	}
	ctx := c.UserContext()
	if err := h.Limits.Allow(ctx, "email:account:"+strconv.FormatInt(s.UserID, 10), emailPerAccount); err != nil {
		return err
	}
	if err := h.Limits.Allow(ctx, "email:address:"+emailKey(addr), emailPerAddress); err != nil {
		return err
	}
	// A verified address is what recovers the account: replacing it asks the current password (a borrowed
	// session cannot take the account by mailing itself a reset), and the verified address stays until the
	// new one's link is used.
	u, err := models.UserByID(ctx, h.DB, s.UserID)
	if err != nil {
		return err
	}
	replacing := u.Email != nil && u.EmailVerifiedAt != nil && *u.Email != addr
	if replacing {
		if in.CurrentPassword == "" {
			return errs.Bad(errs.W("current_password", "required"))
		}
		right, err := h.Passwords.Check(ctx, u.PasswordHash, in.CurrentPassword, func() error { return nil })
		if err != nil {
			return err
		}
		if !right {
			return errWrongPassword
		}
	}
	token, hash, err := newToken()
	if err != nil {
		return err
	}
	now, lang := h.Now(), Lang(c)
	verified := false
	err = models.Atomically(ctx, h.DB, func(tx *gorm.DB) error {
		var before *models.User
		var err error
		if replacing {
			before, err = u, models.EmailFree(ctx, tx, s.UserID, addr)
		} else {
			before, err = models.SetEmail(ctx, tx, s.UserID, addr, now)
		}
		if err != nil {
			return err
		}
		same := before.Email != nil && *before.Email == addr
		if same && before.EmailVerifiedAt != nil {
			verified = true // nothing to verify again
			return nil
		}
		if err := models.EndTokens(ctx, tx, s.UserID, models.TokenVerifyEmail, now); err != nil {
			return err
		}
		if err := models.CreateToken(ctx, tx, &models.Token{UserID: s.UserID, Purpose: models.TokenVerifyEmail, Hash: hash, Email: addr,
			ExpiresAt: now.Add(verifyTTL), CreatedAt: now}); err != nil {
			return err
		}
		msgs := []sendmail.Message{{Kind: sendmail.KindVerifyEmail, To: addr, Lang: lang, UserID: s.UserID,
			Data: map[string]string{"Link": h.BaseURL + "/verify-email?token=" + token, "Username": s.Username, "Email": addr}}}
		if !same && before.Email != nil && before.EmailVerifiedAt != nil {
			msgs = append(msgs, sendmail.Message{Kind: sendmail.KindEmailChanged, To: *before.Email, Lang: lang, UserID: s.UserID,
				Data: map[string]string{"Username": s.Username, "Email": addr}})
		}
		return h.Mail.Enqueue(ctx, tx, msgs...)
	})
	if err != nil {
		return err
	}
	h.Emails.Changed(ctx, s.UserID)
	if replacing {
		return c.Status(fiber.StatusAccepted).JSON(emailJSON{Email: u.Email, EmailVerified: true, Pending: addr})
	}
	return c.Status(fiber.StatusAccepted).JSON(emailJSON{Email: &addr, EmailVerified: verified})
}

// VerifyEmail uses a verification link's token: the address it was mailed to is verified, if it is
// still the account's. No session is needed (the link may be opened on another device).
func (h *Email) VerifyEmail(c *fiber.Ctx) error {
	var in struct {
		Token string `json:"token"`
	}
	if err := parseJSON(c, &in); err != nil {
		return err
	}
	ctx := c.UserContext()
	if err := tokenTried(c, h.Limits, h.RateLimitIP, in.Token); err != nil {
		return err
	}
	now := h.Now()
	var t *models.Token
	err := models.Atomically(ctx, h.DB, func(tx *gorm.DB) error {
		var err error
		if t, err = models.UseToken(ctx, tx, models.TokenVerifyEmail, tokenHash(in.Token), now); err != nil {
			return err
		}
		return models.VerifyEmail(ctx, tx, t.UserID, t.Email, now)
	})
	if err != nil {
		return err
	}
	h.Emails.Changed(ctx, t.UserID)
	addr := t.Email
	return c.JSON(emailJSON{Email: &addr, EmailVerified: true})
}

// AccountEmail renders /account/email: the address, whether it is verified, and the form to add,
// change or mail the link again.
func (h *Email) AccountEmail(c *fiber.Ctx) error {
	s, ok := SessionOf(c)
	if !ok {
		return redirectLocal(c, "/login?next="+url.QueryEscape("/account/email"))
	}
	st, err := h.Emails.Of(c.UserContext(), s.UserID)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Render("account_email", PageData(c, h.Now(), "email.title", "Email", st.Email, "Verified", st.Verified), Layout)
}

// VerifyPage renders /verify-email?token=…: a button that verifies by a POST, so that a mail scanner
// that opens the link uses nothing.
func (h *Email) VerifyPage(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set("Referrer-Policy", "no-referrer")
	return c.Render("verify_email", PageData(c, h.Now(), "verify.title", "HasToken", validToken(c.Query("token"))), Layout)
}

// outboxSize is how many of the newest mails /outbox lists.
const outboxSize = 100

// OutboxPage renders /outbox in demo mode: the mails the shop would have sent, newest first, with their
// links clickable. Anywhere else it is not found.
func (h *Email) OutboxPage(c *fiber.Ctx) error {
	if !h.Outbox {
		return fiber.ErrNotFound
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), 5*time.Second)
	defer cancel()
	mails, err := models.RecentMails(ctx, h.DB, outboxSize)
	if err != nil {
		return err
	}
	type line struct {
		Text string
		Link bool // a link of this shop: shown clickable
	}
	type shown struct {
		To, Subject string
		At          time.Time
		Lines       []line
	}
	out := make([]shown, 0, len(mails))
	for _, m := range mails {
		sm := shown{To: m.ToAddr, Subject: m.Subject, At: m.CreatedAt}
		for _, l := range strings.Split(strings.TrimRight(m.TextBody, "\n"), "\n") {
			sm.Lines = append(sm.Lines, line{Text: l, Link: strings.HasPrefix(l, h.BaseURL+"/") && !strings.ContainsAny(l, " \t")})
		}
		out = append(out, sm)
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Render("outbox", PageData(c, h.Now(), "outbox.title", "Mails", out), Layout)
}

// tokenTried counts a try of a mailed link's token against the caller's address (unless RATE_LIMIT_IP is
// off) and answers errBadToken for one that is not a token's shape, before anything is looked up.
func tokenTried(c *fiber.Ctx, limits *ratelimit.Shared, perIP bool, token string) error {
	if perIP {
		if err := limits.Allow(c.UserContext(), "token:ip:"+addressKey(c), tokenPerIP); err != nil {
			return err
		}
	}
	if !validToken(token) {
		return errBadToken
	}
	return nil
}
