package handlers

import (
	"context"
	"strconv"
	"time"

	"github.com/bwmarrin/snowflake"
	"github.com/gofiber/fiber/v2"

	"seckill/auth"
	"seckill/captcha"
	"seckill/catalog"
	"seckill/errs"
	"seckill/internal/hexid"
	"seckill/models"
	"seckill/ratelimit"
	"seckill/stock"
)

// Shared limits of the steps before the buy, per user and per address (the per-address ones are off
// with RATE_LIMIT_IP=off).
var (
	captchaPerUser = ratelimit.Limit{Rate: 30, Burst: 10, Period: time.Minute}
	captchaPerIP   = ratelimit.Limit{Rate: 120, Burst: 60, Period: time.Minute}
	pathPerUser    = ratelimit.Limit{Rate: 20, Burst: 10, Period: time.Minute}
	// A spoken captcha is 93 KB and a few milliseconds of a core to make: a person plays one a few times.
	audioPerUser = ratelimit.Limit{Rate: 20, Burst: 10, Period: time.Minute}
	audioPerIP   = ratelimit.Limit{Rate: 60, Burst: 30, Period: time.Minute}
	pathPerIP    = ratelimit.Limit{Rate: 120, Burst: 60, Period: time.Minute}
)

// Buy serves the buying path: captcha, purchase path, the buy itself and the buyer's result.
type Buy struct {
	Catalog     *catalog.Catalog
	Ledger      *stock.Ledger
	Loader      *catalog.Loader // loads a sale Redis does not hold, when it may be bought now
	Flags       *stock.Flags
	Stops       *catalog.Stops  // the sales an admin has paused (in memory)
	Refusals    *stock.Refusals // the rules' refusals, counted for the fairness report
	Captchas    *captcha.Captchas
	Limits      *ratelimit.Shared
	BuyLimit    *ratelimit.Local // per address, in memory: the buy costs no round trip for it
	Answers     *stock.Answers   // the buy's answers per item and second, for the live dashboard
	Orders      *snowflake.Node
	RateLimitIP bool
	Now         func() time.Time
}

// Captcha draws a captcha.
func (h *Buy) Captcha(c *fiber.Ctx) error {
	ctx := c.UserContext()
	if h.RateLimitIP {
		if err := h.Limits.Allow(ctx, "captcha:ip:"+addressKey(c), captchaPerIP); err != nil {
			return err
		}
	}
	if s, ok := SessionOf(c); ok {
		if err := h.Limits.Allow(ctx, "captcha:user:"+strconv.FormatInt(s.UserID, 10), captchaPerUser); err != nil {
			return err
		}
	}
	id, img, err := h.Captchas.Draw(ctx)
	if err != nil {
		return err
	}
	setCache(c, cacheNoStore)
	return c.JSON(fiber.Map{"captcha_id": id, "image": img})
}

// CaptchaAudio answers a captcha's digits spoken, in the page's language (?lang=en|zh, else the
// request's), for a person who cannot see the picture.
func (h *Buy) CaptchaAudio(c *fiber.Ctx) error {
	ctx := c.UserContext()
	if h.RateLimitIP {
		if err := h.Limits.Allow(ctx, "captcha_audio:ip:"+addressKey(c), audioPerIP); err != nil {
			return err
		}
	}
	if s, ok := SessionOf(c); ok {
		if err := h.Limits.Allow(ctx, "captcha_audio:user:"+strconv.FormatInt(s.UserID, 10), audioPerUser); err != nil {
			return err
		}
	}
	lang := c.Query("lang")
	if lang != "en" && lang != "zh" {
		lang = Lang(c)
	}
	wav, err := h.Captchas.Audio(ctx, c.Params("id"), lang)
	if err != nil {
		return err
	}
	setCache(c, cacheNoStore)
	c.Set(fiber.HeaderContentType, "audio/wav")
	return c.Send(wav)
}

// Path checks the captcha and gives the buyer a single-use purchase path for the item.
func (h *Buy) Path(c *fiber.Ctx) error {
	ctx := c.UserContext()
	s, _ := SessionOf(c)
	itemID, err := pathID(c, "id", "item")
	if err != nil {
		return err
	}
	// A queue item's paths come with turns in its line: refused before the captcha is used up. When the
	// catalog cannot tell (the database is away), no path is issued either.
	if _, a, err := h.Catalog.Item(ctx, itemID); err != nil {
		return err
	} else if err := mayTakePart(&s, a); err != nil {
		return counted(ctx, h.Refusals, itemID, a, s.UserID, err)
	} else if a.SaleMode == models.SaleQueue {
		return errUseQueue
	}
	if err := h.Stops.Check(itemID); err != nil {
		return err
	}
	in, err := readCaptcha(c)
	if err != nil {
		return err
	}
	if err := passCaptcha(c, h.Limits, h.Captchas, h.RateLimitIP, s.UserID, in); err != nil {
		return err
	}
	if h.Flags.SoldOut(itemID) {
		return stock.ErrSoldOut
	}
	token, err := auth.RandomToken(16)
	if err != nil {
		return err
	}
	err = h.Ledger.IssuePath(ctx, itemID, s.UserID, token)
	if errs.Is(err, errs.NotFound) {
		// Not in Redis: not on sale, not yet preheated, or Redis lost it. The catalog decides.
		if err = h.Loader.Ensure(ctx, itemID); err == nil {
			err = h.Ledger.IssuePath(ctx, itemID, s.UserID, token)
		}
	}
	if errs.Is(err, errs.SoldOut) {
		h.Flags.MarkSoldOut(ctx, itemID)
	}
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"path": token})
}

