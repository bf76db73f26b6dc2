package wechatpay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"seckill/payment"
)

// The callbacks: https://pay.weixin.qq.com/wiki/doc/apiv3/apis/chapter3_2_5.shtml (payment notify) and
// .../chapter3_3_5.shtml (its "通知应答"); decryption:
// https://wechatpay-api.gitbook.io/wechatpay-api-v3/qian-ming-zhi-nan-1/zheng-shu-he-hui-tiao-bao-wen-jie-mi.
// A POST whose headers Wechatpay-Serial/-Signature/-Timestamp/-Nonce sign "timestamp\nnonce\nbody\n"
// with the platform key, whose body's resource is sealed with AEAD_AES_256_GCM under the API v3 key.

// StatusOther is the status of a callback the shop has nothing to do with (a refund closed or abnormal,
// an event this package does not know): read, taken, ignored.
const StatusOther = "other"

// resource is the decrypted content of a payment's or a refund's callback.
type resource struct {
	MchID        string `json:"mchid"`
	AppID        string `json:"appid"`
	OutTradeNo   string `json:"out_trade_no"`
	TradeState   string `json:"trade_state"`
	OutRefundNo  string `json:"out_refund_no"`
	RefundStatus string `json:"refund_status"`
	Amount       struct {
		Total  *int64 `json:"total"`
		Refund *int64 `json:"refund"`
	} `json:"amount"`
}

// ReadNotify checks a callback with the SDK's notify handler (the signature with the platform
// certificate or the WeChat Pay public key, a timestamp within five minutes) and decrypts it.
// TRANSACTION.SUCCESS answers paid with the payment's total; REFUND.SUCCESS answers refunded with the
// refund's out_refund_no and the payment's total. Other events answer StatusOther. A callback for another
// merchant is an error. The amount is read, not judged: the shop compares it with the payment's.
func (p *Provider) ReadNotify(ctx context.Context, header http.Header, body []byte) (n payment.Notification, err error) {
	if err := p.guardCerts(ctx); err != nil {
		return n, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "/", bytes.NewReader(body))
	if err != nil {
		return n, err
	}
	req.Header = header.Clone()
	var res resource
	defer func() {
		// The SDK reads a body without a resource as a nil pointer (after the signature is checked).
		if r := recover(); r != nil {
			err = fmt.Errorf("wechatpay: a callback the SDK could not read: %v", r)
		}
	}()
	got, err := p.notify.ParseNotifyRequest(ctx, req, &res)
	if err != nil {
		return n, fmt.Errorf("wechatpay: callback refused: %w", err)
	}
	if res.MchID != p.cfg.MchID {
		return n, fmt.Errorf("wechatpay: a callback for merchant %q", res.MchID)
	}
	at, err := strconv.ParseInt(header.Get("Wechatpay-Timestamp"), 10, 64)
	if err != nil {
		return n, errors.New("wechatpay: callback without a timestamp")
	}
	n = payment.Notification{PaymentID: res.OutTradeNo, At: at, Status: StatusOther}
	if res.Amount.Total != nil {
		n.AmountCents = *res.Amount.Total
	}
	switch {
	case got.EventType == "TRANSACTION.SUCCESS" && res.TradeState == "SUCCESS":
		if res.AppID != "" && res.AppID != p.cfg.AppID {
			return payment.Notification{}, fmt.Errorf("wechatpay: a callback for app %q", res.AppID)
		}
		n.Status = payment.StatusPaid
	case got.EventType == "REFUND.SUCCESS" && res.RefundStatus == "SUCCESS":
		n.Status = payment.StatusRefunded
		n.RefundID = res.OutRefundNo
	case got.EventType == "REFUND.ABNORMAL" || got.EventType == "REFUND.CLOSED":
		n.RefundID = res.OutRefundNo
	}
	if n.Status != StatusOther && (!payment.ValidPaymentNo(n.PaymentID) || n.AmountCents <= 0) {
		return payment.Notification{}, errors.New("wechatpay: a callback without its payment or amount")
	}
	return n, nil
}

// guardCerts makes sure the platform certificates are there to check a callback with.
func (p *Provider) guardCerts(ctx context.Context) error {
	if p.mgr == nil {
		return nil
	}
	return p.guard.Do(ctx, 1, func(ctx context.Context) error { return p.ensureCerts(ctx) })
}

// Ack answers WeChat Pay's callback: 204 without a body when taken; otherwise 500 with
// {"code":"FAIL","message":...}, and WeChat Pay sends it again later.
func (p *Provider) Ack(ok bool) (int, string, []byte) {
	if ok {
		return http.StatusNoContent, "", nil
	}
	return http.StatusInternalServerError, "application/json", []byte(`{"code":"FAIL","message":"not taken; send it again"}`)
}
