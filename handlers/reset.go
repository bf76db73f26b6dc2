package handlers

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/utils"
	"gorm.io/gorm"

	"seckill/auth"
	"seckill/errs"
	"seckill/i18n"
	sendmail "seckill/mail"
	"seckill/models"
	"seckill/ratelimit"
)

var (
	resetPerIP      = ratelimit.Limit{Rate: 10, Burst: 20, Period: time.Minute}
	resetPerAddress = ratelimit.Limit{Rate: 3, Burst: 3, Period: time.Hour}
	resetPerAccount = ratelimit.Limit{Rate: 5, Burst: 5, Period: time.Hour}
)

// Reset serves password reset by mail: asking for a link, and choosing a new password with it.
type Reset struct {
	DB          *gorm.DB
	Mail        *sendmail.Queue
	Sessions    *auth.Sessions
	Passwords   *auth.Passwords
	Limits      *ratelimit.Shared
	BaseURL     string
	RateLimitIP bool
	Log         *slog.Logger
	ShopContact string // SHOP_CONTACT, which /forgot names for an account without a verified address
	Now         func() time.Time

	asks chan struct{} // the turns of the lookups answered after the request (Ask)
}

// maxAsks bounds the reset lookups running after their requests were answered; beyond it a request
// is dropped (and logged): the person asks again.
const maxAsks = 64

// Ask asks for a reset link for an address: 202 whether or not an account has it verified. Nothing in
// the answer tells: the status and body are one, the limits count the address whoever owns it, and
// the lookup, the token and the mail happen after the answer (so its time says nothing either).
func (h *Reset) Ask(c *fiber.Ctx) error {
	var in struct {
		Email string `json:"email"`
	}
	if err := parseJSON(c, &in); err != nil {
		return err
	}
	addr, ok := normalEmail(in.Email)
	if !ok {
		return errs.Bad(errs.W("email", "email_format"))
	}
	ctx := c.UserContext()
	if h.RateLimitIP {
		if err := h.Limits.Allow(ctx, "reset:ip:"+addressKey(c), resetPerIP); err != nil {
			return err
		}
	}
	if err := h.Limits.Allow(ctx, "reset:address:"+emailKey(addr), resetPerAddress); err != nil {
		return err
	}
	if h.asks == nil {
		return errs.New(errs.NotReady, "password reset is not ready")
	}
	lang := utils.CopyString(Lang(c)) // it outlives the request
	select {
	case h.asks <- struct{}{}:
		go func() {
			defer func() { <-h.asks }()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := h.mailLink(ctx, addr, lang); err != nil {
				h.Log.WarnContext(ctx, "a password reset link could not be queued", "err", err)
			}
		}()
	default:
		h.Log.Warn("password reset asked faster than it is looked up: a request was dropped")
	}
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"status": "accepted"})
}

// Prepare makes the turns of the lookups; call it before serving (NewServer does).
func (h *Reset) Prepare() { h.asks = make(chan struct{}, maxAsks) }

// mailLink queues a reset link for the account whose verified address is addr, when there is one and
// it is within its own limit.
func (h *Reset) mailLink(ctx context.Context, addr, lang string) error {
	u, err := models.UserByVerifiedEmail(ctx, h.DB, addr)
	if errs.Is(err, errs.NotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := h.Limits.Allow(ctx, "reset:account:"+strconv.FormatInt(u.ID, 10), resetPerAccount); err != nil {
		h.Log.InfoContext(ctx, "a password reset link was not sent: the account's limit", "user_id", u.ID)
		return nil
	}
	token, hash, err := newToken()
	if err != nil {
		return err
	}
	now := h.Now()
	return models.Atomically(ctx, h.DB, func(tx *gorm.DB) error {
		// Only the newest link works.
		if err := models.EndTokens(ctx, tx, u.ID, models.TokenPasswordReset, now); err != nil {
			return err
		}
		if err := models.CreateToken(ctx, tx, &models.Token{UserID: u.ID, Purpose: models.TokenPasswordReset, Hash: hash, Email: addr,
			ExpiresAt: now.Add(resetTTL), CreatedAt: now}); err != nil {
			return err
		}
		return h.Mail.Enqueue(ctx, tx, sendmail.Message{Kind: sendmail.KindPasswordReset, To: addr, Lang: lang, UserID: u.ID,
			Data: map[string]string{"Link": h.BaseURL + "/reset?token=" + token, "Username": u.Username}})
	})
}

// Confirm sets a new password with a reset link's token: 204, and every session of the account ends
// (on every instance). The password follows registration's rules; a refused one leaves the link usable.
func (h *Reset) Confirm(c *fiber.Ctx) error {
	var in struct {
		Token       string `json:"token"`
		NewPassword string `json:"new_password"`
	}
	if err := parseJSON(c, &in); err != nil {
		return err
	}
	ctx := c.UserContext()
	if err := tokenTried(c, h.Limits, h.RateLimitIP, in.Token); err != nil {
		return err
	}
	hash := tokenHash(in.Token)
	t, err := models.PeekToken(ctx, h.DB, models.TokenPasswordReset, hash, h.Now())
	if err != nil {
		return err
	}
	u, err := models.UserByID(ctx, h.DB, t.UserID)
	if err != nil {
		return err
	}
	why, err := h.Passwords.Vet(ctx, "new_password", u.Username, in.NewPassword)
	if err != nil {
		return err
	}
	if len(why) > 0 {
		return errs.Bad(why...)
	}
	pwHash, err := h.Passwords.Hash(ctx, in.NewPassword)
	if err != nil {
		return err
	}
	now := h.Now()
	err = models.Atomically(ctx, h.DB, func(tx *gorm.DB) error {
		if _, err := models.UseToken(ctx, tx, models.TokenPasswordReset, hash, now); err != nil {
			return err // used by a request that came first
		}
		if err := models.SetPasswordHash(ctx, tx, u.ID, pwHash, now); err != nil {
			return err
		}
		if u.Email == nil || u.EmailVerifiedAt == nil {
			return nil
		}
		return h.Mail.Enqueue(ctx, tx, sendmail.Message{Kind: sendmail.KindPasswordChanged, To: *u.Email, Lang: Lang(c), UserID: u.ID,
			Data: map[string]string{"Username": u.Username}})
	})
	if err != nil {
		return err
	}
	if err := h.Sessions.EndAll(ctx, u.ID); err != nil {
		return err
	}
	// The guesses counted against the account's logins are forgotten: its owner proved who they are.
	_ = h.Limits.Reset(ctx, "login:account:"+strconv.FormatInt(u.ID, 10))
	return c.SendStatus(fiber.StatusNoContent)
}

// ForgotPage renders /forgot: the form that asks for a reset link.
func (h *Reset) ForgotPage(c *fiber.Ctx) error {
	tr := i18n.For(Lang(c))
	noEmail := tr.T("forgot.noEmailNoContact")
	if h.ShopContact != "" {
		noEmail = strings.ReplaceAll(tr.T("forgot.noEmailContact"), "{contact}", h.ShopContact)
	}
	return c.Render("forgot", PageData(c, h.Now(), "forgot.title", "NoEmail", noEmail), Layout)
}

// ResetPage renders /reset?token=…: the new password's form (the token is checked when it is sent).
func (h *Reset) ResetPage(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set("Referrer-Policy", "no-referrer")
	return c.Render("reset", PageData(c, h.Now(), "reset.title", "HasToken", validToken(c.Query("token"))), Layout)
}
