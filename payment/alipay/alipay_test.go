package alipay_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"seckill/payment"
	"seckill/payment/alipay"
	"seckill/payment/alipay/alipayfake"
)

const notifyURL = "https://shop.example/api/payments/notify/alipay"

// shop is the shop's side: the provider, and a notify handler that reads Alipay's notifications with it
// and answers as the shop does.
type shop struct {
	f *alipayfake.Fake
	p *alipay.Provider

	mu   sync.Mutex
	got  []payment.Notification
	errs []error
}

func setup(t *testing.T, opts alipayfake.Options) *shop {
	t.Helper()
	f := alipayfake.Start(t, opts)
	p, err := alipay.New(f.Config(notifyURL), f.HTTPClient())
	if err != nil {
		t.Fatal(err)
	}
	s := &shop{f: f, p: p}
	f.Deliver = alipayfake.DeliverTo(http.HandlerFunc(s.notify))
	return s
}

func (s *shop) notify(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	n, err := s.p.ReadNotify(r.Context(), r.Header, body)
	s.mu.Lock()
	if err != nil {
		s.errs = append(s.errs, err)
	} else {
		s.got = append(s.got, n)
	}
	s.mu.Unlock()
	status, ct, b := s.p.Ack(err == nil)
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func (s *shop) notifications() []payment.Notification {
	s.f.Sent() // waits for those under way
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]payment.Notification(nil), s.got...)
}

func (s *shop) notifyErrors() []error {
	s.f.Sent()
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]error(nil), s.errs...)
}

func req(no string, cents int64) payment.Request {
	return payment.Request{OrderNo: "O" + no, PaymentNo: no, AmountCents: cents, Subject: "绿茶 Green tea 500g", ExpiresAt: time.Now().Add(15 * time.Minute)}
}

