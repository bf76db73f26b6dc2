// Package wechatfake is a local WeChat Pay API v3 server for tests: it speaks the documented protocol
// (the merchant's requests signed WECHATPAY2-SHA256-RSA2048 and checked, answers and callbacks signed
// with the platform key, certificates and callbacks sealed with the API v3 key), keeps its trades in
// memory, and lets a test play the payer (pay, be paying), expire payments, finish refunds, and take
// WeChat Pay down or make it slow.
//
// Built from WeChat Pay's documentation:
//   - signatures: https://wechatpay-api.gitbook.io/wechatpay-api-v3/qian-ming-zhi-nan-1/qian-ming-sheng-cheng
//     and .../qian-ming-yan-zheng (request "METHOD\nURI\ntimestamp\nnonce\nbody\n"; answer
//     "timestamp\nnonce\nbody\n"; Wechatpay-Serial/-Signature/-Timestamp/-Nonce headers)
//   - platform certificates: https://wechatpay-api.gitbook.io/wechatpay-api-v3/jie-kou-wen-dang/ping-tai-zheng-shu
//   - Native prepay: https://pay.weixin.qq.com/doc/v3/merchant/4012525095
//   - query by out_trade_no: https://pay.weixin.qq.com/doc/v3/merchant/4012556352
//   - close: https://pay.weixin.qq.com/doc/v3/merchant/4012556398 (204; 202 USER_PAYING)
//   - refunds: https://pay.weixin.qq.com/doc/v3/partner/4012709253 (one refund per out_refund_no)
//   - callbacks and their answer: https://pay.weixin.qq.com/wiki/doc/apiv3/apis/chapter3_3_5.shtml
//
// What it does not do: WeChat Pay's own resending of callbacks (a test resends with Resend), partner
// (服务商) APIs, bills, other payment kinds.
package wechatfake

import (
	"bytes"
	"context"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"seckill/payment/wechatpay"
)

// Options change how the fake behaves.
type Options struct {
	// PublicKeyMode signs with the WeChat Pay public key's id as Wechatpay-Serial (微信支付公钥 mode)
	// and serves no platform certificates (/v3/certificates answers 404), as for merchants made since
	// WeChat Pay introduced the public key.
	PublicKeyMode bool
	// NotifyClient posts the callbacks (nil: a client with a 5 s timeout). A test points it at the shop.
	NotifyClient *http.Client
	// InstantRefunds makes refunds SUCCESS at once (with their callback) instead of PROCESSING until
	// CompleteRefund.
	InstantRefunds bool
}

// Mode is how the fake answers.
type Mode int

const (
	Up          Mode = iota // answers
	Unavailable             // 503 SYSTEM_ERROR to everything
	NoAnswer                // closes every connection without answering
)

// Notification is a callback the fake sent (or built).
type Notification struct {
	URL    string
	Header http.Header
	Body   []byte
	Status int // the shop's HTTP answer (0: not delivered)
}

// Fake is a running fake WeChat Pay.
type Fake struct {
	URL   string // where it listens (http://127.0.0.1:port)
	MchID string
	AppID string
	Keys  *Keys

	opts   Options
	srv    *httptest.Server
	notify *http.Client

	mu          sync.Mutex
	trades      map[string]*trade
	refunds     map[string]*refund
	sent        []Notification
	mode        Mode
	delay       time.Duration
	offset      time.Duration
	responseKey *rsa.PrivateKey
	calls       map[string]int
}

type trade struct {
	OutTradeNo    string
	Description   string
	Total         int64
	NotifyURL     string
	TimeExpire    time.Time // when it stops being payable
	AskedExpire   time.Time // the time_expire asked for
	CodeURL       string
	State         string // NOTPAY, USERPAYING, SUCCESS, REFUND, CLOSED
	TransactionID string
	SuccessTime   time.Time
	Created       time.Time
}

type refund struct {
	OutRefundNo string
	RefundID    string
	OutTradeNo  string
	Amount      int64
	Total       int64
	Reason      string
	NotifyURL   string
	Status      string // PROCESSING, SUCCESS
	Created     time.Time
	SuccessTime time.Time
}

