// Package wechatpay is WeChat Pay (微信支付) API v3, Native payment (the payer scans a QR code), as a
// payment.Provider and payment.Notifier, through the official SDK github.com/wechatpay-apiv3/wechatpay-go:
// every request is signed, and every answer and callback verified, by the SDK.
//
// The protocol is WeChat Pay's (https://pay.weixin.qq.com/doc/v3/merchant/4012525095 Native prepay,
// .../4012556352 query by out_trade_no, .../4012556398 close, https://pay.weixin.qq.com/doc/v3/partner/4012709253
// refunds, https://wechatpay-api.gitbook.io/wechatpay-api-v3/jie-kou-wen-dang/ping-tai-zheng-shu platform
// certificates).
package wechatpay

import (
	"context"
	"crypto/rsa"
	"errors"
	"fmt"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wechatpay-apiv3/wechatpay-go/core"
	"github.com/wechatpay-apiv3/wechatpay-go/core/auth"
	"github.com/wechatpay-apiv3/wechatpay-go/core/auth/verifiers"
	"github.com/wechatpay-apiv3/wechatpay-go/core/downloader"
	"github.com/wechatpay-apiv3/wechatpay-go/core/notify"
	"github.com/wechatpay-apiv3/wechatpay-go/core/option"
	"github.com/wechatpay-apiv3/wechatpay-go/services/payments"
	"github.com/wechatpay-apiv3/wechatpay-go/services/payments/native"
	"github.com/wechatpay-apiv3/wechatpay-go/services/refunddomestic"
	"github.com/wechatpay-apiv3/wechatpay-go/utils"

	"seckill/payment"
)

// MaxFen is the largest amount WeChat Pay takes: amount.total is an int32 of fen (¥21,474,836.47), less
// than payment.MaxCents.
const MaxFen = math.MaxInt32

// ErrUserPaying is a close that met the payer paying (WeChat Pay's USERPAYING / 202 USER_PAYING): the
// payment is neither closed nor paid yet. It is an ErrUnavailable, so the shop asks again later (the
// order stays pending until then); it is not retried within the call.
var ErrUserPaying = fmt.Errorf("%w (USERPAYING): close again later", payment.ErrPaying)

// errCertsNotReady is an answer or callback arriving before the platform certificates could be
// downloaded.
var errCertsNotReady = errors.New("wechatpay: the platform certificates are not downloaded yet")

// certRefresh is how often the platform certificates are downloaded again.
const certRefresh = 6 * time.Hour

// Provider is WeChat Pay for the shop.
type Provider struct {
	cfg      Config
	key      *rsa.PrivateKey
	client   *core.Client
	native   native.NativeApiService
	refunds  refunddomestic.RefundsApiService
	notify   *notify.Handler
	guard    *payment.Guard
	hc       *http.Client
	mgr      *downloader.CertificateDownloaderMgr // nil with the WeChat Pay public key
	certMu   sync.Mutex
	certsOK  atomic.Bool
	stopOnce sync.Once
}

