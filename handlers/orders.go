package handlers

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"seckill/errs"
	"seckill/models"
	"seckill/orders"
	"seckill/payment"
)

// Orders serves the buyer's orders.
type Orders struct {
	DB     *gorm.DB
	Orders *orders.Service
	Log    *slog.Logger
}

// orderJSON is the contract's `order`.
type orderJSON struct {
	OrderNo     string    `json:"order_no"`
	ItemID      int64     `json:"item_id"`
	ActivityID  int64     `json:"activity_id"`
	Name        string    `json:"name"`
	PriceCents  int64     `json:"price_cents"`
	Status      string    `json:"status"`
	CreatedAt   time.Time `json:"created_at"`
	PayDeadline time.Time `json:"pay_deadline"`
	// Address is the copy of the delivery address chosen for the order, null until then.
	Address *models.Delivery `json:"address"`
	PaidAt  *time.Time       `json:"paid_at"`
	// A cancel: when, and why (buyer: its buyer cancelled it; unpaid: its time to pay passed; "" for one
	// cancelled before reasons were kept, or not cancelled).
	CancelledAt  *time.Time `json:"cancelled_at"`
	CancelReason string     `json:"cancel_reason"`
	// Picture is the item's image at the lists' size, "" when it has none.
	Picture string `json:"picture"`
	// Shipping: set once the merchant has sent the order.
	ShippedAt  *time.Time `json:"shipped_at"`
	Carrier    string     `json:"carrier"`
	TrackingNo string     `json:"tracking_no"`
	// An admin's refund: when, and why.
	RefundedAt   *time.Time `json:"refunded_at"`
	RefundReason string     `json:"refund_reason"`
	// RefundStatus is where the money of a refund of this order is: pending (on its way back), done, or
	// failed (the shop is looking into it); empty when nothing was refunded.
	RefundStatus string `json:"refund_status"`
	// Payment is the order's newest payment (one order's answer only; absent in lists): "open" while it
	// can be paid, "closed" once the payer cancelled it or it was closed (a new one can be made), "paid".
	Payment *paymentStateJSON `json:"payment,omitempty"`
}

// paymentStateJSON is where an order's newest payment stands.
type paymentStateJSON struct {
	PaymentID string `json:"payment_id"`
	Provider  string `json:"provider,omitempty"` // "" for a payment made before providers had names
	Status    string `json:"status"`
}

// orderViews turns orders into what the API and the pages show, with their items' names.
func orderViews(c *fiber.Ctx, db *gorm.DB, orders []models.Order) ([]orderJSON, error) {
	ids := make([]int64, 0, len(orders))
	for _, o := range orders {
		ids = append(ids, o.ItemID)
	}
	items, err := models.OrderItems(c.UserContext(), db, ids)
	if err != nil {
		return nil, err
	}
	orderIDs := make([]int64, len(orders))
	for i, o := range orders {
		orderIDs[i] = o.ID
	}
	refunds, err := models.RefundStates(c.UserContext(), db, orderIDs)
	if err != nil {
		return nil, err
	}
	out := make([]orderJSON, len(orders))
	for i, o := range orders {
		it := items[o.ItemID]
		out[i] = orderJSON{OrderNo: o.OrderNo, ItemID: o.ItemID, ActivityID: o.ActivityID, Name: it.Name, Picture: it.Picture("480"),
			CancelledAt: utc(o.CancelledAt), CancelReason: o.CancelReason,
			PriceCents: o.PriceCents, Status: o.Status, CreatedAt: o.CreatedAt.UTC(), PayDeadline: o.PayDeadline.UTC(), Address: o.Address,
			PaidAt: utc(o.PaidAt), ShippedAt: utc(o.ShippedAt), Carrier: o.Carrier, TrackingNo: o.TrackingNo,
			RefundedAt: utc(o.RefundedAt), RefundReason: o.RefundReason, RefundStatus: refunds[o.ID]}
	}
	return out, nil
}

// orderFilters are the statuses ?status= may name on the shopper's orders (none: every order).
var orderFilters = []string{models.OrderPendingPayment, models.OrderPaid, models.OrderShipped, models.OrderCancelled, models.OrderRefunded}