// New starts a fake with fresh keys, merchant 1900000109 and app wx8888888888888888.
func New(opts Options) (*Fake, error) {
	keys, err := NewKeys()
	if err != nil {
		return nil, err
	}
	f := &Fake{MchID: "1900000109", AppID: "wx8888888888888888", Keys: keys, opts: opts,
		trades: map[string]*trade{}, refunds: map[string]*refund{}, calls: map[string]int{}}
	f.notify = opts.NotifyClient
	if f.notify == nil {
		f.notify = &http.Client{Timeout: 5 * time.Second}
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	f.URL = f.srv.URL
	return f, nil
}

// Start starts a fake for a test and closes it when the test ends.
func Start(t testing.TB, opts Options) *Fake {
	t.Helper()
	f, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

// Close stops the fake.
func (f *Fake) Close() {
	f.srv.CloseClientConnections()
	f.srv.Close()
}

// Config is the shop's configuration for this fake: its merchant, keys (the WeChat Pay public key in
// PublicKeyMode), and notifyURL.
func (f *Fake) Config(notifyURL string) wechatpay.Config {
	c := wechatpay.Config{
		MchID: f.MchID, AppID: f.AppID, MchSerial: f.Keys.MchSerial, MchKeyPEM: PrivateKeyPEM(f.Keys.MchKey),
		APIv3Key: f.Keys.APIv3Key, NotifyURL: notifyURL,
	}
	if f.opts.PublicKeyMode {
		c.PublicKeyPEM = PublicKeyPEM(&f.Keys.PlatformKey.PublicKey)
		c.PublicKeyID = f.Keys.PublicKeyID
	}
	return c
}

// Client is an HTTP client whose requests to api.mch.weixin.qq.com (and api2.) go to the fake, with a
// 5 s timeout.
func (f *Fake) Client() *http.Client {
	return RedirectClient(f.URL, "api.mch.weixin.qq.com", "api2.mch.weixin.qq.com")
}

// RedirectClient is an HTTP client that sends its requests for hosts to base instead (scheme and host;
// path and query kept); other hosts are not reachable. For the fake's callbacks to reach a shop under
// test, say.
func RedirectClient(base string, hosts ...string) *http.Client {
	u, err := url.Parse(base)
	if err != nil {
		panic(err)
	}
	set := map[string]bool{}
	for _, h := range hosts {
		set[h] = true
	}
	return &http.Client{Timeout: 5 * time.Second, Transport: &redirect{to: u, hosts: set, next: &http.Transport{}}}
}

type redirect struct {
	to    *url.URL
	hosts map[string]bool
	next  http.RoundTripper
}

func (rt *redirect) RoundTrip(r *http.Request) (*http.Response, error) {
	if !rt.hosts[r.URL.Hostname()] {
		return nil, fmt.Errorf("wechatfake: no route to %s", r.URL.Host)
	}
	r2 := r.Clone(r.Context())
	r2.URL.Scheme, r2.URL.Host, r2.Host = rt.to.Scheme, rt.to.Host, rt.to.Host
	return rt.next.RoundTrip(r2)
}

// SetMode takes WeChat Pay down (Unavailable, NoAnswer) or up.
func (f *Fake) SetMode(m Mode) { f.mu.Lock(); f.mode = m; f.mu.Unlock() }

// SetDelay makes every answer wait d first (0: none).
func (f *Fake) SetDelay(d time.Duration) { f.mu.Lock(); f.delay = d; f.mu.Unlock() }

// Advance moves the fake's clock for payments' time_expire (not its signatures' timestamps).
func (f *Fake) Advance(d time.Duration) { f.mu.Lock(); f.offset += d; f.mu.Unlock() }

// SignAnswersWith signs the answers with k instead of the platform key (nil: the platform key), to see
// the shop refuse them.
func (f *Fake) SignAnswersWith(k *rsa.PrivateKey) { f.mu.Lock(); f.responseKey = k; f.mu.Unlock() }

// Calls counts the requests the fake answered (its signature checked) by "METHOD /path" without the
// query, e.g. "POST /v3/refund/domestic/refunds".
func (f *Fake) Calls(route string) int { f.mu.Lock(); defer f.mu.Unlock(); return f.calls[route] }

// Trade is a trade's total in fen and its time_expire (false for no such trade).
func (f *Fake) Trade(outTradeNo string) (total int64, expire time.Time, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t := f.trades[outTradeNo]; t != nil {
		return t.Total, t.TimeExpire, true
	}
	return 0, time.Time{}, false
}

// TradeState is a trade's trade_state ("" for none).
func (f *Fake) TradeState(outTradeNo string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t := f.trades[outTradeNo]; t != nil {
		return t.State
	}
	return ""
}

// Refunds counts a trade's refunds and sums their amounts.
func (f *Fake) Refunds(outTradeNo string) (n int, fen int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.refunds {
		if r.OutTradeNo == outTradeNo {
			n++
			fen += r.Amount
		}
	}
	return n, fen
}

// Sent is every callback the fake sent, oldest first.
func (f *Fake) Sent() []Notification {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Notification(nil), f.sent...)
}

func (f *Fake) now() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return time.Now().Add(f.offset) }