// New makes the provider. hc is the HTTP client the SDK sends with (nil for one with a 5 s timeout).
//
// Starting needs nothing from WeChat Pay: with the WeChat Pay public key nothing is to be fetched; with
// platform certificates they are downloaded (/v3/certificates) at the first call that needs them, and
// until that succeeds every call answers ErrUnavailable and every callback an error (WeChat Pay sends it
// again). Once downloaded they are refreshed every 6 hours by the SDK's downloader manager, one per
// Provider (not the SDK's process-wide singleton, which would ignore hc); Stop ends it.
func New(cfg Config, hc *http.Client) (*Provider, error) {
	if errs := cfg.Check(); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if hc == nil {
		hc = &http.Client{Timeout: 5 * time.Second}
	}
	key, err := utils.LoadPrivateKey(cfg.MchKeyPEM)
	if err != nil {
		return nil, fmt.Errorf("WECHAT_PAY_MCH_KEY: %w", err)
	}
	p := &Provider{cfg: cfg, key: key, hc: hc, guard: payment.NewGuard("wechatpay")}
	ctx := context.Background()
	var verifier auth.Verifier
	var authOpt core.ClientOption
	if cfg.PublicKeyPEM != "" {
		pub, err := utils.LoadPublicKey(cfg.PublicKeyPEM)
		if err != nil {
			return nil, fmt.Errorf("WECHAT_PAY_PUBLIC_KEY: %w", err)
		}
		authOpt = option.WithWechatPayPublicKeyAuthCipher(cfg.MchID, cfg.MchSerial, key, cfg.PublicKeyID, pub)
		verifier = verifiers.NewSHA256WithRSAPubkeyVerifier(cfg.PublicKeyID, *pub)
		p.certsOK.Store(true)
	} else {
		// WeChat Pay publishes a new platform certificate 24 hours before using it and asks merchants to
		// look more often than every 12 hours (the certificates' documentation above).
		p.mgr = downloader.NewCertificateDownloaderMgrWithInterval(ctx, certRefresh)
		authOpt = option.WithWechatPayAutoAuthCipherUsingDownloaderMgr(cfg.MchID, cfg.MchSerial, key, p.mgr)
		verifier = verifiers.NewSHA256WithRSAVerifier(p.mgr.GetCertificateVisitor(cfg.MchID))
	}
	p.client, err = core.NewClient(ctx, authOpt, option.WithHTTPClient(hc))
	if err != nil {
		p.Stop()
		return nil, err
	}
	p.native = native.NativeApiService{Client: p.client}
	p.refunds = refunddomestic.RefundsApiService{Client: p.client}
	p.notify, err = notify.NewRSANotifyHandler(cfg.APIv3Key, verifier)
	if err != nil {
		p.Stop()
		return nil, fmt.Errorf("WECHAT_PAY_API_V3_KEY: %w", err)
	}
	return p, nil
}

// Stop ends the platform certificates' refresh (nothing with the WeChat Pay public key).
func (p *Provider) Stop() {
	p.stopOnce.Do(func() {
		if p.mgr != nil {
			p.mgr.Stop()
		}
	})
}

// BreakerState is the circuit breaker's state: closed, half-open or open.
func (p *Provider) BreakerState() string { return p.guard.State() }

// ensureCerts downloads the platform certificates the first time they are needed (through the guard's
// fn, so a failure is an ErrUnavailable like any other).
func (p *Provider) ensureCerts(ctx context.Context) error {
	if p.certsOK.Load() {
		return nil
	}
	p.certMu.Lock()
	defer p.certMu.Unlock()
	if p.certsOK.Load() {
		return nil
	}
	// The downloader's own client: signed like any request; its first answer is not verified (there is no
	// certificate yet) but its content is sealed with the API v3 key, and later downloads are verified.
	dc, err := core.NewClient(ctx, option.WithMerchantCredential(p.cfg.MchID, p.cfg.MchSerial, p.key),
		option.WithoutValidator(), option.WithHTTPClient(p.hc))
	if err != nil {
		return err
	}
	if err := p.mgr.RegisterDownloaderWithClient(ctx, dc, p.cfg.MchID, p.cfg.APIv3Key); err != nil {
		return fmt.Errorf("wechatpay: downloading the platform certificates: %w", classify(err))
	}
	p.certsOK.Store(true)
	return nil
}

// do runs one SDK call through the guard, the platform certificates first.
func (p *Provider) do(ctx context.Context, tries int, fn func(ctx context.Context) error) error {
	return p.guard.Do(ctx, tries, func(ctx context.Context) error {
		if err := p.ensureCerts(ctx); err != nil {
			return err
		}
		return classify(fn(ctx))
	})
}

