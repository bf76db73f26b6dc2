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

// PaymentPoller asks the provider about every open payment, so that a paid order becomes paid even when
// the provider's callback never comes. While the provider is unavailable it waits longer between rounds,
// up to a minute.
type PaymentPoller struct {
	DB       *gorm.DB
	Provider payment.Provider
	Runs     *Runs
	Interval time.Duration
	Now      func() time.Time
	Log      *slog.Logger
}

// Run polls until ctx ends.
func (p *PaymentPoller) Run(ctx context.Context) error {
	wait := p.Interval
	for {
		err := p.Once(ctx)
		switch {
		case errors.Is(err, payment.ErrUnavailable):
			wait = min(2*wait, time.Minute)
		case err != nil && ctx.Err() == nil:
			p.Log.Warn("payment poll failed", "err", err)
			wait = p.Interval
		default:
			wait = p.Interval
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

// Once runs one round now (under the job's lock).
func (p *PaymentPoller) Once(ctx context.Context) error {
	return p.Runs.Once(ctx, "payment_poll", true, max(p.Interval*3, 10*time.Second), p.round)
}

func (p *PaymentPoller) round(ctx context.Context, counts map[string]int64) error {
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
			changed, err := models.MarkPaid(ctx, p.DB, &ps[i], p.Now())
			if err != nil {
				return err
			}
			if changed {
				counts["paid"]++
			}
		case st == payment.StatusCancelled || st == payment.StatusClosed || payment.IsNotFound(err):
			// This payment can no longer be paid; the order waits for another one until its deadline.
			if err := models.SetPaymentStatus(ctx, p.DB, ps[i].ID, models.PaymentClosed, p.Now()); err != nil {
				return err
			}
		}
	}
	return nil
}

// UnpaidCanceller cancels the orders not paid by their deadline and puts their units back on sale. It
// closes an open payment at the provider first: if the money came in after all, the order is paid; if
// the provider cannot be asked, the order waits for the next round — nothing is cancelled because of the
// provider's failure alone.
type UnpaidCanceller struct {
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
func (u *UnpaidCanceller) Run(ctx context.Context) error {
	return Every(ctx, u.Interval, u.Once, func(err error) { u.Log.Warn("unpaid timeout failed", "err", err) })
}

// Once runs one round now (under the job's lock).
func (u *UnpaidCanceller) Once(ctx context.Context) error {
	return u.Runs.Once(ctx, "unpaid_timeout", true, max(u.Interval*3, 10*time.Second), u.round)
}

func (u *UnpaidCanceller) round(ctx context.Context, counts map[string]int64) error {
	orders, err := models.OrdersPastDeadline(ctx, u.DB, u.Now(), 200)
	if err != nil {
		return err
	}
	var providerErr error
	for i := range orders {
		o := &orders[i]
		p, err := models.OpenPayment(ctx, u.DB, o.ID)
		if err != nil {
			return err
		}
		if p != nil {
			st, err := u.Provider.Close(ctx, p.ProviderID)
			if err != nil && !payment.IsNotFound(err) {
				counts["provider_failed"]++
				providerErr = err
				continue
			}
			if st == payment.StatusPaid {
				if changed, err := models.MarkPaid(ctx, u.DB, p, u.Now()); err != nil {
					return err
				} else if changed {
					counts["paid_late"]++
				}
				continue
			}
		}
		cancelled, err := models.CancelUnpaid(ctx, u.DB, o, u.Now())
		if err != nil {
			return err
		}
		if !cancelled {
			continue // paid (or cancelled) meanwhile
		}
		counts["cancelled"]++
		if _, err := u.Ledger.Restock(ctx, o.ItemID); err != nil {
			// The database has the unit back; the reconciliation job shows Redis one short until preheat
			// rebuilds it.
			u.Log.Error("unit not given back in Redis", "order_no", o.OrderNo, "item_id", o.ItemID, "err", err)
			continue
		}
		u.Flags.Restocked(ctx, o.ItemID)
	}
	return providerErr
}
