package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"seckill/errs"
	"seckill/models"
	"seckill/payment"
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

var errAddressRequired = errs.New(errs.AddressRequired, "choose a delivery address for this order before paying")

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
	if o.Address == nil {
		return errAddressRequired
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
		out, err := models.MarkPaid(ctx, h.DB, p, h.Now())
		if err != nil {
			return err
		}
		if out.Refund {
			h.Log.WarnContext(ctx, "money came in for an order that does not need it: it is being refunded", "order_no", p.OrderNo,
				"payment_id", p.ProviderID, "amount_cents", p.AmountCents, "order_status", out.Status)
		}
	case payment.StatusRefunded:
		if err := models.RefundDoneByProvider(ctx, h.DB, p.ID, h.Now()); err != nil {
			return err
		}
	}
	return c.JSON(fiber.Map{"ok": true})
}
