package models

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"seckill/errs"
)

// OpenPayments returns the order's open payments (a double click can open two).
func OpenPayments(ctx context.Context, db *gorm.DB, orderID int64) ([]Payment, error) {
	var ps []Payment
	if err := db.WithContext(ctx).Where("order_id = ? AND status = ?", orderID, PaymentOpen).Order("id").Find(&ps).Error; err != nil {
		return nil, fmt.Errorf("open payments of order %d: %w", orderID, err)
	}
	return ps, nil
}

// AddPayment records a payment the provider made for an order, only while the order still waits for
// payment: it answers false when the order was paid or cancelled meanwhile (the caller closes the
// payment at the provider).
func AddPayment(ctx context.Context, db *gorm.DB, o *Order, providerID string, now time.Time) (*Payment, bool, error) {
	var p Payment
	if err := db.WithContext(ctx).Where("provider_id = ?", providerID).Take(&p).Error; err == nil {
		return &p, true, nil // the provider gave back the open payment we hold
	}
	res := db.WithContext(ctx).Exec(`INSERT INTO payments (order_id, order_no, provider_id, status, amount_cents, created_at, updated_at)
		SELECT ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM orders WHERE id = ? AND status = ?)`,
		o.ID, o.OrderNo, providerID, PaymentOpen, o.PriceCents, now, now, o.ID, OrderPendingPayment)
	if errors.Is(res.Error, gorm.ErrDuplicatedKey) {
		err := db.WithContext(ctx).Where("provider_id = ?", providerID).Take(&p).Error
		return &p, err == nil, err
	}
	if res.Error != nil {
		return nil, false, fmt.Errorf("add payment: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return nil, false, nil
	}
	err := db.WithContext(ctx).Where("provider_id = ?", providerID).Take(&p).Error
	return &p, err == nil, err
}

// LatestPayment answers the order's newest payment, or nil when it has none.
func LatestPayment(ctx context.Context, db *gorm.DB, orderID int64) (*Payment, error) {
	var ps []Payment
	if err := db.WithContext(ctx).Where("order_id = ?", orderID).Order("id DESC").Limit(1).Find(&ps).Error; err != nil {
		return nil, fmt.Errorf("latest payment of order %d: %w", orderID, err)
	}
	if len(ps) == 0 {
		return nil, nil
	}
	return &ps[0], nil
}

// PaymentByProviderID finds a payment by the provider's id; none answers errs.NotFound.
func PaymentByProviderID(ctx context.Context, db *gorm.DB, id string) (*Payment, error) {
	var p Payment
	err := db.WithContext(ctx).Where("provider_id = ?", id).Take(&p).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, errs.New(errs.NotFound, "no such payment")
	}
	if err != nil {
		return nil, fmt.Errorf("payment %s: %w", id, err)
	}
	return &p, nil
}

// PaidOutcome is what recording a paid payment did.
type PaidOutcome struct {
	Paid   bool   // this payment paid its order (which waited for it)
	Status string // the order's status after it
	// Refund: this payment's money came in now for an order that no longer needed it (cancelled, or paid
	// by another payment): a refund of it was recorded, which the refunds job makes at the provider. A
	// payment seen paid twice (a callback and a poll) is counted once.
	Refund bool
}

// MarkPaid records that payment p was paid: the payment, and its order if the order still waits for it,
// or else a refund of it, in one transaction.
func MarkPaid(ctx context.Context, db *gorm.DB, p *Payment, now time.Time) (PaidOutcome, error) {
	var out PaidOutcome
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		pay := tx.Exec("UPDATE payments SET status = ?, updated_at = ? WHERE id = ? AND status <> ?", PaymentPaid, now, p.ID, PaymentPaid)
		if pay.Error != nil {
			return pay.Error
		}
		res := tx.Exec("UPDATE orders SET status = ?, paid_at = ?, updated_at = ? WHERE id = ? AND status = ?",
			OrderPaid, now, now, p.OrderID, OrderPendingPayment)
		if res.Error != nil {
			return res.Error
		}
		out.Paid = res.RowsAffected == 1
		if err := tx.Raw("SELECT status FROM orders WHERE id = ?", p.OrderID).Scan(&out.Status).Error; err != nil {
			return err
		}
		out.Refund = pay.RowsAffected == 1 && !out.Paid // the order was no longer waiting: cancelled, or paid
		if !out.Refund {
			return nil
		}
		why := "paid after the order was " + out.Status
		if out.Status == OrderPaid || out.Status == OrderShipped {
			why = "the order was paid by another payment"
		}
		return requestRefund(tx, System, p, RefundLatePayment, why, now)
	})
	if err != nil {
		return PaidOutcome{}, fmt.Errorf("mark order %s paid: %w", p.OrderNo, err)
	}
	return out, nil
}

