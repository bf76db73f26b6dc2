// Package alipayfake is a local stand-in for Alipay's openapi gateway (https://openapi.alipay.com/gateway.do),
// for tests: it speaks the documented protocol of the face-to-face payment (当面付) methods the shop uses,
// keeps trades in memory with Alipay's semantics, and has controls for what a payer and the network do.
//
// Built from Alipay's published documentation:
//   - request signing, RSA2 over the sorted parameters: https://opendocs.alipay.com/common/02kf5q
//   - answers and notifications, and how they are signed: https://opendocs.alipay.com/common/02mse7
//   - public error codes (isv.invalid-signature ...): https://opendocs.alipay.com/common/02km9f
//   - alipay.trade.precreate  https://opendocs.alipay.com/open/02ekfg
//   - alipay.trade.query      https://opendocs.alipay.com/open/02ekfh
//   - alipay.trade.close      https://opendocs.alipay.com/open/02o6e7
//   - alipay.trade.refund     https://opendocs.alipay.com/open/02ekfk
//   - alipay.trade.fastpay.refund.query  https://opendocs.alipay.com/open/02ekfl
//   - asynchronous notifications  https://opendocs.alipay.com/open/194/103296
//
// Alipay's semantics kept: a precreated trade exists (query, close, refund find it) only once the payer
// scanned its QR code; until then its QR code can be scanned until time_expire (2 hours without one). A
// repeated precreate of the same out_trade_no, amount and subject gives the same QR code back; another
// amount or subject is ACQ.CONTEXT_INCONSISTENT, a paid trade's number ACQ.TRADE_HAS_SUCCESS, a closed
// one's ACQ.TRADE_HAS_CLOSE. A refund is its trade's and out_request_no's, made once; a full refund
// closes the trade (TRADE_CLOSED).
//
// Where the documentation was not explicit, the fake's choice is said where it is made.
package alipayfake

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"seckill/payment"
	"seckill/payment/alipay"
)

// Hosts are Alipay's gateway hosts: production, the sandbox, and the sandbox's old host.
var Hosts = []string{"openapi.alipay.com", "openapi-sandbox.dl.alipaydev.com", "openapi.alipaydev.com"}

// AppID is the fake's app.
const AppID = "2021000000000001"

// sellerID is the fake merchant's Alipay user id (2088...).
const sellerID = "2088000000000001"

var beijing = time.FixedZone("CST", 8*60*60)

const timeLayout = "2006-01-02 15:04:05"

// Trade statuses (trade_status); "" is a precreated trade not scanned yet.
const (
	WaitBuyerPay  = "WAIT_BUYER_PAY"
	TradeSuccess  = "TRADE_SUCCESS"
	TradeClosed   = "TRADE_CLOSED"
	TradeFinished = "TRADE_FINISHED"
)

// Options choose how the fake's app is set up.
type Options struct {
	// CertMode sets the app up in certificate mode: requests must carry app_cert_sn and
	// alipay_root_cert_sn, answers carry alipay_cert_sn.
	CertMode bool
}

// Fake is the fake gateway.
type Fake struct {
	srv       *httptest.Server
	transport *http.Transport
	appKey    *rsa.PrivateKey // the shop's app key: the fake checks requests with its public half
	alipayKey *rsa.PrivateKey // signs answers and notifications
	otherKey  *rsa.PrivateKey // neither's: forges
	certs     *certs          // certificate mode's, or nil

	// Deliver sends a notification (a POST to the trade's notify_url) and answers the shop's response;
	// nil for an HTTP client with a 5 s timeout. Set it before trades are paid: tests route the
	// notifications to the shop's handler (DeliverTo).
	Deliver func(*http.Request) (*http.Response, error)

	mu         sync.Mutex
	offset     time.Duration // the fake's clock is the real one plus this
	trades     map[string]*trade
	down, hang bool
	delay      time.Duration
	wrongSign  bool
	lose       map[string]int    // method → answers to lose after doing the work
	failNext   map[string]string // method → sub_code to answer next, doing nothing
	calls      map[string]int
	sent       []Notify
	closed     chan struct{}
	pending    sync.WaitGroup
}

type trade struct {
	outTradeNo, tradeNo, subject, notifyURL, qr string
	totalCents                                  int64
	status                                      string
	expire, created, paid, closedAt             time.Time
	refunds                                     map[string]*refund
	refundedCents                               int64
}

