package handlers

import (
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"seckill/auth"
	"seckill/catalog"
	"seckill/errs"
	"seckill/models"
	"seckill/pow"
	"seckill/ratelimit"
)

// Altcha hands out the proof-of-work challenges that a registration and a join carry (GET /api/altcha).
type Altcha struct {
	Work          *pow.Work
	Catalog       *catalog.Catalog
	DB            *gorm.DB
	Devices       *auth.Devices // a page without a device cookie gets one with its challenge
	SecureCookies bool
	Limits        *ratelimit.Shared
	RateLimitIP   bool
	Now           func() time.Time
}

// A challenge costs a MAC, a device id, and for a join a database read and a Redis one: a page asks one
// per registration or join (and again after a refusal), so it is limited as the captcha is.
var (
	altchaPerUser = ratelimit.Limit{Rate: 30, Burst: 10, Period: time.Minute}
	altchaPerIP   = ratelimit.Limit{Rate: 120, Burst: 60, Period: time.Minute}
)

// newAccount is how young an account is new: its joins cost more.
const newAccount = 24 * time.Hour

// Challenge answers a challenge for ?purpose=register (anyone), or ?purpose=join&item_id= (a shopper's,
// for an item sold through a waiting room), priced for the caller.
func (h *Altcha) Challenge(c *fiber.Ctx) error {
	ctx := c.UserContext()
	if h.RateLimitIP {
		if err := h.Limits.Allow(ctx, "altcha:ip:"+addressKey(c), altchaPerIP); err != nil {
			return err
		}
	}
	if s, ok := SessionOf(c); ok {
		if err := h.Limits.Allow(ctx, "altcha:user:"+strconv.FormatInt(s.UserID, 10), altchaPerUser); err != nil {
			return err
		}
	}
	a := pow.Ask{Purpose: c.Query("purpose")}
	switch a.Purpose {
	case pow.Register:
	case pow.Join:
		s, ok := SessionOf(c)
		if !ok {
			return errNeedLogin
		}
		id, err := strconv.ParseInt(c.Query("item_id"), 10, 64)
		if err != nil || id <= 0 {
			return errs.Bad(errs.W("item_id", "queue_item"))
		}
		_, act, err := h.Catalog.Item(ctx, id)
		switch {
		case errs.Is(err, errs.NotFound) || err == nil && act.SaleMode != models.SaleQueue:
			return errs.Bad(errs.W("item_id", "queue_item"))
		case err != nil:
			return err
		}
		u, err := models.UserByID(ctx, h.DB, s.UserID)
		if err != nil {
			return err
		}
		a.ItemID, a.UserID, a.NewAccount, a.Prefix = id, s.UserID, h.Now().Sub(u.CreatedAt) < newAccount, pow.Prefix(c.IP())
	default:
		return errs.Bad(errs.W("purpose", "pow_purpose"))
	}
	ch, err := h.Work.Challenge(ctx, a)
	if err != nil {
		return err
	}
	if err := giveDevice(c, h.Devices, h.SecureCookies, h.Now()); err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(ch)
}

// joinAsk is what a join's proof must have been made for: this item, this account; counted in the
// caller's address prefix.
func joinAsk(c *fiber.Ctx, itemID, userID int64) pow.Ask {
	return pow.Ask{Purpose: pow.Join, ItemID: itemID, UserID: userID, Prefix: pow.Prefix(c.IP())}
}