// orderFilter reads ?status=: "" or "all" for every order, else one of orderFilters.
func orderFilter(c *fiber.Ctx) (string, error) {
	st := c.Query("status")
	if st == "" || st == "all" {
		return "", nil
	}
	for _, f := range orderFilters {
		if st == f {
			return f, nil
		}
	}
	return "", errs.Bad(errs.W("status", "my_orders_filter"))
}

// List answers the caller's orders (?status= one status), newest first.
func (h *Orders) List(c *fiber.Ctx) error {
	s, _ := SessionOf(c)
	status, err := orderFilter(c)
	if err != nil {
		return err
	}
	list, err := models.OrdersOfUserIn(c.UserContext(), h.DB, s.UserID, status)
	if err != nil {
		return err
	}
	out, err := orderViews(c, h.DB, list)
	if err != nil {
		return err
	}
	return c.JSON(out)
}

// Get answers one of the caller's orders; another user's answers 404.
func (h *Orders) Get(c *fiber.Ctx) error {
	s, _ := SessionOf(c)
	no, err := pathOrderNo(c)
	if err != nil {
		return err
	}
	o, err := models.OrderOfUser(c.UserContext(), h.DB, s.UserID, no)
	if err != nil {
		return err
	}
	return sendOrder(c, h.DB, o)
}

// sendOrder answers one order, as the contract's `order`.
func sendOrder(c *fiber.Ctx, db *gorm.DB, o *models.Order) error {
	out, err := orderViews(c, db, []models.Order{*o})
	if err != nil {
		return err
	}
	p, err := models.LatestPayment(c.UserContext(), db, o.ID)
	if err != nil {
		return err
	}
	if p != nil {
		out[0].Payment = &paymentStateJSON{PaymentID: p.ProviderID, Provider: p.Provider, Status: p.Status}
	}
	return c.JSON(out[0])
}

// Cancel cancels one of the caller's unpaid orders at once and answers it: its unit goes back on sale,
// and the caller still cannot buy the item again (one per person holds for the whole sale).
func (h *Orders) Cancel(c *fiber.Ctx) error {
	s, _ := SessionOf(c)
	no, err := pathOrderNo(c)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), payTime)
	defer cancel()
	o, err := models.OrderOfUser(ctx, h.DB, s.UserID, no)
	if err != nil {
		return err
	}
	if err := h.cancelled(ctx, o); err != nil {
		return err
	}
	if o, err = models.OrderOfUser(ctx, h.DB, s.UserID, no); err != nil {
		return err
	}
	return sendOrder(c, h.DB, o)
}

// cancelled cancels o at its buyer's wish, as its deadline would (orders.Service.Cancel), and answers
// what the buyer is told when it was not: the order stays as it was.
func (h *Orders) cancelled(ctx context.Context, o *models.Order) error {
	outcome, err := h.Orders.Cancel(ctx, o, models.CancelByBuyer)
	switch outcome {
	case orders.Cancelled:
		return nil
	case orders.CancelledRestockLater:
		// Cancelled in the database; the unit goes back to Redis at the job's next round.
		h.Log.Warn("a shopper's cancel: restock left to the job", "order", o.OrderNo, "err", err)
		return nil
	case orders.NotPending:
		return errs.Newf(errs.OrderState, "this order is %s: it cannot be cancelled", o.Status)
	case orders.ProviderDown:
		h.Log.Warn("a shopper's cancel: the payment provider failed", "order", o.OrderNo, "err", err)
		if errors.Is(err, payment.ErrPaying) {
			return errs.Say(errs.PaymentUnavailable, "pay_in_progress")
		}
		return errs.New(errs.PaymentUnavailable, "the payment provider does not answer: try again in a minute (your order is unchanged)")
	case orders.PaidMeanwhile:
		return errs.New(errs.OrderState, "this order was paid meanwhile: it cannot be cancelled")
	case orders.NoLongerPending:
		return errs.New(errs.OrderState, "this order no longer waits for payment: it cannot be cancelled")
	}
	return err
}
