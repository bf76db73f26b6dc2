// Package alipay is Alipay's face-to-face payment (当面付, precreate: the shop shows a QR code the payer
// scans) behind the shop's payment.Provider and payment.Notifier, through the SDK
// github.com/smartwalle/alipay/v3 (which signs the requests with the app's key and checks the answers'
// signatures with Alipay's).
//
// Alipay's documentation, as implemented here:
//   - alipay.trade.precreate  https://opendocs.alipay.com/open/02ekfg
//   - alipay.trade.query      https://opendocs.alipay.com/open/02ekfh
//   - alipay.trade.close      https://opendocs.alipay.com/open/02o6e7
//   - alipay.trade.refund     https://opendocs.alipay.com/open/02ekfk
//   - alipay.trade.fastpay.refund.query  https://opendocs.alipay.com/open/02ekfl
//   - asynchronous notifications (异步通知)  https://opendocs.alipay.com/open/194/103296
//   - public error codes (公共错误码)  https://opendocs.alipay.com/common/02km9f
//
// A precreated trade does not exist at Alipay until the payer scans its QR code: until then query and
// close answer ACQ.TRADE_NOT_EXIST (payment.ErrNotFound), and the QR code can still be scanned and paid
// until its time_expire. The shop must therefore send the order's deadline as Request.ExpiresAt and take
// "not found" as "closed" only once that time is over; money that comes in after the shop gave the
// order up arrives by notification or poll and is refunded as any late payment. (The shop's rule that a
// payment the provider does not know ten minutes after its making can no longer be paid, in
// orders/cancel.go and jobs/payments.go, does not hold for Alipay before time_expire.)
package alipay

import (
	"context"
	"crypto/rsa"
	"errors"
	"fmt"
	"net/http"
	"time"

	sdk "github.com/smartwalle/alipay/v3"

	"seckill/payment"
)

// beijing is Alipay's clock: every time it takes or gives (time_expire, notify_time, timestamp) is
// Beijing time, UTC+8 all year.
var beijing = time.FixedZone("CST", 8*60*60)

// timeLayout is Alipay's "yyyy-MM-dd HH:mm:ss".
const timeLayout = "2006-01-02 15:04:05"

// callTimeout bounds one try of one call (the SDK has no deadline of its own).
const callTimeout = 5 * time.Second

// productCode is face-to-face payment's product (当面付), the one the app must have signed.
const productCode = "FACE_TO_FACE_PAYMENT"

// Errors of Create: the payment number was used already, for a payment that is over.
var (
	// ErrPaidAlready: Alipay answers ACQ.TRADE_HAS_SUCCESS, the trade of this number was paid.
	ErrPaidAlready = fmt.Errorf("%w: alipay: the trade of this payment number was paid already", payment.ErrRefused)
	// ErrClosedAlready: Alipay answers ACQ.TRADE_HAS_CLOSE, the trade of this number is closed: a new
	// payment needs a new number.
	ErrClosedAlready = fmt.Errorf("%w: alipay: the trade of this payment number is closed", payment.ErrRefused)
)

// errBadSignature is an answer whose signature does not verify with Alipay's key.
var errBadSignature = errors.New("bad signature")

// Provider is Alipay's face-to-face payment as the shop's payment provider.
type Provider struct {
	cfg    Config
	client *sdk.Client
	guard  *payment.Guard
}

var (
	_ payment.Provider = (*Provider)(nil)
	_ payment.Notifier = (*Provider)(nil)
)

