package jobs

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"gorm.io/gorm"

	"seckill/models"
	"seckill/payment"
	"seckill/stock"
)

// PaymentPoll asks the provider about every open payment, so that a paid order becomes paid even when
// the provider's callback never comes. While the provider is unavailable it waits longer between rounds,
// up to a minute.
type PaymentPoll struct {
	DB       *gorm.DB
	Provider payment.Provider
	Runs     *Runs
	Interval time.Duration
	Now      func() time.Time
	Log      *slog.Logger
}

// Run polls until ctx ends.
func (p *PaymentPoll) Run(ctx context.Context) error {
	unavailable := retryWait(2*p.Interval, time.Minute)
	for {
		err := p.Once(ctx)
		wait := p.Interval
		switch {
		case errors.Is(err, payment.ErrUnavailable):
			wait = unavailable.NextBackOff()
		case err != nil && ctx.Err() == nil:
			p.Log.Warn("payment poll failed", "err", err)
			unavailable.Reset()
		default:
			unavailable.Reset()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

// Once runs one round now (under the job's lock).
func (p *PaymentPoll) Once(ctx context.Context) error {
	return p.Runs.Once(ctx, PaymentPollJob, true, max(p.Interval*3, 10*time.Second), p.round)
}

func (p *PaymentPoll) round(ctx context.Context, counts map[string]int64) error {
	ps, err := models.PaymentsToPoll(ctx, p.DB, 200)
	if err != nil {
		return err
	}
	for i := range ps {
		st, err := p.Provider.Query(ctx, ps[i].ProviderID)
		if errors.Is(err, payment.ErrUnavailable) {
			counts["unavailable"]++
			return err
		}
		if err != nil && !payment.IsNotFound(err) {
			return err
		}
		counts["checked"]++
		switch {
		case st == payment.StatusPaid:
			if err := settlePaid(ctx, p.DB, p.Log, &ps[i], p.Now(), counts); err != nil {
				return err
			}
		case st == payment.StatusCancelled || st == payment.StatusClosed:
			// This payment can no longer be paid; the order waits for another one until its deadline.
			if err := models.SetPaymentStatus(ctx, p.DB, ps[i].ID, models.PaymentClosed, p.Now()); err != nil {
				return err
			}
		default: // open, or unknown to a provider that may not have caught up yet: look again later
			if err := models.PaymentChecked(ctx, p.DB, ps[i].ID, p.Now()); err != nil {
				return err
			}
		}
	}
	return nil
}

// settlePaid records a paid payment; money that came in for an order no longer waiting for it (cancelled,
// or paid twice) is logged as needing a refund, and counted.
func settlePaid(ctx context.Context, db *gorm.DB, log *slog.Logger, p *models.Payment, now time.Time, counts map[string]int64) error {
	out, err := models.MarkPaid(ctx, db, p, now)
	if err != nil {
		return err
	}
	switch {
	case out.Paid:
		counts["paid"]++
	case out.Refund:
		counts["refund_needed"]++
		payment.RefundNeeded(ctx, log, p.OrderNo, p.ProviderID, p.AmountCents, out.Status)
	}
	return nil
}

// UnpaidTimeout cancels the orders not paid by their deadline and puts their units back on sale. It
// closes an open payment at the provider first: if the money came in after all, the order is paid; if
// the provider cannot be asked, the order waits for the next round — nothing is cancelled because of the
// provider's failure alone.
type UnpaidTimeout struct {
	DB       *gorm.DB
	Provider payment.Provider
	Ledger   *stock.Ledger
	Flags    *stock.Flags
	Runs     *Runs
	Interval time.Duration
	Now      func() time.Time
	Log      *slog.Logger
}

// Run cancels until ctx ends.
func (u *UnpaidTimeout) Run(ctx context.Context) error {
	return Every(ctx, u.Interval, u.Once, func(err error) { u.Log.Warn("unpaid timeout failed", "err", err) })
}

// Once runs one round now (under the job's lock).
func (u *UnpaidTimeout) Once(ctx context.Context) error {
	return u.Runs.Once(ctx, UnpaidTimeoutJob, true, max(u.Interval*3, 10*time.Second), u.round)
}

func (u *UnpaidTimeout) round(ctx context.Context, counts map[string]int64) error {
	var firstErr error
	keep := func(err error) {
		if firstErr == nil {
			firstErr = err
		}
	}
	// Units whose order was cancelled but which are not back in Redis yet (Redis failed then).
	pending, err := models.PendingRestocks(ctx, u.DB, 200)
	if err != nil {
		return err
	}
	for _, r := range pending {
		if err := u.restock(ctx, r.ID, r.ItemID, r.OrderNo); err != nil {
			keep(err)
			continue
		}
		counts["restocked_late"]++
	}

	orders, err := models.OrdersPastDeadline(ctx, u.DB, u.Now(), 200)
	if err != nil {
		return err
	}
	for i := range orders {
		// One order that fails is skipped, not allowed to hold up those behind it.
		if err := u.expire(ctx, &orders[i], counts); err != nil {
			keep(err)
		}
	}
	return firstErr
}

// expire settles one order past its deadline: every open payment is closed at the provider first (if
// one was paid after all, the order is paid); if the provider cannot say, nothing is cancelled.
func (u *UnpaidTimeout) expire(ctx context.Context, o *models.Order, counts map[string]int64) error {
	ps, err := models.OpenPayments(ctx, u.DB, o.ID)
	if err != nil {
		return err
	}
	paid := false
	for i := range ps {
		st, err := u.Provider.Close(ctx, ps[i].ProviderID)
		if payment.IsNotFound(err) && u.Now().Sub(ps[i].CreatedAt) > 10*time.Minute {
			st, err = payment.StatusClosed, nil // the provider has long forgotten it: it cannot be paid
		}
		if err != nil {
			counts["provider_failed"]++
			return err
		}
		if st == payment.StatusPaid {
			if err := settlePaid(ctx, u.DB, u.Log, &ps[i], u.Now(), counts); err != nil {
				return err
			}
			paid = true
		}
	}
	if paid {
		counts["paid_late"]++
		return nil
	}
	cancelled, err := models.CancelUnpaid(ctx, u.DB, o, u.Now())
	if err != nil || !cancelled {
		return err // an error, or paid (or cancelled) meanwhile
	}
	counts["cancelled"]++
	var releaseID int64
	if err := u.DB.WithContext(ctx).Raw("SELECT id FROM stock_logs WHERE order_no = ? AND kind = ?", o.OrderNo, models.StockRelease).Scan(&releaseID).Error; err != nil {
		return err
	}
	return u.restock(ctx, releaseID, o.ItemID, o.OrderNo)
}

// restock puts a cancelled order's unit back on sale in Redis (once per order) and records it done; on
// failure the release stays pending and the next round tries again.
func (u *UnpaidTimeout) restock(ctx context.Context, releaseID, itemID int64, orderNo string) error {
	if _, err := u.Ledger.Restock(ctx, itemID, orderNo); err != nil {
		return err
	}
	u.Flags.Restocked(ctx, itemID)
	return models.Restocked(ctx, u.DB, releaseID)
}