type refund struct {
	id    string
	cents int64
	at    time.Time
}

// New starts a fake with new keys. Close it when done.
func New(opts Options) (*Fake, error) {
	f := &Fake{trades: map[string]*trade{}, lose: map[string]int{}, failNext: map[string]string{}, calls: map[string]int{}, closed: make(chan struct{})}
	for _, k := range []**rsa.PrivateKey{&f.appKey, &f.alipayKey, &f.otherKey} {
		var err error
		if *k, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			return nil, err
		}
	}
	if opts.CertMode {
		c, err := makeCerts(f.appKey, f.alipayKey)
		if err != nil {
			return nil, err
		}
		f.certs = c
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	f.transport = &http.Transport{}
	return f, nil
}

// Start starts a fake for a test, closed when the test ends.
func Start(t testing.TB, opts Options) *Fake {
	t.Helper()
	f, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

// Close stops the fake, once the notifications under way are sent.
func (f *Fake) Close() {
	f.mu.Lock()
	select {
	case <-f.closed:
		f.mu.Unlock()
		return
	default:
		close(f.closed)
	}
	f.mu.Unlock()
	f.pending.Wait()
	f.srv.Close()
	f.transport.CloseIdleConnections()
}

// Config is the shop's config for the fake's app, with notifyURL as its notify URL (https).
func (f *Fake) Config(notifyURL string) alipay.Config {
	c := alipay.Config{AppID: AppID, PrivateKeyPEM: privatePEMOf(f.appKey), NotifyURL: notifyURL}
	if f.certs != nil {
		c.AppCertPEM, c.RootCertPEM, c.AlipayCertPEM = f.certs.appPEM, f.certs.rootPEM, f.certs.alipayPEM
	} else {
		c.AlipayPublicKey = publicPEMOf(&f.alipayKey.PublicKey)
	}
	return c
}

// OtherKeyPEM is a private key (PKCS#8 PEM) that is neither the app's nor Alipay's.
func (f *Fake) OtherKeyPEM() string { return privatePEMOf(f.otherKey) }

// OtherPublicKeyPEM is OtherKeyPEM's public key: a config with it as Alipay's public key refuses the
// fake's answers.
func (f *Fake) OtherPublicKeyPEM() string { return publicPEMOf(&f.otherKey.PublicKey) }

// HTTPClient is a client whose transport sends Alipay's hosts (Hosts) to the fake, over plain HTTP, and
// refuses any other host. Each call answers a new client (set its Timeout as the test needs; 3 s).
func (f *Fake) HTTPClient() *http.Client {
	return &http.Client{Timeout: 3 * time.Second, Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		for _, h := range Hosts {
			if r.URL.Hostname() == h {
				target, _ := url.Parse(f.srv.URL)
				r2 := r.Clone(r.Context())
				r2.URL.Scheme, r2.URL.Host, r2.Host = target.Scheme, target.Host, target.Host
				return f.transport.RoundTrip(r2)
			}
		}
		return nil, fmt.Errorf("alipayfake: %s is not Alipay's gateway", r.URL.Host)
	})}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (rt roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return rt(r) }

// DeliverTo answers a Deliver that hands notifications to h, in process.
func DeliverTo(h http.Handler) func(*http.Request) (*http.Response, error) {
	return func(r *http.Request) (*http.Response, error) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Result(), nil
	}
}

func (f *Fake) now() time.Time { return time.Now().Add(f.offset) }

// Advance moves the fake's clock on (trades expire at their time_expire by it).
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	f.offset += d
	f.mu.Unlock()
}

// SetDown makes the gateway answer 503 with an HTML page, as a load balancer in front of a dead service
// does.
func (f *Fake) SetDown(down bool) { f.mu.Lock(); f.down = down; f.mu.Unlock() }

// SetHang makes the gateway take requests and never answer them.
func (f *Fake) SetHang(hang bool) { f.mu.Lock(); f.hang = hang; f.mu.Unlock() }

// SetDelay makes the gateway wait d before answering.
func (f *Fake) SetDelay(d time.Duration) { f.mu.Lock(); f.delay = d; f.mu.Unlock() }

// SignAnswersWithWrongKey makes the gateway sign its answers with a key that is not Alipay's.
func (f *Fake) SignAnswersWithWrongKey(on bool) { f.mu.Lock(); f.wrongSign = on; f.mu.Unlock() }