// New makes the provider of cfg (which must pass Check). hc is the HTTP client the SDK uses; nil for
// one with a 5 s timeout.
func New(cfg Config, hc *http.Client) (*Provider, error) {
	if errs := cfg.Check(); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if hc == nil {
		hc = &http.Client{Timeout: callTimeout}
	}
	client, err := sdk.New(cfg.AppID, normalizeKey(cfg.PrivateKeyPEM), !cfg.Sandbox,
		sdk.WithHTTPClient(hc), sdk.WithTimeLocation(beijing))
	if err != nil {
		return nil, fmt.Errorf("ALIPAY_PRIVATE_KEY: %w", err)
	}
	if cfg.AlipayPublicKey != "" {
		if err := client.LoadAliPayPublicKey(normalizeKey(cfg.AlipayPublicKey)); err != nil {
			return nil, fmt.Errorf("ALIPAY_PUBLIC_KEY: %w", err)
		}
	} else {
		if err := client.LoadAppCertPublicKey(normalizeKey(cfg.AppCertPEM)); err != nil {
			return nil, fmt.Errorf("ALIPAY_APP_CERT: %w", err)
		}
		if err := client.LoadAliPayRootCert(normalizeKey(cfg.RootCertPEM)); err != nil {
			return nil, fmt.Errorf("ALIPAY_ROOT_CERT: %w", err)
		}
		if err := client.LoadAlipayCertPublicKey(normalizeKey(cfg.AlipayCertPEM)); err != nil {
			return nil, fmt.Errorf("ALIPAY_PUBLIC_CERT: %w", err)
		}
	}
	return &Provider{cfg: cfg, client: client, guard: payment.NewGuard("alipay")}, nil
}

// BreakerState is the breaker's state: closed, half-open or open.
func (p *Provider) BreakerState() string { return p.guard.State() }

// do runs one SDK call through the guard, each try with its own deadline. fn answers the SDK's error and
// the answer's code (sdk.Error, the common part of every answer); classify makes them the guard's error
// classes.
func (p *Provider) do(ctx context.Context, tries int, fn func(ctx context.Context) (sdk.Error, error), classify func(sdk.Error) error) error {
	return p.guard.Do(ctx, tries, func(ctx context.Context) error {
		tctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		code, err := fn(tctx)
		if err != nil {
			return p.sdkError(ctx, err)
		}
		return classify(code)
	})
}

// sdkError classes an error of the SDK itself: no answer (down, slow, not JSON, a signature that does
// not verify: retried, then ErrUnavailable), or Alipay's answer without a signature, which the SDK hands
// back as its *Error.
func (p *Provider) sdkError(ctx context.Context, err error) error {
	var ae *sdk.Error
	if errors.As(err, &ae) {
		// An unsigned answer is the gateway's (a request it could not authenticate: isv.invalid-signature,
		// isv.invalid-app-id ...): it is believed only as a refusal, never as news about a payment.
		if ae.Code == sdk.CodeUnknowError || ae.Code == sdk.CodeCallLimited {
			return fmt.Errorf("alipay: %s %s", ae.Code, ae.SubCode) // busy: tried again
		}
		return fmt.Errorf("%w: alipay answered %s %s %s (unsigned)", payment.ErrRefused, ae.Code, ae.SubCode, ae.SubMsg)
	}
	if ctx.Err() != nil {
		return ctx.Err() // the caller gave up
	}
	if errors.Is(err, rsa.ErrVerification) || errors.Is(err, sdk.ErrAliPublicKeyNotFound) {
		// Not Alipay's answer as far as the shop can tell: a wrong ALIPAY_PUBLIC_KEY (or certificate), or
		// someone else answering. Believed in nothing, and tried again like no answer.
		return fmt.Errorf("alipay: the answer's signature is not Alipay's (check ALIPAY_PUBLIC_KEY or ALIPAY_PUBLIC_CERT): %w", errBadSignature)
	}
	// A try's own deadline is the provider's slowness, not the caller's: counted by the breaker.
	return fmt.Errorf("alipay did not answer: %s", err.Error())
}

