package jobs

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"gorm.io/gorm"

	"seckill/models"
	"seckill/orders"
	"seckill/payment"
)

// PaymentPoll asks the provider about every open payment, so that a paid order becomes paid even when
// the provider's callback never comes. While the provider is unavailable it waits longer between rounds,
// up to a minute.
type PaymentPoll struct {
	DB        *gorm.DB
	Orders    *orders.Service // records the provider's news
	Providers *payment.Providers
	Runs      *Runs
	Interval  time.Duration
	Now       func() time.Time
	Log       *slog.Logger

	limitsOnce sync.Once
	limits     map[string]*rate.Limiter // pace's, by provider
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
	ps, err := models.PaymentsToPoll(ctx, p.DB, p.Now(), paced, 200)
	if err != nil {
		return err
	}
	// A payment still open at the provider whose order was cancelled (its close failed then) is closed now;
	// one whose order was paid (by another payment) once it has expired.
	status, err := models.OrderStatusesOf(ctx, p.DB, ps)
	if err != nil {
		return err
	}
	// A provider that does not answer is left for this round; the others' payments are still asked about.
	// The round answers ErrUnavailable (the job waits longer) only when no provider answered.
	down := map[string]bool{}
	var unavailable error
	answered := 0
	for i := range ps {
		if down[ps[i].Provider] {
			continue
		}
		cancelled := status[ps[i].ID] == models.OrderCancelled
		settled := status[ps[i].ID] != models.OrderPendingPayment && (cancelled || orders.Forgotten(&ps[i], p.Now()))
		prov := p.Providers.Of(ps[i].Provider)
		if prov == nil {
			counts["no_provider"]++
			p.Log.Error("refund_needed: an open payment is at a provider the shop no longer has (PAY_PROVIDERS): it is followed by nobody",
				"payment", ps[i].ProviderID, "provider", ps[i].Provider)
			if err := models.PaymentChecked(ctx, p.DB, ps[i].ID, p.Now()); err != nil {
				return err
			}
			continue
		}
		if !p.pace(ps[i].Provider) {
			counts["paced"]++
			continue // its provider's share of this second is spent: a later round asks
		}
		st, err := prov.Query(ctx, ps[i].ProviderID)
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
			down[ps[i].Provider], unavailable = true, err
			continue
		}
		if err != nil && !payment.IsNotFound(err) {
			return err
		}
		counts["checked"]++
		answered++
		switch {
		case st == payment.StatusPaid:
			if err := p.settlePaid(ctx, &ps[i], counts); err != nil {
				return err
			}
		case st == payment.StatusCancelled || st == payment.StatusClosed:
			// This payment can no longer be paid; the order waits for another one until its deadline.
			if err := p.Orders.Closed(ctx, &ps[i]); err != nil {
				return err
			}
		case status[ps[i].ID] != models.OrderPendingPayment && st == "" && orders.Forgotten(&ps[i], p.Now()):
			// A payment of an order no longer waiting for it that the provider has long forgotten, or never
			// made and past its expiry (an Alipay QR code no one scanned): it can no longer be paid.
			counts["closed_late"]++
			if err := p.Orders.Closed(ctx, &ps[i]); err != nil {
				return err
			}
		case st == payment.StatusOpen && settled:
			// Open at the provider for an order cancelled, or paid by another payment and past this one's
			// expiry: closed, so that it can no longer take money.
			closed, err := prov.Close(ctx, ps[i].ProviderID)
			switch {
			case errors.Is(err, payment.ErrRefused):
				counts["refused"]++
				p.Log.Error("refund_needed: the provider refuses to close a payment of an order that no longer needs it: it may still be paid", "payment", ps[i].ProviderID, "err", err)
				if err := models.PaymentChecked(ctx, p.DB, ps[i].ID, p.Now()); err != nil {
					return err
				}
			case errors.Is(err, payment.ErrPaying):
				// The payer is paying it right now (USERPAYING): its news comes, or the next close.
				counts["paying"]++
				if err := models.PaymentChecked(ctx, p.DB, ps[i].ID, p.Now()); err != nil {
					return err
				}
			case errors.Is(err, payment.ErrUnavailable):
				counts["unavailable"]++
				down[ps[i].Provider], unavailable = true, err
			case err != nil && !payment.IsNotFound(err):
				return err
			case closed == payment.StatusPaid:
				if err := p.settlePaid(ctx, &ps[i], counts); err != nil {
					return err
				}
			default:
				counts["closed_late"]++
				if err := p.Orders.Closed(ctx, &ps[i]); err != nil {
					return err
				}
			}
		default: // open, or unknown to a provider that may not have caught up yet: look again later
			if err := models.PaymentChecked(ctx, p.DB, ps[i].ID, p.Now()); err != nil {
				return err
			}
		}
	}
	if unavailable != nil && answered == 0 {
		return unavailable
	}
	return nil
}

// Callbacks come first; the poll is the fallback. At WeChat Pay and Alipay (paced) it asks about a
// payment less often as the payment ages (models.PaymentsToPoll: an unpaid order's payment lives for
// PAY_TIMEOUT), and at most pollRate queries a second to each, far under their documented limits for a
// merchant's order queries, so that thousands of open payments after a sale never crowd them.
var paced = []string{payment.NameWeChat, payment.NameAlipay}

// pollRate is how many queries a second the poll sends to one paced provider at most.
const pollRate = 20

// pace reports whether the named provider may be asked now: always, but for a paced one past its
// share of this second (then the payment waits for a later round; a round never waits).
func (p *PaymentPoll) pace(provider string) bool {
	if !slices.Contains(paced, provider) {
		return true
	}
	p.limitsOnce.Do(func() {
		p.limits = map[string]*rate.Limiter{}
		for _, n := range paced {
			p.limits[n] = rate.NewLimiter(pollRate, pollRate)
		}
	})
	return p.limits[provider].Allow()
}

// settlePaid records a paid payment; money that came in for an order no longer waiting for it (cancelled,
// or paid twice) gets a refund, which the refunds job makes.
func (p *PaymentPoll) settlePaid(ctx context.Context, pay *models.Payment, counts map[string]int64) error {
	out, err := p.Orders.Paid(ctx, pay)
	switch out {
	case orders.PaidNow:
		counts["paid"]++
	case orders.PaidRefund:
		counts["refund_requested"]++
	}
	return err
}

// UnpaidTimeout cancels the orders not paid by their deadline and puts their units back on sale, through
// the same operation as a buyer's cancel (orders.Service.Cancel): an open payment is closed at the
// provider first; if the money came in after all, the order is paid; if the provider cannot be asked,
// the order waits for the next round — nothing is cancelled because of the provider's failure alone.
type UnpaidTimeout struct {
	DB       *gorm.DB
	Orders   *orders.Service
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
		if err := u.Orders.Restock(ctx, r.ID, r.ItemID, r.OrderNo); err != nil {
			keep(err)
			continue
		}
		counts["restocked_late"]++
	}

	due, err := models.OrdersPastDeadline(ctx, u.DB, u.Now(), 200)
	if err != nil {
		return err
	}
	for i := range due {
		// One order that fails is skipped, not allowed to hold up those behind it.
		outcome, err := u.Orders.Cancel(ctx, &due[i], models.CancelUnpaid)
		switch outcome {
		case orders.Cancelled, orders.CancelledRestockLater:
			counts["cancelled"]++
		case orders.PaidMeanwhile:
			counts["paid_late"]++
		case orders.ProviderDown:
			counts["provider_failed"]++
		}
		if err != nil {
			keep(err)
		}
	}
	return firstErr
}
