package handlers

import (
	"crypto/subtle"
	"errors"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"seckill/errs"
	"seckill/payment"
	"seckill/ratelimit"
)

// SandboxAPI serves the stand-in payment provider: its API for the shop (with the shop's API key) and its
// page for the payer.
type SandboxAPI struct {
	Pay         *payment.Sandbox
	Key         string // the API key the shop sends
	Limits      *ratelimit.Shared
	RateLimitIP bool
	Now         func() time.Time
}

// payerPerIP limits the payer's presses of Pay and Cancel per address.
var payerPerIP = ratelimit.Limit{Rate: 30, Burst: 30, Period: time.Minute}

// RequireKey refuses the provider's API to a caller without the shop's API key.
func (h *SandboxAPI) RequireKey(c *fiber.Ctx) error {
	got, ok := strings.CutPrefix(c.Get(fiber.HeaderAuthorization), "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(h.Key)) != 1 {
		return errs.New(errs.Unauthenticated, "the provider's API needs the merchant's API key (Authorization: Bearer …)")
	}
	return c.Next()
}

// payer counts one press of Pay or Cancel from this address.
func (h *SandboxAPI) payer(c *fiber.Ctx) error {
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
func (h *SandboxAPI) Create(c *fiber.Ctx) error {
	var r payment.Request
	if err := parseJSON(c, &r); err != nil {
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
func (h *SandboxAPI) Query(c *fiber.Ctx) error {
	st, err := h.Pay.Query(c.UserContext(), c.Params("id"))
	return sandboxStatus(c, st, err)
}

// Close is the provider's API: close a payment.
func (h *SandboxAPI) Close(c *fiber.Ctx) error {
	st, err := h.Pay.Close(c.UserContext(), c.Params("id"))
	return sandboxStatus(c, st, err)
}

// Refund is the provider's API: give a paid payment's money back (once).
func (h *SandboxAPI) Refund(c *fiber.Ctx) error {
	var r payment.RefundRequest
	if err := parseJSON(c, &r); err != nil {
		return err
	}
	if !payment.ValidRefund(r) {
		return errs.Invalid("refund_id", "must be 1 to 64 printable characters, with amount_cents from 1 and a reason of 2,000 bytes at most")
	}
	st, err := h.Pay.Refund(c.UserContext(), c.Params("id"), r)
	if errors.Is(err, payment.ErrNotRefundable) {
		return errs.New(errs.Conflict, err.Error())
	}
	return sandboxStatus(c, st, err)
}

// Page is what the payment's QR code opens: the amount, the order, Pay and Cancel.
func (h *SandboxAPI) Page(c *fiber.Ctx) error {
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
func (h *SandboxAPI) Confirm(c *fiber.Ctx) error {
	if err := h.payer(c); err != nil {
		return err
	}
	if _, err := h.Pay.Confirm(c.UserContext(), c.Params("id")); err != nil && !payment.IsNotFound(err) {
		return err
	}
	return redirectLocal(c, "/sandbox/pay/"+c.Params("id"))
}

// Cancel is the payer pressing Cancel.
func (h *SandboxAPI) Cancel(c *fiber.Ctx) error {
	if err := h.payer(c); err != nil {
		return err
	}
	if _, err := h.Pay.Cancel(c.UserContext(), c.Params("id")); err != nil && !payment.IsNotFound(err) {
		return err
	}
	return redirectLocal(c, "/sandbox/pay/"+c.Params("id"))
}
