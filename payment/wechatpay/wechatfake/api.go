package wechatfake

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// route answers the API, the signature already checked.
func (f *Fake) route(r *http.Request, body []byte) (int, []byte) {
	path := r.URL.Path
	const byNo = "/v3/pay/transactions/out-trade-no/"
	const refunds = "/v3/refund/domestic/refunds"
	switch {
	case r.Method == http.MethodGet && path == "/v3/certificates":
		return f.certificates()
	case r.Method == http.MethodPost && path == "/v3/pay/transactions/native":
		return f.prepay(body)
	case r.Method == http.MethodGet && strings.HasPrefix(path, byNo) && !strings.Contains(path[len(byNo):], "/"):
		if r.URL.Query().Get("mchid") != f.MchID {
			return http.StatusBadRequest, errBody("PARAM_ERROR", "mchid 与商户号不符")
		}
		return f.query(path[len(byNo):])
	case r.Method == http.MethodPost && strings.HasPrefix(path, byNo) && strings.HasSuffix(path, "/close"):
		return f.close(strings.TrimSuffix(path[len(byNo):], "/close"), body)
	case r.Method == http.MethodPost && path == refunds:
		return f.refund(body)
	case r.Method == http.MethodGet && strings.HasPrefix(path, refunds+"/"):
		return f.queryRefund(path[len(refunds)+1:])
	}
	return http.StatusNotFound, errBody("RESOURCE_NOT_EXISTS", "no such API in the fake: "+r.Method+" "+path)
}

// certificates is GET /v3/certificates: the platform certificate sealed with the API v3 key,
// associated_data "certificate". In PublicKeyMode there is none.
func (f *Fake) certificates() (int, []byte) {
	if f.opts.PublicKeyMode {
		return http.StatusNotFound, errBody("RESOURCE_NOT_EXISTS", "无可用的平台证书，请在商户平台-API安全申请使用微信支付公钥")
	}
	c := f.Keys.PlatformCert
	nonce, ct := seal(f.Keys.APIv3Key, "certificate", []byte(CertPEM(c)))
	return http.StatusOK, jsonBody(map[string]any{"data": []any{map[string]any{
		"serial_no": f.Keys.PlatformSerial, "effective_time": rfc3339(c.NotBefore), "expire_time": rfc3339(c.NotAfter),
		"encrypt_certificate": map[string]any{"algorithm": "AEAD_AES_256_GCM", "nonce": nonce,
			"associated_data": "certificate", "ciphertext": ct},
	}}})
}

type prepayRequest struct {
	AppID       string `json:"appid"`
	MchID       string `json:"mchid"`
	Description string `json:"description"`
	OutTradeNo  string `json:"out_trade_no"`
	TimeExpire  string `json:"time_expire"`
	NotifyURL   string `json:"notify_url"`
	Amount      *struct {
		Total    *int64 `json:"total"`
		Currency string `json:"currency"`
	} `json:"amount"`
}

// validOutTradeNo: 6 to 32 of digits, letters and _-|*.
func validOutTradeNo(s string) bool {
	if len(s) < 6 || len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !('0' <= b && b <= '9' || 'A' <= b && b <= 'Z' || 'a' <= b && b <= 'z' || strings.IndexByte("_-|*", b) >= 0) {
			return false
		}
	}
	return true
}

func validNotifyURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && len(s) <= 255 && u.Scheme == "https" && u.Host != "" && u.RawQuery == "" && !u.ForceQuery
}