// common classes the codes every method shares (https://opendocs.alipay.com/common/02km9f); nil for
// the method's own sub-codes, which the caller looks at.
func common(e sdk.Error) (err error, done bool) {
	switch {
	case e.Code == sdk.CodeSuccess:
		return nil, true
	case e.Code == sdk.CodeUnknowError, e.Code == sdk.CodeCallLimited, e.SubCode == "ACQ.SYSTEM_ERROR":
		return fmt.Errorf("alipay busy: %s %s %s", e.Code, e.SubCode, e.SubMsg), true // tried again
	case e.SubCode == "ACQ.TRADE_NOT_EXIST":
		return fmt.Errorf("%w: alipay: %s", payment.ErrNotFound, e.SubCode), true
	case e.Code != sdk.CodeBusinessFailed:
		// 40001 missing, 40002 invalid, 40003, 40006 no permission (product not signed), 20001: the
		// shop's configuration or request.
		return refused(e), true
	}
	return nil, false
}

func refused(e sdk.Error) error {
	return fmt.Errorf("%w: alipay answered %s %s %s %s", payment.ErrRefused, e.Code, e.Msg, e.SubCode, e.SubMsg)
}

// Create precreates a trade (alipay.trade.precreate) of number r.PaymentNo, whose QR code's content is
// the payment's PayURL. Asked again with the same number, amount and subject, Alipay gives the same
// trade back (the trade is the number's); a number whose trade was paid or closed answers ErrPaidAlready
// or ErrClosedAlready, another amount or subject ACQ.CONTEXT_INCONSISTENT (payment.ErrRefused).
// r.NotifyURL is not used: Alipay notifies the operator's fixed Config.NotifyURL.
func (p *Provider) Create(ctx context.Context, r payment.Request) (payment.Created, error) {
	if !payment.ValidPaymentNo(r.PaymentNo) {
		return payment.Created{}, invalid("payment_no %q must be 6 to 32 letters, digits or _", r.PaymentNo)
	}
	if r.AmountCents <= 0 || r.AmountCents > payment.MaxCents {
		return payment.Created{}, invalid("amount_cents %d must be from 1 to %d", r.AmountCents, int64(payment.MaxCents))
	}
	subject := payment.TruncateUTF8(r.Subject, 256)
	if subject == "" {
		subject = r.PaymentNo // Alipay requires one
	}
	param := sdk.TradePreCreate{}
	param.NotifyURL = p.cfg.NotifyURL
	param.OutTradeNo = r.PaymentNo
	param.Subject = subject
	param.TotalAmount = payment.Yuan(r.AmountCents)
	param.ProductCode = productCode
	if !r.ExpiresAt.IsZero() {
		param.TimeExpire = BeijingTime(r.ExpiresAt)
	}
	var out *sdk.TradePreCreateRsp
	err := p.do(ctx, 2, func(ctx context.Context) (sdk.Error, error) {
		var err error
		out, err = p.client.TradePreCreate(ctx, param)
		if out == nil {
			return sdk.Error{}, err
		}
		return out.Error, err
	}, func(e sdk.Error) error {
		if err, done := common(e); done {
			if err == nil && (out.QRCode == "" || out.OutTradeNo != "" && out.OutTradeNo != r.PaymentNo) {
				return errors.New("alipay: precreate answered no qr_code for this trade")
			}
			return err
		}
		switch e.SubCode {
		case "ACQ.TRADE_HAS_SUCCESS":
			return ErrPaidAlready
		case "ACQ.TRADE_HAS_CLOSE":
			return ErrClosedAlready
		}
		return refused(e)
	})
	if err != nil {
		return payment.Created{}, err
	}
	return payment.Created{ID: r.PaymentNo, PayURL: out.QRCode}, nil
}

// invalid is a request the shop should not have made: refused before anything is sent.
func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: %w: alipay: "+format, append([]any{payment.ErrUnavailable, payment.ErrRefused}, a...)...)
}

// BeijingTime writes t as Alipay's "yyyy-MM-dd HH:mm:ss" in Beijing time.
func BeijingTime(t time.Time) string { return t.In(beijing).Format(timeLayout) }