// LoseAnswers makes the next n requests of method be done, but their answers lost (the connection
// closes before the answer).
func (f *Fake) LoseAnswers(method string, n int) { f.mu.Lock(); f.lose[method] = n; f.mu.Unlock() }

// FailNext makes the next request of method answer Alipay's business failure subCode (40004, signed),
// doing nothing: ACQ.SYSTEM_ERROR, say.
func (f *Fake) FailNext(method, subCode string) {
	f.mu.Lock()
	f.failNext[method] = subCode
	f.mu.Unlock()
}

// Calls counts the requests of method the gateway took (whatever it answered).
func (f *Fake) Calls(method string) int { f.mu.Lock(); defer f.mu.Unlock(); return f.calls[method] }

// Trade is a trade as the fake keeps it.
type Trade struct {
	OutTradeNo    string
	TradeNo       string
	Status        string // "" for precreated, not scanned; else trade_status
	TotalCents    int64
	RefundedCents int64
	Refunds       int // refunds made (distinct out_request_no)
	QRCode        string
	Subject       string
	NotifyURL     string
	Expire        time.Time
}

// Trade answers the trade of outTradeNo.
func (f *Fake) Trade(outTradeNo string) (Trade, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.trades[outTradeNo]
	if t == nil {
		return Trade{}, false
	}
	f.expire(t)
	return Trade{OutTradeNo: t.outTradeNo, TradeNo: t.tradeNo, Status: t.status, TotalCents: t.totalCents,
		RefundedCents: t.refundedCents, Refunds: len(t.refunds), QRCode: t.qr, Subject: t.subject,
		NotifyURL: t.notifyURL, Expire: t.expire}, true
}

// errExpired is a QR code scanned after its time_expire.
var errExpired = errors.New("alipayfake: the QR code has expired")

// Scan is the payer scanning the trade's QR code: the trade now exists, WAIT_BUYER_PAY.
func (f *Fake) Scan(outTradeNo string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.trades[outTradeNo]
	if t == nil {
		return fmt.Errorf("alipayfake: no QR code for %s", outTradeNo)
	}
	f.expire(t)
	switch t.status {
	case "":
		if t.closedAt != (time.Time{}) {
			return errExpired
		}
		t.status = WaitBuyerPay
		t.tradeNo = newTradeNo(f.now())
		t.created = f.now()
		return nil
	case WaitBuyerPay:
		return nil
	}
	return fmt.Errorf("alipayfake: trade %s is %s: it cannot be scanned", outTradeNo, t.status)
}

// Pay is the payer paying (scanning first if need be): TRADE_SUCCESS, and the signed notification is
// sent to the trade's notify_url before Pay returns.
func (f *Fake) Pay(outTradeNo string) error {
	if err := f.Scan(outTradeNo); err != nil {
		return err
	}
	f.mu.Lock()
	t := f.trades[outTradeNo]
	f.expire(t)
	if t.status != WaitBuyerPay {
		f.mu.Unlock()
		return fmt.Errorf("alipayfake: trade %s is %s: it cannot be paid", outTradeNo, t.status)
	}
	t.status = TradeSuccess
	t.paid = f.now()
	form := f.notifyForm(t, nil)
	f.mu.Unlock()
	if t.notifyURL != "" {
		f.send(context.Background(), t.notifyURL, form)
	}
	return nil
}

// Expire makes the trade reach its time_expire now: a trade waiting for its payer closes (and its
// notification is sent), a QR code not scanned can no longer be.
func (f *Fake) Expire(outTradeNo string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.trades[outTradeNo]
	if t == nil {
		return fmt.Errorf("alipayfake: no trade %s", outTradeNo)
	}
	t.expire = f.now()
	f.expire(t)
	return nil
}

// expire applies time_expire to t (f.mu held).
func (f *Fake) expire(t *trade) {
	now := f.now()
	if t.expire.IsZero() || now.Before(t.expire) {
		return
	}
	switch t.status {
	case "":
		t.closedAt = now // the QR code is dead; the trade never existed
	case WaitBuyerPay:
		t.status = TradeClosed
		t.closedAt = now
		if t.notifyURL != "" {
			f.sendLater(t.notifyURL, f.notifyForm(t, nil))
		}
	}
}

