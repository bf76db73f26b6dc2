package handlers

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
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
	DB        *gorm.DB
	Orders    *orders.Service
	Providers *payment.Providers // the named providers' callbacks (WeChat Pay, Alipay)
	Secret    string             // checks the http protocol's callbacks
	Now       func() time.Time
	Log       *slog.Logger
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
	var in struct {
		Provider string `json:"provider"` // optional when the shop offers one
	}
	if len(c.Body()) > 0 {
		if err := parseJSON(c, &in); err != nil {
			return err
		}
	}
	p, err := h.Orders.Pay(ctx, s.UserID, no, in.Provider)
	if err != nil {
		return err
	}
	img, err := pngDataURL(p.PayURL)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"payment_id": p.ID, "pay_url": p.PayURL, "image": img, "provider": p.Provider})
}

// NotifyFrom takes a named provider's callback (POST /api/payments/notify/{provider}) in its own form,
// checked as the provider's documentation says (the provider's Notifier), and answers in the form the
// provider expects: taken, or to be sent again. Genuine news of a known payment of the right amount
// marks its order paid (once), or its refund done; a payment paid for an order that no longer needs it
// is refunded. Anything else changes nothing.
func (h *Payments) NotifyFrom(c *fiber.Ctx) error {
	name := c.Params("provider")
	n := h.Providers.Notifier(name)
	if n == nil {
		return errs.New(errs.NotFound, "no such payment provider")
	}
	ack := func(ok bool) error {
		status, ct, body := n.Ack(ok)
		c.Set(fiber.HeaderContentType, ct)
		return c.Status(status).Send(body)
	}
	header := http.Header{}
	c.Request().Header.VisitAll(func(k, v []byte) { header.Add(string(k), string(v)) })
	ctx := c.UserContext()
	news, err := n.ReadNotify(ctx, header, c.Body())
	if err != nil {
		h.Log.WarnContext(ctx, "a payment callback was refused", "provider", name, "ip", c.IP(), "err", err)
		return ack(false)
	}
	p, err := models.PaymentByProviderID(ctx, h.DB, news.PaymentID)
	if errs.Is(err, errs.NotFound) || err == nil && p.Provider != name {
		// Genuine, but of no payment the shop made there: nothing to change, nothing to send again.
		h.Log.ErrorContext(ctx, "refund_needed: the provider's news is of a payment the shop does not know", "provider", name,
			"payment_id", news.PaymentID, "status", news.Status, "amount_cents", news.AmountCents)
		return ack(true)
	}
	if err != nil {
		return ack(false) // the database: the provider sends it again
	}
	if news.AmountCents != p.AmountCents {
		h.Log.ErrorContext(ctx, "a signed payment callback names another amount than the payment's: nothing changed", "provider", name,
			"payment_id", p.ProviderID, "amount_cents", news.AmountCents, "want_cents", p.AmountCents)
		return ack(false)
	}
	switch news.Status {
	case payment.StatusPaid:
		if _, err := h.Orders.Paid(ctx, p); err != nil {
			h.Log.ErrorContext(ctx, "a paid payment could not be recorded: the provider sends it again", "payment_id", p.ProviderID, "err", err)
			return ack(false)
		}
	case payment.StatusRefunded:
		ours, err := models.RefundDoneByProvider(ctx, h.DB, p.ID, news.RefundID, h.Now())
		if err != nil {
			return ack(false)
		}
		if !ours {
			h.Log.WarnContext(ctx, "the provider's news of a refund the shop did not ask for (made in its console?): nothing changed", "provider", name,
				"payment_id", p.ProviderID, "refund_id", news.RefundID)
		}
	}
	return ack(true)
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
		if _, err := models.RefundDoneByProvider(ctx, h.DB, p.ID, n.RefundID, h.Now()); err != nil {
			return err
		}
	}
	return c.JSON(fiber.Map{"ok": true})
}