func TestPaymentLife(t *testing.T) {
	for _, mode := range []struct {
		name string
		opts alipayfake.Options
	}{{"public key", alipayfake.Options{}}, {"certificates", alipayfake.Options{CertMode: true}}} {
		t.Run(mode.name, func(t *testing.T) {
			ctx := context.Background()
			s := setup(t, mode.opts)
			no := "P2026112600001"

			created, err := s.p.Create(ctx, req(no, 12345))
			if err != nil {
				t.Fatal(err)
			}
			if created.ID != no || !strings.HasPrefix(created.PayURL, "https://qr.alipay.com/") {
				t.Fatalf("created %+v", created)
			}
			tr, _ := s.f.Trade(no)
			if tr.TotalCents != 12345 || tr.Subject != "绿茶 Green tea 500g" || tr.NotifyURL != notifyURL || tr.QRCode != created.PayURL {
				t.Fatalf("the fake has %+v", tr)
			}

			// Asked again: the same trade, the same QR code.
			again, err := s.p.Create(ctx, req(no, 12345))
			if err != nil || again != created {
				t.Fatalf("again: %+v %v, want %+v", again, err, created)
			}
			// The same number for another amount is Alipay's ACQ.CONTEXT_INCONSISTENT.
			if _, err := s.p.Create(ctx, req(no, 12346)); !errors.Is(err, payment.ErrRefused) || !strings.Contains(err.Error(), "ACQ.CONTEXT_INCONSISTENT") {
				t.Fatalf("another amount: %v", err)
			}

			// Not scanned: the trade does not exist at Alipay; closing it does not stop the QR code.
			if _, err := s.p.Query(ctx, no); !errors.Is(err, payment.ErrNotFound) {
				t.Fatalf("query before scan: %v", err)
			}
			if _, err := s.p.Close(ctx, no); !errors.Is(err, payment.ErrNotFound) {
				t.Fatalf("close before scan: %v", err)
			}
			if err := s.f.Scan(no); err != nil {
				t.Fatal(err)
			}
			if st, err := s.p.Query(ctx, no); err != nil || st != payment.StatusOpen {
				t.Fatalf("query after scan: %q %v", st, err)
			}

			before := time.Now()
			if err := s.f.Pay(no); err != nil {
				t.Fatal(err)
			}
			if st, err := s.p.Query(ctx, no); err != nil || st != payment.StatusPaid {
				t.Fatalf("query after pay: %q %v", st, err)
			}
			ns := s.notifications()
			if len(ns) != 1 || ns[0].PaymentID != no || ns[0].AmountCents != 12345 || ns[0].Status != payment.StatusPaid || ns[0].RefundID != "" {
				t.Fatalf("notifications %+v (errors %v)", ns, s.notifyErrors())
			}
			if at := time.Unix(ns[0].At, 0); at.Before(before.Add(-time.Second)) || !ns[0].Fresh(time.Now()) {
				t.Fatalf("notify at %v, paid at %v", at, before)
			}
			if sent := s.f.Sent(); len(sent) != 1 || !sent[0].Acked() {
				t.Fatalf("the shop's answer to Alipay: %+v", sent)
			}

			// Paid first: close answers paid; the number cannot be precreated again.
			if st, err := s.p.Close(ctx, no); err != nil || st != payment.StatusPaid {
				t.Fatalf("close after pay: %q %v", st, err)
			}
			if _, err := s.p.Create(ctx, req(no, 12345)); !errors.Is(err, alipay.ErrPaidAlready) {
				t.Fatalf("create after pay: %v", err)
			}

			// Refund, asked twice: one refund.
			r := payment.RefundRequest{RefundID: "R" + no, AmountCents: 12345, Reason: "order cancelled"}
			for i := 0; i < 2; i++ {
				if st, err := s.p.Refund(ctx, no, r); err != nil || st != payment.StatusRefunded {
					t.Fatalf("refund %d: %q %v", i, st, err)
				}
			}
			if tr, _ := s.f.Trade(no); tr.Refunds != 1 || tr.RefundedCents != 12345 || tr.Status != alipayfake.TradeClosed {
				t.Fatalf("the fake has %+v", tr)
			}
			ns = s.notifications()
			if len(ns) != 2 || ns[1].Status != payment.StatusRefunded || ns[1].RefundID != r.RefundID || ns[1].AmountCents != 12345 || ns[1].PaymentID != no {
				t.Fatalf("refund notification %+v (errors %v)", ns, s.notifyErrors())
			}
			// Fully refunded, the trade is TRADE_CLOSED: closed to the shop (see tradeStatus).
			if st, err := s.p.Query(ctx, no); err != nil || st != payment.StatusClosed {
				t.Fatalf("query after refund: %q %v", st, err)
			}
			if errs := s.notifyErrors(); len(errs) != 0 {
				t.Fatalf("notify errors %v", errs)
			}
		})
	}
}

