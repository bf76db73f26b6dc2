package models

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"seckill/errs"
)

// Refund kinds: money that reached an order no longer waiting for it goes back by itself; an admin
// refunds a paid order that will not be shipped.
const (
	RefundLatePayment = "late_payment"
	RefundByAdmin     = "admin"
)

// Refund states: pending until the provider has given the money back (retried while it cannot),
// done once it has; failed when the provider refuses it (a person must look).
const (
	RefundPending = "pending"
	RefundDone    = "done"
	RefundFailed  = "failed"
)

// Refund is money given back for one payment: one per payment, so that asking twice refunds once.
type Refund struct {
	ID          int64      `gorm:"primaryKey"`
	OrderID     int64      `gorm:"not null;index"`
	OrderNo     string     `gorm:"size:32;not null;index"`
	PaymentID   int64      `gorm:"not null;uniqueIndex"`
	ProviderID  string     `gorm:"size:64;not null"`
	AmountCents int64      `gorm:"not null"`
	Kind        string     `gorm:"size:16;not null"`
	Reason      string     `gorm:"type:text;not null;default:''"`
	Status      string     `gorm:"size:16;not null;index"`
	Attempts    int        `gorm:"not null;default:0"`
	LastError   string     `gorm:"type:text;not null;default:''"`
	RequestedBy *int64     // the admin, for an admin's refund
	DoneAt      *time.Time // when the provider confirmed it
	CreatedAt   time.Time  `gorm:"not null"`
	UpdatedAt   time.Time  `gorm:"not null"`
}

// RefundID is the refund's id at the provider: the shop's own, so a retry names the same refund.
func (r *Refund) RefundID() string { return fmt.Sprintf("RF%d", r.ID) }

// System is the actor of what the shop does by itself (a late payment's refund) in the audit log.
var System = Actor{ID: 0, Username: "system"}

type refundAudit struct {
	OrderNo     string `json:"order_no"`
	PaymentID   string `json:"payment_id"`
	AmountCents int64  `json:"amount_cents"`
	Kind        string `json:"kind"`
	Reason      string `json:"reason,omitempty"`
	Status      string `json:"status"`
}

func (r *Refund) audit() refundAudit {
	return refundAudit{r.OrderNo, r.ProviderID, r.AmountCents, r.Kind, r.Reason, r.Status}
}

// RequestRefund records, in tx, that payment p's money must go back; a payment with a refund already
// keeps that one.
func RequestRefund(tx *gorm.DB, who Actor, p *Payment, kind, reason string, now time.Time) error {
	r := Refund{OrderID: p.OrderID, OrderNo: p.OrderNo, PaymentID: p.ID, ProviderID: p.ProviderID, AmountCents: p.AmountCents,
		Kind: kind, Reason: reason, Status: RefundPending, CreatedAt: now, UpdatedAt: now}
	if who.ID != 0 {
		r.RequestedBy = &who.ID
	}
	res := tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "payment_id"}}, DoNothing: true}).Create(&r)
	if res.Error != nil || res.RowsAffected == 0 {
		return res.Error
	}
	return Audit(tx, who, "refund.request", "order:"+p.OrderNo, nil, r.audit(), now)
}

// PendingRefunds lists refunds the provider has not confirmed yet, least recently tried first.
func PendingRefunds(ctx context.Context, db *gorm.DB, limit int) ([]Refund, error) {
	var out []Refund
	if err := db.WithContext(ctx).Where("status = ?", RefundPending).Order("updated_at, id").Limit(limit).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("pending refunds: %w", err)
	}
	return out, nil
}

// RefundsOfOrder lists an order's refunds.
func RefundsOfOrder(ctx context.Context, db *gorm.DB, orderID int64) ([]Refund, error) {
	var out []Refund
	if err := db.WithContext(ctx).Where("order_id = ?", orderID).Order("id").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("refunds of order %d: %w", orderID, err)
	}
	return out, nil
}