var errBadCaptcha = errs.Static(errs.BadCaptcha, "the captcha answer is wrong or the captcha was used: get a new one")

// captchaInput is the body of the routes a captcha opens: a purchase path, a place in a line (which
// carries a proof of work too).
type captchaInput struct {
	CaptchaID     string `json:"captcha_id"`
	CaptchaAnswer string `json:"captcha_answer"`
	Altcha        string `json:"altcha"`
}

// readCaptcha reads a captcha's fields, answering bad_request when one is missing.
func readCaptcha(c *fiber.Ctx) (captchaInput, error) {
	var in captchaInput
	if err := parseJSON(c, &in); err != nil {
		return in, err
	}
	return in, requireCaptcha(in.CaptchaID, in.CaptchaAnswer)
}

// passCaptcha counts the attempt against the purchase path's limits (per user, and unless off per
// address) and then uses up the captcha, answering bad_captcha unless it was solved.
func passCaptcha(c *fiber.Ctx, limits *ratelimit.Shared, captchas *captcha.Captchas, perIP bool, userID int64, in captchaInput) error {
	ctx := c.UserContext()
	if err := limits.Allow(ctx, "path:user:"+strconv.FormatInt(userID, 10), pathPerUser); err != nil {
		return err
	}
	if perIP {
		if err := limits.Allow(ctx, "path:ip:"+addressKey(c), pathPerIP); err != nil {
			return err
		}
	}
	return checkCaptcha(ctx, captchas, in.CaptchaID, in.CaptchaAnswer)
}

// requireCaptcha answers bad_request when a captcha field is missing.
func requireCaptcha(id, answer string) error {
	var why []errs.Why
	if id == "" {
		why = append(why, errs.W("captcha_id", "required"))
	}
	if answer == "" {
		why = append(why, errs.W("captcha_answer", "required"))
	}
	if len(why) > 0 {
		return errs.Bad(why...)
	}
	return nil
}

// checkCaptcha uses up the captcha and answers bad_captcha unless answer was right (requireCaptcha has
// checked that both fields are there).
func checkCaptcha(ctx context.Context, captchas *captcha.Captchas, id, answer string) error {
	ok, err := captchas.Check(ctx, id, answer)
	if err != nil {
		return err
	}
	if !ok {
		return errBadCaptcha
	}
	return nil
}

// Take is the buy. Everything before the script is checked in memory: the session and CSRF token (by
// middleware), the per-address limit, the path's form and the sold-out flag. Then one round trip.
func (h *Buy) Take(c *fiber.Ctx) (err error) {
	s, _ := SessionOf(c)
	itemID, err := pathID(c, "id", "item")
	if err != nil {
		return err
	}
	confirmed := true
	defer func() {
		a := stock.AnswerOf(err)
		if a == stock.AnswerQueued && !confirmed {
			a = stock.AnswerUnconfirmed // not a promise yet: the dashboard counts it apart
		}
		h.Answers.Add(itemID, a, h.Now())
	}()
	if h.RateLimitIP {
		if err := h.BuyLimit.Allow(addressKey(c)); err != nil {
			return err
		}
	}
	if s.Role != models.RoleShopper {
		return errStaff
	}
	path := c.Params("path")
	if !hexid.Valid(path) { // a path is 32 hex digits: junk never reaches Redis
		return stock.ErrInvalidPath
	}
	if h.Flags.SoldOut(itemID) {
		return stock.ErrSoldOut
	}
	if err := h.Stops.Check(itemID); err != nil {
		return err
	}
	ctx := c.UserContext()
	var soldOut bool
	soldOut, confirmed, err = h.Ledger.TakeConfirmed(ctx, itemID, s.UserID, path, "SK"+h.Orders.Generate().String())
	if soldOut {
		h.Flags.MarkSoldOut(ctx, itemID)
	}
	if err != nil {
		return err
	}
	setJSON(c)
	if !confirmed {
		// The unit is taken and the order queued on the Redis master, but its replicas did not say they
		// have it in time (REDIS_WAIT_REPLICAS): not a promise yet, not a failure either. The result says.
		return c.Status(fiber.StatusAccepted).Send(unconfirmed)
	}
	return c.Status(fiber.StatusAccepted).Send(queued)
}

var (
	queued      = []byte(`{"status":"queued"}`)
	unconfirmed = []byte(`{"status":"unconfirmed"}`)
)

// Result answers the buyer's result for the item.
func (h *Buy) Result(c *fiber.Ctx) error {
	s, _ := SessionOf(c)
	itemID, err := pathID(c, "id", "item")
	if err != nil {
		return err
	}
	r, err := h.Ledger.ResultOf(c.UserContext(), itemID, s.UserID)
	if err != nil {
		return err
	}
	return c.JSON(r) // no-store: every JSON answer's unless said otherwise (app's front)
}