func newTradeNo(now time.Time) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return now.In(beijing).Format("20060102") + "22001" + hex.EncodeToString(b)[:11]
}

func newQR() string {
	b := make([]byte, 10)
	_, _ = rand.Read(b)
	return "https://qr.alipay.com/bax0" + hex.EncodeToString(b)
}

// ---- the gateway ----

// answer is one method's answer: its fields in order.
type answer []kv

type kv struct {
	k string
	v any
}

func (a answer) json() []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, p := range a {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(p.k)
		v, _ := json.Marshal(p.v)
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes()
}

func success(fields ...kv) answer {
	return append(answer{{"code", "10000"}, {"msg", "Success"}}, fields...)
}

// failure is a business failure (40004, 业务处理失败), signed like a success.
func failure(subCode, subMsg string) answer {
	return answer{{"code", "40004"}, {"msg", "Business Failed"}, {"sub_code", subCode}, {"sub_msg", subMsg}}
}

// gatewayError is the gateway's refusal of a request it cannot take (missing or invalid common
// parameters, a signature that does not verify). The fake answers these unsigned: the documented
// examples of isv.invalid-signature carry no sign.
type gatewayError struct {
	code, msg, subCode, subMsg string
}

func missing(what string) *gatewayError {
	return &gatewayError{"40001", "Missing Required Arguments", "isv.missing-" + what, "缺少" + what + "参数"}
}

func invalidArg(what, msg string) *gatewayError {
	return &gatewayError{"40002", "Invalid Arguments", "isv.invalid-" + what, msg}
}

func (f *Fake) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/gateway.do" {
		http.NotFound(w, r)
		return
	}
	f.mu.Lock()
	down, hang, delay := f.down, f.hang, f.delay
	f.mu.Unlock()
	if down {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("<html><body><h1>503 Service Temporarily Unavailable</h1></body></html>"))
		return
	}
	if hang {
		select {
		case <-r.Context().Done():
		case <-f.closed:
		}
		panic(http.ErrAbortHandler)
	}
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			panic(http.ErrAbortHandler)
		}
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	form := r.Form
	method := form.Get("method")
	respKey := strings.ReplaceAll(method, ".", "_") + "_response"
	if method == "" {
		respKey = "error_response"
	}
	f.mu.Lock()
	f.calls[method]++
	f.mu.Unlock()
	if gerr := f.checkCommon(form); gerr != nil {
		writeJSON(w, []byte(`{`+quote(respKey)+`:`+string(answer{{"code", gerr.code}, {"msg", gerr.msg}, {"sub_code", gerr.subCode}, {"sub_msg", gerr.subMsg}}.json())+`}`))
		return
	}
	var biz map[string]any
	if err := json.Unmarshal([]byte(form.Get("biz_content")), &biz); err != nil {
		f.reply(w, method, respKey, failure("ACQ.INVALID_PARAMETER", "biz_content 不是 JSON"))
		return
	}
	str := func(k string) string { s, _ := biz[k].(string); return s }

	f.mu.Lock()
	if sub := f.failNext[method]; sub != "" {
		delete(f.failNext, method)
		f.mu.Unlock()
		f.reply(w, method, respKey, failure(sub, "fake failure"))
		return
	}
	var a answer
	switch method {
	case "alipay.trade.precreate":
		a = f.precreate(str, form.Get("notify_url"))
	case "alipay.trade.query":
		a = f.query(str("out_trade_no"))
	case "alipay.trade.close":
		a = f.closeTrade(str("out_trade_no"))
	case "alipay.trade.refund":
		a = f.refund(str)
	case "alipay.trade.fastpay.refund.query":
		a = f.refundQuery(str("out_trade_no"), str("out_request_no"))
	}
	f.mu.Unlock()
	f.reply(w, method, respKey, a)
}