func TestCloseWaitingAndExpiry(t *testing.T) {
	ctx := context.Background()
	s := setup(t, alipayfake.Options{})

	// Scanned, not paid: close closes it, and it can no longer be paid.
	if _, err := s.p.Create(ctx, req("P_close_1", 100)); err != nil {
		t.Fatal(err)
	}
	if err := s.f.Scan("P_close_1"); err != nil {
		t.Fatal(err)
	}
	if st, err := s.p.Close(ctx, "P_close_1"); err != nil || st != payment.StatusClosed {
		t.Fatalf("close: %q %v", st, err)
	}
	if err := s.f.Pay("P_close_1"); err == nil {
		t.Fatal("a closed trade was paid")
	}
	if st, err := s.p.Close(ctx, "P_close_1"); err != nil || st != payment.StatusClosed {
		t.Fatalf("close again: %q %v", st, err)
	}
	if _, err := s.p.Create(ctx, req("P_close_1", 100)); !errors.Is(err, alipay.ErrClosedAlready) {
		t.Fatalf("create after close: %v", err)
	}
	if st, err := s.p.Refund(ctx, "P_close_1", payment.RefundRequest{RefundID: "R1", AmountCents: 100}); !errors.Is(err, payment.ErrNotRefundable) {
		t.Fatalf("refund of a closed trade: %q %v", st, err)
	}

	// Scanned, then time_expire: closed, and Alipay says so (a notification the shop takes for nothing).
	if _, err := s.p.Create(ctx, req("P_expire_1", 100)); err != nil {
		t.Fatal(err)
	}
	_ = s.f.Scan("P_expire_1")
	if err := s.f.Expire("P_expire_1"); err != nil {
		t.Fatal(err)
	}
	if st, err := s.p.Query(ctx, "P_expire_1"); err != nil || st != payment.StatusClosed {
		t.Fatalf("query after expiry: %q %v", st, err)
	}
	ns := s.notifications()
	if len(ns) != 1 || ns[0].Status != payment.StatusClosed || ns[0].PaymentID != "P_expire_1" {
		t.Fatalf("notifications %+v", ns)
	}

	// Never scanned, then time_expire: the QR code is dead, and the trade never existed.
	if _, err := s.p.Create(ctx, req("P_expire_2", 100)); err != nil {
		t.Fatal(err)
	}
	s.f.Advance(16 * time.Minute)
	if err := s.f.Scan("P_expire_2"); err == nil {
		t.Fatal("an expired QR code was scanned")
	}
	if _, err := s.p.Query(ctx, "P_expire_2"); !errors.Is(err, payment.ErrNotFound) {
		t.Fatalf("query of an expired QR code: %v", err)
	}
}