// classify sorts an SDK error into the guard's classes: a 4xx answer (other than 408 and 429) is a refusal
// (payment.ErrRefused: no retry); 5xx, 408, 429, no answer, or an answer whose signature does not verify
// is the provider not answering (retried, then ErrUnavailable). ErrNotFound and ErrNotRefundable pass.
func classify(err error) error {
	var ae *core.APIError
	switch {
	case err == nil, errors.Is(err, payment.ErrNotFound), errors.Is(err, payment.ErrNotRefundable), errors.Is(err, payment.ErrRefused):
		return err
	case errors.As(err, &ae) && ae.StatusCode >= 400 && ae.StatusCode < 500 &&
		ae.StatusCode != http.StatusRequestTimeout && ae.StatusCode != http.StatusTooManyRequests:
		return fmt.Errorf("%w: %d %s: %s", payment.ErrRefused, ae.StatusCode, ae.Code, ae.Message)
	case errors.As(err, &ae):
		return fmt.Errorf("wechatpay answered %d %s: %s", ae.StatusCode, ae.Code, ae.Message)
	}
	return err
}

func apiCode(err error) (int, string) {
	var ae *core.APIError
	if errors.As(err, &ae) {
		return ae.StatusCode, ae.Code
	}
	return 0, ""
}

// cst is China Standard Time, the zone WeChat Pay's documentation writes its times in.
var cst = time.FixedZone("CST", 8*3600)

// Create makes a Native payment (POST /v3/pay/transactions/native) whose out_trade_no is r.PaymentNo and
// answers its code_url. Asked again with the same number and the same request, WeChat Pay answers the
// same payment, so the call is retried once.
func (p *Provider) Create(ctx context.Context, r payment.Request) (payment.Created, error) {
	if !payment.ValidPaymentNo(r.PaymentNo) {
		return payment.Created{}, fmt.Errorf("%w: %w: payment number %q: must be 6 to 32 letters, digits or _", payment.ErrUnavailable, payment.ErrRefused, r.PaymentNo)
	}
	if err := checkFen(r.AmountCents); err != nil {
		return payment.Created{}, fmt.Errorf("%w: %w: %w", payment.ErrUnavailable, payment.ErrRefused, err)
	}
	desc := payment.TruncateUTF8(r.Subject, 127)
	if desc == "" {
		desc = payment.TruncateUTF8("Order "+r.OrderNo, 127)
	}
	req := native.PrepayRequest{
		Appid:       core.String(p.cfg.AppID),
		Mchid:       core.String(p.cfg.MchID),
		Description: core.String(desc),
		OutTradeNo:  core.String(r.PaymentNo),
		NotifyUrl:   core.String(p.cfg.NotifyURL),
		Amount:      &native.Amount{Total: core.Int64(r.AmountCents), Currency: core.String("CNY")},
	}
	if !r.ExpiresAt.IsZero() {
		// rfc3339 to the second, in Beijing time as the documentation's examples are.
		t := r.ExpiresAt.Truncate(time.Second).In(cst)
		req.TimeExpire = &t
	}
	var out payment.Created
	err := p.do(ctx, 2, func(ctx context.Context) error {
		resp, _, err := p.native.Prepay(ctx, req)
		if err != nil {
			return err
		}
		if resp.CodeUrl == nil || *resp.CodeUrl == "" {
			return errors.New("wechatpay: prepay answered no code_url")
		}
		out = payment.Created{ID: r.PaymentNo, PayURL: *resp.CodeUrl}
		return nil
	})
	return out, err
}

// transaction reads a payment by out_trade_no (GET /v3/pay/transactions/out-trade-no/{no}); an unknown
// one (404 ORDER_NOT_EXIST) answers ErrNotFound.
func (p *Provider) transaction(ctx context.Context, id string) (*payments.Transaction, error) {
	if !payment.ValidPaymentNo(id) {
		return nil, payment.ErrNotFound
	}
	var tx *payments.Transaction
	err := p.do(ctx, 3, func(ctx context.Context) error {
		t, _, err := p.native.QueryOrderByOutTradeNo(ctx, native.QueryOrderByOutTradeNoRequest{
			OutTradeNo: core.String(id), Mchid: core.String(p.cfg.MchID)})
		if status, code := apiCode(err); status == http.StatusNotFound || code == "ORDER_NOT_EXIST" {
			return fmt.Errorf("%w: %s", payment.ErrNotFound, id)
		}
		if err != nil {
			return err
		}
		if t.TradeState == nil {
			return errors.New("wechatpay: query answered no trade_state")
		}
		tx = t
		return nil
	})
	return tx, err
}

