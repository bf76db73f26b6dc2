package handlers

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"seckill/auth"
	"seckill/errs"
	"seckill/models"
	"seckill/ratelimit"
)

// Cookie names.
const (
	SessionCookie = "sk_session"
	CSRFCookie    = "sk_csrf"
	CSRFHeader    = "X-CSRF-Token"
	sessionLocal  = "session"
)

// Login failures are slowed per username and per address: after a burst, one more try per interval.
var (
	loginPerUser = ratelimit.Limit{Rate: 5, Burst: 5, Period: 5 * time.Minute}
	loginPerIP   = ratelimit.Limit{Rate: 30, Burst: 30, Period: time.Minute}
)

// Accounts serves registration, login, logout and the session and CSRF middleware.
type Accounts struct {
	DB            *gorm.DB
	Sessions      *auth.Sessions
	CSRF          *auth.CSRF
	Limits        *ratelimit.Shared
	BcryptCost    int
	SecureCookies bool
	RateLimitIP   bool
	SessionTTL    time.Duration
	dummyHash     string // compared against when the username is unknown, so that a miss takes as long as a hit
}

// NewAccounts returns the accounts handlers; it hashes a dummy password at the configured cost.
func NewAccounts(a Accounts) (*Accounts, error) {
	h, err := auth.HashPassword("not a real password", a.BcryptCost)
	if err != nil {
		return nil, err
	}
	a.dummyHash = h
	return &a, nil
}

// UserJSON is a user as the API shows it.
type UserJSON struct {
	ID       int64  `json:"id"`
	Username string `json:"username"`
	Role     string `json:"role"`
}

func userJSON(u *models.User) UserJSON { return UserJSON{ID: u.ID, Username: u.Username, Role: u.Role} }

// SessionOf returns the request's session, if it carries a valid one.
func SessionOf(c *fiber.Ctx) (auth.Session, bool) {
	s, ok := c.Locals(sessionLocal).(auth.Session)
	return s, ok
}

// LoadSession reads the session cookie, in memory only, and keeps the session for the handlers.
func (h *Accounts) LoadSession(c *fiber.Ctx) error {
	if v := c.Cookies(SessionCookie); v != "" {
		if s, ok := h.Sessions.Check(v); ok {
			c.Locals(sessionLocal, s)
		}
	}
	return c.Next()
}

// RequireCSRF refuses a state-changing request made with a session cookie unless it carries the CSRF token.
func (h *Accounts) RequireCSRF(c *fiber.Ctx) error {
	switch c.Method() {
	case fiber.MethodGet, fiber.MethodHead, fiber.MethodOptions:
		return c.Next()
	}
	if c.Cookies(SessionCookie) == "" {
		return c.Next()
	}
	if !h.CSRF.Valid(c.Get(CSRFHeader), c.Cookies(CSRFCookie)) {
		return errs.New(errs.CSRF, "missing or wrong "+CSRFHeader+" header: get a token from GET /api/csrf")
	}
	return c.Next()
}

// RequireUser answers 401 without a session.
func RequireUser(c *fiber.Ctx) error {
	if _, ok := SessionOf(c); !ok {
		return errs.New(errs.Unauthenticated, "log in first")
	}
	return c.Next()
}

// RequireRole answers 401 without a session and 403 with a role not listed.
func RequireRole(roles ...string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		s, ok := SessionOf(c)
		if !ok {
			return errs.New(errs.Unauthenticated, "log in first")
		}
		for _, r := range roles {
			if s.Role == r {
				return c.Next()
			}
		}
		return errs.Newf(errs.Forbidden, "this needs the role %s", strings.Join(roles, " or "))
	}
}

// CSRFToken answers a CSRF token and sets it as a cookie; a browser that has a good one keeps it.
func (h *Accounts) CSRFToken(c *fiber.Ctx) error {
	tok := c.Cookies(CSRFCookie)
	if !h.CSRF.Valid(tok, tok) {
		var err error
		if tok, err = h.CSRF.Token(); err != nil {
			return err
		}
	}
	h.setCookie(c, CSRFCookie, tok, time.Now().Add(365*24*time.Hour))
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(fiber.Map{"token": tok})
}