func TestTimeExpireAcrossDayEnd(t *testing.T) {
	if got := alipay.BeijingTime(time.Date(2026, 11, 26, 16, 30, 0, 0, time.UTC)); got != "2026-11-27 00:30:00" {
		t.Fatalf("BeijingTime = %q", got)
	}
	// A deadline at 16:30 UTC, past midnight in Beijing, reaches Alipay as that instant.
	now := time.Now().UTC()
	exp := time.Date(now.Year(), now.Month(), now.Day(), 16, 30, 0, 0, time.UTC)
	if !exp.After(now.Add(time.Minute)) {
		exp = exp.Add(24 * time.Hour)
	}
	s := setup(t, alipayfake.Options{})
	r := req("P_midnight", 500)
	r.ExpiresAt = exp
	if _, err := s.p.Create(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	tr, _ := s.f.Trade("P_midnight")
	if !tr.Expire.Equal(exp) {
		t.Fatalf("the fake expires it at %v, want %v", tr.Expire, exp)
	}
	if got := alipay.BeijingTime(exp); got[11:] != "00:30:00" || got[:10] != exp.Add(8*time.Hour).Format("2006-01-02") {
		t.Fatalf("time_expire %q for %v", got, exp)
	}
}

func TestAmounts(t *testing.T) {
	ctx := context.Background()
	s := setup(t, alipayfake.Options{})
	for i, c := range []int64{1, payment.MaxCents} {
		no := "P_amount_" + string(rune('a'+i))
		if _, err := s.p.Create(ctx, req(no, c)); err != nil {
			t.Fatalf("%d: %v", c, err)
		}
		if tr, _ := s.f.Trade(no); tr.TotalCents != c {
			t.Fatalf("%d: the fake has %d", c, tr.TotalCents)
		}
		if err := s.f.Pay(no); err != nil {
			t.Fatal(err)
		}
	}
	ns := s.notifications()
	if len(ns) != 2 || ns[0].AmountCents != 1 || ns[1].AmountCents != payment.MaxCents {
		t.Fatalf("notified amounts %+v", ns)
	}
	for _, c := range []int64{0, -1, -12345, payment.MaxCents + 1} {
		if _, err := s.p.Create(ctx, req("P_amount_bad", c)); !errors.Is(err, payment.ErrRefused) {
			t.Fatalf("%d: %v", c, err)
		}
	}
	for _, no := range []string{"", "short", "has-dash01", strings.Repeat("x", 33)} {
		if _, err := s.p.Create(ctx, req(no, 100)); !errors.Is(err, payment.ErrRefused) {
			t.Fatalf("payment number %q: %v", no, err)
		}
	}
	if _, err := s.p.Refund(ctx, "P_amount_a", payment.RefundRequest{RefundID: "R0", AmountCents: 0}); !errors.Is(err, payment.ErrNotRefundable) {
		t.Fatalf("refund of 0: %v", err)
	}
	if n := s.f.Calls("alipay.trade.precreate"); n != 2 {
		t.Fatalf("%d precreates reached Alipay, want the 2 valid ones", n)
	}
	if n := s.f.Calls("alipay.trade.refund"); n != 0 {
		t.Fatalf("%d refunds reached Alipay", n)
	}
}

func TestNotifyForgedReplayedOtherAmount(t *testing.T) {
	ctx := context.Background()
	s := setup(t, alipayfake.Options{})
	if _, err := s.p.Create(ctx, req("P_notify_1", 8800)); err != nil {
		t.Fatal(err)
	}
	if err := s.f.Pay("P_notify_1"); err != nil {
		t.Fatal(err)
	}
	genuine := s.f.Sent()[0].Form
	read := func(form url.Values) (payment.Notification, error) {
		h := http.Header{"Content-Type": {"application/x-www-form-urlencoded; charset=utf-8"}}
		return s.p.ReadNotify(ctx, h, []byte(form.Encode()))
	}
	clone := func(v url.Values) url.Values {
		c := url.Values{}
		for k, x := range v {
			c[k] = append([]string(nil), x...)
		}
		return c
	}

	// Forged with another key: refused, and the shop answers so that Alipay would send it again.
	if n := s.f.Post(ctx, notifyURL, s.f.Forge(genuine)); n.Acked() || n.Body != "fail" {
		t.Fatalf("the forged notification was answered %+v", n)
	}
	// Tampered (the amount changed, the signature kept): refused.
	tampered := clone(genuine)
	tampered.Set("total_amount", "0.01")
	if _, err := read(tampered); err == nil {
		t.Fatal("a tampered notification was read")
	}
	// Genuine, but for another amount: read as it says; the shop compares it with its payment's.
	other := s.f.Sign(func() url.Values { v := clone(genuine); v.Set("total_amount", "88.01"); return v }())
	if n, err := read(other); err != nil || n.AmountCents != 8801 {
		t.Fatalf("another amount: %+v %v", n, err)
	}
	// Another app's: refused.
	if _, err := read(s.f.Sign(func() url.Values { v := clone(genuine); v.Set("app_id", "2021000000000999"); return v }())); err == nil {
		t.Fatal("another app's notification was read")
	}
	// Replayed: read as it was, with its own notify_time, which the shop finds stale five minutes on.
	first, err := read(genuine)
	if err != nil {
		t.Fatal(err)
	}
	if n := s.f.Post(ctx, notifyURL, genuine); !n.Acked() {
		t.Fatalf("replay answered %+v", n)
	}
	replayed := s.notifications()[1]
	if replayed != first || replayed.Fresh(time.Now().Add(6*time.Minute)) {
		t.Fatalf("replayed %+v, first %+v", replayed, first)
	}
	// Not a form, not signed, unsigned fields: refused.
	if _, err := s.p.ReadNotify(ctx, http.Header{"Content-Type": {"application/json"}}, []byte(genuine.Encode())); err == nil {
		t.Fatal("a JSON content type was read")
	}
	unsigned := clone(genuine)
	unsigned.Del("sign")
	if _, err := read(unsigned); err == nil {
		t.Fatal("an unsigned notification was read")
	}
	if st, ct, body := s.p.Ack(true); st != 200 || string(body) != "success" || !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("Ack(true) = %d %q %q", st, ct, body)
	}
	if _, _, body := s.p.Ack(false); string(body) == "success" {
		t.Fatal("Ack(false) says success")
	}
}

