package handlers

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"seckill/auth"
	"seckill/captcha"
	"seckill/errs"
	sendmail "seckill/mail"
	"seckill/models"
	"seckill/pow"
	"seckill/ratelimit"
)

// Cookie names.
const (
	SessionCookie = "sk_session"
	// SignedInCookie tells the pages' script that a session may be there, so that a logged-out page does
	// not ask /api/me for a 401 it knows (it holds no secret: the session is the HttpOnly cookie).
	SignedInCookie = "sk_in"
	CSRFCookie     = "sk_csrf"
	CSRFHeader     = "X-CSRF-Token"
	sessionLocal   = "session"
)

// Login failures are slowed per username and per address: after a burst, one more try per interval.
// Registrations are limited per address, attempts counted whatever their outcome.
var (
	loginPerUser  = ratelimit.Limit{Rate: 5, Burst: 5, Period: 5 * time.Minute}
	loginPerIP    = ratelimit.Limit{Rate: 30, Burst: 30, Period: time.Minute}
	registerPerIP = ratelimit.Limit{Rate: 10, Burst: 20, Period: time.Minute}
	// Logins that succeed, per account: the account's owner (who knows the password) is the only one who
	// spends them, so a stranger cannot lock anyone out; they bound how fast one account can start and
	// end sessions (each logout an entry every instance keeps until the session would have expired).
	loginsPerAccount = ratelimit.Limit{Rate: 30, Burst: 10, Period: time.Hour}
	maxLoginLength   = 72 // a longer password cannot be one (bcrypt reads 72 bytes)
)

// Accounts serves registration, login, logout and the session and CSRF middleware.
type Accounts struct {
	DB            *gorm.DB
	Sessions      *auth.Sessions
	CSRF          *auth.CSRF
	Limits        *ratelimit.Shared
	Passwords     *auth.Passwords
	Captchas      *captcha.Captchas
	Work          *pow.Work       // the proof of work a registration carries
	Emails        *auth.Emails    // the accounts' addresses in memory, for /api/me (email.go)
	Mail          *sendmail.Queue // tells a verified address of a password changed
	SecureCookies bool
	RateLimitIP   bool
	SessionTTL    time.Duration
	// ShopContact is where a person writes to the shop (SHOP_CONTACT), told to a blocked account; empty
	// for none, when the answer promises no address.
	ShopContact string
	Now         func() time.Time
}

// UserJSON is a user as the API shows it.
type UserJSON struct {
	ID       int64  `json:"id"`
	Username string `json:"username"`
	Role     string `json:"role"`
}

func userJSON(u *models.User) UserJSON { return UserJSON{ID: u.ID, Username: u.Username, Role: u.Role} }

// ManagedUserJSON is a user as an admin sees it.
type ManagedUserJSON struct {
	UserJSON
	BlockedAt   *time.Time `json:"blocked_at"` // null unless blocked
	BlockReason string     `json:"block_reason"`
	CreatedAt   time.Time  `json:"created_at"`
}

func managedUserJSON(u *models.User) ManagedUserJSON {
	return ManagedUserJSON{UserJSON: userJSON(u), BlockedAt: utc(u.BlockedAt), BlockReason: u.BlockReason, CreatedAt: u.CreatedAt.UTC()}
}

// blocked is the answer to a blocked account's login: where to write, when the shop says (SHOP_CONTACT).
func (h *Accounts) blocked() *errs.Error {
	if h.ShopContact == "" {
		return errs.Say(errs.Blocked, "blocked_no_contact")
	}
	return errs.SayWith(errs.Blocked, "blocked_contact", h.ShopContact)
}

// LoadSession reads the session cookie, in memory only, and keeps the session for the handlers.
func (h *Accounts) LoadSession(c *fiber.Ctx) error {
	if v := requestCookie(c, SessionCookie); v != "" {
		// In memory; "last seen" is noted here and written apart, in batches.
		if s, ok := h.Sessions.RefSeen(v); ok {
			c.Locals(sessionLocal, s) // a pointer: no copy on the heap
		}
	}
	return c.Next()
}

// NotifyPath is the payment provider's callback: the one unsafe API request a browser never makes, so
// the one that carries no CSRF token (its signature is checked instead). A named provider's callbacks
// come to NotifyPath/{provider}, in the provider's own form (Alipay posts a form, not JSON).
const NotifyPath = "/api/payments/notify"

// isNotify reports whether path is a provider's callback.
func isNotify(path string) bool {
	rest, ok := strings.CutPrefix(path, NotifyPath)
	return ok && (rest == "" || rest[0] == '/' && !strings.Contains(rest[1:], "/"))
}

