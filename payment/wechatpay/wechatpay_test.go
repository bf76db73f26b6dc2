package wechatpay_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"seckill/payment"
	"seckill/payment/wechatpay"
	"seckill/payment/wechatpay/wechatfake"
)

const notifyURL = "https://shop.example/api/payments/notify/wechat"

// shopStub takes the fake's callbacks for the shop (204), counting them.
type shopStub struct{ n atomic.Int32 }

func (s *shopStub) RoundTrip(r *http.Request) (*http.Response, error) {
	s.n.Add(1)
	if r.URL.String() != notifyURL {
		return &http.Response{StatusCode: 404, Body: http.NoBody, Request: r}, nil
	}
	return &http.Response{StatusCode: 204, Body: http.NoBody, Request: r}, nil
}

func setup(t *testing.T, opts wechatfake.Options) (*wechatfake.Fake, *wechatpay.Provider) {
	t.Helper()
	if opts.NotifyClient == nil {
		opts.NotifyClient = &http.Client{Transport: &shopStub{}}
	}
	f := wechatfake.Start(t, opts)
	p, err := wechatpay.New(f.Config(notifyURL), f.Client())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return f, p
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

func req(no string, fen int64) payment.Request {
	return payment.Request{OrderNo: "O" + no, PaymentNo: no, AmountCents: fen, Subject: "秒杀 iPhone 17 Pro",
		ExpiresAt: time.Now().Add(15 * time.Minute)}
}

func mustStatus(t *testing.T, what string, got string, err error, want string) {
	t.Helper()
	if err != nil || got != want {
		t.Fatalf("%s = %q, %v; want %q", what, got, err, want)
	}
}

func lastNotify(t *testing.T, f *wechatfake.Fake) wechatfake.Notification {
	t.Helper()
	sent := f.Sent()
	if len(sent) == 0 {
		t.Fatal("the fake sent no callback")
	}
	return sent[len(sent)-1]
}

// The whole story, through the SDK, in both verification modes: create, pay, the callback, close after
// paying, refund (retried), the refund's callback.
func TestNativePaymentStory(t *testing.T) {
	for _, mode := range []struct {
		name string
		opts wechatfake.Options
	}{{"platform certificate", wechatfake.Options{}}, {"public key", wechatfake.Options{PublicKeyMode: true}}} {
		t.Run(mode.name, func(t *testing.T) {
			f, p := setup(t, mode.opts)
			c := ctx(t)
			r := req("PAY_20261126_0001", 12345)
			created, err := p.Create(c, r)
			if err != nil {
				t.Fatal(err)
			}
			if created.ID != r.PaymentNo || !strings.HasPrefix(created.PayURL, "weixin://wxpay/bizpayurl?pr=") {
				t.Fatalf("created %+v", created)
			}
			again, err := p.Create(c, r)
			if err != nil || again != created {
				t.Fatalf("asked again: %+v, %v; want the same %+v", again, err, created)
			}
			total, expire, _ := f.Trade(r.PaymentNo)
			if total != 12345 || !expire.Equal(r.ExpiresAt.Truncate(time.Second)) {
				t.Fatalf("the fake holds %d fen until %v; want 12345 until %v", total, expire, r.ExpiresAt)
			}
			st, err := p.Query(c, r.PaymentNo)
			mustStatus(t, "query before paying", st, err, payment.StatusOpen)

			if err := f.Pay(c, r.PaymentNo); err != nil {
				t.Fatal(err)
			}
			st, err = p.Query(c, r.PaymentNo)
			mustStatus(t, "query after paying", st, err, payment.StatusPaid)
			n, err := p.ReadNotify(c, lastNotify(t, f).Header, lastNotify(t, f).Body)
			if err != nil {
				t.Fatal(err)
			}
			if n.PaymentID != r.PaymentNo || n.AmountCents != 12345 || n.Status != payment.StatusPaid || !n.Fresh(time.Now()) {
				t.Fatalf("notification %+v", n)
			}
			st, err = p.Close(c, r.PaymentNo)
			mustStatus(t, "close after paying", st, err, payment.StatusPaid)

			rr := payment.RefundRequest{RefundID: "RF_" + r.PaymentNo, AmountCents: 12345, Reason: "订单已取消：库存不足"}
			st, err = p.Refund(c, r.PaymentNo, rr)
			mustStatus(t, "refund", st, err, payment.StatusRefunding)
			st, err = p.Refund(c, r.PaymentNo, rr)
			mustStatus(t, "refund retried", st, err, payment.StatusRefunding)
			if k, fen := f.Refunds(r.PaymentNo); k != 1 || fen != 12345 {
				t.Fatalf("the fake made %d refunds of %d fen; want one of 12345", k, fen)
			}
			if err := f.CompleteRefund(c, rr.RefundID); err != nil {
				t.Fatal(err)
			}
			n, err = p.ReadNotify(c, lastNotify(t, f).Header, lastNotify(t, f).Body)
			if err != nil {
				t.Fatal(err)
			}
			if n.PaymentID != r.PaymentNo || n.RefundID != rr.RefundID || n.AmountCents != 12345 || n.Status != payment.StatusRefunded {
				t.Fatalf("refund notification %+v", n)
			}
			st, err = p.Refund(c, r.PaymentNo, rr)
			mustStatus(t, "refund after it is done", st, err, payment.StatusRefunded)
			st, err = p.RefundStatus(c, rr.RefundID)
			mustStatus(t, "refund status", st, err, payment.StatusRefunded)
			if k, _ := f.Refunds(r.PaymentNo); k != 1 {
				t.Fatalf("%d refunds; want 1", k)
			}
			st, err = p.Query(c, r.PaymentNo)
			mustStatus(t, "query of a refunded payment (REFUND)", st, err, payment.StatusPaid)

			certs := f.Calls("GET /v3/certificates")
			if mode.opts.PublicKeyMode && certs != 0 || !mode.opts.PublicKeyMode && certs != 1 {
				t.Fatalf("%d certificate downloads", certs)
			}
		})
	}
}

func TestCallbacksNotGenuineOrStale(t *testing.T) {
	f, p := setup(t, wechatfake.Options{})
	c := ctx(t)
	r := req("PAY_NOTIFY_01", 500)
	if _, err := p.Create(c, r); err != nil {
		t.Fatal(err)
	}
	if err := f.Pay(c, r.PaymentNo); err != nil {
		t.Fatal(err)
	}
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	for _, tc := range []struct {
		name string
		opts wechatfake.NotifyOptions
	}{
		{"signed with another key", wechatfake.NotifyOptions{Key: other}},
		{"signed with another key, unknown serial", wechatfake.NotifyOptions{Key: other, Serial: "5157F09EFDC096DE15EBE81A47057A7232F1B8E1"}},
		{"replayed ten minutes later", wechatfake.NotifyOptions{At: time.Now().Add(-10 * time.Minute)}},
		{"from the future", wechatfake.NotifyOptions{At: time.Now().Add(10 * time.Minute)}},
	} {
		n, err := f.TransactionNotify(r.PaymentNo, tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := p.ReadNotify(c, n.Header, n.Body); err == nil {
			t.Errorf("%s: read as %+v", tc.name, got)
		}
	}
	genuine := lastNotify(t, f)
	tampered := []byte(strings.Replace(string(genuine.Body), `"TRANSACTION.SUCCESS"`, `"TRANSACTION.SUCCESS" `, 1))
	if _, err := p.ReadNotify(c, genuine.Header, tampered); err == nil {
		t.Error("a body changed after signing was read")
	}
	noSig := genuine.Header.Clone()
	noSig.Del("Wechatpay-Signature")
	if _, err := p.ReadNotify(c, noSig, genuine.Body); err == nil {
		t.Error("a callback without a signature was read")
	}
	// Another amount, genuinely signed: read as it is, for the shop to compare with the payment's.
	n, err := f.TransactionNotify(r.PaymentNo, wechatfake.NotifyOptions{Total: 1})
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.ReadNotify(c, n.Header, n.Body)
	if err != nil || got.AmountCents != 1 || got.Status != payment.StatusPaid {
		t.Fatalf("another amount read as %+v, %v", got, err)
	}
}

func TestMerchantSignedWithAnotherKey(t *testing.T) {
	for _, pub := range []bool{false, true} {
		f := wechatfake.Start(t, wechatfake.Options{PublicKeyMode: pub})
		cfg := f.Config(notifyURL)
		other, _ := rsa.GenerateKey(rand.Reader, 2048)
		cfg.MchKeyPEM = wechatfake.PrivateKeyPEM(other)
		p, err := wechatpay.New(cfg, f.Client())
		if err != nil {
			t.Fatal(err)
		}
		defer p.Stop()
		_, err = p.Create(ctx(t), req("PAY_WRONGKEY_1", 100))
		if !errors.Is(err, payment.ErrRefused) || !errors.Is(err, payment.ErrUnavailable) || !strings.Contains(err.Error(), "SIGN_ERROR") {
			t.Fatalf("public key %v: %v; want a refusal, 401 SIGN_ERROR", pub, err)
		}
		if f.TradeState("PAY_WRONGKEY_1") != "" {
			t.Fatal("the fake made the trade anyway")
		}
	}
}

func TestAnswerSignedWithAnotherKey(t *testing.T) {
	for _, pub := range []bool{false, true} {
		f, p := setup(t, wechatfake.Options{PublicKeyMode: pub})
		c := ctx(t)
		if _, err := p.Create(c, req("PAY_GOOD_ANSWER", 100)); err != nil {
			t.Fatal(err)
		}
		other, _ := rsa.GenerateKey(rand.Reader, 2048)
		f.SignAnswersWith(other)
		if _, err := p.Create(c, req("PAY_FORGED_ANSWER", 100)); !errors.Is(err, payment.ErrUnavailable) || errors.Is(err, payment.ErrRefused) {
			t.Fatalf("public key %v: create answered by another key: %v; want ErrUnavailable", pub, err)
		}
		if st, err := p.Query(c, "PAY_GOOD_ANSWER"); !errors.Is(err, payment.ErrUnavailable) {
			t.Fatalf("public key %v: query answered by another key: %q, %v; want ErrUnavailable", pub, st, err)
		}
	}
}

func TestCloseMeetsThePayerPaying(t *testing.T) {
	f, p := setup(t, wechatfake.Options{})
	c := ctx(t)
	r := req("PAY_USERPAYING1", 999)
	if _, err := p.Create(c, r); err != nil {
		t.Fatal(err)
	}
	if err := f.Paying(r.PaymentNo); err != nil {
		t.Fatal(err)
	}
	st, err := p.Close(c, r.PaymentNo)
	if !errors.Is(err, wechatpay.ErrUserPaying) || !errors.Is(err, payment.ErrUnavailable) || st != "" {
		t.Fatalf("close while paying = %q, %v; want ErrUserPaying (an ErrUnavailable)", st, err)
	}
	st, err = p.Query(c, r.PaymentNo)
	mustStatus(t, "query while paying", st, err, payment.StatusOpen)
	if err := f.Pay(c, r.PaymentNo); err != nil {
		t.Fatal(err)
	}
	st, err = p.Close(c, r.PaymentNo)
	mustStatus(t, "close again once paid", st, err, payment.StatusPaid)
}

func TestCloseAnOpenPayment(t *testing.T) {
	f, p := setup(t, wechatfake.Options{})
	c := ctx(t)
	r := req("PAY_CLOSE_0001", 100)
	if _, err := p.Create(c, r); err != nil {
		t.Fatal(err)
	}
	st, err := p.Close(c, r.PaymentNo)
	mustStatus(t, "close", st, err, payment.StatusClosed)
	st, err = p.Close(c, r.PaymentNo)
	mustStatus(t, "close again (ORDER_CLOSED)", st, err, payment.StatusClosed)
	if err := f.Pay(c, r.PaymentNo); !errors.Is(err, wechatfake.ErrNotPayable) {
		t.Fatalf("paying a closed payment: %v", err)
	}
	if _, err := p.Create(c, r); !errors.Is(err, payment.ErrRefused) {
		t.Fatalf("create again once closed: %v; want a refusal", err)
	}
	if _, err := p.Refund(c, r.PaymentNo, payment.RefundRequest{RefundID: "RF_CLOSED", AmountCents: 100}); !errors.Is(err, payment.ErrNotRefundable) {
		t.Fatalf("refund of a closed payment: %v; want ErrNotRefundable", err)
	}
	if n := f.Calls("POST /v3/refund/domestic/refunds"); n != 0 {
		t.Fatalf("%d refund requests for a payment never paid", n)
	}
}

func TestUnknownPayment(t *testing.T) {
	_, p := setup(t, wechatfake.Options{})
	c := ctx(t)
	if _, err := p.Query(c, "PAY_NEVER_MADE"); !errors.Is(err, payment.ErrNotFound) {
		t.Fatalf("query: %v", err)
	}
	if _, err := p.Close(c, "PAY_NEVER_MADE"); !errors.Is(err, payment.ErrNotFound) {
		t.Fatalf("close: %v", err)
	}
	if _, err := p.Refund(c, "PAY_NEVER_MADE", payment.RefundRequest{RefundID: "RF_1", AmountCents: 1}); !errors.Is(err, payment.ErrNotFound) {
		t.Fatalf("refund: %v", err)
	}
	if _, err := p.RefundStatus(c, "RF_NEVER_MADE"); !errors.Is(err, payment.ErrNotFound) {
		t.Fatalf("refund status: %v", err)
	}
	if _, err := p.Query(c, "bad/../no"); !errors.Is(err, payment.ErrNotFound) {
		t.Fatalf("query of a malformed number: %v", err)
	}
}

func TestAmountsInFen(t *testing.T) {
	f, p := setup(t, wechatfake.Options{})
	c := ctx(t)
	for no, fen := range map[string]int64{"PAY_EDGE_ONE_FEN": 1, "PAY_EDGE_MAX_FEN": wechatpay.MaxFen} {
		r := req(no, fen)
		if _, err := p.Create(c, r); err != nil {
			t.Fatalf("%d fen: %v", fen, err)
		}
		if err := f.Pay(c, r.PaymentNo); err != nil {
			t.Fatal(err)
		}
		n, err := p.ReadNotify(c, lastNotify(t, f).Header, lastNotify(t, f).Body)
		if err != nil || n.AmountCents != fen {
			t.Fatalf("%d fen paid, read as %+v, %v", fen, n, err)
		}
		st, err := p.Refund(c, r.PaymentNo, payment.RefundRequest{RefundID: "RF_" + r.PaymentNo, AmountCents: fen})
		mustStatus(t, "refund", st, err, payment.StatusRefunding)
		if _, got := f.Refunds(r.PaymentNo); got != fen {
			t.Fatalf("refunded %d fen; want %d", got, fen)
		}
	}
	before := f.Calls("POST /v3/pay/transactions/native")
	for _, fen := range []int64{0, -1, wechatpay.MaxFen + 1, payment.MaxCents} {
		if _, err := p.Create(c, req("PAY_BAD_AMOUNT", fen)); !errors.Is(err, payment.ErrRefused) {
			t.Fatalf("%d fen: %v; want a refusal", fen, err)
		}
	}
	// A subject longer than WeChat Pay's 127 bytes is cut at a character's boundary; none names the order.
	long := req("PAY_LONG_SUBJECT", 100)
	long.Subject = strings.Repeat("限量秒杀", 20)
	if _, err := p.Create(c, long); err != nil {
		t.Fatalf("a long subject: %v", err)
	}
	none := req("PAY_NO_SUBJECT", 100)
	none.Subject = ""
	if _, err := p.Create(c, none); err != nil {
		t.Fatalf("no subject: %v", err)
	}
	if _, err := p.Create(c, req("bad-no", 100)); !errors.Is(err, payment.ErrRefused) {
		t.Fatalf("a bad payment number: %v", err)
	}
	if after := f.Calls("POST /v3/pay/transactions/native"); after != before+2 {
		t.Fatalf("%d prepay requests; want the 2 good ones only (bad amounts and numbers refused before asking)", after-before)
	}
	for _, fen := range []int64{0, -5} {
		if _, err := p.Refund(c, "PAY_EDGE_ONE_FEN", payment.RefundRequest{RefundID: "RF_BAD", AmountCents: fen}); !errors.Is(err, payment.ErrNotRefundable) {
			t.Fatalf("refund of %d fen: %v", fen, err)
		}
	}
}

func TestExpiry(t *testing.T) {
	f, p := setup(t, wechatfake.Options{})
	c := ctx(t)
	r := req("PAY_EXPIRES_001", 100)
	r.ExpiresAt = time.Now().Add(2 * time.Minute)
	if _, err := p.Create(c, r); err != nil {
		t.Fatal(err)
	}
	f.Advance(3 * time.Minute)
	if err := f.Pay(c, r.PaymentNo); !errors.Is(err, wechatfake.ErrNotPayable) {
		t.Fatalf("paid after time_expire: %v", err)
	}
	st, err := p.Close(c, r.PaymentNo)
	mustStatus(t, "close after time_expire", st, err, payment.StatusClosed)
}

func TestProviderDown(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(f *wechatfake.Fake)
	}{
		{"503", func(f *wechatfake.Fake) { f.SetMode(wechatfake.Unavailable) }},
		{"no answer", func(f *wechatfake.Fake) { f.SetMode(wechatfake.NoAnswer) }},
		{"slow", func(f *wechatfake.Fake) { f.SetDelay(3 * time.Second) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := wechatfake.Start(t, wechatfake.Options{PublicKeyMode: true})
			hc := f.Client()
			hc.Timeout = 300 * time.Millisecond
			p, err := wechatpay.New(f.Config(notifyURL), hc)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Stop()
			tc.set(f)
			start := time.Now()
			_, err = p.Create(ctx(t), req("PAY_DOWN_00001", 100))
			if !errors.Is(err, payment.ErrUnavailable) || errors.Is(err, payment.ErrRefused) {
				t.Fatalf("create: %v; want ErrUnavailable", err)
			}
			_, err = p.Query(ctx(t), "PAY_DOWN_00001")
			if !errors.Is(err, payment.ErrUnavailable) {
				t.Fatalf("query: %v; want ErrUnavailable", err)
			}
			if d := time.Since(start); d > 4*time.Second {
				t.Fatalf("took %v", d)
			}
		})
	}
}

// Starting while WeChat Pay is unreachable: New succeeds, calls answer ErrUnavailable, and the
// certificates are downloaded once it answers.
func TestStartsWhileWeChatIsDown(t *testing.T) {
	f := wechatfake.Start(t, wechatfake.Options{NotifyClient: &http.Client{Transport: &shopStub{}}})
	f.SetMode(wechatfake.Unavailable)
	p, err := wechatpay.New(f.Config(notifyURL), f.Client())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	c := ctx(t)
	if _, err := p.Create(c, req("PAY_LAZY_00001", 100)); !errors.Is(err, payment.ErrUnavailable) {
		t.Fatalf("create while down: %v", err)
	}
	if _, err := p.ReadNotify(c, http.Header{}, []byte(`{}`)); err == nil {
		t.Fatal("a callback was read without certificates")
	}
	f.SetMode(wechatfake.Up)
	if _, err := p.Create(c, req("PAY_LAZY_00001", 100)); err != nil {
		t.Fatalf("create once up: %v", err)
	}
	if n := f.Calls("GET /v3/certificates"); n != 1 {
		t.Fatalf("%d certificate downloads", n)
	}
}

func TestConfigCheck(t *testing.T) {
	errs := wechatpay.Config{}.Check()
	all := ""
	for _, e := range errs {
		all += e.Error() + "\n"
	}
	for _, env := range []string{"WECHAT_PAY_MCH_ID", "WECHAT_PAY_APP_ID", "WECHAT_PAY_MCH_SERIAL", "WECHAT_PAY_MCH_KEY", "WECHAT_PAY_API_V3_KEY", "BASE_URL"} {
		if !strings.Contains(all, env) {
			t.Errorf("an empty config's problems do not name %s:\n%s", env, all)
		}
	}
	f := wechatfake.Start(t, wechatfake.Options{PublicKeyMode: true})
	good := f.Config(notifyURL)
	if errs := good.Check(); len(errs) != 0 {
		t.Fatalf("a good config: %v", errs)
	}
	for _, tc := range []struct {
		env    string
		change func(c *wechatpay.Config)
	}{
		{"WECHAT_PAY_MCH_KEY", func(c *wechatpay.Config) {
			c.MchKeyPEM = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"
		}},
		{"WECHAT_PAY_API_V3_KEY", func(c *wechatpay.Config) { c.APIv3Key = "short" }},
		{"WECHAT_PAY_PUBLIC_KEY_ID", func(c *wechatpay.Config) { c.PublicKeyID = "" }},
		{"WECHAT_PAY_PUBLIC_KEY", func(c *wechatpay.Config) { c.PublicKeyPEM = "not a key" }},
		{"WECHAT_PAY_MCH_SERIAL", func(c *wechatpay.Config) { c.MchSerial = "not hex" }},
		{"BASE_URL", func(c *wechatpay.Config) { c.NotifyURL = "http://shop.example/api/payments/notify/wechat" }},
		{"BASE_URL", func(c *wechatpay.Config) { c.NotifyURL = notifyURL + "?x=1" }},
	} {
		c := good
		tc.change(&c)
		errs := c.Check()
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.env) {
			t.Errorf("%s: %v", tc.env, errs)
		}
		if _, err := wechatpay.New(c, nil); err == nil {
			t.Errorf("%s: New took a bad config", tc.env)
		}
	}
}

