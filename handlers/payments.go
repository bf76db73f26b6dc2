package handlers

import (
	"context"
	"encoding/json"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"seckill/errs"
	"seckill/models"
	"seckill/orders"
	"seckill/payment"
)

// Payments serves paying for an order and the provider's callback.
type Payments struct {
	DB     *gorm.DB
	Orders *orders.Service
	Secret string // checks the provider's callbacks
	Now    func() time.Time
}

// payTime is how long making a payment (or cancelling an order, closing its payments) may take.
const payTime = 10 * time.Second

// Pay makes (or gives back) the order's payment and answers where to pay, with its QR code.
func (h *Payments) Pay(c *fiber.Ctx) error {
	s, _ := SessionOf(c)
	ctx, cancel := context.WithTimeout(c.UserContext(), payTime)
	defer cancel()
	no, err := pathOrderNo(c)
	if err != nil {
		return err
	}
	p, err := h.Orders.Pay(ctx, s.UserID, no)
	if err != nil {
		return err
	}
	img, err := pngDataURL(p.PayURL)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"payment_id": p.ID, "pay_url": p.PayURL, "image": img})
}

// Notify takes the provider's signed callback: a genuine, fresh one for a known payment of the right
// amount marks its order paid (once), or the payment's refund done; anything else changes nothing.
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
	switch n.Status {
	case payment.StatusPaid:
		if _, err := h.Orders.Paid(ctx, p); err != nil {
			return err
		}
	case payment.StatusRefunded:
		if err := models.RefundDoneByProvider(ctx, h.DB, p.ID, h.Now()); err != nil {
			return err
		}
	}
	return c.JSON(fiber.Map{"ok": true})
}
