package handlers

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"seckill/errs"
	"seckill/models"
	"seckill/payment"
	"seckill/ratelimit"
)

// Payments serves paying for an order and the provider's callback.
type Payments struct {
	DB        *gorm.DB
	Provider  payment.Provider
	Secret    string // checks the provider's callbacks
	NotifyURL string // where the provider calls back
	Now       func() time.Time
	Log       *slog.Logger
}

// payGrace is how close to its deadline an order can no longer start a payment, and payTime how long
// making one may take: a payment is made well before the unpaid timeout can cancel its order (and
// recorded only if the order still waits for it).
const (
	payGrace = 30 * time.Second
	payTime  = 10 * time.Second
)

// Pay makes (or gives back) the order's payment and answers where to pay, with its QR code.
func (h *Payments) Pay(c *fiber.Ctx) error {
	s, _ := SessionOf(c)
	ctx, cancel := context.WithTimeout(c.UserContext(), payTime)
	defer cancel()
	no, err := pathOrderNo(c)
	if err != nil {
		return err
	}
	o, err := models.OrderOfUser(ctx, h.DB, s.UserID, no)
	if err != nil {
		return err
	}
	now := h.Now()
	if o.Status != models.OrderPendingPayment {
		return errs.Newf(errs.OrderState, "this order is %s: there is nothing to pay", o.Status)
	}
	if !now.Before(o.PayDeadline.Add(-payGrace)) {
		return errs.New(errs.OrderState, "the time to pay this order is over")
	}
	created, err := h.Provider.Create(ctx, payment.Request{OrderNo: o.OrderNo, AmountCents: o.PriceCents, NotifyURL: h.NotifyURL})
	if errors.Is(err, payment.ErrUnavailable) {
		return errs.New(errs.PaymentUnavailable, "payment is unavailable right now: try again in a minute (your order keeps its deadline)")
	}
	if err != nil {
		return err
	}
	p, added, err := models.AddPayment(ctx, h.DB, o, created.ID, now)
	if err != nil {
		return err
	}
	if !added {
		// The order was paid or cancelled while the payment was being made: it must not be payable.
		_, _ = h.Provider.Close(context.WithoutCancel(ctx), created.ID)
		return errs.New(errs.OrderState, "this order no longer waits for payment")
	}
	img, err := PNGDataURL(created.PayURL)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"payment_id": p.ProviderID, "pay_url": created.PayURL, "image": img})
}

// Notify takes the provider's signed callback: a genuine, fresh one for a known payment of the right
// amount marks its order paid (once); anything else changes nothing.
func (h *Payments) Notify(c *fiber.Ctx) error {
	body := c.Body()
	if !payment.Verify(h.Secret, body, c.Get(payment.SignatureHeader)) {
		return errs.New(errs.BadRequest, "signature: does not match the body")
	}
	var n payment.Notification
	if err := json.Unmarshal(body, &n); err != nil || !payment.ValidProviderID(n.PaymentID) {
		return errs.New(errs.BadRequest, "body: must be a payment notification")
	}
	if !n.Fresh(h.Now()) {
		return errs.New(errs.BadRequest, "at: the notification is too old (a replay?)")
	}
	ctx := c.UserContext()
	p, err := models.PaymentByProviderID(ctx, h.DB, n.PaymentID)
	if err != nil {
		return err
	}
	if n.AmountCents != p.AmountCents || n.OrderNo != p.OrderNo {
		return errs.New(errs.BadRequest, "amount_cents: does not match the payment")
	}
	if n.Status != payment.StatusPaid {
		return c.JSON(fiber.Map{"ok": true})
	}
	out, err := models.MarkPaid(ctx, h.DB, p, h.Now())
	if err != nil {
		return err
	}
	if out.Refund {
		payment.RefundNeeded(ctx, h.Log, p.OrderNo, p.ProviderID, p.AmountCents, out.Status)
	}
	return c.JSON(fiber.Map{"ok": true})
}

// Sandbox serves the stand-in payment provider: its API for the shop (with the shop's API key) and its
// page for the payer.
type Sandbox struct {
	Pay         *payment.Sandbox
	Key         string // the API key the shop sends
	Limits      *ratelimit.Shared
	RateLimitIP bool
	Now         func() time.Time
}

// payerPerIP limits the payer's presses of Pay and Cancel per address.
var payerPerIP = ratelimit.Limit{Rate: 30, Burst: 30, Period: time.Minute}

// RequireKey refuses the provider's API to a caller without the shop's API key.
func (h *Sandbox) RequireKey(c *fiber.Ctx) error {
	got, ok := strings.CutPrefix(c.Get(fiber.HeaderAuthorization), "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(h.Key)) != 1 {
		return errs.New(errs.Unauthenticated, "the provider's API needs the merchant's API key (Authorization: Bearer …)")
	}
	return c.Next()
}

// payer counts one press of Pay or Cancel from this address.
func (h *Sandbox) payer(c *fiber.Ctx) error {
	if !h.RateLimitIP {
		return nil
	}
	return h.Limits.Allow(c.UserContext(), "sandbox:ip:"+addressKey(c), payerPerIP)
}

func sandboxStatus(c *fiber.Ctx, st string, err error) error {
	if payment.IsNotFound(err) {
		return c.Status(fiber.StatusNotFound).JSON(fiber.Map{"error": errs.NotFound, "message": "no such payment"})
	}
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"status": st})
}

// Create is the provider's API: make a payment.
func (h *Sandbox) Create(c *fiber.Ctx) error {
	var r payment.Request
	if err := ParseJSON(c, &r); err != nil {
		return err
	}
	if !payment.ValidRequest(r) {
		return errs.Invalid("order_no", "must be 1 to 64 letters, digits, '-' or '_', with amount_cents from 1 to 100000000000")
	}
	out, err := h.Pay.Create(c.UserContext(), r)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(out)
}

// Query is the provider's API: a payment's status.
func (h *Sandbox) Query(c *fiber.Ctx) error {
	st, err := h.Pay.Query(c.UserContext(), c.Params("id"))
	return sandboxStatus(c, st, err)
}

// Close is the provider's API: close a payment.
func (h *Sandbox) Close(c *fiber.Ctx) error {
	st, err := h.Pay.Close(c.UserContext(), c.Params("id"))
	return sandboxStatus(c, st, err)
}

// Page is what the payment's QR code opens: the amount, the order, Pay and Cancel.
func (h *Sandbox) Page(c *fiber.Ctx) error {
	p, err := h.Pay.Get(c.UserContext(), c.Params("id"))
	if payment.IsNotFound(err) {
		return errs.New(errs.NotFound, "no such payment")
	}
	if err != nil {
		return err
	}
	return c.Render("sandbox_pay", PageData(c, h.Now(), "pay.title", "Payment", p), "layouts/sandbox")
}

// Confirm is the payer pressing Pay.
func (h *Sandbox) Confirm(c *fiber.Ctx) error {
	if err := h.payer(c); err != nil {
		return err
	}
	if _, err := h.Pay.Confirm(c.UserContext(), c.Params("id")); err != nil && !payment.IsNotFound(err) {
		return err
	}
	return redirectLocal(c, "/sandbox/pay/"+c.Params("id"))
}

// Cancel is the payer pressing Cancel.
func (h *Sandbox) Cancel(c *fiber.Ctx) error {
	if err := h.payer(c); err != nil {
		return err
	}
	if _, err := h.Pay.Cancel(c.UserContext(), c.Params("id")); err != nil && !payment.IsNotFound(err) {
		return err
	}
	return redirectLocal(c, "/sandbox/pay/"+c.Params("id"))
}
