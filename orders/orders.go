// Package orders owns an order's life after the win: the table of its allowed status changes
// (transitions.go), and the operations on it (choose an address, pay, the provider's news, cancel and
// expire, ship, refund), each answering a typed outcome. Every status change goes through it.
package orders

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"gorm.io/gorm"

	"seckill/errs"
	"seckill/models"
	"seckill/payment"
	"seckill/stock"
)

// Service makes the operations on orders. The handlers call it for their people, the jobs for the
// deadline and the provider's news.
type Service struct {
	DB        *gorm.DB
	Providers *payment.Providers // the providers the shop offers, and those its payments are at
	// Ledger and Flags put a cancelled order's unit back on sale in Redis.
	Ledger    *stock.Ledger
	Flags     *stock.Flags
	Claims    *stock.Claims // a first-come sale of one entrant per address checks it when an address is chosen
	NotifyURL string        // where the provider calls back about a payment
	// Receipt queues a paid order's receipt in the transaction that marks it paid (nil: none).
	Receipt func(ctx context.Context, tx *gorm.DB, orderID int64) error
	Now     func() time.Time
	Log     *slog.Logger
}

// payGrace is how close to its deadline an order can no longer start a payment: a payment is made well
// before the unpaid timeout can cancel its order (and recorded only if the order still waits for it).
const payGrace = 30 * time.Second

// ChooseAddress gives one of the user's unpaid orders a copy of one of the user's addresses, and
// answers the order. Another user's order or address is not found; an order that no longer waits for
// payment answers order_state.
func (s *Service) ChooseAddress(ctx context.Context, userID int64, orderNo string, addressID int64) (*models.Order, error) {
	a, err := models.AddressOfUser(ctx, s.DB, userID, addressID)
	if err != nil {
		return nil, err
	}
	o, err := models.OrderOfUser(ctx, s.DB, userID, orderNo)
	if err != nil {
		return nil, err
	}
	if o.Status != models.OrderPendingPayment {
		return nil, errs.Newf(errs.OrderState, "this order is %s: its address can no longer change", o.Status)
	}
	if err := s.claim(ctx, o, userID, a.Delivery); err != nil {
		return nil, err
	}
	d := a.Delivery
	ok, err := models.SetOrderAddress(ctx, s.DB, o.ID, d, s.Now())
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errs.New(errs.OrderState, "this order no longer waits for payment: its address can no longer change")
	}
	o.Address = &d
	return o, nil
}

// claim checks the order's address under its sale's rule of one entrant per address: a queue sale's
// order goes to an address its buyer gave when joining the line; a first-come sale's buyer gives it now
// (within an entrant's share of two): address_limit otherwise.
func (s *Service) claim(ctx context.Context, o *models.Order, userID int64, d models.Delivery) error {
	if s.Claims == nil {
		return nil
	}
	act, err := models.ActivityByID(ctx, s.DB, o.ActivityID)
	if err != nil {
		return err
	}
	if !act.RuleOnePerAddress {
		return nil
	}
	if act.SaleMode == models.SaleQueue {
		return s.Claims.Owned(ctx, act, userID, d) // the address given when joining
	}
	return s.Claims.Claim(ctx, act, userID, s.Claims.KeysOf(d))
}

// Payment is where the buyer pays an order: the provider's payment and its page.
type Payment struct {
	ID       string
	PayURL   string
	Provider string // its name (payment.NameWeChat, ...)
}

var errAddressRequired = errs.New(errs.AddressRequired, "choose a delivery address for this order before paying")