func (h *Accounts) setCookie(c *fiber.Ctx, name, value string, expires time.Time) {
	c.Cookie(&fiber.Cookie{
		Name: name, Value: value, Path: "/", Expires: expires,
		HTTPOnly: true, SameSite: fiber.CookieSameSiteLaxMode, Secure: h.SecureCookies,
	})
}

// StartSession issues a new session for u and sets its cookie.
func (h *Accounts) StartSession(c *fiber.Ctx, u *models.User) error {
	s, value, err := h.Sessions.Issue(u)
	if err != nil {
		return err
	}
	h.setCookie(c, SessionCookie, value, s.Expires)
	c.Locals(sessionLocal, s)
	return nil
}

type credentials struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// ParseJSON decodes the request body into v, answering bad_request for a body that is not that JSON.
func ParseJSON(c *fiber.Ctx, v any) error {
	if err := json.Unmarshal(c.Body(), v); err != nil {
		return errs.New(errs.BadRequest, "body: must be a JSON object with the documented fields")
	}
	return nil
}

// Register makes a shopper account and logs it in.
func (h *Accounts) Register(c *fiber.Ctx) error {
	var in credentials
	if err := ParseJSON(c, &in); err != nil {
		return err
	}
	if err := auth.ValidateCredentials(in.Username, in.Password); err != nil {
		return err
	}
	hash, err := auth.HashPassword(in.Password, h.BcryptCost)
	if err != nil {
		return err
	}
	u, err := models.CreateUser(c.UserContext(), h.DB, in.Username, hash, models.RoleShopper)
	if err != nil {
		return err
	}
	if err := h.StartSession(c, u); err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(userJSON(u))
}

// Login checks a username and password and starts a new session.
func (h *Accounts) Login(c *fiber.Ctx) error {
	var in credentials
	if err := ParseJSON(c, &in); err != nil {
		return err
	}
	if in.Username == "" || in.Password == "" {
		return errs.Invalid("username", "and password are required")
	}
	ctx := c.UserContext()
	userKey, ipKey := "login:user:"+strings.ToLower(in.Username), "login:ip:"+c.IP()
	if err := h.Limits.Check(ctx, userKey, loginPerUser); err != nil {
		return err
	}
	if h.RateLimitIP {
		if err := h.Limits.Check(ctx, ipKey, loginPerIP); err != nil {
			return err
		}
	}
	u, err := models.UserByUsername(ctx, h.DB, in.Username)
	if err != nil && !errs.Is(err, errs.NotFound) {
		return err
	}
	if u == nil {
		auth.CheckPassword(h.dummyHash, in.Password) // as slow as a real check
		return h.failed(ctx, userKey, ipKey)
	}
	if !auth.CheckPassword(u.PasswordHash, in.Password) {
		return h.failed(ctx, userKey, ipKey)
	}
	if err := h.StartSession(c, u); err != nil {
		return err
	}
	return c.JSON(userJSON(u))
}

func (h *Accounts) failed(ctx context.Context, userKey, ipKey string) error {
	// The answer is bad_credentials whatever the counters say: the next try is the one that is slowed.
	_ = h.Limits.Allow(ctx, userKey, loginPerUser)
	if h.RateLimitIP {
		_ = h.Limits.Allow(ctx, ipKey, loginPerIP)
	}
	return errs.New(errs.BadCredentials, "wrong username or password")
}

// Logout ends the user's sessions everywhere and clears the cookie.
func (h *Accounts) Logout(c *fiber.Ctx) error {
	if s, ok := SessionOf(c); ok {
		if err := h.Sessions.EndAll(c.UserContext(), s.UserID); err != nil && !errs.Is(err, errs.NotFound) {
			return err
		}
	}
	h.setCookie(c, SessionCookie, "", time.Unix(0, 0))
	return c.SendStatus(fiber.StatusNoContent)
}

// Me answers the logged-in user.
func (h *Accounts) Me(c *fiber.Ctx) error {
	s, _ := SessionOf(c)
	u, err := models.UserByID(c.UserContext(), h.DB, s.UserID)
	if errs.Is(err, errs.NotFound) {
		return errs.New(errs.Unauthenticated, "log in first")
	}
	if err != nil {
		return err
	}
	return c.JSON(userJSON(u))
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
	if err := ParseJSON(c, &in); err != nil {
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