// checkCommon checks the common request parameters and the request's signature
// (https://opendocs.alipay.com/common/02kf5q: the signing string is every parameter with a value but
// sign, sorted; sign_type is in it).
func (f *Fake) checkCommon(form url.Values) *gatewayError {
	switch {
	case form.Get("app_id") == "":
		return missing("app-id")
	case form.Get("app_id") != AppID:
		return invalidArg("app-id", "无效的AppID参数")
	case form.Get("method") == "":
		return missing("method")
	case !knownMethod(form.Get("method")):
		return invalidArg("method", "不存在的方法名")
	case form.Get("sign_type") == "":
		return missing("signature-type")
	case form.Get("sign_type") != "RSA2":
		return invalidArg("signature-type", "无效的签名类型")
	case form.Get("sign") == "":
		return missing("signature")
	case form.Get("timestamp") == "":
		return missing("timestamp")
	case form.Get("version") != "1.0":
		return invalidArg("version", "无效的版本号")
	case form.Get("charset") != "" && !strings.EqualFold(form.Get("charset"), "utf-8"):
		return invalidArg("charset", "字符集错误")
	}
	// Alipay takes a timestamp within some minutes of its clock, in Beijing time (the real clock here:
	// tests move the fake's clock for trades, not for requests).
	ts, err := time.ParseInLocation(timeLayout, form.Get("timestamp"), beijing)
	if err != nil || time.Since(ts).Abs() > 15*time.Minute {
		return invalidArg("timestamp", "非法的时间戳参数")
	}
	if f.certs != nil {
		// Certificate mode: the app's and the root certificate's serials must be those the app uploaded.
		// (The sub-codes are the fake's: the public list does not name these two.)
		if form.Get("app_cert_sn") != f.certs.appSN {
			return invalidArg("app-cert-sn", "应用公钥证书序列号不匹配")
		}
		if form.Get("alipay_root_cert_sn") != f.certs.rootSN {
			return invalidArg("alipay-root-cert-sn", "支付宝根证书序列号不匹配")
		}
	}
	if !rsa2Verify(&f.appKey.PublicKey, []byte(signingString(form, "sign")), form.Get("sign")) {
		return invalidArg("signature", "验签出错，建议检查签名字符串或签名私钥与应用公钥是否匹配")
	}
	return nil
}

func knownMethod(m string) bool {
	switch m {
	case "alipay.trade.precreate", "alipay.trade.query", "alipay.trade.close", "alipay.trade.refund", "alipay.trade.fastpay.refund.query":
		return true
	}
	return false
}

// reply writes a signed answer: {"<method>_response":{...},"sign":"..."}, the sign RSA2 over the
// answer's JSON exactly as written (https://opendocs.alipay.com/common/02mse7), and in certificate mode
// alipay_cert_sn. A lost answer closes the connection instead, the work done.
func (f *Fake) reply(w http.ResponseWriter, method, respKey string, a answer) {
	inner := a.json()
	f.mu.Lock()
	key := f.alipayKey
	if f.wrongSign {
		key = f.otherKey
	}
	lose := f.lose[method] > 0
	if lose {
		f.lose[method]--
	}
	f.mu.Unlock()
	if lose {
		panic(http.ErrAbortHandler)
	}
	body := `{` + quote(respKey) + `:` + string(inner)
	if f.certs != nil {
		body += `,"alipay_cert_sn":` + quote(f.certs.alipaySN)
	}
	body += `,"sign":` + quote(rsa2Sign(key, inner)) + `}`
	writeJSON(w, []byte(body))
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

func writeJSON(w http.ResponseWriter, b []byte) {
	w.Header().Set("Content-Type", "text/html;charset=utf-8") // as Alipay's gateway labels its JSON
	_, _ = w.Write(b)
}

// validOutTradeNo: 64 characters at most, letters, digits and _ (alipay.trade.precreate's out_trade_no).
func validOutTradeNo(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_') {
			return false
		}
	}
	return true
}

// amount reads a Price: yuan with at most two decimals, from 0.01 to 100000000.
func amount(s string) (int64, bool) {
	c, err := payment.ParseYuan(s)
	return c, err == nil && c > 0
}