// ErrNotPayable is the payer failing to pay: no such trade, or it is closed, paid, or past time_expire.
var ErrNotPayable = errors.New("wechatfake: the trade cannot be paid")

// Pay is the payer paying a trade: it becomes SUCCESS and the fake posts the TRANSACTION.SUCCESS
// callback to its notify_url (the callback's delivery is in Sent; a failed one is not resent).
func (f *Fake) Pay(ctx context.Context, outTradeNo string) error {
	f.mu.Lock()
	t := f.trades[outTradeNo]
	if t == nil || (t.State != "NOTPAY" && t.State != "USERPAYING") || !t.TimeExpire.IsZero() && time.Now().Add(f.offset).After(t.TimeExpire) {
		f.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrNotPayable, outTradeNo)
	}
	t.State, t.TransactionID, t.SuccessTime = "SUCCESS", "4200"+digits(24), time.Now()
	f.mu.Unlock()
	n, err := f.TransactionNotify(outTradeNo, NotifyOptions{})
	if err != nil {
		return err
	}
	f.deliver(ctx, n)
	return nil
}

// Paying is the payer in the middle of paying (entering the password): USERPAYING, so that a close
// meets it.
func (f *Fake) Paying(outTradeNo string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.trades[outTradeNo]
	if t == nil || t.State != "NOTPAY" {
		return fmt.Errorf("%w: %s", ErrNotPayable, outTradeNo)
	}
	t.State = "USERPAYING"
	return nil
}

// CompleteRefund makes a PROCESSING refund SUCCESS and posts its REFUND.SUCCESS callback.
func (f *Fake) CompleteRefund(ctx context.Context, outRefundNo string) error {
	f.mu.Lock()
	r := f.refunds[outRefundNo]
	if r == nil || r.Status != "PROCESSING" {
		f.mu.Unlock()
		return fmt.Errorf("wechatfake: no refund %s in progress", outRefundNo)
	}
	r.Status, r.SuccessTime = "SUCCESS", time.Now()
	f.mu.Unlock()
	n, err := f.RefundNotify(outRefundNo, NotifyOptions{})
	if err != nil {
		return err
	}
	f.deliver(ctx, n)
	return nil
}

// FailRefund ends a PROCESSING refund ABNORMAL (the payer's card is gone: the merchant must finish it in
// the console) or CLOSED, and posts its REFUND.ABNORMAL or REFUND.CLOSED callback.
func (f *Fake) FailRefund(ctx context.Context, outRefundNo, status string) error {
	if status != "ABNORMAL" && status != "CLOSED" {
		return fmt.Errorf("wechatfake: a refund fails ABNORMAL or CLOSED, not %s", status)
	}
	f.mu.Lock()
	r := f.refunds[outRefundNo]
	if r == nil || r.Status != "PROCESSING" {
		f.mu.Unlock()
		return fmt.Errorf("wechatfake: no refund %s in progress", outRefundNo)
	}
	r.Status = status
	f.mu.Unlock()
	n, err := f.RefundNotify(outRefundNo, NotifyOptions{})
	if err != nil {
		return err
	}
	f.deliver(ctx, n)
	return nil
}

// NotifyOptions forge a callback: another signing key and serial, another time, another amount.
type NotifyOptions struct {
	Key    *rsa.PrivateKey // signs (nil: the platform key)
	Serial string          // Wechatpay-Serial ("": the platform certificate's, or the public key id)
	At     time.Time       // Wechatpay-Timestamp (zero: now)
	Total  int64           // amount.total (0: the trade's)
}