var (
	errCSRF      = errs.Static(errs.CSRF, "missing or wrong "+CSRFHeader+" header: get a token from GET /api/csrf")
	errNotJSON   = errs.Static(errs.UnsupportedMedia, "the request body must be JSON, sent as Content-Type: application/json")
	errBadBody   = errs.Static(errs.BadRequest, "body: must be a JSON object with the documented fields")
	errBadLogin  = errs.Static(errs.BadCredentials, "wrong username or password")
	errNeedLogin = errs.Static(errs.Unauthenticated, "log in first")
)

// RequireCSRF refuses every state-changing API request, with a session or without (login and
// registration too: a cross-site form must not log a victim into the attacker's account), unless it
// carries the CSRF token; and refuses a body that is not JSON, so that a cross-site form's text/plain
// body that happens to parse as JSON is never read.
func (h *Accounts) RequireCSRF(c *fiber.Ctx) error {
	switch c.Method() {
	case fiber.MethodGet, fiber.MethodHead, fiber.MethodOptions:
		return c.Next()
	}
	notify := isNotify(c.Path())
	if !notify && !h.CSRF.Valid(c.Get(CSRFHeader), requestCookie(c, CSRFCookie)) {
		return errCSRF
	}
	// Bodies are JSON, but for the upload routes' files (which carry the CSRF token all the same) and
	// the named providers' callbacks (signed, in their own forms).
	if len(c.Body()) > 0 && !isJSON(c.Get(fiber.HeaderContentType)) && !IsUpload(c.Path()) && (!notify || c.Path() == NotifyPath) {
		return errNotJSON
	}
	return c.Next()
}

// isJSON reports whether a Content-Type is application/json, with or without parameters.
func isJSON(contentType string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	return strings.EqualFold(strings.TrimSpace(mt), fiber.MIMEApplicationJSON)
}

// CSRFToken answers a CSRF token and sets it as a cookie; a browser that has a good one keeps it.
func (h *Accounts) CSRFToken(c *fiber.Ctx) error {
	tok, err := h.csrfToken(c)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(fiber.Map{"token": tok})
}

// csrfToken is the browser's CSRF token, or a new one when it has none that is good, set as the cookie
// (for another year) either way.
func (h *Accounts) csrfToken(c *fiber.Ctx) (string, error) {
	tok := c.Cookies(CSRFCookie)
	if !h.CSRF.Valid(tok, tok) {
		var err error
		if tok, err = h.CSRF.Token(); err != nil {
			return "", err
		}
	}
	h.setCookie(c, CSRFCookie, tok, h.Now().Add(365*24*time.Hour))
	return tok, nil
}

func (h *Accounts) setCookie(c *fiber.Ctx, name, value string, expires time.Time) {
	c.Cookie(&fiber.Cookie{
		Name: name, Value: value, Path: "/", Expires: expires,
		HTTPOnly: true, SameSite: fiber.CookieSameSiteLaxMode, Secure: h.SecureCookies,
	})
}

// startSession starts a new session for u (recorded with this browser's name and address: every login,
// registration and QR login comes here) and sets its cookie.
func (h *Accounts) startSession(c *fiber.Ctx, u *models.User) error {
	if u.BlockedAt != nil {
		return h.blocked()
	}
	if err := tooManyLogins(h.Limits.Allow(c.UserContext(), "login:ok:account:"+strconv.FormatInt(u.ID, 10), loginsPerAccount)); err != nil {
		return err
	}
	s, value, err := h.Sessions.Start(c.UserContext(), u, auth.Client{UserAgent: c.Get(fiber.HeaderUserAgent), IP: c.IP()})
	if err != nil {
		return err
	}
	h.Emails.Remember(u) // the account was just read: its first /api/me here needs no query
	h.setSession(c, s, value)
	return nil
}

// tooManyLogins says a refusal of the account's logins in words of its own (rate_limited, with its
// Retry-After).
func tooManyLogins(err error) error {
	var e *errs.Error
	if !errors.As(err, &e) || e.Code != errs.RateLimited {
		return err
	}
	out := errs.Say(errs.RateLimited, "logins_per_account")
	out.RetryAfter = e.RetryAfter
	return out
}

// setSession sets the cookies of session s (its value) and keeps it for the rest of the request.
func (h *Accounts) setSession(c *fiber.Ctx, s auth.Session, value string) {
	h.setCookie(c, SessionCookie, value, s.Expires)
	c.Cookie(&fiber.Cookie{Name: SignedInCookie, Value: "1", Path: "/", Expires: s.Expires, SameSite: fiber.CookieSameSiteLaxMode, Secure: h.SecureCookies})
	c.Locals(sessionLocal, &s)
}