// CancelUnpaid cancels an order still pending payment and gives its unit back in the database, in one
// transaction: the order (only from pending_payment), stock_sold − 1 under the optimistic lock, a release
// row in the stock log, its payments closed. It reports whether this call cancelled it; the caller then
// gives the unit back in Redis.
func CancelUnpaid(ctx context.Context, db *gorm.DB, o *Order, now time.Time) (bool, error) {
	var cancelled bool
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Exec("UPDATE orders SET status = ?, cancelled_at = ?, updated_at = ? WHERE id = ? AND status = ?",
			OrderCancelled, now, now, o.ID, OrderPendingPayment)
		if res.Error != nil {
			return res.Error
		}
		if cancelled = res.RowsAffected == 1; !cancelled {
			return nil
		}
		var item Item
		for attempt := 0; ; attempt++ {
			if attempt == 50 {
				return errVersionConflict
			}
			if err := tx.Raw("SELECT id, stock_total, stock_sold, version FROM items WHERE id = ?", o.ItemID).Scan(&item).Error; err != nil {
				return err
			}
			res := tx.Exec("UPDATE items SET stock_sold = stock_sold - 1, version = version + 1, updated_at = ? WHERE id = ? AND version = ? AND stock_sold > 0",
				now, o.ItemID, item.Version)
			if res.Error != nil {
				return res.Error
			}
			if res.RowsAffected == 1 {
				break
			}
		}
		left := item.StockTotal - item.StockSold
		release := StockLog{OrderNo: o.OrderNo, Kind: StockRelease, ItemID: o.ItemID, StockBefore: left, StockAfter: left + 1, Pending: true, CreatedAt: now}
		if err := tx.Create(&release).Error; err != nil {
			return err
		}
		return tx.Exec("UPDATE payments SET status = ?, updated_at = ? WHERE order_id = ? AND status = ?", PaymentClosed, now, o.ID, PaymentOpen).Error
	})
	if err != nil {
		return false, fmt.Errorf("cancel order %s: %w", o.OrderNo, err)
	}
	return cancelled, nil
}

// OrdersPastDeadline lists orders still pending payment whose deadline has passed, oldest first.
func OrdersPastDeadline(ctx context.Context, db *gorm.DB, now time.Time, limit int) ([]Order, error) {
	var orders []Order
	err := db.WithContext(ctx).Where("status = ? AND pay_deadline < ?", OrderPendingPayment, now).
		Order("pay_deadline").Limit(limit).Find(&orders).Error
	if err != nil {
		return nil, fmt.Errorf("orders past their deadline: %w", err)
	}
	return orders, nil
}

// PaymentsToPoll lists open payments, least recently checked first (whatever their orders' status:
// money paid on a cancelled order must be found too).
func PaymentsToPoll(ctx context.Context, db *gorm.DB, limit int) ([]Payment, error) {
	var ps []Payment
	if err := db.WithContext(ctx).Where("status = ?", PaymentOpen).Order("updated_at, id").Limit(limit).Find(&ps).Error; err != nil {
		return nil, fmt.Errorf("payments to poll: %w", err)
	}
	return ps, nil
}

// PaymentChecked records that a payment was just checked, so that the next round starts with others.
func PaymentChecked(ctx context.Context, db *gorm.DB, id int64, now time.Time) error {
	return db.WithContext(ctx).Exec("UPDATE payments SET updated_at = ? WHERE id = ?", now, id).Error
}

// PendingRestocks lists releases whose units are not back in Redis yet.
func PendingRestocks(ctx context.Context, db *gorm.DB, limit int) ([]StockLog, error) {
	var logs []StockLog
	if err := db.WithContext(ctx).Where("kind = ? AND pending", StockRelease).Order("id").Limit(limit).Find(&logs).Error; err != nil {
		return nil, fmt.Errorf("pending restocks: %w", err)
	}
	return logs, nil
}

// Restocked records that a release's unit is back in Redis.
func Restocked(ctx context.Context, db *gorm.DB, id int64) error {
	return db.WithContext(ctx).Exec("UPDATE stock_logs SET pending = ? WHERE id = ?", false, id).Error
}

// ReopenPayment marks a payment the shop closed in its books open again: it could not be closed at the
// provider, so the payment poller must keep asking about it (and close it, or refund its money).
func ReopenPayment(ctx context.Context, db *gorm.DB, id int64, now time.Time) error {
	return db.WithContext(ctx).Exec("UPDATE payments SET status = ?, updated_at = ? WHERE id = ? AND status = ?", PaymentOpen, now, id, PaymentClosed).Error
}

// CancelledOrdersOf answers which of the payments' orders are cancelled, by payment id.
func CancelledOrdersOf(ctx context.Context, db *gorm.DB, ps []Payment) (map[int64]bool, error) {
	out := map[int64]bool{}
	if len(ps) == 0 {
		return out, nil
	}
	ids := make([]int64, len(ps))
	for i, p := range ps {
		ids[i] = p.OrderID
	}
	var cancelled []int64
	if err := db.WithContext(ctx).Model(&Order{}).Where("id IN ? AND status = ?", unique(ids), OrderCancelled).Pluck("id", &cancelled).Error; err != nil {
		return nil, fmt.Errorf("cancelled orders of payments: %w", err)
	}
	gone := map[int64]bool{}
	for _, id := range cancelled {
		gone[id] = true
	}
	for _, p := range ps {
		out[p.ID] = gone[p.OrderID]
	}
	return out, nil
}

// SetPaymentStatus records the provider's final word on a payment that was not paid.
func SetPaymentStatus(ctx context.Context, db *gorm.DB, id int64, status string, now time.Time) error {
	return db.WithContext(ctx).Exec("UPDATE payments SET status = ?, updated_at = ? WHERE id = ? AND status = ?", status, now, id, PaymentOpen).Error
}

// OrderByNo finds an order by number.
func OrderByNo(ctx context.Context, db *gorm.DB, orderNo string) (*Order, error) {
	var o Order
	err := db.WithContext(ctx).Where("order_no = ?", orderNo).Take(&o).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, errs.New(errs.NotFound, "no such order")
	}
	if err != nil {
		return nil, fmt.Errorf("order %s: %w", orderNo, err)
	}
	return &o, nil
}
