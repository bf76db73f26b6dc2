package orders

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"seckill/errs"
	"seckill/models"
)

// RefundOutcome is what an admin's refund did.
type RefundOutcome int

// The outcomes of Refund.
const (
	Refunded        RefundOutcome = iota + 1 // the order is refunded now; its money is to go back
	RefundedAlready                          // it was refunded before: nothing changed
)

// Refund is an admin's refund of a paid order, or of a shipped one that came back (a return): the order
// becomes refunded (its unit is not sold again: the sale's count stays what was sold, and a returned
// unit is not put back on sale either), each paid payment of it gets a refund to be made (the refunds
// job, or the admin's handler at once), and the whole is audited with the reason. An unpaid or
// cancelled order answers order_state.
func (s *Service) Refund(ctx context.Context, who models.Actor, orderNo, reason string) (RefundOutcome, *models.Order, error) {
	reason, err := models.CleanRefundReason(reason)
	if err != nil {
		return 0, nil, err
	}
	now := s.Now()
	var o *models.Order
	var out RefundOutcome
	err = s.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var err error
		if o, err = models.LockOrder(tx, orderNo); err != nil {
			return err
		}
		switch _, can := allowed(o.Status, models.OrderRefunded); {
		case o.Status == models.OrderRefunded:
			out = RefundedAlready
			return nil
		case !can:
			return errs.Newf(errs.OrderState, "this order is %s: only a paid or shipped order can be refunded", o.Status)
		}
		paid, err := models.PaidPayments(tx, o.ID)
		if err != nil {
			return err
		}
		for i := range paid {
			if err := models.RequestRefund(tx, who, &paid[i], models.RefundByAdmin, reason, now); err != nil {
				return err
			}
		}
		before := map[string]any{"status": o.Status}
		if err := change(tx, o, models.OrderRefunded, now, map[string]any{"refunded_at": now, "refund_reason": reason}); err != nil {
			return err
		}
		o.RefundedAt, o.RefundReason, out = &now, reason, Refunded
		return models.Audit(tx, who, "order.refund", "order:"+o.OrderNo, before, map[string]any{"status": o.Status, "reason": reason}, now)
	})
	if err != nil {
		var e *errs.Error
		if errors.As(err, &e) {
			return 0, nil, err
		}
		return 0, nil, fmt.Errorf("refund order %s: %w", orderNo, err)
	}
	return out, o, nil
}