// Pay makes (or gives back) a payment of one of the user's orders at the provider the buyer chose (""
// when the shop offers one), while the order waits for payment, well before its deadline, with its
// address chosen. A provider that cannot be reached answers payment_unavailable; an order paid or
// cancelled while its payment was being made answers order_state, and that payment is closed at the
// provider.
//
// At WeChat Pay and Alipay a payment is made once and its QR code given back: the payment's number is
// the order's, the provider's letter and a sequence ("SK…W1", "SK…W2" after the first was closed), so
// two presses at once ask the provider twice for one payment, and it answers the same.
func (s *Service) Pay(ctx context.Context, userID int64, orderNo, provider string) (*Payment, error) {
	name, prov, ok := s.Providers.Choose(provider)
	if !ok {
		return nil, errs.Bad(errs.W("provider", "provider_one_of", strings.Join(s.Providers.Names(), ", ")))
	}
	o, err := models.OrderOfUser(ctx, s.DB, userID, orderNo)
	if err != nil {
		return nil, err
	}
	now := s.Now()
	if o.Status != models.OrderPendingPayment {
		return nil, errs.Newf(errs.OrderState, "this order is %s: there is nothing to pay", o.Status)
	}
	if !now.Before(o.PayDeadline.Add(-payGrace)) {
		return nil, errs.New(errs.OrderState, "the time to pay this order is over")
	}
	if o.Address == nil {
		return nil, errAddressRequired
	}
	req := payment.Request{OrderNo: o.OrderNo, AmountCents: o.PriceCents, NotifyURL: s.NotifyURL, ExpiresAt: o.PayDeadline}
	if name == payment.NameWeChat || name == payment.NameAlipay {
		mine, err := models.PaymentsOfOrder(ctx, s.DB, o.ID)
		if err != nil {
			return nil, err
		}
		seq := 1
		for _, p := range mine {
			if p.Provider != name {
				continue
			}
			if p.Status == models.PaymentOpen && p.PayURL != "" {
				return &Payment{ID: p.ProviderID, PayURL: p.PayURL, Provider: name}, nil
			}
			seq++
		}
		req.PaymentNo = fmt.Sprintf("%s%s%d", o.OrderNo, paymentLetter[name], seq)
		if req.Subject, err = s.subject(ctx, o); err != nil {
			return nil, err
		}
	}
	created, err := prov.Create(ctx, req)
	if errors.Is(err, payment.ErrRefused) {
		// The provider takes no such payment (an amount past its limit, the shop's keys): asking again
		// will not help, another provider may.
		s.Log.ErrorContext(ctx, "the provider refused a payment", "provider", name, "order_no", o.OrderNo, "amount_cents", o.PriceCents, "err", err)
		return nil, errs.Say(errs.PaymentRefused, "pay_refused")
	}
	if errors.Is(err, payment.ErrUnavailable) {
		return nil, errs.New(errs.PaymentUnavailable, "payment is unavailable right now: try again in a minute (your order keeps its deadline)")
	}
	if err != nil {
		return nil, err
	}
	np := models.NewPayment{Provider: name, ProviderID: created.ID}
	if req.PaymentNo != "" { // a provider that makes a payment once, and closes it itself at its expiry
		np.PayURL, np.ExpiresAt = created.PayURL, req.ExpiresAt
	}
	p, added, err := models.AddPayment(ctx, s.DB, o, np, now)
	if err != nil {
		return nil, err
	}
	if !added {
		// The order was paid or cancelled while the payment was being made: it must not be payable.
		_, _ = prov.Close(context.WithoutCancel(ctx), created.ID)
		return nil, errs.New(errs.OrderState, "this order no longer waits for payment")
	}
	return &Payment{ID: p.ProviderID, PayURL: created.PayURL, Provider: name}, nil
}

// paymentLetter marks a payment number's provider ("SK…W1", "SK…A1"): two presses at once with two
// providers never give both the same number, and each provider's numbers count its own payments.
var paymentLetter = map[string]string{payment.NameWeChat: "W", payment.NameAlipay: "A"}

// subject is what a payment of order o is for, as the payer's app shows it: the item's name, cut to
// payment.Request's limit.
func (s *Service) subject(ctx context.Context, o *models.Order) (string, error) {
	it, _, err := models.ItemInAnyState(ctx, s.DB, o.ItemID)
	if err != nil {
		return "", err
	}
	return payment.TruncateUTF8(it.Name, 120), nil
}