// prepay is POST /v3/pay/transactions/native. The same out_trade_no with the same parameters answers the
// same code_url while the trade can be paid; other parameters answer 403 OUT_TRADE_NO_USED.
func (f *Fake) prepay(body []byte) (int, []byte) {
	var q prepayRequest
	if err := json.Unmarshal(body, &q); err != nil {
		return http.StatusBadRequest, errBody("PARAM_ERROR", "请求体不是合法的JSON: "+err.Error())
	}
	switch {
	case q.MchID != f.MchID:
		return http.StatusBadRequest, errBody("MCH_NOT_EXISTS", "商户号不存在")
	case q.AppID != f.AppID:
		return http.StatusBadRequest, errBody("APPID_MCHID_NOT_MATCH", "appid和mch_id不匹配")
	case q.Description == "" || len(q.Description) > 127 || !utf8.ValidString(q.Description):
		return http.StatusBadRequest, errBody("PARAM_ERROR", "description 长度须为1到127字节")
	case !validOutTradeNo(q.OutTradeNo):
		return http.StatusBadRequest, errBody("PARAM_ERROR", "out_trade_no 须为6到32位数字、大小写字母_-|*")
	case !validNotifyURL(q.NotifyURL):
		return http.StatusBadRequest, errBody("PARAM_ERROR", "notify_url 须为https且不能携带参数")
	case q.Amount == nil || q.Amount.Total == nil || *q.Amount.Total < 1 || *q.Amount.Total > 1<<31-1:
		return http.StatusBadRequest, errBody("PARAM_ERROR", "amount.total 须为1到2147483647的整数（分）")
	case q.Amount.Currency != "" && q.Amount.Currency != "CNY":
		return http.StatusBadRequest, errBody("PARAM_ERROR", "境内商户号仅支持人民币 CNY")
	}
	var expire time.Time
	if q.TimeExpire != "" {
		t, err := time.Parse(time.RFC3339, q.TimeExpire)
		if err != nil {
			return http.StatusBadRequest, errBody("PARAM_ERROR", "time_expire 须为rfc3339格式 yyyy-MM-DDTHH:mm:ss+TIMEZONE")
		}
		expire = t
	}
	now := f.now()
	f.mu.Lock()
	defer f.mu.Unlock()
	if t := f.trades[q.OutTradeNo]; t != nil {
		switch {
		case t.State == "SUCCESS" || t.State == "REFUND":
			return http.StatusForbidden, errBody("ORDERPAID", "该订单已支付")
		case t.State == "CLOSED":
			return http.StatusBadRequest, errBody("ORDER_CLOSED", "订单已关闭")
		case t.Total != *q.Amount.Total || t.Description != q.Description || !t.AskedExpire.Equal(expire) || t.NotifyURL != q.NotifyURL:
			return http.StatusForbidden, errBody("OUT_TRADE_NO_USED", "商户订单号重复")
		case !t.TimeExpire.IsZero() && now.After(t.TimeExpire):
			return http.StatusBadRequest, errBody("ORDER_CLOSED", "订单已过支付结束时间")
		}
		return http.StatusOK, jsonBody(map[string]string{"code_url": t.CodeURL})
	}
	t := &trade{OutTradeNo: q.OutTradeNo, Description: q.Description, Total: *q.Amount.Total, NotifyURL: q.NotifyURL,
		AskedExpire: expire, TimeExpire: expire, CodeURL: "weixin://wxpay/bizpayurl?pr=" + randomString(7), State: "NOTPAY", Created: now}
	if !expire.IsZero() && expire.Before(now.Add(time.Minute)) {
		// "支付结束时间不能早于下单时间后1分钟": WeChat Pay moves it to a minute after the order.
		t.TimeExpire = now.Add(time.Minute)
	}
	f.trades[q.OutTradeNo] = t
	return http.StatusOK, jsonBody(map[string]string{"code_url": t.CodeURL})
}