// ParseBeijingTime reads Alipay's "yyyy-MM-dd HH:mm:ss", a Beijing time.
func ParseBeijingTime(s string) (time.Time, error) {
	return time.ParseInLocation(timeLayout, s, beijing)
}

// tradeStatus is the shop's word for Alipay's trade_status.
//
// TRADE_CLOSED is "closed" both for a trade closed unpaid (by the shop, or at time_expire) and for one
// fully refunded: Alipay's query gives the one status for both. The shop never learns of a refund from
// Query (Refund answers it, and the refund's notification), and for the payment poll both mean the same:
// this payment can no longer be paid, so the order stops waiting for it. Answering "refunded" for a
// trade the shop still thinks open would leave it polled for ever.
func tradeStatus(s sdk.TradeStatus) (string, error) {
	switch s {
	case sdk.TradeStatusWaitBuyerPay:
		return payment.StatusOpen, nil
	case sdk.TradeStatusSuccess, sdk.TradeStatusFinished:
		return payment.StatusPaid, nil
	case sdk.TradeStatusClosed:
		return payment.StatusClosed, nil
	}
	return "", fmt.Errorf("alipay: unknown trade_status %q", s)
}

// Query asks for a trade's status by its number (alipay.trade.query). A trade precreated but not scanned
// yet is not found (payment.ErrNotFound), though its QR code may still be paid until its time_expire.
func (p *Provider) Query(ctx context.Context, id string) (string, error) {
	if !payment.ValidPaymentNo(id) {
		return "", payment.ErrNotFound
	}
	var st string
	err := p.do(ctx, 3, func(ctx context.Context) (sdk.Error, error) {
		out, err := p.client.TradeQuery(ctx, sdk.TradeQuery{OutTradeNo: id})
		if out == nil {
			return sdk.Error{}, err
		}
		if err == nil && out.Code == sdk.CodeSuccess {
			if out.OutTradeNo != id {
				return sdk.Error{}, fmt.Errorf("alipay: query of %s answered trade %s", id, out.OutTradeNo)
			}
			st, err = tradeStatus(out.TradeStatus)
		}
		return out.Error, err
	}, func(e sdk.Error) error {
		if err, done := common(e); done {
			return err
		}
		return refused(e)
	})
	if err != nil {
		return "", err
	}
	return st, nil
}

// Close closes a trade (alipay.trade.close) and answers its final status: closed, or paid when the
// money came in first (Alipay refuses to close a paid trade: the status is then asked for). A trade
// not scanned yet does not exist at Alipay and answers payment.ErrNotFound: its QR code can still be
// paid until its time_expire, which closes it.
func (p *Provider) Close(ctx context.Context, id string) (string, error) {
	if !payment.ValidPaymentNo(id) {
		return "", payment.ErrNotFound
	}
	refusal := sdk.Error{}
	err := p.do(ctx, 3, func(ctx context.Context) (sdk.Error, error) {
		out, err := p.client.TradeClose(ctx, sdk.TradeClose{OutTradeNo: id})
		if out == nil {
			return sdk.Error{}, err
		}
		return out.Error, err
	}, func(e sdk.Error) error {
		if err, done := common(e); done {
			return err
		}
		refusal = e // ACQ.TRADE_STATUS_ERROR: paid, finished or closed already
		return nil
	})
	if err != nil {
		return "", err
	}
	if refusal.Code == "" {
		return payment.StatusClosed, nil
	}
	st, err := p.Query(ctx, id)
	if err != nil {
		return "", err
	}
	if st == payment.StatusOpen {
		return "", fmt.Errorf("%w: %w", payment.ErrUnavailable, refused(refusal))
	}
	return st, nil
}