type credentials struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// Register makes a shopper account and logs it in. The cheap checks come first and the costly last: the
// per-address limit, the fields, the proof of work and the captcha (used up only by a request whose
// proof is good), whether the name is taken, and only then the hash, in a bounded turn. Every bad field
// is answered at once, a wrong captcha among them.
func (h *Accounts) Register(c *fiber.Ctx) error {
	var in struct {
		credentials
		CaptchaID     string `json:"captcha_id"`
		CaptchaAnswer string `json:"captcha_answer"`
		Altcha        string `json:"altcha"`
	}
	if err := parseJSON(c, &in); err != nil {
		return err
	}
	ctx := c.UserContext()
	if h.RateLimitIP {
		if err := h.Limits.Allow(ctx, "register:ip:"+addressKey(c), registerPerIP); err != nil {
			return err
		}
	}
	// Every mistake of the form at once: the name, the password (not a common one, nor holding the name:
	// judged in a bounded turn) and the captcha's fields.
	var why []errs.Why
	if !auth.ValidUsername(in.Username) {
		why = append(why, errs.W("username", "username_format"))
	}
	pw, err := h.Passwords.Vet(ctx, "password", in.Username, in.Password)
	if err != nil {
		return err
	}
	why = append(why, pw...)
	var e *errs.Error
	captchaGiven := !errors.As(requireCaptcha(in.CaptchaID, in.CaptchaAnswer), &e)
	if !captchaGiven {
		why = append(why, e.Whys...)
	}
	// With bad fields the form is answered at once, a wrong captcha among them, and nothing is used up but
	// a wrong captcha: neither the proof of work nor a rightly answered captcha, so the person fixes the
	// fields and sends again.
	if len(why) > 0 {
		if captchaGiven {
			right, err := h.Captchas.Judge(ctx, in.CaptchaID, in.CaptchaAnswer)
			if err != nil {
				return err
			}
			if !right {
				why = append(why, errs.W("captcha_answer", "captcha_wrong"))
			}
		}
		return errs.Bad(why...)
	}
	// Good fields: the proof of work before the captcha's round trip, each used up.
	if err := h.Work.Verify(ctx, in.Altcha, pow.Ask{Purpose: pow.Register}); err != nil {
		return err
	}
	if err := checkCaptcha(ctx, h.Captchas, in.CaptchaID, in.CaptchaAnswer); err != nil {
		return err
	}
	switch _, err := models.UserByUsername(ctx, h.DB, in.Username); {
	case err == nil:
		return errs.New(errs.UsernameTaken, "this username is taken: choose another")
	case !errs.Is(err, errs.NotFound):
		return err
	}
	hash, err := h.Passwords.Hash(ctx, in.Password)
	if err != nil {
		return err
	}
	u, err := models.CreateUser(ctx, h.DB, in.Username, hash, models.RoleShopper)
	if err != nil {
		return err
	}
	if err := h.startSession(c, u); err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(userJSON(u))
}

// Login checks a username and password and starts a new session.
func (h *Accounts) Login(c *fiber.Ctx) error {
	var in credentials
	if err := parseJSON(c, &in); err != nil {
		return err
	}
	if in.Username == "" || in.Password == "" {
		var why []errs.Why
		if in.Username == "" {
			why = append(why, errs.W("username", "required"))
		}
		if in.Password == "" {
			why = append(why, errs.W("password", "required"))
		}
		return errs.Bad(why...)
	}
	ctx := c.UserContext()
	ipKey := "login:ip:" + addressKey(c)
	if h.RateLimitIP {
		if err := h.Limits.Check(ctx, ipKey, loginPerIP); err != nil {
			return err
		}
	}
	// A name that cannot be a username names no account: it is refused before it becomes a key.
	if !auth.ValidUsername(in.Username) || len(in.Password) > maxLoginLength {
		return h.failed(ctx, ipKey)
	}
	u, err := models.UserByUsername(ctx, h.DB, in.Username)
	if err != nil && !errs.Is(err, errs.NotFound) {
		return err
	}
	hash := ""
	if u != nil {
		hash = u.PasswordHash
	}
	// Every attempt on an account counts when its password is about to be checked (in its hashing turn),
	// so that guesses sent at once cannot all pass a limit that only failures fill, and an attempt told
	// that the server is busy costs its owner nothing; the account's own success forgets them. The count
	// is the account's, by its id: nothing else resets it (a login to another account whose name differs
	// only by case once did). A name that names no account is counted by its lowercase spelling. An
	// account already over its limit does not wait for a turn.
	userKey := "login:name:" + strings.ToLower(in.Username)
	if u != nil {
		userKey = "login:account:" + strconv.FormatInt(u.ID, 10)
	}
	if err := h.Limits.Check(ctx, userKey, loginPerUser); err != nil {
		return err
	}
	// An unknown name is checked as slowly.
	ok, err := h.Passwords.Check(ctx, hash, in.Password, func() error { return h.Limits.Allow(ctx, userKey, loginPerUser) })
	if err != nil {
		return err
	}
	if !ok || u == nil {
		return h.failed(ctx, ipKey)
	}
	_ = h.Limits.Reset(ctx, userKey)
	if err := h.startSession(c, u); err != nil {
		return err
	}
	return c.JSON(userJSON(u))
}