// precreate: alipay.trade.precreate (https://opendocs.alipay.com/open/02ekfg). f.mu held.
func (f *Fake) precreate(str func(string) string, notifyURL string) answer {
	no, subject, total, expireS := str("out_trade_no"), str("subject"), str("total_amount"), str("time_expire")
	if !validOutTradeNo(no) {
		return failure("ACQ.INVALID_PARAMETER", "参数无效: out_trade_no")
	}
	if subject == "" || len([]rune(subject)) > 256 {
		return failure("ACQ.INVALID_PARAMETER", "参数无效: subject")
	}
	cents, ok := amount(total)
	if !ok {
		return failure("ACQ.INVALID_PARAMETER", "参数无效: total_amount")
	}
	if pc := str("product_code"); pc != "" && pc != "FACE_TO_FACE_PAYMENT" {
		return failure("ACQ.INVALID_PARAMETER", "参数无效: product_code")
	}
	now := f.now()
	expire := now.Add(2 * time.Hour) // the QR code's life without time_expire
	if expireS != "" {
		t, err := time.ParseInLocation(timeLayout, expireS, beijing)
		if err != nil || !t.After(now) {
			return failure("ACQ.INVALID_PARAMETER", "参数无效: time_expire")
		}
		expire = t
	}
	if t := f.trades[no]; t != nil {
		f.expire(t)
		switch {
		case t.status == TradeSuccess || t.status == TradeFinished:
			return failure("ACQ.TRADE_HAS_SUCCESS", "交易已被支付")
		case t.status == TradeClosed:
			return failure("ACQ.TRADE_HAS_CLOSE", "交易已经关闭")
		case t.status == "" && !t.closedAt.IsZero():
			// The QR code expired unscanned: no trade ever existed, the number is free (the fake's reading).
		case t.totalCents != cents || t.subject != subject:
			return failure("ACQ.CONTEXT_INCONSISTENT", "交易信息被篡改")
		default:
			return success(kv{"out_trade_no", no}, kv{"qr_code", t.qr})
		}
	}
	t := &trade{outTradeNo: no, subject: subject, notifyURL: notifyURL, qr: newQR(), totalCents: cents, expire: expire, refunds: map[string]*refund{}}
	f.trades[no] = t
	return success(kv{"out_trade_no", no}, kv{"qr_code", t.qr})
}

// existing answers the trade of no if it exists at Alipay: scanned. f.mu held.
func (f *Fake) existing(no string) *trade {
	t := f.trades[no]
	if t == nil {
		return nil
	}
	f.expire(t)
	if t.status == "" {
		return nil
	}
	return t
}

func notExist() answer { return failure("ACQ.TRADE_NOT_EXIST", "交易不存在") }

func yuan(c int64) string { return payment.Yuan(c) }

// query: alipay.trade.query (https://opendocs.alipay.com/open/02ekfh). f.mu held.
func (f *Fake) query(no string) answer {
	t := f.existing(no)
	if t == nil {
		return notExist()
	}
	a := success(kv{"trade_no", t.tradeNo}, kv{"out_trade_no", t.outTradeNo}, kv{"buyer_logon_id", "159****5620"},
		kv{"trade_status", t.status}, kv{"total_amount", yuan(t.totalCents)})
	if !t.paid.IsZero() {
		a = append(a, kv{"buyer_pay_amount", yuan(t.totalCents)}, kv{"receipt_amount", yuan(t.totalCents)},
			kv{"send_pay_date", t.paid.In(beijing).Format(timeLayout)})
	}
	return append(a, kv{"buyer_user_id", "2088101117955611"})
}

// closeTrade: alipay.trade.close (https://opendocs.alipay.com/open/02o6e7): only a trade waiting for its
// payer closes; another answers ACQ.TRADE_STATUS_ERROR. f.mu held.
func (f *Fake) closeTrade(no string) answer {
	t := f.existing(no)
	if t == nil {
		return notExist()
	}
	if t.status != WaitBuyerPay {
		return failure("ACQ.TRADE_STATUS_ERROR", "交易状态不合法")
	}
	t.status = TradeClosed
	t.closedAt = f.now()
	return success(kv{"trade_no", t.tradeNo}, kv{"out_trade_no", t.outTradeNo})
}