func TestWrongKeys(t *testing.T) {
	ctx := context.Background()
	f := alipayfake.Start(t, alipayfake.Options{})

	// Requests signed with a key that is not the app's: Alipay refuses them (isv.invalid-signature); the
	// refusal is not tried again.
	cfg := f.Config(notifyURL)
	cfg.PrivateKeyPEM = f.OtherKeyPEM()
	p, err := alipay.New(cfg, f.HTTPClient())
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Create(ctx, req("P_wrongkey1", 100))
	if !errors.Is(err, payment.ErrRefused) || !errors.Is(err, payment.ErrUnavailable) || !strings.Contains(err.Error(), "isv.invalid-signature") {
		t.Fatalf("create with the wrong app key: %v", err)
	}
	if n := f.Calls("alipay.trade.precreate"); n != 1 {
		t.Fatalf("%d precreates, want 1", n)
	}
	if _, ok := f.Trade("P_wrongkey1"); ok {
		t.Fatal("the fake made the trade")
	}

	// Answers signed with a key that is not Alipay's: not believed.
	good, err := alipay.New(f.Config(notifyURL), f.HTTPClient())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := good.Create(ctx, req("P_wrongkey2", 100)); err != nil {
		t.Fatal(err)
	}
	_ = f.Scan("P_wrongkey2")
	_ = f.Pay("P_wrongkey2")
	f.SignAnswersWithWrongKey(true)
	if st, err := good.Query(ctx, "P_wrongkey2"); !errors.Is(err, payment.ErrUnavailable) || errors.Is(err, payment.ErrRefused) || st != "" ||
		!strings.Contains(err.Error(), "not Alipay's") {
		t.Fatalf("query answered with the wrong key: %q %v", st, err)
	}
	f.SignAnswersWithWrongKey(false)

	// The shop configured with another key as Alipay's: it believes neither answers nor notifications.
	cfg = f.Config(notifyURL)
	cfg.AlipayPublicKey = f.OtherPublicKeyPEM()
	wrong, err := alipay.New(cfg, f.HTTPClient())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wrong.Query(ctx, "P_wrongkey2"); !errors.Is(err, payment.ErrUnavailable) {
		t.Fatalf("query with the wrong Alipay key: %v", err)
	}
	form, err := f.NotifyForm("P_wrongkey2")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wrong.ReadNotify(ctx, http.Header{}, []byte(form.Encode())); err == nil {
		t.Fatal("a notification was read with the wrong Alipay key")
	}
	if _, err := good.ReadNotify(ctx, http.Header{}, []byte(form.Encode())); err != nil {
		t.Fatalf("the genuine notification: %v", err)
	}
}