// transactionJSON is a trade as the query answers it (f.mu held).
func (f *Fake) transactionJSON(t *trade) map[string]any {
	desc := map[string]string{"NOTPAY": "订单未支付", "USERPAYING": "用户支付中", "SUCCESS": "支付成功",
		"REFUND": "转入退款", "CLOSED": "订单已关闭"}[t.State]
	m := map[string]any{
		"appid": f.AppID, "mchid": f.MchID, "out_trade_no": t.OutTradeNo, "trade_type": "NATIVE",
		"trade_state": t.State, "trade_state_desc": desc, "attach": "",
		"amount": map[string]any{"total": t.Total, "currency": "CNY"},
	}
	if t.TransactionID != "" {
		m["transaction_id"] = t.TransactionID
		m["bank_type"] = "OTHERS"
		m["success_time"] = rfc3339(t.SuccessTime)
		m["payer"] = map[string]string{"openid": "oUpF8uMuAJO_M2pxb1Q9zNjWeS6o"}
		amount := m["amount"].(map[string]any)
		amount["payer_total"], amount["payer_currency"] = t.Total, "CNY"
	}
	return m
}

// query is GET /v3/pay/transactions/out-trade-no/{out_trade_no}; an unknown trade is 404 ORDER_NOT_EXIST.
func (f *Fake) query(no string) (int, []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.trades[no]
	if t == nil {
		return http.StatusNotFound, errBody("ORDER_NOT_EXIST", "订单不存在")
	}
	return http.StatusOK, jsonBody(f.transactionJSON(t))
}

// close is POST .../out-trade-no/{no}/close: 204, a trade the payer is paying 202 USER_PAYING, a paid one
// 400 ORDERPAID, a closed one 400 ORDER_CLOSED (the close is done either way).
func (f *Fake) close(no string, body []byte) (int, []byte) {
	var q struct {
		MchID string `json:"mchid"`
	}
	if err := json.Unmarshal(body, &q); err != nil || q.MchID != f.MchID {
		return http.StatusBadRequest, errBody("PARAM_ERROR", "mchid 与商户号不符")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.trades[no]
	switch {
	case t == nil:
		return http.StatusNotFound, errBody("ORDER_NOT_EXIST", "订单不存在")
	case t.State == "USERPAYING":
		return http.StatusAccepted, errBody("USER_PAYING", "用户支付中，需要输入密码")
	case t.State == "SUCCESS" || t.State == "REFUND":
		return http.StatusBadRequest, errBody("ORDERPAID", "订单已支付")
	case t.State == "CLOSED":
		return http.StatusBadRequest, errBody("ORDER_CLOSED", "订单已关闭")
	}
	t.State = "CLOSED"
	return http.StatusNoContent, nil
}

type refundRequest struct {
	OutTradeNo  string `json:"out_trade_no"`
	OutRefundNo string `json:"out_refund_no"`
	Reason      string `json:"reason"`
	NotifyURL   string `json:"notify_url"`
	Amount      *struct {
		Refund   *int64 `json:"refund"`
		Total    *int64 `json:"total"`
		Currency string `json:"currency"`
	} `json:"amount"`
}

func validOutRefundNo(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !('0' <= b && b <= '9' || 'A' <= b && b <= 'Z' || 'a' <= b && b <= 'z' || strings.IndexByte("_-|*@", b) >= 0) {
			return false
		}
	}
	return true
}

