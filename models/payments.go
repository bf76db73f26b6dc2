package models

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"seckill/errs"
)

// OpenPayment returns the order's open payment, or nil.
func OpenPayment(ctx context.Context, db *gorm.DB, orderID int64) (*Payment, error) {
	var p Payment
	err := db.WithContext(ctx).Where("order_id = ? AND status = ?", orderID, PaymentOpen).Order("id DESC").Take(&p).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open payment of order %d: %w", orderID, err)
	}
	return &p, nil
}

// AddPayment records a payment the provider made for an order.
func AddPayment(ctx context.Context, db *gorm.DB, o *Order, providerID string, now time.Time) (*Payment, error) {
	p := Payment{OrderID: o.ID, OrderNo: o.OrderNo, ProviderID: providerID, Status: PaymentOpen, AmountCents: o.PriceCents, CreatedAt: now, UpdatedAt: now}
	err := db.WithContext(ctx).Create(&p).Error
	if errors.Is(err, gorm.ErrDuplicatedKey) { // the provider gave back the open payment we hold
		return &p, db.WithContext(ctx).Where("provider_id = ?", providerID).Take(&p).Error
	}
	if err != nil {
		return nil, fmt.Errorf("add payment: %w", err)
	}
	return &p, nil
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

// MarkPaid records that a payment was paid: its order becomes paid, once, and only from
// pending_payment (a cancelled order stays cancelled: whichever of paying and cancelling commits first
// wins). It reports whether this call changed the order.
func MarkPaid(ctx context.Context, db *gorm.DB, p *Payment, now time.Time) (bool, error) {
	var changed bool
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Exec("UPDATE orders SET status = ?, paid_at = ?, updated_at = ? WHERE id = ? AND status = ?",
			OrderPaid, now, now, p.OrderID, OrderPendingPayment)
		if res.Error != nil {
			return res.Error
		}
		changed = res.RowsAffected == 1
		if !changed {
			return nil
		}
		return tx.Exec("UPDATE payments SET status = ?, updated_at = ? WHERE id = ?", PaymentPaid, now, p.ID).Error
	})
	if err != nil {
		return false, fmt.Errorf("mark order %s paid: %w", p.OrderNo, err)
	}
	return changed, nil
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
		if err := tx.Create(&StockLog{OrderNo: o.OrderNo, Kind: StockRelease, ItemID: o.ItemID, StockBefore: left, StockAfter: left + 1, CreatedAt: now}).Error; err != nil {
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

// PaymentsToPoll lists open payments whose orders still wait for payment.
func PaymentsToPoll(ctx context.Context, db *gorm.DB, limit int) ([]Payment, error) {
	var ps []Payment
	err := db.WithContext(ctx).Raw(`SELECT p.* FROM payments p JOIN orders o ON o.id = p.order_id
		WHERE p.status = ? AND o.status = ? ORDER BY p.id LIMIT ?`, PaymentOpen, OrderPendingPayment, limit).Scan(&ps).Error
	if err != nil {
		return nil, fmt.Errorf("payments to poll: %w", err)
	}
	return ps, nil
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