// Refund refunds a paid trade (alipay.trade.refund) with out_request_no = r.RefundID: asked again with
// the same id, Alipay makes no second refund. Alipay's documentation says a refund is made when its
// answer says fund_change=Y; otherwise (a retry's answer, or a system error) the refund is asked for
// with alipay.trade.fastpay.refund.query: REFUND_SUCCESS is refunded, no status yet is refunding (asked
// again later with the same id). A trade not paid, or an amount it does not have, answers
// payment.ErrNotRefundable.
func (p *Provider) Refund(ctx context.Context, id string, r payment.RefundRequest) (string, error) {
	if !payment.ValidPaymentNo(id) {
		return "", payment.ErrNotFound
	}
	if !payment.ValidProviderID(r.RefundID) || r.AmountCents <= 0 || r.AmountCents > payment.MaxCents {
		return "", fmt.Errorf("%w: alipay: refund id %q or amount %d out of bounds", payment.ErrNotRefundable, r.RefundID, r.AmountCents)
	}
	param := sdk.TradeRefund{
		OutTradeNo:   id,
		RefundAmount: payment.Yuan(r.AmountCents),
		RefundReason: payment.TruncateUTF8(r.Reason, 256),
		OutRequestNo: r.RefundID,
	}
	var changed, uncertain bool
	err := p.do(ctx, 3, func(ctx context.Context) (sdk.Error, error) {
		out, err := p.client.TradeRefund(ctx, param)
		if out == nil {
			return sdk.Error{}, err
		}
		changed = out.FundChange == "Y"
		return out.Error, err
	}, func(e sdk.Error) error {
		if e.SubCode == "ACQ.SYSTEM_ERROR" {
			uncertain = true // made or not: the refund query says
			return nil
		}
		if err, done := common(e); done {
			return err
		}
		switch e.SubCode {
		case "ACQ.TRADE_STATUS_ERROR", "ACQ.TRADE_NOT_ALLOW_REFUND", "ACQ.TRADE_HAS_FINISHED",
			"ACQ.REFUND_AMT_NOT_EQUAL_TOTAL", "ACQ.REASON_TRADE_REFUND_FEE_ERR", "ACQ.DISCORDANT_REPEAT_REQUEST",
			"ACQ.REFUND_FEE_ERROR", "ACQ.TRADE_HAS_CLOSE":
			return fmt.Errorf("%w: alipay: %s %s", payment.ErrNotRefundable, e.SubCode, e.SubMsg)
		}
		// ACQ.SELLER_BALANCE_NOT_ENOUGH and the like: the shop's to fix, asked for again.
		return refused(e)
	})
	if err != nil {
		return "", err
	}
	if changed && !uncertain {
		return payment.StatusRefunded, nil
	}
	return p.refundStatus(ctx, id, r.RefundID, uncertain)
}

// refundStatus asks whether refund refundID of trade id was made (alipay.trade.fastpay.refund.query).
func (p *Provider) refundStatus(ctx context.Context, id, refundID string, uncertain bool) (string, error) {
	var status string
	err := p.do(ctx, 3, func(ctx context.Context) (sdk.Error, error) {
		out, err := p.client.TradeFastPayRefundQuery(ctx, sdk.TradeFastPayRefundQuery{OutTradeNo: id, OutRequestNo: refundID})
		if out == nil {
			return sdk.Error{}, err
		}
		if err == nil && out.Code == sdk.CodeSuccess && out.OutRequestNo != "" && out.OutRequestNo != refundID {
			return sdk.Error{}, fmt.Errorf("alipay: refund query of %s answered refund %s", refundID, out.OutRequestNo)
		}
		status = out.RefundStatus
		return out.Error, err
	}, func(e sdk.Error) error {
		if err, done := common(e); done {
			return err
		}
		return refused(e)
	})
	switch {
	case err != nil:
		return "", err
	case status == "REFUND_SUCCESS":
		return payment.StatusRefunded, nil
	case uncertain:
		// Alipay failed while refunding and has no refund of this id: it is asked for again later.
		return "", fmt.Errorf("%w: alipay: the refund failed (ACQ.SYSTEM_ERROR) and is not made", payment.ErrUnavailable)
	}
	return payment.StatusRefunding, nil
}