// refund is POST /v3/refund/domestic/refunds: one refund per out_refund_no (asked again, the same refund
// is answered), of a paid trade, whose refunds together are at most its total.
func (f *Fake) refund(body []byte) (int, []byte) {
	var q refundRequest
	if err := json.Unmarshal(body, &q); err != nil {
		return http.StatusBadRequest, errBody("PARAM_ERROR", "请求体不是合法的JSON")
	}
	switch {
	case !validOutRefundNo(q.OutRefundNo):
		return http.StatusBadRequest, errBody("PARAM_ERROR", "out_refund_no 须为1到64位数字、大小写字母_-|*@")
	case q.Amount == nil || q.Amount.Refund == nil || q.Amount.Total == nil || *q.Amount.Refund < 1:
		return http.StatusBadRequest, errBody("PARAM_ERROR", "amount.refund 与 amount.total 必填")
	case q.Amount.Currency != "CNY":
		return http.StatusBadRequest, errBody("PARAM_ERROR", "amount.currency 须为 CNY")
	case len(q.Reason) > 80:
		return http.StatusBadRequest, errBody("PARAM_ERROR", "reason 最长80字节")
	case q.NotifyURL != "" && !validNotifyURL(q.NotifyURL):
		return http.StatusBadRequest, errBody("PARAM_ERROR", "notify_url 须为https且不能携带参数")
	}
	f.mu.Lock()
	t := f.trades[q.OutTradeNo]
	if r := f.refunds[q.OutRefundNo]; r != nil {
		defer f.mu.Unlock()
		if r.OutTradeNo != q.OutTradeNo || r.Amount != *q.Amount.Refund {
			return http.StatusBadRequest, errBody("INVALID_REQUEST", "同一退款单号的请求参数不一致")
		}
		return http.StatusOK, jsonBody(f.refundJSON(r))
	}
	var refunded int64
	for _, r := range f.refunds {
		if r.OutTradeNo == q.OutTradeNo {
			refunded += r.Amount
		}
	}
	switch {
	case t == nil:
		f.mu.Unlock()
		return http.StatusNotFound, errBody("RESOURCE_NOT_EXISTS", "订单不存在")
	case t.State != "SUCCESS" && t.State != "REFUND":
		f.mu.Unlock()
		return http.StatusBadRequest, errBody("INVALID_REQUEST", "订单未支付，不能退款")
	case *q.Amount.Total != t.Total:
		f.mu.Unlock()
		return http.StatusBadRequest, errBody("INVALID_REQUEST", "amount.total 与订单金额不一致")
	case refunded+*q.Amount.Refund > t.Total:
		f.mu.Unlock()
		return http.StatusBadRequest, errBody("INVALID_REQUEST", "退款金额超过订单可退金额")
	}
	r := &refund{OutRefundNo: q.OutRefundNo, RefundID: "5030" + digits(25), OutTradeNo: q.OutTradeNo,
		Amount: *q.Amount.Refund, Total: t.Total, Reason: q.Reason, NotifyURL: q.NotifyURL, Status: "PROCESSING", Created: time.Now()}
	if r.NotifyURL == "" {
		r.NotifyURL = t.NotifyURL
	}
	f.refunds[r.OutRefundNo] = r
	t.State = "REFUND"
	out := jsonBody(f.refundJSON(r))
	f.mu.Unlock()
	if f.opts.InstantRefunds {
		// Answered PROCESSING, then done, as WeChat Pay does a moment later.
		go f.CompleteRefund(context.Background(), r.OutRefundNo)
	}
	return http.StatusOK, out
}

// refundJSON is a refund as WeChat Pay answers it (f.mu held).
func (f *Fake) refundJSON(r *refund) map[string]any {
	m := map[string]any{
		"refund_id": r.RefundID, "out_refund_no": r.OutRefundNo, "transaction_id": f.trades[r.OutTradeNo].TransactionID,
		"out_trade_no": r.OutTradeNo, "channel": "ORIGINAL", "user_received_account": "支付用户零钱",
		"create_time": rfc3339(r.Created), "status": r.Status, "funds_account": "AVAILABLE",
		"amount": map[string]any{"total": r.Total, "refund": r.Amount, "payer_total": r.Total, "payer_refund": r.Amount,
			"settlement_total": r.Total, "settlement_refund": r.Amount, "discount_refund": 0, "currency": "CNY",
			"from": []any{}},
		"promotion_detail": []any{},
	}
	if !r.SuccessTime.IsZero() {
		m["success_time"] = rfc3339(r.SuccessTime)
	}
	return m
}

// queryRefund is GET /v3/refund/domestic/refunds/{out_refund_no}.
func (f *Fake) queryRefund(no string) (int, []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.refunds[no]
	if r == nil {
		return http.StatusNotFound, errBody("RESOURCE_NOT_EXISTS", "退款单不存在")
	}
	return http.StatusOK, jsonBody(f.refundJSON(r))
}
