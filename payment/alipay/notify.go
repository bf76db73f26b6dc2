package alipay

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"

	sdk "github.com/smartwalle/alipay/v3"

	"seckill/payment"
)

// maxNotifyBytes bounds a notification's form (Alipay's are a few kilobytes).
const maxNotifyBytes = 64 << 10

// ReadNotify reads Alipay's asynchronous notification (https://opendocs.alipay.com/open/194/103296): a
// form POST (application/x-www-form-urlencoded) signed RSA2 with Alipay's key over its sorted fields
// but sign and sign_type (https://opendocs.alipay.com/common/02mse7), which the SDK checks
// (DecodeNotification). It must be for this app (app_id).
//
//   - trade_status TRADE_SUCCESS or TRADE_FINISHED, no refund: paid, for total_amount.
//   - a refund's news (refund_fee, gmt_refund or out_biz_no; trade_status TRADE_SUCCESS after a partial
//     refund, TRADE_CLOSED after a full one): refunded, with RefundID = out_biz_no (the refund's
//     out_request_no) when Alipay says it.
//   - anything else (WAIT_BUYER_PAY, TRADE_CLOSED unpaid): its status (open, closed), which the shop takes
//     and changes nothing for.
//
// AmountCents is the trade's whole amount (total_amount): the shop compares it with its payment's. At is
// notify_time, when Alipay sent this notification (each retry is sent, and signed, anew).
func (p *Provider) ReadNotify(ctx context.Context, header http.Header, body []byte) (payment.Notification, error) {
	if ct := header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/x-www-form-urlencoded" {
			return payment.Notification{}, fmt.Errorf("alipay notify: content type %q is not a form", ct)
		}
	}
	if len(body) > maxNotifyBytes {
		return payment.Notification{}, errors.New("alipay notify: too long")
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return payment.Notification{}, fmt.Errorf("alipay notify: not a form: %w", err)
	}
	if form.Get("sign") == "" {
		return payment.Notification{}, errors.New("alipay notify: not signed")
	}
	// The signature is checked with the configured key only: given a certificate serial it does not
	// know, the SDK would fetch that certificate from Alipay (outside any guard, for anyone who posts a
	// form). Alipay's rotated certificate needs ALIPAY_PUBLIC_CERT updated; meanwhile the poll settles.
	form.Del("alipay_cert_sn")
	n, err := p.client.DecodeNotification(form)
	if err != nil {
		return payment.Notification{}, fmt.Errorf("alipay notify: the signature is not Alipay's: %w", err)
	}
	if n.AppId != p.cfg.AppID {
		return payment.Notification{}, fmt.Errorf("alipay notify: for app %q, not ours", n.AppId)
	}
	if !payment.ValidPaymentNo(n.OutTradeNo) {
		return payment.Notification{}, fmt.Errorf("alipay notify: out_trade_no %q is not one of the shop's numbers", n.OutTradeNo)
	}
	amount, err := payment.ParseYuan(n.TotalAmount)
	if err != nil {
		return payment.Notification{}, fmt.Errorf("alipay notify: total_amount %q: %w", n.TotalAmount, err)
	}
	at, err := ParseBeijingTime(n.NotifyTime)
	if err != nil {
		return payment.Notification{}, fmt.Errorf("alipay notify: notify_time %q: %w", n.NotifyTime, err)
	}
	out := payment.Notification{PaymentID: n.OutTradeNo, AmountCents: amount, At: at.Unix()}
	refund := n.OutBizNo != "" || n.GmtRefund != "" || n.RefundFee != "" && n.RefundFee != "0" && n.RefundFee != "0.00"
	switch {
	case refund && (n.TradeStatus == sdk.TradeStatusSuccess || n.TradeStatus == sdk.TradeStatusClosed || n.TradeStatus == sdk.TradeStatusFinished):
		out.Status = payment.StatusRefunded
		out.RefundID = n.OutBizNo
	case n.TradeStatus == sdk.TradeStatusSuccess, n.TradeStatus == sdk.TradeStatusFinished:
		out.Status = payment.StatusPaid
	default:
		st, err := tradeStatus(n.TradeStatus)
		if err != nil {
			return payment.Notification{}, fmt.Errorf("alipay notify: %w", err)
		}
		out.Status = st
	}
	return out, nil
}

// Ack answers a notification: "success" when it was taken; anything else ("fail") makes Alipay send it
// again later (https://opendocs.alipay.com/open/194/103296: it retries for about a day).
func (p *Provider) Ack(ok bool) (status int, contentType string, body []byte) {
	if ok {
		return http.StatusOK, "text/plain; charset=utf-8", []byte("success")
	}
	return http.StatusOK, "text/plain; charset=utf-8", []byte("fail")
}
