package orders

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"seckill/models"
	"seckill/payment"
)

// CancelOutcome is what cancelling an unpaid order did.
type CancelOutcome int

// The outcomes of Cancel.
const (
	// Cancelled: the order is cancelled and its unit is back on sale.
	Cancelled CancelOutcome = iota + 1
	// CancelledRestockLater: the order is cancelled; Redis failed to take its unit back, which the unpaid
	// timeout's next round puts back (the error says why).
	CancelledRestockLater
	// NotPending: the order, as the caller read it, was not waiting for payment: nothing was done.
	NotPending
	// PaidMeanwhile: closing its payments at the provider found one paid: the order is paid now.
	PaidMeanwhile
	// NoLongerPending: it was paid or cancelled elsewhere while this cancel ran: nothing more was done.
	NoLongerPending
	// ProviderDown: the provider could not say whether an open payment was paid: nothing changed (the
	// error says why).
	ProviderDown
)

// forgotten is how long after its making a payment the provider does not know can no longer be paid.
const forgotten = 10 * time.Minute

// expiryMargin is how long after a payment's expiry the shop still follows it: the provider's clock and
// its last callbacks may run a little late.
const expiryMargin = 2 * time.Minute

// Forgotten reports whether a payment the provider does not know can no longer be paid at now: its
// expiry (told to the provider) is past, or, without one, it was made long ago.
func Forgotten(p *models.Payment, now time.Time) bool {
	if p.ExpiresAt != nil {
		return now.After(p.ExpiresAt.Add(expiryMargin))
	}
	return now.Sub(p.CreatedAt) > forgotten
}

// Cancel cancels an order that waits for payment: its buyer's cancel (handlers/orders.go) and its
// deadline's (the unpaid timeout, jobs/payments.go) are this one operation. Every open payment is closed
// at the provider first: if one was paid after all, the order is paid; if the provider cannot say,
// nothing is cancelled because of the provider's failure alone. Then the order is cancelled and its unit
// goes back on sale (or, if Redis fails, at the timeout's next round).
//
// why is the reason the order keeps, for its buyer to read: models.CancelByBuyer or models.CancelUnpaid.
//
// The error is not nil for ProviderDown and CancelledRestockLater (why), and when the database failed
// (the outcome is then 0).
func (s *Service) Cancel(ctx context.Context, o *models.Order, why string) (CancelOutcome, error) {
	if o.Status != models.OrderPendingPayment {
		return NotPending, nil
	}
	ps, err := models.OpenPayments(ctx, s.DB, o.ID)
	if err != nil {
		return 0, err
	}
	paid := false
	unknown := map[string]bool{} // payments the provider does not know yet, followed until they expire
	for i := range ps {
		prov := s.Providers.Of(ps[i].Provider)
		if prov == nil {
			return ProviderDown, fmt.Errorf("%w: payment %s is at provider %q, which the shop no longer has", payment.ErrUnavailable, ps[i].ProviderID, ps[i].Provider)
		}
		st, err := prov.Close(ctx, ps[i].ProviderID)
		if payment.IsNotFound(err) && (s.Now().Sub(ps[i].CreatedAt) > forgotten || ps[i].ExpiresAt != nil) {
			// The provider has long forgotten it, or (Alipay) has not made it yet: no one has scanned its
			// QR code. It cannot be paid now; one with an expiry still ahead is followed by the poll
			// until then (closeLate), in case it is scanned and paid after all.
			st, err = payment.StatusClosed, nil
			unknown[ps[i].ProviderID] = ps[i].ExpiresAt != nil
		}
		if err != nil && paid {
			break // the order is paid: what is left open, the poll follows
		}
		if err != nil {
			return ProviderDown, err
		}
		if st == payment.StatusPaid {
			if _, err := s.Paid(ctx, &ps[i]); err != nil {
				return 0, err
			}
			paid = true
		}
	}
	if paid {
		return PaidMeanwhile, nil
	}
	releaseID, err := s.cancelInBooks(ctx, o, why)
	if err != nil {
		return 0, err
	}
	if releaseID == 0 {
		return NoLongerPending, nil
	}
	s.closeLate(ctx, o, ps, unknown)
	if err := s.Restock(ctx, releaseID, o.ItemID, o.OrderNo); err != nil {
		return CancelledRestockLater, err
	}
	return Cancelled, nil
}

// CancelInBooks is Cancel's half in the database, in one transaction: the order cancelled (only from
// pending_payment), its unit given back (stock_sold − 1, a release row pending in the stock log), its
// payments closed in the books. It answers the release row's id, or 0 when the order no longer waited
// for payment. Cancel calls it once the provider has closed the payments; the unit is not back in Redis
// yet (Restock). The order keeps why it was cancelled: CancelInBooks is the unpaid timeout's.
func (s *Service) CancelInBooks(ctx context.Context, o *models.Order) (int64, error) {
	return s.cancelInBooks(ctx, o, models.CancelUnpaid)
}

