package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"gorm.io/gorm"

	"seckill/models"
	"seckill/payment"
)

// Refunds gives back at the provider the money the shop recorded as owed (a late payment on a cancelled
// order, an admin's refund). A refund is asked for until the provider confirms it: while the provider is
// unavailable the job waits longer between rounds, up to a minute, and the refund stays pending. The
// provider refunds a payment once however often it is asked (the shop's refund id), so a retry after a
// lost answer gives nothing back twice.
type Refunds struct {
	DB        *gorm.DB
	Providers *payment.Providers
	Runs      *Runs
	Interval  time.Duration
	Now       func() time.Time
	Log       *slog.Logger
}

// Run refunds until ctx ends.
func (r *Refunds) Run(ctx context.Context) error {
	return whileProviderUp(ctx, r.Interval, r.Once, func(err error) { r.Log.Warn("refunds failed", "err", err) })
}

// Once runs one round now (under the job's lock).
func (r *Refunds) Once(ctx context.Context) error {
	return r.Runs.Once(ctx, RefundsJob, true, max(r.Interval*3, 10*time.Second), r.round)
}

func (r *Refunds) round(ctx context.Context, counts map[string]int64) error {
	due, err := models.PendingRefunds(ctx, r.DB, 100)
	if err != nil {
		return err
	}
	// A provider that does not answer is left for this round; the others' refunds are still asked for.
	down := map[string]bool{}
	var unavailable error
	answered := 0
	for i := range due {
		pay, err := models.PaymentByID(ctx, r.DB, due[i].PaymentID)
		if err != nil {
			return err
		}
		if down[pay.Provider] {
			continue
		}
		err = r.attempt(ctx, &due[i], pay, counts)
		switch {
		case errors.Is(err, payment.ErrUnavailable):
			down[pay.Provider], unavailable = true, err
		case err != nil:
			return err
		default:
			answered++
		}
	}
	if unavailable != nil && answered == 0 {
		return unavailable // every provider asked is down: the job waits longer
	}
	return nil
}

// attempt asks the provider for one refund and records its answer. It answers an error only when the
// provider could not be reached (the refund stays pending) or the database failed.
func (r *Refunds) attempt(ctx context.Context, f *models.Refund, pay *models.Payment, counts map[string]int64) error {
	prov := r.Providers.Of(pay.Provider)
	if prov == nil {
		counts["no_provider"]++
		why := fmt.Sprintf("the payment is at provider %q, which the shop no longer has (PAY_PROVIDERS)", pay.Provider)
		r.Log.ErrorContext(ctx, "refund_needed: "+why, "order_no", f.OrderNo, "payment_id", f.ProviderID)
		return models.RefundSettled(ctx, r.DB, f.ID, models.RefundPending, why, r.Now())
	}
	st, err := prov.Refund(ctx, f.ProviderID, payment.RefundRequest{RefundID: f.RefundID(), AmountCents: f.AmountCents, Reason: f.Reason, TotalCents: pay.AmountCents})
	now := r.Now()
	switch {
	case err == nil && st == payment.StatusRefunded:
		counts["refunded"]++
		return models.RefundSettled(ctx, r.DB, f.ID, models.RefundDone, "", now)
	case err == nil && st == payment.StatusRefunding:
		// The provider is making it (WeChat Pay's PROCESSING): asked again next round with the same
		// refund id, which answers how far it got; its callback may settle it first.
		counts["refunding"]++
		return models.RefundSettled(ctx, r.DB, f.ID, models.RefundPending, "the provider is making the refund", now)
	case errors.Is(err, payment.ErrNotRefundable), payment.IsNotFound(err), err == nil:
		// The provider will not: a person must look (the admin pages show failed refunds).
		counts["refused"]++
		why := "the provider answered " + st
		if err != nil {
			why = err.Error()
		}
		r.Log.ErrorContext(ctx, "refund_needed: the provider refused a refund", "order_no", f.OrderNo, "payment_id", f.ProviderID, "why", why)
		return models.RefundSettled(ctx, r.DB, f.ID, models.RefundFailed, why, now)
	}
	if errors.Is(err, payment.ErrRefused) {
		// Refused for a reason of the shop's (its key, a request the provider does not take): pending,
		// asked for again, and a person is told; the other refunds go on.
		counts["refused_retrying"]++
		r.Log.ErrorContext(ctx, "refund_needed: the provider refuses a refund; it is asked for again", "order_no", f.OrderNo,
			"payment_id", f.ProviderID, "attempts", f.Attempts+1, "err", err)
		return models.RefundSettled(ctx, r.DB, f.ID, models.RefundPending, err.Error(), now)
	}
	counts["unavailable"]++
	if serr := models.RefundSettled(ctx, r.DB, f.ID, models.RefundPending, err.Error(), now); serr != nil {
		return serr
	}
	return err
}

// MakeFor makes an order's pending refunds now (an admin's refund answers with the provider's word
// when it can); those the provider cannot take now wait for the job.
func (r *Refunds) MakeFor(ctx context.Context, orderID int64) error {
	fs, err := models.RefundsOfOrder(ctx, r.DB, orderID)
	if err != nil {
		return err
	}
	for i := range fs {
		if fs[i].Status != models.RefundPending {
			continue
		}
		pay, err := models.PaymentByID(ctx, r.DB, fs[i].PaymentID)
		if err != nil {
			return err
		}
		if err := r.attempt(ctx, &fs[i], pay, map[string]int64{}); err != nil {
			return err
		}
	}
	return nil
}