// TransactionNotify builds (does not send) the signed, sealed TRANSACTION.SUCCESS callback of a trade as
// it is now.
func (f *Fake) TransactionNotify(outTradeNo string, o NotifyOptions) (Notification, error) {
	f.mu.Lock()
	t := f.trades[outTradeNo]
	if t == nil {
		f.mu.Unlock()
		return Notification{}, fmt.Errorf("wechatfake: no trade %s", outTradeNo)
	}
	res := f.transactionJSON(t)
	url := t.NotifyURL
	f.mu.Unlock()
	if o.Total != 0 {
		amount := res["amount"].(map[string]any)
		amount["total"], amount["payer_total"] = o.Total, o.Total
	}
	res["trade_state"], res["trade_state_desc"] = "SUCCESS", "支付成功"
	return f.buildNotify(url, "TRANSACTION.SUCCESS", "transaction", "支付成功", res, o)
}

// RefundNotify builds (does not send) the signed, sealed callback of a refund as it is now:
// REFUND.SUCCESS, REFUND.ABNORMAL or REFUND.CLOSED.
func (f *Fake) RefundNotify(outRefundNo string, o NotifyOptions) (Notification, error) {
	f.mu.Lock()
	r := f.refunds[outRefundNo]
	if r == nil {
		f.mu.Unlock()
		return Notification{}, fmt.Errorf("wechatfake: no refund %s", outRefundNo)
	}
	total := r.Total
	if o.Total != 0 {
		total = o.Total
	}
	res := map[string]any{
		"mchid": f.MchID, "out_trade_no": r.OutTradeNo, "transaction_id": f.trades[r.OutTradeNo].TransactionID,
		"out_refund_no": r.OutRefundNo, "refund_id": r.RefundID, "refund_status": r.Status,
		"success_time": rfc3339(r.SuccessTime), "user_received_account": "支付用户零钱",
		"amount": map[string]any{"total": total, "refund": r.Amount, "payer_total": total, "payer_refund": r.Amount},
	}
	if r.SuccessTime.IsZero() {
		delete(res, "success_time")
	}
	url, status := r.NotifyURL, r.Status
	f.mu.Unlock()
	event, summary := "REFUND."+status, map[string]string{"SUCCESS": "退款成功", "ABNORMAL": "退款异常", "CLOSED": "退款关闭"}[status]
	if summary == "" {
		return Notification{}, fmt.Errorf("wechatfake: refund %s is %s: no callback yet", outRefundNo, status)
	}
	return f.buildNotify(url, event, "refund", summary, res, o)
}

func (f *Fake) buildNotify(url, event, original, summary string, res map[string]any, o NotifyOptions) (Notification, error) {
	plain, err := json.Marshal(res)
	if err != nil {
		return Notification{}, err
	}
	nonce, ct := seal(f.Keys.APIv3Key, original, plain)
	body, err := json.Marshal(map[string]any{
		"id": "EV-" + randomHex(16), "create_time": rfc3339(time.Now()), "resource_type": "encrypt-resource",
		"event_type": event, "summary": summary,
		"resource": map[string]any{"original_type": original, "algorithm": "AEAD_AES_256_GCM",
			"ciphertext": ct, "associated_data": original, "nonce": nonce},
	})
	if err != nil {
		return Notification{}, err
	}
	at := o.At
	if at.IsZero() {
		at = time.Now()
	}
	key, serial := f.Keys.PlatformKey, f.serial()
	if o.Key != nil {
		key = o.Key
	}
	if o.Serial != "" {
		serial = o.Serial
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	signInto(h, key, serial, at, body)
	h.Set("Wechatpay-Signature-Type", "WECHATPAY2-SHA256-RSA2048")
	return Notification{URL: url, Header: h, Body: body}, nil
}

// Resend posts a callback (again, or a forged one) to its URL and answers the shop's HTTP status.
func (f *Fake) Resend(ctx context.Context, n Notification) (int, error) {
	n = f.deliver(ctx, n)
	if n.Status == 0 {
		return 0, fmt.Errorf("wechatfake: the callback to %s was not delivered", n.URL)
	}
	return n.Status, nil
}

func (f *Fake) deliver(ctx context.Context, n Notification) Notification {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.URL, bytes.NewReader(n.Body))
	if err == nil {
		req.Header = n.Header.Clone()
		if resp, err := f.notify.Do(req); err == nil {
			io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
			n.Status = resp.StatusCode
		}
	}
	f.mu.Lock()
	f.sent = append(f.sent, n)
	f.mu.Unlock()
	return n
}

