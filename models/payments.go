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

// NewPayment is a payment a provider made, as the shop keeps it.
type NewPayment struct {
	Provider   string    // the provider's name ("" for the http protocol's of before)
	ProviderID string    // its id at the provider
	PayURL     string    // what the payer opens, kept for the providers that give a payment back ("" otherwise)
	ExpiresAt  time.Time // when the provider stops taking it, if it was told (zero otherwise)
}

// AddPayment records a payment the provider made for an order, only while the order still waits for
// payment: it answers false when the order was paid or cancelled meanwhile (the caller closes the
// payment at the provider).
func AddPayment(ctx context.Context, db *gorm.DB, o *Order, np NewPayment, now time.Time) (*Payment, bool, error) {
	var p Payment
	providerID := np.ProviderID
	if err := db.WithContext(ctx).Where("provider_id = ?", providerID).Take(&p).Error; err == nil {
		if p.Provider != np.Provider {
			return nil, false, fmt.Errorf("add payment %s at %q: the shop holds it at %q", providerID, np.Provider, p.Provider)
		}
		return &p, true, nil // the provider gave back the open payment we hold
	}
	var expires *time.Time
	if !np.ExpiresAt.IsZero() {
		expires = &np.ExpiresAt
	}
	res := db.WithContext(ctx).Exec(`INSERT INTO payments (order_id, order_no, provider_id, status, amount_cents, created_at, updated_at, provider, pay_url, expires_at)
		SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM orders WHERE id = ? AND status = ?)`,
		o.ID, o.OrderNo, providerID, PaymentOpen, o.PriceCents, now, now, np.Provider, np.PayURL, expires, o.ID, OrderPendingPayment)
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

// PaymentByID finds a payment by the shop's id.
func PaymentByID(ctx context.Context, db *gorm.DB, id int64) (*Payment, error) {
	var p Payment
	if err := db.WithContext(ctx).Where("id = ?", id).Take(&p).Error; err != nil {
		return nil, fmt.Errorf("payment %d: %w", id, err)
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

// RecordPaymentPaid records, in tx, that payment id was paid; it answers false when it was recorded paid
// before (a callback and a poll both saw it).
func RecordPaymentPaid(tx *gorm.DB, id int64, now time.Time) (bool, error) {
	res := tx.Exec("UPDATE payments SET status = ?, updated_at = ? WHERE id = ? AND status <> ?", PaymentPaid, now, id, PaymentPaid)
	return res.RowsAffected == 1, res.Error
}

// ClosePayments closes, in tx, an order's open payments in the books (its cancel: the caller closes
// them at the provider).
func ClosePayments(tx *gorm.DB, orderID int64, now time.Time) error {
	return tx.Exec("UPDATE payments SET status = ?, updated_at = ? WHERE order_id = ? AND status = ?", PaymentClosed, now, orderID, PaymentOpen).Error
}

// PaidPayments lists, in tx, an order's paid payments.
func PaidPayments(tx *gorm.DB, orderID int64) ([]Payment, error) {
	var paid []Payment
	err := tx.Where("order_id = ? AND status = ?", orderID, PaymentPaid).Order("id").Find(&paid).Error
	return paid, err
}

// PaymentsOfOrder lists every payment of an order, oldest first.
func PaymentsOfOrder(ctx context.Context, db *gorm.DB, orderID int64) ([]Payment, error) {
	var ps []Payment
	if err := db.WithContext(ctx).Where("order_id = ?", orderID).Order("id").Find(&ps).Error; err != nil {
		return nil, fmt.Errorf("payments of order %d: %w", orderID, err)
	}
	return ps, nil
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

// PaymentsToPoll lists the open payments due to be asked about at now, least recently checked first
// (whatever their orders' status: money paid on a cancelled order must be found too). Those at the
// providers named paced are asked about less often as they age: every round in their first minute, at
// most every 15 seconds until ten minutes old, then every minute; the others every round.
func PaymentsToPoll(ctx context.Context, db *gorm.DB, now time.Time, paced []string, limit int) ([]Payment, error) {
	var ps []Payment
	minute, tenMinutes := now.Add(-time.Minute), now.Add(-10*time.Minute)
	due := db.Where("provider NOT IN ?", paced).Or("created_at > ?", minute).
		Or("created_at > ? AND updated_at <= ?", tenMinutes, now.Add(-15*time.Second)).Or("updated_at <= ?", minute)
	if err := db.WithContext(ctx).Where("status = ?", PaymentOpen).Where(due).Order("updated_at, id").Limit(limit).Find(&ps).Error; err != nil {
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

// OrderStatusesOf answers the status of each payment's order, by payment id.
func OrderStatusesOf(ctx context.Context, db *gorm.DB, ps []Payment) (map[int64]string, error) {
	out := map[int64]string{}
	if len(ps) == 0 {
		return out, nil
	}
	ids := make([]int64, len(ps))
	for i, p := range ps {
		ids[i] = p.OrderID
	}
	var rows []struct {
		ID     int64
		Status string
	}
	if err := db.WithContext(ctx).Model(&Order{}).Select("id, status").Where("id IN ?", unique(ids)).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("orders of payments: %w", err)
	}
	of := map[int64]string{}
	for _, r := range rows {
		of[r.ID] = r.Status
	}
	for _, p := range ps {
		out[p.ID] = of[p.OrderID]
	}
	return out, nil
}

// SetPaymentStatus records the provider's final word on a payment that was not paid.
func SetPaymentStatus(ctx context.Context, db *gorm.DB, id int64, status string, now time.Time) error {
	return db.WithContext(ctx).Exec("UPDATE payments SET status = ?, updated_at = ? WHERE id = ? AND status = ?", status, now, id, PaymentOpen).Error
}