func (s *Service) cancelInBooks(ctx context.Context, o *models.Order, why string) (int64, error) {
	now := s.Now()
	var releaseID int64
	err := s.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		n, err := apply(tx, moveCancel, []int64{o.ID}, now, map[string]any{"cancelled_at": now, "cancel_reason": why})
		if err != nil || n == 0 {
			return err
		}
		if releaseID, err = models.ReleaseUnit(tx, o, now); err != nil {
			return err
		}
		return models.ClosePayments(tx, o.ID, now)
	})
	if err != nil {
		return 0, fmt.Errorf("cancel order %s: %w", o.OrderNo, err)
	}
	return releaseID, nil
}

// closeLate closes at the provider the payments of a cancelled order that were made while it was being
// cancelled (a Pay in another tab between the payments' list and the cancel): the cancel closed them in
// the database only. No payment can be made once the order is cancelled. One the provider cannot close
// is open in the books again, for the poll to follow; one paid meanwhile is recorded paid and its money
// goes back (a refund).
//
// unknown are the payments closed in the books that the provider did not know yet (an Alipay QR code no
// one has scanned): it may still take them until they expire, so the poll follows them until then.
func (s *Service) closeLate(ctx context.Context, o *models.Order, closed []models.Payment, unknown map[string]bool) {
	all, err := models.PaymentsOfOrder(ctx, s.DB, o.ID)
	if err != nil {
		s.Log.Error("payments of a cancelled order", "order", o.OrderNo, "err", err)
		return
	}
	known := map[string]bool{}
	for _, p := range closed {
		known[p.ProviderID] = true
		if unknown[p.ProviderID] && !Forgotten(&p, s.Now()) {
			if err := models.ReopenPayment(ctx, s.DB, p.ID, s.Now()); err != nil {
				s.Log.Error("refund_needed: a payment of a cancelled order may be paid later and is followed by nobody", "order", o.OrderNo, "payment", p.ProviderID, "err", err)
			}
		}
	}
	for _, p := range all {
		if known[p.ProviderID] || p.Status != models.PaymentClosed {
			continue
		}
		var st string
		err := fmt.Errorf("%w: payment %s is at provider %q, which the shop no longer has", payment.ErrUnavailable, p.ProviderID, p.Provider)
		prov := s.Providers.Of(p.Provider)
		for attempt := 0; prov != nil && attempt < 3; attempt++ {
			if st, err = prov.Close(ctx, p.ProviderID); err == nil || payment.IsNotFound(err) {
				break
			}
		}
		switch {
		case payment.IsNotFound(err) && p.ExpiresAt != nil && !Forgotten(&p, s.Now()):
			if err := models.ReopenPayment(ctx, s.DB, p.ID, s.Now()); err != nil {
				s.Log.Error("refund_needed: a payment of a cancelled order may be paid later and is followed by nobody", "order", o.OrderNo, "payment", p.ProviderID, "err", err)
			}
		case payment.IsNotFound(err):
		case err != nil:
			// Still open at the provider, perhaps: open in the books again, so that the poller keeps asking,
			// closes it, or finds its money and refunds it.
			s.Log.Warn("a payment of a cancelled order could not be closed at the provider: the poller follows it", "order", o.OrderNo, "payment", p.ProviderID, "err", err)
			if err := models.ReopenPayment(ctx, s.DB, p.ID, s.Now()); err != nil {
				s.Log.Error("refund_needed: a payment of a cancelled order may be paid later and is followed by nobody", "order", o.OrderNo, "payment", p.ProviderID, "err", err)
			}
		case st == payment.StatusPaid:
			// Paid while the order was being cancelled: recorded paid, and refunded.
			if _, err := s.Paid(ctx, &p); err != nil {
				s.Log.Error("refund_needed: a paid payment of a cancelled order could not be recorded: refund it by hand", "order", o.OrderNo, "payment", p.ProviderID, "err", err)
			}
		}
	}
}

// Restock puts a cancelled order's unit back on sale in Redis (once per order) and records its release
// done; on failure the release stays pending and the unpaid timeout's next round tries again.
func (s *Service) Restock(ctx context.Context, releaseID, itemID int64, orderNo string) error {
	if _, err := s.Ledger.Restock(ctx, itemID, orderNo); err != nil {
		return err
	}
	s.Flags.Restocked(ctx, itemID)
	return models.Restocked(ctx, s.DB, releaseID)
}