func (f *Fake) serial() string {
	if f.opts.PublicKeyMode {
		return f.Keys.PublicKeyID
	}
	return f.Keys.PlatformSerial
}

// signInto sets WeChat Pay's signature headers of a message (answer or callback).
func signInto(h http.Header, key *rsa.PrivateKey, serial string, at time.Time, body []byte) {
	ts := strconv.FormatInt(at.Unix(), 10)
	nonce := randomString(32)
	h.Set("Wechatpay-Timestamp", ts)
	h.Set("Wechatpay-Nonce", nonce)
	h.Set("Wechatpay-Serial", serial)
	h.Set("Wechatpay-Signature", signSHA256RSA(key, ts+"\n"+nonce+"\n"+string(body)+"\n"))
}

func rfc3339(t time.Time) string { return t.In(cst).Format(time.RFC3339) }

var cst = time.FixedZone("CST", 8*3600)

// serve answers one request: down and slow first, then the merchant's signature, then the API.
func (f *Fake) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	mode, delay := f.mode, f.delay
	f.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	switch mode {
	case NoAnswer:
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				c.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	case Unavailable:
		f.answer(w, http.StatusServiceUnavailable, errBody("SYSTEM_ERROR", "系统繁忙，请稍后重试"))
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return
	}
	if msg := f.checkAuth(r, body); msg != "" {
		f.answer(w, http.StatusUnauthorized, errBody("SIGN_ERROR", msg))
		return
	}
	f.mu.Lock()
	f.calls[r.Method+" "+r.URL.Path]++
	f.mu.Unlock()
	status, out := f.route(r, body)
	f.answer(w, status, out)
}

// checkAuth checks the merchant's Authorization header: WECHATPAY2-SHA256-RSA2048 with mchid,
// nonce_str, timestamp, serial_no and signature over "METHOD\nURI\ntimestamp\nnonce\nbody\n", with the
// merchant certificate's key, a timestamp within five minutes. It answers why not, or "".
func (f *Fake) checkAuth(r *http.Request, body []byte) string {
	scheme, params, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || scheme != "WECHATPAY2-SHA256-RSA2048" {
		return "Authorization: not WECHATPAY2-SHA256-RSA2048"
	}
	p := map[string]string{}
	for _, kv := range strings.Split(params, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
		p[k] = strings.Trim(v, `"`)
	}
	if p["mchid"] != f.MchID {
		return "商户号不存在 (mchid)"
	}
	if p["serial_no"] != f.Keys.MchSerial {
		return "商户证书序列号有误 (serial_no)"
	}
	ts, err := strconv.ParseInt(p["timestamp"], 10, 64)
	if err != nil || time.Since(time.Unix(ts, 0)).Abs() > 5*time.Minute {
		return "请求的时间戳已过期 (timestamp)"
	}
	msg := r.Method + "\n" + r.URL.RequestURI() + "\n" + p["timestamp"] + "\n" + p["nonce_str"] + "\n" + string(body) + "\n"
	if p["nonce_str"] == "" || !verifySHA256RSA(&f.Keys.MchKey.PublicKey, msg, p["signature"]) {
		return "签名错误，请检查后再试"
	}
	return ""
}

// answer writes an answer signed as WeChat Pay signs (with SignAnswersWith's key if set).
func (f *Fake) answer(w http.ResponseWriter, status int, body []byte) {
	f.mu.Lock()
	key := f.responseKey
	f.mu.Unlock()
	if key == nil {
		key = f.Keys.PlatformKey
	}
	h := w.Header()
	h.Set("Request-ID", randomHex(16))
	signInto(h, key, f.serial(), time.Now(), body)
	if len(body) > 0 {
		h.Set("Content-Type", "application/json")
	}
	w.WriteHeader(status)
	w.Write(body)
}

func errBody(code, msg string) []byte {
	b, _ := json.Marshal(map[string]string{"code": code, "message": msg})
	return b
}

func jsonBody(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