func TestRefunds(t *testing.T) {
	ctx := context.Background()
	s := setup(t, alipayfake.Options{})
	if _, err := s.p.Refund(ctx, "P_unknown_1", payment.RefundRequest{RefundID: "R1", AmountCents: 100}); !errors.Is(err, payment.ErrNotFound) {
		t.Fatalf("refund of an unknown trade: %v", err)
	}
	if _, err := s.p.Create(ctx, req("P_refund_1", 1000)); err != nil {
		t.Fatal(err)
	}
	_ = s.f.Scan("P_refund_1")
	if _, err := s.p.Refund(ctx, "P_refund_1", payment.RefundRequest{RefundID: "R1", AmountCents: 1000}); !errors.Is(err, payment.ErrNotRefundable) {
		t.Fatalf("refund of a trade not paid: %v", err)
	}
	_ = s.f.Pay("P_refund_1")

	// The first answer is lost: the guard asks again with the same out_request_no, Alipay answers
	// fund_change N, the refund query says REFUND_SUCCESS: one refund.
	n0 := s.f.Calls("alipay.trade.refund")
	s.f.LoseAnswers("alipay.trade.refund", 1)
	if st, err := s.p.Refund(ctx, "P_refund_1", payment.RefundRequest{RefundID: "R1", AmountCents: 400, Reason: "partial"}); err != nil || st != payment.StatusRefunded {
		t.Fatalf("refund with a lost answer: %q %v", st, err)
	}
	if tr, _ := s.f.Trade("P_refund_1"); tr.Refunds != 1 || tr.RefundedCents != 400 || tr.Status != alipayfake.TradeSuccess {
		t.Fatalf("the fake has %+v", tr)
	}
	if n, q := s.f.Calls("alipay.trade.refund")-n0, s.f.Calls("alipay.trade.fastpay.refund.query"); n != 2 || q != 1 {
		t.Fatalf("%d refunds and %d refund queries, want 2 and 1", n, q)
	}

	// Alipay fails while refunding (ACQ.SYSTEM_ERROR): the refund query finds no refund, the refund stays
	// pending (unavailable), and asked again it is made once.
	s.f.FailNext("alipay.trade.refund", "ACQ.SYSTEM_ERROR")
	r2 := payment.RefundRequest{RefundID: "R2", AmountCents: 600}
	if st, err := s.p.Refund(ctx, "P_refund_1", r2); !errors.Is(err, payment.ErrUnavailable) || errors.Is(err, payment.ErrNotRefundable) {
		t.Fatalf("refund after a system error: %q %v", st, err)
	}
	if st, err := s.p.Refund(ctx, "P_refund_1", r2); err != nil || st != payment.StatusRefunded {
		t.Fatalf("refund asked again: %q %v", st, err)
	}
	// More than is left: not refundable. The same refund for another amount: not refundable.
	if _, err := s.p.Refund(ctx, "P_refund_1", payment.RefundRequest{RefundID: "R3", AmountCents: 1}); !errors.Is(err, payment.ErrNotRefundable) {
		t.Fatalf("refund beyond the amount: %v", err)
	}
	if _, err := s.p.Refund(ctx, "P_refund_1", payment.RefundRequest{RefundID: "R1", AmountCents: 401}); !errors.Is(err, payment.ErrNotRefundable) {
		t.Fatalf("refund R1 for another amount: %v", err)
	}
	ns := s.notifications()
	var refunds []string
	for _, n := range ns {
		if n.Status == payment.StatusRefunded {
			refunds = append(refunds, n.RefundID)
			if n.AmountCents != 1000 {
				t.Fatalf("refund notification of amount %d, want the trade's 1000", n.AmountCents)
			}
		}
	}
	if strings.Join(refunds, ",") != "R1,R2" {
		t.Fatalf("refund notifications %+v", ns)
	}
}