// Query answers a payment's status. trade_state REFUND (转入退款: paid, then a refund was asked for,
// of part or all of it) answers paid: the money came in, which is what the shop asks a payment; what
// became of a refund is the refund's own answer (Refund with its RefundID).
func (p *Provider) Query(ctx context.Context, id string) (string, error) {
	tx, err := p.transaction(ctx, id)
	if err != nil {
		return "", err
	}
	return status(*tx.TradeState)
}

// status maps WeChat Pay's trade_state (the query's documentation) to the shop's.
func status(state string) (string, error) {
	switch state {
	case "SUCCESS", "REFUND":
		return payment.StatusPaid, nil
	case "NOTPAY", "USERPAYING":
		return payment.StatusOpen, nil
	case "CLOSED", "REVOKED", "PAYERROR":
		return payment.StatusClosed, nil
	}
	return "", fmt.Errorf("%w: unknown trade_state %q", payment.ErrUnavailable, state)
}

// Close closes a payment (POST .../out-trade-no/{no}/close) and answers its final status, read back by a
// query: closed, or paid if the money came in first. A payment the payer is paying (202 USER_PAYING, or
// trade_state USERPAYING after the close) answers ErrUserPaying, an ErrUnavailable: the shop closes it
// again later, and the payment is never taken for closed while it may still be paid.
func (p *Provider) Close(ctx context.Context, id string) (string, error) {
	if !payment.ValidPaymentNo(id) {
		return "", payment.ErrNotFound
	}
	paying := false
	err := p.do(ctx, 3, func(ctx context.Context) error {
		res, err := p.native.CloseOrder(ctx, native.CloseOrderRequest{OutTradeNo: core.String(id), Mchid: core.String(p.cfg.MchID)})
		if status, code := apiCode(err); status == http.StatusNotFound || code == "ORDER_NOT_EXIST" {
			return fmt.Errorf("%w: %s", payment.ErrNotFound, id)
		}
		if status, _ := apiCode(err); status >= 400 && status < 500 && status != http.StatusTooManyRequests && status != http.StatusRequestTimeout {
			// ORDER_CLOSED, ORDERPAID and the like: the query below says what the payment is.
			return nil
		}
		if err != nil {
			return err
		}
		paying = res.Response.StatusCode == http.StatusAccepted
		return nil
	})
	if err != nil {
		return "", err
	}
	if paying {
		return "", ErrUserPaying
	}
	tx, err := p.transaction(ctx, id)
	if err != nil {
		return "", err
	}
	switch *tx.TradeState {
	case "USERPAYING":
		return "", ErrUserPaying
	case "NOTPAY":
		// The close was refused (or is not seen yet): the payment can still be paid.
		return "", fmt.Errorf("%w: the payment is still open after the close", payment.ErrUnavailable)
	}
	return status(*tx.TradeState)
}

