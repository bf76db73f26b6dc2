package jobs

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"gorm.io/gorm"

	"seckill/errs"
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
	return whileProviderUp(ctx, p.Interval, p.Once, func(err error) { p.Log.Warn("payment poll failed", "err", err) })
}

// whileProviderUp runs once every interval until ctx ends; while the payment provider is unavailable it
// waits longer between rounds, up to a minute. Other errors go to onErr.
func whileProviderUp(ctx context.Context, interval time.Duration, once func(context.Context) error, onErr func(error)) error {
	unavailable := retryWait(2*interval, time.Minute)
	for {
		err := once(ctx)
		wait := interval
		switch {
		case errors.Is(err, payment.ErrUnavailable):
			wait = unavailable.NextBackOff()
		case err != nil && ctx.Err() == nil:
			onErr(err)
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
	// A payment still open at the provider whose order was cancelled (its close failed then) is closed now.
	cancelled, err := models.CancelledOrdersOf(ctx, p.DB, ps)
	if err != nil {
		return err
	}
	for i := range ps {
		st, err := p.Provider.Query(ctx, ps[i].ProviderID)
		if errors.Is(err, payment.ErrRefused) {
			// The provider refuses this payment alone: the others are asked about, this one later.
			counts["refused"]++
			p.Log.Warn("the provider refuses to answer about a payment", "payment", ps[i].ProviderID, "err", err)
			if err := models.PaymentChecked(ctx, p.DB, ps[i].ID, p.Now()); err != nil {
				return err
			}
			continue
		}
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
		case cancelled[ps[i].ID] && st == "" && p.Now().Sub(ps[i].CreatedAt) > 10*time.Minute:
			// A cancelled order's payment the provider has long forgotten: it can no longer be paid.
			counts["closed_late"]++
			if err := models.SetPaymentStatus(ctx, p.DB, ps[i].ID, models.PaymentClosed, p.Now()); err != nil {
				return err
			}
		case st == payment.StatusOpen && cancelled[ps[i].ID]:
			closed, err := p.Provider.Close(ctx, ps[i].ProviderID)
			switch {
			case errors.Is(err, payment.ErrRefused):
				counts["refused"]++
				p.Log.Error("refund_needed: the provider refuses to close a payment of a cancelled order: it may still be paid", "payment", ps[i].ProviderID, "err", err)
				if err := models.PaymentChecked(ctx, p.DB, ps[i].ID, p.Now()); err != nil {
					return err
				}
			case errors.Is(err, payment.ErrUnavailable):
				counts["unavailable"]++
				return err
			case err != nil && !payment.IsNotFound(err):
				return err
			case closed == payment.StatusPaid:
				if err := settlePaid(ctx, p.DB, p.Log, &ps[i], p.Now(), counts); err != nil {
					return err
				}
			default:
				counts["closed_late"]++
				if err := models.SetPaymentStatus(ctx, p.DB, ps[i].ID, models.PaymentClosed, p.Now()); err != nil {
					return err
				}
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
// or paid twice) gets a refund, which the refunds job makes.
func settlePaid(ctx context.Context, db *gorm.DB, log *slog.Logger, p *models.Payment, now time.Time, counts map[string]int64) error {
	out, err := models.MarkPaid(ctx, db, p, now)
	if err != nil {
		return err
	}
	switch {
	case out.Paid:
		counts["paid"]++
	case out.Refund:
		counts["refund_requested"]++
		log.WarnContext(ctx, "money came in for an order that does not need it: it is being refunded", "order_no", p.OrderNo,
			"payment_id", p.ProviderID, "amount_cents", p.AmountCents, "order_status", out.Status)
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
	_, err := u.cancel(ctx, o, counts)
	return err
}

// Cancel cancels an unpaid order at its buyer's wish, as its deadline would: its open payments are closed
// at the provider first, then the order is cancelled and its unit goes back on sale (or, if Redis fails,
// the next round of the job puts it back). An order paid meanwhile (at the provider too) answers
// errs.OrderState, a provider that cannot say errs.PaymentUnavailable: the order stays as it was.
func (u *UnpaidTimeout) Cancel(ctx context.Context, o *models.Order) error {
	if o.Status != models.OrderPendingPayment {
		return errs.Newf(errs.OrderState, "this order is %s: it cannot be cancelled", o.Status)
	}
	counts := map[string]int64{}
	cancelled, err := u.cancel(ctx, o, counts)
	switch {
	case counts["provider_failed"] > 0:
		u.Log.Warn("a shopper's cancel: the payment provider failed", "order", o.OrderNo, "err", err)
		return errs.New(errs.PaymentUnavailable, "the payment provider does not answer: try again in a minute (your order is unchanged)")
	case counts["paid_late"] > 0:
		return errs.New(errs.OrderState, "this order was paid meanwhile: it cannot be cancelled")
	case cancelled && err != nil:
		// Cancelled in the database; the unit goes back to Redis at the job's next round.
		u.Log.Warn("a shopper's cancel: restock left to the job", "order", o.OrderNo, "err", err)
		return nil
	case err != nil:
		return err
	case !cancelled:
		return errs.New(errs.OrderState, "this order no longer waits for payment: it cannot be cancelled")
	}
	return nil
}

// cancel closes the order's open payments at the provider and, unless one was paid after all, cancels
// the order and puts its unit back on sale. It reports whether the order was cancelled.
func (u *UnpaidTimeout) cancel(ctx context.Context, o *models.Order, counts map[string]int64) (bool, error) {
	ps, err := models.OpenPayments(ctx, u.DB, o.ID)
	if err != nil {
		return false, err
	}
	paid := false
	for i := range ps {
		st, err := u.Provider.Close(ctx, ps[i].ProviderID)
		if payment.IsNotFound(err) && u.Now().Sub(ps[i].CreatedAt) > 10*time.Minute {
			st, err = payment.StatusClosed, nil // the provider has long forgotten it: it cannot be paid
		}
		if err != nil && paid {
			break // the order is paid: what is left open, the poll follows
		}
		if err != nil {
			counts["provider_failed"]++
			return false, err
		}
		if st == payment.StatusPaid {
			if err := settlePaid(ctx, u.DB, u.Log, &ps[i], u.Now(), counts); err != nil {
				return false, err
			}
			paid = true
		}
	}
	if paid {
		counts["paid_late"]++
		return false, nil
	}
	cancelled, err := models.CancelUnpaid(ctx, u.DB, o, u.Now())
	if err != nil || !cancelled {
		return false, err // an error, or paid (or cancelled) meanwhile
	}
	counts["cancelled"]++
	u.closeLate(ctx, o, ps)
	var releaseID int64
	if err := u.DB.WithContext(ctx).Raw("SELECT id FROM stock_logs WHERE order_no = ? AND kind = ?", o.OrderNo, models.StockRelease).Scan(&releaseID).Error; err != nil {
		return true, err
	}
	return true, u.restock(ctx, releaseID, o.ItemID, o.OrderNo)
}

// closeLate closes at the provider the payments of a cancelled order that were made while it was being
// cancelled (a Pay in another tab between the payments' list and the cancel): the cancel closed them in
// the database only. No payment can be made once the order is cancelled. One the provider cannot close
// is logged; one paid meanwhile is recorded paid and its money goes back (a refund).
func (u *UnpaidTimeout) closeLate(ctx context.Context, o *models.Order, closed []models.Payment) {
	var all []models.Payment
	if err := u.DB.WithContext(ctx).Where("order_id = ?", o.ID).Find(&all).Error; err != nil {
		u.Log.Error("payments of a cancelled order", "order", o.OrderNo, "err", err)
		return
	}
	known := map[string]bool{}
	for _, p := range closed {
		known[p.ProviderID] = true
	}
	for _, p := range all {
		if known[p.ProviderID] || p.Status != models.PaymentClosed {
			continue
		}
		var st string
		var err error
		for attempt := 0; attempt < 3; attempt++ {
			if st, err = u.Provider.Close(ctx, p.ProviderID); err == nil || payment.IsNotFound(err) {
				break
			}
		}
		switch {
		case payment.IsNotFound(err):
		case err != nil:
			// Still open at the provider, perhaps: open in the books again, so that the poller keeps asking,
			// closes it, or finds its money and refunds it.
			u.Log.Warn("a payment of a cancelled order could not be closed at the provider: the poller follows it", "order", o.OrderNo, "payment", p.ProviderID, "err", err)
			if err := models.ReopenPayment(ctx, u.DB, p.ID, u.Now()); err != nil {
				u.Log.Error("refund_needed: a payment of a cancelled order may be paid later and is followed by nobody", "order", o.OrderNo, "payment", p.ProviderID, "err", err)
			}
		case st == payment.StatusPaid:
			// Paid while the order was being cancelled: recorded paid, and refunded.
			if err := settlePaid(ctx, u.DB, u.Log, &p, u.Now(), map[string]int64{}); err != nil {
				u.Log.Error("refund_needed: a paid payment of a cancelled order could not be recorded: refund it by hand", "order", o.OrderNo, "payment", p.ProviderID, "err", err)
			}
		}
	}
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