// RefundStates answers, for each order that has refunds, the state shown to its buyer: done when every
// refund is, failed when one was refused, else pending.
func RefundStates(ctx context.Context, db *gorm.DB, orderIDs []int64) (map[int64]string, error) {
	out := map[int64]string{}
	if len(orderIDs) == 0 {
		return out, nil
	}
	rank := map[string]int{RefundDone: 0, RefundPending: 1, RefundFailed: 2}
	err := inChunks(orderIDs, func(chunk []int64) error {
		var rows []Refund
		if err := db.WithContext(ctx).Select("order_id", "status").Where("order_id IN ?", chunk).Find(&rows).Error; err != nil {
			return err
		}
		for _, r := range rows {
			if cur, ok := out[r.OrderID]; !ok || rank[r.Status] > rank[cur] {
				out[r.OrderID] = r.Status
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("refunds of orders: %w", err)
	}
	return out, nil
}

// RefundSettled records the provider's answer to one try of a refund: done, refused (failed, with why),
// or not reached (still pending, with why, to be tried again). Done is recorded once, audited.
func RefundSettled(ctx context.Context, db *gorm.DB, id int64, status, why string, now time.Time) error {
	return db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var r Refund
		if err := tx.Clauses(lockForUpdate).Take(&r, "id = ?", id).Error; err != nil {
			return err
		}
		if r.Status == RefundDone {
			return nil
		}
		before := r.audit()
		r.Attempts++
		r.LastError, r.UpdatedAt = why, now
		if status != RefundPending {
			r.Status = status
		}
		if status == RefundDone {
			r.DoneAt = &now
		}
		if err := tx.Model(&r).Select("status", "attempts", "last_error", "done_at", "updated_at").Updates(&r).Error; err != nil {
			return err
		}
		if status == RefundPending {
			return nil
		}
		return Audit(tx, System, "refund."+status, "order:"+r.OrderNo, before, r.audit(), now)
	})
}

// RefundDoneByProvider records the provider's word (its callback) that a payment was refunded: the
// shop's refund of it, when refundID (the refund the callback names, "" for a provider that names
// none) is that refund's RefundID. It answers false for news of no refund the shop asked for (one made
// in the provider's console, say), which changes nothing.
func RefundDoneByProvider(ctx context.Context, db *gorm.DB, paymentID int64, refundID string, now time.Time) (bool, error) {
	var r Refund
	err := db.WithContext(ctx).Where("payment_id = ?", paymentID).Take(&r).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return false, nil // not a refund the shop asked for: nothing to record
	}
	if err != nil {
		return false, fmt.Errorf("refund of payment %d: %w", paymentID, err)
	}
	if refundID != "" && refundID != r.RefundID() {
		return false, nil
	}
	return true, RefundSettled(ctx, db, r.ID, RefundDone, "", now)
}

// RetryRefunds puts an order's failed refunds back to be asked for again (an admin's decision, once the
// reason the provider refused is fixed), audited; it answers how many.
func RetryRefunds(ctx context.Context, db *gorm.DB, who Actor, orderNo string, now time.Time) (int64, error) {
	var n int64
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Model(&Refund{}).Where("order_no = ? AND status = ?", orderNo, RefundFailed).
			Updates(map[string]any{"status": RefundPending, "updated_at": now})
		if n = res.RowsAffected; res.Error != nil || n == 0 {
			return res.Error
		}
		return Audit(tx, who, "refund.retry", "order:"+orderNo, map[string]any{"status": RefundFailed}, map[string]any{"status": RefundPending, "refunds": n}, now)
	})
	if err != nil {
		return 0, fmt.Errorf("retry the refunds of order %s: %w", orderNo, err)
	}
	return n, nil
}

// maxRefundReason is how long an admin's reason may be, in characters.
const maxRefundReason = 500

// CleanRefundReason checks an admin's reason for a refund (the buyer sees it): not empty, at most 500
// characters, no control characters. It answers it trimmed.
func CleanRefundReason(reason string) (string, error) {
	reason = strings.TrimSpace(reason)
	switch {
	case strings.TrimFunc(reason, invisible) == "":
		return "", errs.Bad(errs.W("reason", "reason_required"))
	case utf8.RuneCountInString(reason) > maxRefundReason:
		return "", errs.Bad(errs.W("reason", "max_chars", maxRefundReason))
	case BadText(reason, true):
		return "", errs.Bad(errs.W("reason", "control_chars"))
	}
	return reason, nil
}

// UnsettledRefunds lists the refunds not done yet (refused by the provider, or on their way), newest
// first, at most limit.
func UnsettledRefunds(ctx context.Context, db *gorm.DB, limit int) ([]Refund, error) {
	var out []Refund
	if err := db.WithContext(ctx).Where("status <> ?", RefundDone).Order("id DESC").Limit(limit).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("unsettled refunds: %w", err)
	}
	return out, nil
}