func TestProviderDown(t *testing.T) {
	ctx := context.Background()
	f := alipayfake.Start(t, alipayfake.Options{})
	hc := f.HTTPClient()
	hc.Timeout = 300 * time.Millisecond
	p, err := alipay.New(f.Config(notifyURL), hc)
	if err != nil {
		t.Fatal(err)
	}

	f.SetDown(true) // 503 with an HTML page
	start := time.Now()
	if _, err := p.Query(ctx, "P_down_0001"); !errors.Is(err, payment.ErrUnavailable) || errors.Is(err, payment.ErrRefused) {
		t.Fatalf("query while down: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("query while down took %v", d)
	}
	f.SetDown(false)
	f.SetHang(true) // takes the request, never answers
	start = time.Now()
	if _, err := p.Create(ctx, req("P_down_0002", 100)); !errors.Is(err, payment.ErrUnavailable) {
		t.Fatalf("create while hanging: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("create while hanging took %v", d)
	}
	// Five failures in a row open the breaker: then the shop is answered at once.
	for i := 0; i < 3 && p.BreakerState() != "open"; i++ {
		_, _ = p.Query(ctx, "P_down_0001")
	}
	if st := p.BreakerState(); st != "open" {
		t.Fatalf("breaker %s", st)
	}
	start = time.Now()
	if _, err := p.Query(ctx, "P_down_0001"); !errors.Is(err, payment.ErrUnavailable) {
		t.Fatalf("query with the breaker open: %v", err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("query with the breaker open took %v", d)
	}

	// Slow but within the timeout: answered.
	f.SetHang(false)
	f2 := alipayfake.Start(t, alipayfake.Options{})
	f2.SetDelay(100 * time.Millisecond)
	p2, _ := alipay.New(f2.Config(notifyURL), f2.HTTPClient())
	if _, err := p2.Create(ctx, req("P_slow_0001", 100)); err != nil {
		t.Fatalf("slow create: %v", err)
	}
	// The caller's deadline is the caller's: its error, not the provider's.
	f2.SetDelay(2 * time.Second)
	dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := p2.Query(dctx, "P_slow_0001"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("query past the caller's deadline: %v", err)
	}
}

// hosts records the hosts the SDK calls.
type hosts struct {
	mu   sync.Mutex
	seen []string
	next http.RoundTripper
}

func (h *hosts) RoundTrip(r *http.Request) (*http.Response, error) {
	h.mu.Lock()
	h.seen = append(h.seen, r.URL.Host)
	h.mu.Unlock()
	return h.next.RoundTrip(r)
}

func TestGateways(t *testing.T) {
	f := alipayfake.Start(t, alipayfake.Options{})
	for _, sandbox := range []bool{false, true} {
		hc := f.HTTPClient()
		h := &hosts{next: hc.Transport}
		hc.Transport = h
		cfg := f.Config(notifyURL)
		cfg.Sandbox = sandbox
		p, err := alipay.New(cfg, hc)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Query(context.Background(), "P_gateway_1"); !errors.Is(err, payment.ErrNotFound) {
			t.Fatal(err)
		}
		want := "openapi.alipay.com"
		if sandbox {
			want = "openapi-sandbox.dl.alipaydev.com"
		}
		if len(h.seen) != 1 || h.seen[0] != want {
			t.Fatalf("sandbox %v called %v", sandbox, h.seen)
		}
	}
}

// TestConcurrent runs payments side by side through one provider, as the shop's handlers and jobs do.
func TestConcurrent(t *testing.T) {
	ctx := context.Background()
	s := setup(t, alipayfake.Options{})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(no string) {
			defer wg.Done()
			if _, err := s.p.Create(ctx, req(no, 100)); err != nil {
				errs <- err
				return
			}
			if err := s.f.Pay(no); err != nil {
				errs <- err
				return
			}
			if st, err := s.p.Query(ctx, no); err != nil || st != payment.StatusPaid {
				errs <- errors.New(no + " is " + st)
			}
		}("P_concurrent_" + string(rune('a'+i)))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := len(s.notifications()); n != 8 {
		t.Fatalf("%d notifications, want 8", n)
	}
}

// TestNotifyCertSerial checks that a notification naming a certificate the shop does not know is checked
// with the configured certificate, and makes the shop call nobody.
func TestNotifyCertSerial(t *testing.T) {
	ctx := context.Background()
	s := setup(t, alipayfake.Options{CertMode: true})
	if _, err := s.p.Create(ctx, req("P_certsn_01", 100)); err != nil {
		t.Fatal(err)
	}
	_ = s.f.Scan("P_certsn_01")
	form, _ := s.f.NotifyForm("P_certsn_01")
	form.Set("alipay_cert_sn", "0123456789abcdef0123456789abcdef") // outside the signed fields, as the SDK reads them
	if _, err := s.p.ReadNotify(ctx, http.Header{}, []byte(form.Encode())); err != nil {
		t.Fatalf("read: %v", err)
	}
	forged := s.f.Forge(form)
	forged.Set("alipay_cert_sn", "0123456789abcdef0123456789abcdef")
	if _, err := s.p.ReadNotify(ctx, http.Header{}, []byte(forged.Encode())); err == nil {
		t.Fatal("a forged notification naming another certificate was read")
	}
	if n := s.f.Calls("alipay.open.app.alipaycert.download"); n != 0 {
		t.Fatalf("the shop fetched a certificate %d times", n)
	}
}