// Refund gives a paid payment's money back (POST /v3/refund/domestic/refunds) with out_refund_no =
// r.RefundID: WeChat Pay refunds once per out_refund_no, so a retry answers the same refund. Its status
// SUCCESS answers refunded, PROCESSING refunding; CLOSED and ABNORMAL (a person must act in the merchant
// console) answer ErrNotRefundable, as does a payment that was not paid. Without r.TotalCents the
// payment's total is read from WeChat Pay first.
func (p *Provider) Refund(ctx context.Context, id string, r payment.RefundRequest) (string, error) {
	if !payment.ValidPaymentNo(id) {
		return "", payment.ErrNotFound
	}
	if !validRefundNo(r.RefundID) {
		return "", fmt.Errorf("%w: refund id %q: must be 1 to 64 letters, digits or _-|*@", payment.ErrNotRefundable, r.RefundID)
	}
	if err := checkFen(r.AmountCents); err != nil {
		return "", fmt.Errorf("%w: %w", payment.ErrNotRefundable, err)
	}
	total := r.TotalCents
	tx, err := p.transaction(ctx, id)
	if err != nil {
		return "", err
	}
	if st := *tx.TradeState; st != "SUCCESS" && st != "REFUND" {
		return "", fmt.Errorf("%w: trade_state %s", payment.ErrNotRefundable, st)
	}
	if tx.Amount != nil && tx.Amount.Total != nil {
		if total != 0 && total != *tx.Amount.Total {
			return "", fmt.Errorf("%w: the payment's total is %d fen, not %d", payment.ErrNotRefundable, *tx.Amount.Total, total)
		}
		total = *tx.Amount.Total
	}
	if total <= 0 || r.AmountCents > total {
		return "", fmt.Errorf("%w: refund of %d fen of a payment of %d", payment.ErrNotRefundable, r.AmountCents, total)
	}
	req := refunddomestic.CreateRequest{
		OutTradeNo:  core.String(id),
		OutRefundNo: core.String(r.RefundID),
		NotifyUrl:   core.String(p.cfg.NotifyURL),
		Amount:      &refunddomestic.AmountReq{Refund: core.Int64(r.AmountCents), Total: core.Int64(total), Currency: core.String("CNY")},
	}
	if reason := payment.TruncateUTF8(r.Reason, 80); reason != "" {
		req.Reason = core.String(reason)
	}
	var st refunddomestic.Status
	err = p.do(ctx, 3, func(ctx context.Context) error {
		res, _, err := p.refunds.Create(ctx, req)
		if err != nil {
			return err
		}
		if res.Status == nil {
			return errors.New("wechatpay: refund answered no status")
		}
		st = *res.Status
		return nil
	})
	if err != nil {
		return "", err
	}
	return refundStatus(st)
}

// RefundStatus asks how far a refund got (GET /v3/refund/domestic/refunds/{out_refund_no}): refunded,
// refunding, ErrNotRefundable for a closed or abnormal one, ErrNotFound for one WeChat Pay does not know.
func (p *Provider) RefundStatus(ctx context.Context, refundID string) (string, error) {
	if !validRefundNo(refundID) {
		return "", payment.ErrNotFound
	}
	var st refunddomestic.Status
	err := p.do(ctx, 3, func(ctx context.Context) error {
		res, _, err := p.refunds.QueryByOutRefundNo(ctx, refunddomestic.QueryByOutRefundNoRequest{OutRefundNo: core.String(refundID)})
		if status, code := apiCode(err); status == http.StatusNotFound || code == "RESOURCE_NOT_EXISTS" {
			return fmt.Errorf("%w: refund %s", payment.ErrNotFound, refundID)
		}
		if err != nil {
			return err
		}
		if res.Status == nil {
			return errors.New("wechatpay: refund query answered no status")
		}
		st = *res.Status
		return nil
	})
	if err != nil {
		return "", err
	}
	return refundStatus(st)
}

func refundStatus(st refunddomestic.Status) (string, error) {
	switch st {
	case refunddomestic.STATUS_SUCCESS:
		return payment.StatusRefunded, nil
	case refunddomestic.STATUS_PROCESSING:
		return payment.StatusRefunding, nil
	case refunddomestic.STATUS_CLOSED, refunddomestic.STATUS_ABNORMAL:
		return "", fmt.Errorf("%w: the refund is %s at WeChat Pay", payment.ErrNotRefundable, st)
	}
	return "", fmt.Errorf("%w: unknown refund status %q", payment.ErrUnavailable, st)
}

// checkFen refuses, before any request, an amount WeChat Pay cannot take: 1 fen to MaxFen.
func checkFen(fen int64) error {
	if fen < 1 || fen > MaxFen {
		return fmt.Errorf("amount %d fen: must be 1 to %d", fen, MaxFen)
	}
	return nil
}

// validRefundNo: out_refund_no is 1 to 64 of digits, letters and _-|*@.
func validRefundNo(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !('0' <= b && b <= '9' || 'A' <= b && b <= 'Z' || 'a' <= b && b <= 'z' || b == '_' || b == '-' || b == '|' || b == '*' || b == '@') {
			return false
		}
	}
	return true
}

var (
	_ payment.Provider = (*Provider)(nil)
	_ payment.Notifier = (*Provider)(nil)
)