func TestAck(t *testing.T) {
	_, p := setup(t, wechatfake.Options{PublicKeyMode: true})
	if st, _, body := p.Ack(true); st != http.StatusNoContent || len(body) != 0 {
		t.Fatalf("taken: %d %s", st, body)
	}
	st, ct, body := p.Ack(false)
	var b struct{ Code, Message string }
	if st < 400 || ct != "application/json" || json.Unmarshal(body, &b) != nil || b.Code != "FAIL" || b.Message == "" {
		t.Fatalf("not taken: %d %s %s", st, ct, body)
	}
}

// A refund that ends ABNORMAL or CLOSED: its callback is read but changes nothing; asked again, the
// refund answers ErrNotRefundable, for a person to finish it in the merchant console.
func TestRefundThatFails(t *testing.T) {
	for _, end := range []string{"ABNORMAL", "CLOSED"} {
		f, p := setup(t, wechatfake.Options{})
		c := ctx(t)
		r := req("PAY_REFUND_"+end, 300)
		if _, err := p.Create(c, r); err != nil {
			t.Fatal(err)
		}
		if err := f.Pay(c, r.PaymentNo); err != nil {
			t.Fatal(err)
		}
		rr := payment.RefundRequest{RefundID: "RF_" + end, AmountCents: 300, TotalCents: 300}
		st, err := p.Refund(c, r.PaymentNo, rr)
		mustStatus(t, "refund", st, err, payment.StatusRefunding)
		if err := f.FailRefund(c, rr.RefundID, end); err != nil {
			t.Fatal(err)
		}
		n, err := p.ReadNotify(c, lastNotify(t, f).Header, lastNotify(t, f).Body)
		if err != nil || n.Status != wechatpay.StatusOther || n.RefundID != rr.RefundID {
			t.Fatalf("%s callback read as %+v, %v", end, n, err)
		}
		if _, err := p.Refund(c, r.PaymentNo, rr); !errors.Is(err, payment.ErrNotRefundable) {
			t.Fatalf("%s refund asked again: %v", end, err)
		}
		if _, err := p.RefundStatus(c, rr.RefundID); !errors.Is(err, payment.ErrNotRefundable) {
			t.Fatalf("%s refund status: %v", end, err)
		}
		// Another total than the payment's is refused before asking.
		if _, err := p.Refund(c, r.PaymentNo, payment.RefundRequest{RefundID: "RF_OTHER", AmountCents: 1, TotalCents: 301}); !errors.Is(err, payment.ErrNotRefundable) {
			t.Fatalf("refund with another total: %v", err)
		}
	}
}

// With InstantRefunds the fake finishes a refund by itself a moment after answering PROCESSING.
func TestInstantRefund(t *testing.T) {
	f, p := setup(t, wechatfake.Options{InstantRefunds: true})
	c := ctx(t)
	r := req("PAY_INSTANT_RF", 700)
	if _, err := p.Create(c, r); err != nil {
		t.Fatal(err)
	}
	if err := f.Pay(c, r.PaymentNo); err != nil {
		t.Fatal(err)
	}
	rr := payment.RefundRequest{RefundID: "RF_INSTANT", AmountCents: 700}
	if _, err := p.Refund(c, r.PaymentNo, rr); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, err := p.RefundStatus(c, rr.RefundID)
		if err == nil && st == payment.StatusRefunded {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("refund status %q, %v; want refunded", st, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for time.Now().Before(deadline) && len(f.Sent()) < 2 {
		time.Sleep(20 * time.Millisecond)
	}
	n, err := p.ReadNotify(c, lastNotify(t, f).Header, lastNotify(t, f).Body)
	if err != nil || n.Status != payment.StatusRefunded || n.RefundID != rr.RefundID {
		t.Fatalf("refund callback %+v, %v", n, err)
	}
}
