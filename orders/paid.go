package orders

import (
	"context"
	"fmt"

	"gorm.io/gorm"

	"seckill/models"
)

// PaidOutcome is what the provider's word that a payment was paid did.
type PaidOutcome int

// The outcomes of Paid.
const (
	// PaidNow: the order waited for this payment and is paid now.
	PaidNow PaidOutcome = iota + 1
	// PaidRefund: the money came in for an order that no longer needed it (cancelled, or paid by another
	// payment): a refund of it is recorded, which the refunds job makes at the provider.
	PaidRefund
	// PaidBefore: this payment was recorded paid before (a callback and a poll both saw it): nothing changed.
	PaidBefore
)

// Paid records the provider's news that payment p was paid: the payment, and its order if the order
// still waits for it, or else a refund of the money, in one transaction. A payment seen paid twice is
// counted once.
func (s *Service) Paid(ctx context.Context, p *models.Payment) (PaidOutcome, error) {
	now := s.Now()
	var out PaidOutcome
	var status string
	err := s.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		first, err := models.RecordPaymentPaid(tx, p.ID, now)
		if err != nil {
			return err
		}
		n, err := apply(tx, movePay, []int64{p.OrderID}, now, map[string]any{"paid_at": now})
		if err != nil {
			return err
		}
		switch {
		case n == 1:
			out = PaidNow
			return s.receipt(ctx, tx, p.OrderID)
		case !first:
			out = PaidBefore
			return nil
		}
		if status, err = models.OrderStatus(tx, p.OrderID); err != nil {
			return err
		}
		out = PaidRefund // the order was no longer waiting: cancelled, or paid
		why := "paid after the order was " + status
		if status == models.OrderPaid || status == models.OrderShipped {
			why = "the order was paid by another payment"
		}
		return models.RequestRefund(tx, models.System, p, models.RefundLatePayment, why, now)
	})
	if err != nil {
		return 0, fmt.Errorf("mark order %s paid: %w", p.OrderNo, err)
	}
	if out == PaidRefund {
		s.Log.WarnContext(ctx, "money came in for an order that does not need it: it is being refunded", "order_no", p.OrderNo,
			"payment_id", p.ProviderID, "amount_cents", p.AmountCents, "order_status", status)
	}
	return out, nil
}

// Closed records the provider's final word that payment p can no longer be paid (its payer cancelled
// it, or it was closed). Its order does not change: it waits for another payment until its deadline.
func (s *Service) Closed(ctx context.Context, p *models.Payment) error {
	return models.SetPaymentStatus(ctx, s.DB, p.ID, models.PaymentClosed, s.Now())
}

// receipt queues the order's receipt beside its paid state, under a savepoint: a receipt that cannot be
// queued is logged and the order is paid all the same.
func (s *Service) receipt(ctx context.Context, tx *gorm.DB, orderID int64) error {
	if s.Receipt == nil {
		return nil
	}
	if err := tx.Transaction(func(tx *gorm.DB) error { return s.Receipt(ctx, tx, orderID) }); err != nil {
		s.Log.WarnContext(ctx, "the receipt of a paid order could not be queued", "order_id", orderID, "err", err)
	}
	return nil
}
