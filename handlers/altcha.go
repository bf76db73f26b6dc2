package handlers

import (
	"context"
	"strconv"
	"sync"
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

	mu    sync.Mutex
	old   int64     // the newest account that is not new (oldAccounts)
	oldAt time.Time // when it was read
}

// A challenge costs a MAC, a device id, and for a join a database read and a Redis one: a page asks one
// per registration or join (and again after a refusal), so it is limited as the captcha is.
var (
	altchaPerUser = ratelimit.Limit{Rate: 30, Burst: 10, Period: time.Minute}
	altchaPerIP   = ratelimit.Limit{Rate: 120, Burst: 60, Period: time.Minute}
)

// newAccount is how young an account is new: its joins cost more.
const newAccount = 24 * time.Hour

// oldAccountsEvery is how often an instance reads which accounts are old (at most a minute stale).
const oldAccountsEvery = time.Minute

// oldAccounts answers the newest account made newAccount ago or earlier: accounts are numbered in the
// order they are made, so an account is new when its id is above it. Read once a minute per instance, so
// that a crowd's challenges ask the database nothing.
func (h *Altcha) oldAccounts(ctx context.Context) (int64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.Now()
	if !h.oldAt.IsZero() && now.Sub(h.oldAt) < oldAccountsEvery && !now.Before(h.oldAt) {
		return h.old, nil
	}
	id, err := models.NewestUserMadeBy(ctx, h.DB, now.Add(-newAccount))
	if err != nil {
		if !h.oldAt.IsZero() {
			return h.old, nil // as last read: the price of a join is not worth refusing it for
		}
		return 0, err
	}
	h.old, h.oldAt = id, now
	return id, nil
}

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
		old, err := h.oldAccounts(ctx)
		if err != nil {
			return err
		}
		a.ItemID, a.UserID, a.NewAccount, a.Prefix = id, s.UserID, s.UserID > old, pow.Prefix(c.IP())
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