// refund: alipay.trade.refund (https://opendocs.alipay.com/open/02ekfk). A refund is its
// out_request_no's (the out_trade_no when none is given): asked again with the same amount it is not
// made again (fund_change N); with another amount, ACQ.DISCORDANT_REPEAT_REQUEST. f.mu held.
func (f *Fake) refund(str func(string) string) answer {
	t := f.existing(str("out_trade_no"))
	if t == nil {
		return notExist()
	}
	cents, ok := amount(str("refund_amount"))
	if !ok {
		return failure("ACQ.INVALID_PARAMETER", "参数无效: refund_amount")
	}
	id := str("out_request_no")
	if id == "" {
		// Without out_request_no only the whole amount is refunded, and the refund is the trade's.
		if cents != t.totalCents {
			return failure("ACQ.REFUND_AMT_NOT_EQUAL_TOTAL", "撤销或退款金额与订单金额不一致")
		}
		id = t.outTradeNo
	}
	if r := t.refunds[id]; r != nil {
		if r.cents != cents {
			// The same out_request_no for another amount: the sub-code is the fake's (not in the
			// documentation read).
			return failure("ACQ.DISCORDANT_REPEAT_REQUEST", "不一致的请求")
		}
		return f.refundAnswer(t, "N")
	}
	if t.paid.IsZero() {
		return failure("ACQ.TRADE_STATUS_ERROR", "交易状态不合法")
	}
	if t.refundedCents+cents > t.totalCents {
		return failure("ACQ.REASON_TRADE_REFUND_FEE_ERR", "退款金额无效")
	}
	now := f.now()
	t.refunds[id] = &refund{id: id, cents: cents, at: now}
	t.refundedCents += cents
	if t.refundedCents == t.totalCents {
		t.status = TradeClosed
		t.closedAt = now
	}
	if t.notifyURL != "" {
		f.sendLater(t.notifyURL, f.notifyForm(t, t.refunds[id]))
	}
	return f.refundAnswer(t, "Y")
}

func (f *Fake) refundAnswer(t *trade, fundChange string) answer {
	return success(kv{"trade_no", t.tradeNo}, kv{"out_trade_no", t.outTradeNo}, kv{"buyer_logon_id", "159****5620"},
		kv{"fund_change", fundChange}, kv{"refund_fee", yuan(t.refundedCents)}, kv{"buyer_user_id", "2088101117955611"})
}

// refundQuery: alipay.trade.fastpay.refund.query (https://opendocs.alipay.com/open/02ekfl): a refund
// made answers REFUND_SUCCESS; one unknown answers 10000 without refund_status, as documented. f.mu
// held.
func (f *Fake) refundQuery(no, id string) answer {
	t := f.existing(no)
	if t == nil {
		return notExist()
	}
	r := t.refunds[id]
	if r == nil {
		return success(kv{"trade_no", t.tradeNo}, kv{"out_trade_no", t.outTradeNo})
	}
	return success(kv{"trade_no", t.tradeNo}, kv{"out_trade_no", t.outTradeNo}, kv{"out_request_no", r.id},
		kv{"total_amount", yuan(t.totalCents)}, kv{"refund_amount", yuan(r.cents)}, kv{"refund_status", "REFUND_SUCCESS"},
		kv{"gmt_refund_pay", r.at.In(beijing).Format(timeLayout)})
}

// ---- notifications ----

// Notify is a notification the fake sent, and the shop's answer.
type Notify struct {
	URL    string
	Form   url.Values
	Status int    // the shop's HTTP status (0 when it did not answer)
	Body   string // the shop's answer: "success" when taken
	Err    error
}

// Acked reports whether the shop took it (answered "success").
func (n Notify) Acked() bool { return n.Err == nil && n.Body == "success" }

// notifyForm is the notification of t's state now, of refund r if not nil
// (https://opendocs.alipay.com/open/194/103296), signed. f.mu held.
func (f *Fake) notifyForm(t *trade, r *refund) url.Values {
	now := f.now()
	v := url.Values{}
	set := func(k, s string) {
		if s != "" {
			v.Set(k, s)
		}
	}
	nid := make([]byte, 16)
	_, _ = rand.Read(nid)
	set("notify_time", now.In(beijing).Format(timeLayout))
	set("notify_type", "trade_status_sync")
	set("notify_id", hex.EncodeToString(nid))
	set("app_id", AppID)
	set("charset", "utf-8")
	set("version", "1.0")
	set("trade_no", t.tradeNo)
	set("out_trade_no", t.outTradeNo)
	set("buyer_id", "2088101117955611")
	set("buyer_logon_id", "159****5620")
	set("seller_id", sellerID)
	set("trade_status", t.status)
	set("total_amount", yuan(t.totalCents))
	set("subject", t.subject)
	set("gmt_create", t.created.In(beijing).Format(timeLayout))
	if !t.paid.IsZero() {
		set("receipt_amount", yuan(t.totalCents))
		set("invoice_amount", yuan(t.totalCents))
		set("buyer_pay_amount", yuan(t.totalCents))
		set("point_amount", "0.00")
		set("gmt_payment", t.paid.In(beijing).Format(timeLayout))
		set("fund_bill_list", `[{"amount":"`+yuan(t.totalCents)+`","fundChannel":"ALIPAYACCOUNT"}]`)
	}
	if r != nil {
		set("refund_fee", yuan(t.refundedCents))
		set("gmt_refund", r.at.In(beijing).Format("2006-01-02 15:04:05.000"))
		set("out_biz_no", r.id)
	}
	if t.status == TradeClosed {
		set("gmt_close", t.closedAt.In(beijing).Format(timeLayout))
	}
	return f.sign(v, f.alipayKey)
}