// failed counts a failure from the address: the answer is bad_credentials whatever the counter says, and
// the next try is the one that is slowed.
func (h *Accounts) failed(ctx context.Context, ipKey string) error {
	if h.RateLimitIP {
		_ = h.Limits.Allow(ctx, ipKey, loginPerIP)
	}
	return errBadLogin
}

// Logout ends the caller's own session, on every instance, and clears the cookie; the user's other
// sessions (a phone, another computer) go on.
func (h *Accounts) Logout(c *fiber.Ctx) error {
	if s, ok := SessionOf(c); ok {
		if err := h.Sessions.End(c.UserContext(), s); err != nil {
			return err
		}
	}
	h.clearSession(c)
	return c.SendStatus(fiber.StatusNoContent)
}

// clearSession clears the session's cookies.
func (h *Accounts) clearSession(c *fiber.Ctx) {
	h.setCookie(c, SessionCookie, "", time.Unix(0, 0))
	c.Cookie(&fiber.Cookie{Name: SignedInCookie, Value: "", Path: "/", Expires: time.Unix(0, 0), SameSite: fiber.CookieSameSiteLaxMode, Secure: h.SecureCookies})
}

// meJSON is who the logged-in user is, with the CSRF token its page sends: all a page asks on load.
type meJSON struct {
	UserJSON
	emailJSON
	CSRFToken string `json:"csrf_token"`
}

// Me answers the logged-in user and a CSRF token (set as its cookie, as GET /api/csrf does) from memory:
// the name from the signed session, the role as the session check knows it now (an admin's change
// reaches every instance over the auth channel). A cookie of the format before names were in it costs
// one query, once: it is answered from the database and given back in the current format.
func (h *Accounts) Me(c *fiber.Ctx) error {
	s, _ := SessionOf(c)
	if s.Username == "" {
		var err error
		if s, err = h.upgrade(c, s); err != nil {
			return err
		}
	}
	tok, err := h.csrfToken(c)
	if err != nil {
		return err
	}
	// The address from this instance's memory: read once per account, then kept until it changes.
	st, err := h.Emails.Of(c.UserContext(), s.UserID)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(meJSON{UserJSON: UserJSON{ID: s.UserID, Username: s.Username, Role: s.Role}, emailJSON: emailOf(st), CSRFToken: tok})
}

// upgrade gives a session of the cookie format before names its name, from the database, and sets its
// cookie in the current format (the same session: id, version and expiry).
func (h *Accounts) upgrade(c *fiber.Ctx, s auth.Session) (auth.Session, error) {
	u, err := models.UserByID(c.UserContext(), h.DB, s.UserID)
	if errs.Is(err, errs.NotFound) {
		return s, errNeedLogin
	}
	if err != nil {
		return s, err
	}
	s, value, err := h.Sessions.Upgrade(s, u.Username)
	if err != nil {
		return s, err
	}
	h.setCookie(c, SessionCookie, value, s.Expires)
	c.Locals(sessionLocal, &s)
	return s, nil
}

// SetRole lets an admin change a user's role.
func (h *Accounts) SetRole(c *fiber.Ctx) error {
	id, err := pathID(c, "id", "user")
	if err != nil {
		return err
	}
	var in struct {
		Role string `json:"role"`
	}
	if err := parseJSON(c, &in); err != nil {
		return err
	}
	who, err := actor(c, h.DB)
	if err != nil {
		return err
	}
	u, err := h.Sessions.SetRole(c.UserContext(), who, id, in.Role)
	if err != nil {
		return err
	}
	return c.JSON(userJSON(u))
}

// Block blocks an account with a reason: its sessions end on every instance at once, it cannot log in
// (nor, so, join a line or buy); its orders stay.
func (h *Accounts) Block(c *fiber.Ctx) error { return h.setBlocked(c, true) }

// Unblock lets a blocked account log in again.
func (h *Accounts) Unblock(c *fiber.Ctx) error { return h.setBlocked(c, false) }

func (h *Accounts) setBlocked(c *fiber.Ctx, blocked bool) error {
	id, err := pathID(c, "id", "user")
	if err != nil {
		return err
	}
	who, reason, err := reasoned(c, h.DB, true)
	if err != nil {
		return err
	}
	u, err := h.Sessions.SetBlocked(c.UserContext(), who, id, blocked, reason)
	if err != nil {
		return err
	}
	return c.JSON(managedUserJSON(u))
}