// sign signs a notification with k: sign_type is RSA2, and the sign is over every field but sign and
// sign_type (https://opendocs.alipay.com/common/02mse7).
func (f *Fake) sign(v url.Values, k *rsa.PrivateKey) url.Values {
	out := url.Values{}
	for key, vs := range v {
		if key != "sign" && key != "sign_type" {
			out[key] = append([]string(nil), vs...)
		}
	}
	out.Set("sign", rsa2Sign(k, []byte(signingString(out))))
	out.Set("sign_type", "RSA2")
	return out
}

// Sign signs a notification form with Alipay's key: a test changes a genuine one (another amount) and
// signs it again, as Alipay would have.
func (f *Fake) Sign(form url.Values) url.Values { return f.sign(form, f.alipayKey) }

// Forge signs a notification form with a key that is not Alipay's.
func (f *Fake) Forge(form url.Values) url.Values { return f.sign(form, f.otherKey) }

// NotifyForm is the notification Alipay would send now of the trade of outTradeNo (signed).
func (f *Fake) NotifyForm(outTradeNo string) (url.Values, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.existing(outTradeNo)
	if t == nil {
		return nil, fmt.Errorf("alipayfake: no trade %s", outTradeNo)
	}
	return f.notifyForm(t, nil), nil
}

// Post sends a notification form to notifyURL (through Deliver) as Alipay does, and records it.
func (f *Fake) Post(ctx context.Context, notifyURL string, form url.Values) Notify {
	return f.send(ctx, notifyURL, form)
}

// Sent answers the notifications sent so far, oldest first (waiting for those under way).
func (f *Fake) Sent() []Notify {
	f.pending.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Notify(nil), f.sent...)
}

// Resend sends again, freshly timed and signed as Alipay's retries are (the same notify_id), every
// notification of trade outTradeNo the shop did not take; it answers how many it sent.
func (f *Fake) Resend(ctx context.Context, outTradeNo string) int {
	n := 0
	sent := f.Sent()
	taken := map[string]bool{} // notify_id → taken, once any of its sends was
	for _, s := range sent {
		if s.Acked() {
			taken[s.Form.Get("notify_id")] = true
		}
	}
	for _, s := range sent {
		id := s.Form.Get("notify_id")
		if taken[id] || s.Form.Get("out_trade_no") != outTradeNo {
			continue
		}
		taken[id] = true // once per call
		form := url.Values{}
		for k, v := range s.Form {
			form[k] = v
		}
		f.mu.Lock()
		form.Set("notify_time", f.now().In(beijing).Format(timeLayout))
		form = f.sign(form, f.alipayKey)
		f.mu.Unlock()
		f.send(ctx, s.URL, form)
		n++
	}
	return n
}

func (f *Fake) sendLater(notifyURL string, form url.Values) {
	f.pending.Add(1)
	go func() {
		defer f.pending.Done()
		f.send(context.Background(), notifyURL, form)
	}()
}

func (f *Fake) send(ctx context.Context, notifyURL string, form url.Values) Notify {
	n := Notify{URL: notifyURL, Form: form}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, notifyURL, strings.NewReader(form.Encode()))
	if err == nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
		deliver := f.Deliver
		if deliver == nil {
			deliver = (&http.Client{Timeout: 5 * time.Second}).Do
		}
		var resp *http.Response
		if resp, err = deliver(req); err == nil {
			var b bytes.Buffer
			_, _ = b.ReadFrom(resp.Body)
			resp.Body.Close()
			n.Status, n.Body = resp.StatusCode, strings.TrimSpace(b.String())
		}
	}
	n.Err = err
	f.mu.Lock()
	f.sent = append(f.sent, n)
	f.mu.Unlock()
	return n
}
