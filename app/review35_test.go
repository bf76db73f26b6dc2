package app

// Review of issue 35 ("real money"): adversarial tests driven through HTTP and the providers' fakes.
// Each test says what a shopper, the provider, an attacker or an operator would see. Tests marked
// "FAILS ON MAIN" show a bug found by the review; the others pin behaviour that was found right.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"seckill/internal/testenv"
	"seckill/models"
	"seckill/payment"
	"seckill/payment/alipay/alipayfake"
	"seckill/payment/wechatpay"
	"seckill/payment/wechatpay/wechatfake"
)

// FAILS ON MAIN. A shopper offered both providers presses Pay for WeChat Pay in one tab and for Alipay
// in another at the same moment. Both presses number their payment "{order}P1" (the count of the
// order's payments, read before either is recorded), so Alipay and WeChat Pay each hold a trade "P1";
// the shop records one row for the number, and the other provider's QR code is shown all the same.
// The shopper scans that code and pays: the provider's callback names "P1", the shop finds the other
// provider's payment, logs "refund_needed" and answers "taken". The order stays unpaid and the money is
// neither recorded nor refunded.
func TestReview35ConcurrentPayWithBothProvidersKeepsEachPayment(t *testing.T) {
	s, wx, ali := startShopOfBoth(t, "order_consumer")
	_, buy := newPaySale(t, s, 3)
	b, o := buy("rv_both_at_once")
	b.getCSRF()
	// Each provider takes a moment to answer (as on the internet): both presses read the order's payments
	// before either is recorded.
	wx.SetDelay(300 * time.Millisecond)
	ali.SetDelay(300 * time.Millisecond)

	type answer struct {
		provider string
		r        reply
	}
	answers := make(chan answer, 2)
	var wg sync.WaitGroup
	for _, p := range []string{payment.NameWeChat, payment.NameAlipay} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers <- answer{p, b.call("POST", "/api/orders/"+o.OrderNo+"/pay", map[string]any{"provider": p})}
		}()
	}
	wg.Wait()
	close(answers)
	wx.SetDelay(0)
	ali.SetDelay(0)
	ids := map[string]string{}
	for a := range answers {
		if a.r.Status != 200 {
			t.Fatalf("pay with %s: %d %s", a.provider, a.r.Status, a.r.Body)
		}
		ids[a.provider] = a.r.json(t)["payment_id"].(string)
	}
	// Each code shown is a payment the shop keeps, at the provider that made it.
	for prov, id := range ids {
		var p models.Payment
		if err := s.DB.Where("provider_id = ? AND provider = ?", id, prov).Take(&p).Error; err != nil {
			t.Errorf("the %s code shown (payment %s) is not in the books as a %s payment: %v", prov, id, prov, err)
		}
	}
	if ids[payment.NameWeChat] == ids[payment.NameAlipay] {
		t.Errorf("WeChat Pay and Alipay were both given payment number %s", ids[payment.NameAlipay])
	}
	// The shopper pays both codes (a second phone, a second tap): the order is paid by the first, and
	// the second's money is owed back. With the race, one of the two is of no payment in the books: its
	// money is taken and neither recorded nor refunded.
	if err := wx.Pay(context.Background(), ids[payment.NameWeChat]); err != nil {
		t.Fatal(err)
	}
	if err := ali.Pay(ids[payment.NameAlipay]); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallySaw(t, 10*time.Second, "both payments recorded paid, the order paid, the second refunded", func() (bool, string) {
		var paid, refunds int64
		s.DB.Model(&models.Payment{}).Where("order_id = ? AND status = ?", o.ID, models.PaymentPaid).Count(&paid)
		s.DB.Model(&models.Refund{}).Where("order_id = ?", o.ID).Count(&refunds)
		st := orderStatus(t, s, o.OrderNo)
		return paid == 2 && refunds == 1 && st == models.OrderPaid, fmt.Sprintf("%d paid payments, %d refunds, order %s", paid, refunds, st)
	})
}

// Passes on main. The same two presses one after the other: the numbers differ (P1, P2) and the
// Alipay payment pays the order. This pins that the concurrent test above fails by the race alone.
func TestReview35SequentialPayWithBothProvidersNumbersDiffer(t *testing.T) {
	s, _, ali := startShopOfBoth(t, "order_consumer")
	_, buy := newPaySale(t, s, 3)
	b, o := buy("rv_both_in_turn")
	wxID, _ := payWith(t, b, o.OrderNo, payment.NameWeChat)
	aliID, _ := payWith(t, b, o.OrderNo, payment.NameAlipay)
	if wxID == aliID {
		t.Fatalf("both providers got number %s", wxID)
	}
	for _, id := range []string{wxID, aliID} {
		if !payment.ValidPaymentNo(id) {
			t.Errorf("payment number %q is outside the providers' rules", id)
		}
	}
	if err := ali.Pay(aliID); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, s, o.OrderNo, models.OrderPaid, 10*time.Second)
}

// FAILS ON MAIN (low). An item priced above WeChat Pay's limit (an int32 of fen, ¥21,474,836.47): Pay
// with WeChat Pay answers 503 payment_unavailable "try again in a minute", which no minute will fix;
// the shopper should be told to choose another way to pay (a 4xx naming the provider or the amount).
// Alipay takes the amount.
func TestReview35PriceAboveWeChatLimit(t *testing.T) {
	s, _, ali := startShopOfBoth(t, "order_consumer")
	_, buy := newPaySale(t, s, 3)
	b, o := buy("rv_too_dear")
	const fen = int64(1) << 31 // one fen more than WeChat Pay takes
	if err := s.DB.Exec("UPDATE orders SET price_cents = ? WHERE id = ?", fen, o.ID).Error; err != nil {
		t.Fatal(err)
	}
	r := b.call("POST", "/api/orders/"+o.OrderNo+"/pay", map[string]any{"provider": payment.NameWeChat})
	if r.Status == 200 {
		t.Fatalf("WeChat Pay was asked for %d fen: %s", fen, r.Body)
	}
	if r.Status == 503 || strings.Contains(string(r.Body), "try again") {
		t.Errorf("pay %d fen with WeChat Pay: %d %s; want a refusal that says WeChat Pay cannot take this amount (choose Alipay), not 'try again in a minute'", fen, r.Status, r.Body)
	}
	id, _ := payWith(t, b, o.OrderNo, payment.NameAlipay)
	if tr, ok := ali.Trade(id); !ok || tr.TotalCents != fen {
		t.Errorf("Alipay holds %+v (%v), want %d fen", tr, ok, fen)
	}
}

// One fen, the smallest amount: each provider is asked for exactly one fen ("0.01" yuan at Alipay), and
// a paid one-fen order is paid.
func TestReview35OneFen(t *testing.T) {
	s, wx, ali := startShopOfBoth(t, "order_consumer")
	_, buy := newPaySale(t, s, 3)
	for _, prov := range []string{payment.NameWeChat, payment.NameAlipay} {
		b, o := buy("rv_one_fen_" + prov)
		if err := s.DB.Exec("UPDATE orders SET price_cents = 1 WHERE id = ?", o.ID).Error; err != nil {
			t.Fatal(err)
		}
		id, _ := payWith(t, b, o.OrderNo, prov)
		switch prov {
		case payment.NameWeChat:
			if total, _, ok := wx.Trade(id); !ok || total != 1 {
				t.Errorf("WeChat Pay holds %d fen", total)
			}
			if err := wx.Pay(context.Background(), id); err != nil {
				t.Fatal(err)
			}
		default:
			if tr, ok := ali.Trade(id); !ok || tr.TotalCents != 1 {
				t.Errorf("Alipay holds %+v", tr)
			}
			if err := ali.Pay(id); err != nil {
				t.Fatal(err)
			}
		}
		waitStatus(t, s, o.OrderNo, models.OrderPaid, 10*time.Second)
	}
}

// The provider names in the pay request: the shop's own list is lower case (PAY_PROVIDERS is read so),
// and the shopper's request is trimmed; a name in another case is refused as a bad request with the
// list, never a 500.
func TestReview35ProviderNamesInThePayRequest(t *testing.T) {
	s, _, _ := startShopOfBoth(t, "order_consumer")
	_, buy := newPaySale(t, s, 3)
	b, o := buy("rv_names")
	path := "/api/orders/" + o.OrderNo + "/pay"
	if r := b.call("POST", path, map[string]any{"provider": " wechat "}); r.Status != 200 || r.json(t)["provider"] != "wechat" {
		t.Errorf("pay with %q: %d %s", " wechat ", r.Status, r.Body)
	}
	for _, name := range []string{"", "WeChat", "ALIPAY", "sandbox", "http", "wechat,alipay", "微信"} {
		r := b.call("POST", path, map[string]any{"provider": name})
		if r.Status != 400 || !strings.Contains(string(r.Body), "wechat, alipay") {
			t.Errorf("pay with %q among two providers: %d %s, want 400 naming the choices", name, r.Status, r.Body)
		}
	}
	// No body at all among two providers: the choice is required.
	expect(t, "pay with no provider among two", b.send("POST", path, nil, nil), 400, "bad_request")
}

// The callback endpoint from outside: whatever is sent, the shop answers in the provider's form or a
// plain refusal, leaks nothing of its internals, and changes nothing.
func TestReview35CallbackEndpointRefusals(t *testing.T) {
	s, wx, _ := startShopOfBoth(t, "order_consumer")
	_, buy := newPaySale(t, s, 3)
	b, o := buy("rv_callbacks")
	id, _ := payWith(t, b, o.OrderNo, payment.NameWeChat)
	anon := newBrowser(t, s.URL)
	anon.noAutoCSRF = true
	leaks := []string{"wechatpay:", "alipay notify", "sql", "gorm", "panic", "goroutine", "crypto/", ".go:"}
	check := func(what string, r reply, wantStatus int, wantBody string) {
		t.Helper()
		if r.Status != wantStatus || (wantBody != "" && string(r.Body) != wantBody) {
			t.Errorf("%s: %d %q, want %d %q", what, r.Status, r.Body, wantStatus, wantBody)
		}
		for _, l := range leaks {
			if strings.Contains(strings.ToLower(string(r.Body)), l) {
				t.Errorf("%s: the answer leaks %q: %s", what, l, r.Body)
			}
		}
	}
	wxFail := `{"code":"FAIL","message":"not taken; send it again"}`
	check("WeChat: no headers, no body", anon.send("POST", "/api/payments/notify/wechat", nil, nil), 500, wxFail)
	check("WeChat: a form", anon.send("POST", "/api/payments/notify/wechat", []byte("a=b"), map[string]string{"Content-Type": "application/x-www-form-urlencoded"}), 500, wxFail)
	check("WeChat: JSON without a signature", anon.send("POST", "/api/payments/notify/wechat", []byte(`{"id":"x","resource":{}}`), map[string]string{"Content-Type": "application/json"}), 500, wxFail)
	check("WeChat: signature headers of garbage", anon.send("POST", "/api/payments/notify/wechat", []byte(`{}`), map[string]string{
		"Content-Type": "application/json", "Wechatpay-Serial": "x", "Wechatpay-Signature": "!!", "Wechatpay-Timestamp": "1", "Wechatpay-Nonce": "n"}), 500, wxFail)
	check("Alipay: no body", anon.send("POST", "/api/payments/notify/alipay", nil, nil), 200, "fail")
	check("Alipay: JSON", anon.send("POST", "/api/payments/notify/alipay", []byte(`{"trade_status":"TRADE_SUCCESS"}`), map[string]string{"Content-Type": "application/json"}), 200, "fail")
	check("Alipay: unsigned form", anon.send("POST", "/api/payments/notify/alipay", []byte("out_trade_no="+id+"&trade_status=TRADE_SUCCESS"), map[string]string{"Content-Type": "application/x-www-form-urlencoded"}), 200, "fail")
	check("Alipay: a form of nonsense", anon.send("POST", "/api/payments/notify/alipay", []byte("%zz=%%&sign=;"), map[string]string{"Content-Type": "application/x-www-form-urlencoded"}), 200, "fail")

	// Unknown providers, and the http protocol's names, have no named callback.
	for _, p := range []string{"paypal", "sandbox", "http", "WeChat%00", "..%2F..%2Forders"} {
		r := anon.send("POST", "/api/payments/notify/"+p, []byte("a=b"), map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
		if r.Status != 404 {
			t.Errorf("a callback for provider %q: %d %s, want 404", p, r.Status, r.Body)
		}
	}
	// GET is no callback.
	if r := anon.send("GET", "/api/payments/notify/wechat", nil, nil); r.Status/100 == 2 || r.Status >= 500 {
		t.Errorf("GET of the callback: %d %s", r.Status, r.Body)
	}
	// A body far over the limit is refused before it is read.
	// (The server may answer 413 and close before the client has sent it all: a reset is a refusal too.)
	big := []byte(strings.Repeat("a=b&", 1<<20))
	if resp, err := http.Post(s.URL+"/api/payments/notify/alipay", "application/x-www-form-urlencoded", bytes.NewReader(big)); err == nil {
		resp.Body.Close()
		if resp.StatusCode != 413 {
			t.Errorf("a 4 MiB callback: %d, want 413", resp.StatusCode)
		}
	} else if !strings.Contains(err.Error(), "reset") && !strings.Contains(err.Error(), "broken pipe") {
		t.Errorf("a 4 MiB callback: %v", err)
	}
	if st := orderStatus(t, s, o.OrderNo); st != models.OrderPendingPayment {
		t.Fatalf("after the refused callbacks the order is %s", st)
	}
	// WeChat Pay's genuine callback is taken as its documentation says: 200 or 204, no body needed.
	if err := wx.Pay(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, s, o.OrderNo, models.OrderPaid, 10*time.Second)
	sent := wx.Sent()
	if last := sent[len(sent)-1]; last.Status != 200 && last.Status != 204 {
		t.Errorf("the shop answered WeChat Pay's callback %d", last.Status)
	}
}

// The notify prefix is exempt from CSRF: no path that the exemption accepts reaches another API, so a
// cross-site form cannot cancel (or pay, or re-address) a shopper's order through it.
func TestReview35NoCSRFBypassThroughTheNotifyPrefix(t *testing.T) {
	s, _, _ := startShopOfBoth(t, "order_consumer")
	_, buy := newPaySale(t, s, 3)
	b, o := buy("rv_csrf")
	victim := *b
	victim.csrf = ""
	victim.noAutoCSRF = true
	for _, p := range []string{
		"/api/payments/notify/../../orders/" + o.OrderNo + "/cancel",
		"/api/payments/notify/..%2F..%2Forders%2F" + o.OrderNo + "%2Fcancel",
		"/api/payments/notify/%2e%2e/%2e%2e/orders/" + o.OrderNo + "/cancel",
		"/api/payments/notify%2F..%2F..%2Forders%2F" + o.OrderNo + "%2Fcancel",
		"/api/payments/notify/x/../../../orders/" + o.OrderNo + "/cancel",
		"/api/payments//notify/../../orders/" + o.OrderNo + "/cancel",
	} {
		req, err := http.NewRequest("POST", s.URL+"/", strings.NewReader("a=b"))
		if err != nil {
			t.Fatal(err)
		}
		req.URL.Opaque = p // sent as written, not cleaned by the client
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r := victim.do(req)
		if r.Status/100 == 2 {
			t.Errorf("POST %s without a CSRF token: %d %s", p, r.Status, r.Body)
		}
	}
	if st := orderStatus(t, s, o.OrderNo); st != models.OrderPendingPayment {
		t.Fatalf("a cross-site request through the notify prefix made the order %s", st)
	}
}

// A genuine WeChat Pay callback replayed after the order was refunded: taken, and nothing changes (no
// second refund, the order stays refunded); a genuine Alipay notification replayed likewise.
func TestReview35CallbacksReplayedAfterTheRefund(t *testing.T) {
	s, wx, ali := startShopOfBoth(t, "order_consumer", "refunds")
	_, buy := newPaySale(t, s, 5)
	admin := withRole(t, s, "rv_replay_admin", models.RoleAdmin)

	b, o := buy("rv_replay_wx")
	id, _ := payWith(t, b, o.OrderNo, payment.NameWeChat)
	if err := wx.Pay(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, s, o.OrderNo, models.OrderPaid, 10*time.Second)
	paidNotify := wx.Sent()[len(wx.Sent())-1]
	if r := admin.call("POST", "/api/admin/orders/"+o.OrderNo+"/refund", map[string]any{"reason": "out of stock"}); r.Status != 200 {
		t.Fatalf("refund: %d %s", r.Status, r.Body)
	}
	f := refundOf(t, s, o.ID, models.RefundPending)
	if err := wx.CompleteRefund(context.Background(), f.RefundID()); err != nil {
		t.Fatal(err)
	}
	refundOf(t, s, o.ID, models.RefundDone)
	// WeChat Pay sends the old "paid" callback again (fresh signature: WeChat Pay re-sends for a day).
	n, err := wx.TransactionNotify(id, wechatfake.NotifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, again := range []wechatfake.Notification{paidNotify, n} {
		if _, err := wx.Resend(context.Background(), again); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(3 * s.Cfg.PayPollInterval)
	if st := orderStatus(t, s, o.OrderNo); st != models.OrderRefunded {
		t.Errorf("after the replayed callback the order is %s, want refunded", st)
	}
	if k, fen := wx.Refunds(id); k != 1 {
		t.Errorf("WeChat Pay holds %d refunds (%d fen), want 1", k, fen)
	}

	b2, o2 := buy("rv_replay_ali")
	aid, _ := payWith(t, b2, o2.OrderNo, payment.NameAlipay)
	if err := ali.Pay(aid); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, s, o2.OrderNo, models.OrderPaid, 10*time.Second)
	if r := admin.call("POST", "/api/admin/orders/"+o2.OrderNo+"/refund", map[string]any{"reason": "out of stock"}); r.Status != 200 {
		t.Fatalf("refund: %d %s", r.Status, r.Body)
	}
	refundOf(t, s, o2.ID, models.RefundDone)
	// Alipay's "paid" notification replayed as it was first sent (its signature is genuine).
	for _, n := range ali.Sent() {
		if n.Form.Get("out_trade_no") == aid && n.Form.Get("trade_status") == "TRADE_SUCCESS" && n.Form.Get("out_biz_no") == "" {
			if again := ali.Post(context.Background(), n.URL, n.Form); !again.Acked() {
				t.Errorf("the replayed notification was not taken: %+v", again)
			}
			break
		}
	}
	time.Sleep(3 * s.Cfg.PayPollInterval)
	if st := orderStatus(t, s, o2.OrderNo); st != models.OrderRefunded {
		t.Errorf("after the replayed notification the order is %s, want refunded", st)
	}
	if tr, _ := ali.Trade(aid); tr.Refunds != 1 {
		t.Errorf("Alipay made %d refunds, want 1", tr.Refunds)
	}
}

// A refund whose answer is lost (twice), and a provider down during the refund: the refund stays
// pending, is asked for again with the same out_request_no, and Alipay refunds once.
func TestReview35AlipayRefundAnswerLostAndProviderDown(t *testing.T) {
	s, _, ali := startShopOfBoth(t, "order_consumer", "refunds")
	item, buy := newPaySale(t, s, 3)
	admin := withRole(t, s, "rv_lost_admin", models.RoleAdmin)
	b, o := buy("rv_lost_refund")
	id, _ := payWith(t, b, o.OrderNo, payment.NameAlipay)
	if err := ali.Pay(id); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, s, o.OrderNo, models.OrderPaid, 10*time.Second)
	ali.LoseAnswers("alipay.trade.refund", 2)
	ali.SetDown(true)
	if r := admin.call("POST", "/api/admin/orders/"+o.OrderNo+"/refund", map[string]any{"reason": "damaged"}); r.Status != 200 {
		t.Fatalf("refund while Alipay is down: %d %s", r.Status, r.Body)
	}
	refundOf(t, s, o.ID, models.RefundPending)
	time.Sleep(2 * s.Cfg.PayPollInterval)
	ali.SetDown(false)
	refundOf(t, s, o.ID, models.RefundDone)
	if tr, _ := ali.Trade(id); tr.Refunds != 1 || tr.RefundedCents != item.SeckillPriceCents {
		t.Errorf("Alipay made %d refunds of %d fen, want one of %d", tr.Refunds, tr.RefundedCents, item.SeckillPriceCents)
	}
}

// The order page: with two providers the shopper chooses between them, named in the page's language;
// the pay request names the one chosen.
func TestReview35OrderPageOffersBothInBothLanguages(t *testing.T) {
	s, _, _ := startShopOfBoth(t, "order_consumer")
	_, buy := newPaySale(t, s, 3)
	b, o := buy("rv_page")
	for lang, words := range map[string][]string{
		"en": {"WeChat Pay", "Alipay", "Scan with WeChat to pay", "Scan with Alipay to pay"},
		"zh": {"微信支付", "支付宝", "请用微信扫一扫付款", "请用支付宝扫一扫付款"},
	} {
		r := b.send("GET", "/orders/"+o.OrderNo, nil, map[string]string{"Accept-Language": lang})
		if r.Status != 200 {
			t.Fatalf("the order page in %s: %d", lang, r.Status)
		}
		html := string(r.Body)
		for _, w := range append(words, `name="provider" value="wechat"`, `name="provider" value="alipay"`) {
			if !strings.Contains(html, w) {
				t.Errorf("the order page in %s lacks %q", lang, w)
			}
		}
	}
}

// Configuration that cannot be half right: each half-right configuration the issue lists is refused
// when the server would start, naming what to fix.
func TestReview35HalfRightConfigurationsRefused(t *testing.T) {
	wx := wechatfake.Start(t, wechatfake.Options{})
	ali := alipayfake.Start(t, alipayfake.Options{})
	wc := wx.Config("https://shop.example/api/payments/notify/wechat")
	ac := ali.Config("https://shop.example/api/payments/notify/alipay")
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "apiclient_key.pem")
	if err := os.WriteFile(keyFile, []byte(wc.MchKeyPEM+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	good := func() map[string]string {
		return map[string]string{"DATABASE_URL": "postgres://app@db:5432/seckill", "REDIS_URL": "redis://cache:6379/2", "SESSION_SECRET": goodSecret,
			"BASE_URL": "https://shop.example", "PAY_PROVIDERS": "wechat,alipay",
			"WECHAT_PAY_MCH_ID": wc.MchID, "WECHAT_PAY_APP_ID": wc.AppID, "WECHAT_PAY_MCH_SERIAL": wc.MchSerial,
			"WECHAT_PAY_MCH_KEY": wc.MchKeyPEM, "WECHAT_PAY_API_V3_KEY": wc.APIv3Key,
			"WECHAT_PAY_PUBLIC_KEY": wc.PublicKeyPEM, "WECHAT_PAY_PUBLIC_KEY_ID": wc.PublicKeyID,
			"ALIPAY_APP_ID": ac.AppID, "ALIPAY_PRIVATE_KEY": ac.PrivateKeyPEM, "ALIPAY_PUBLIC_KEY": ac.AlipayPublicKey}
	}
	for _, tt := range []struct {
		what   string
		change map[string]string // "" deletes
		want   string            // "" for a good configuration
	}{
		{"both, good", nil, ""},
		{"the WeChat key from a file", map[string]string{"WECHAT_PAY_MCH_KEY": "", "WECHAT_PAY_MCH_KEY_FILE": keyFile}, ""},
		{"the WeChat key file missing", map[string]string{"WECHAT_PAY_MCH_KEY": "", "WECHAT_PAY_MCH_KEY_FILE": filepath.Join(dir, "nope.pem")}, "WECHAT_PAY_MCH_KEY_FILE"},
		{"the key and its file both", map[string]string{"WECHAT_PAY_MCH_KEY_FILE": keyFile}, "WECHAT_PAY_MCH_KEY_FILE"},
		{"no merchant key", map[string]string{"WECHAT_PAY_MCH_KEY": ""}, "WECHAT_PAY_MCH_KEY"},
		{"a merchant key that does not parse", map[string]string{"WECHAT_PAY_MCH_KEY": "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----"}, "WECHAT_PAY_MCH_KEY"},
		{"no API v3 key", map[string]string{"WECHAT_PAY_API_V3_KEY": ""}, "WECHAT_PAY_API_V3_KEY"},
		{"an API v3 key of 31 bytes", map[string]string{"WECHAT_PAY_API_V3_KEY": strings.Repeat("k", 31)}, "WECHAT_PAY_API_V3_KEY"},
		{"no serial", map[string]string{"WECHAT_PAY_MCH_SERIAL": ""}, "WECHAT_PAY_MCH_SERIAL"},
		{"a public key without its id", map[string]string{"WECHAT_PAY_PUBLIC_KEY": ali.OtherPublicKeyPEM(), "WECHAT_PAY_PUBLIC_KEY_ID": ""}, "WECHAT_PAY_PUBLIC_KEY_ID"},
		{"a public key id without its key", map[string]string{"WECHAT_PAY_PUBLIC_KEY_ID": "PUB_KEY_ID_0114232134912410000000000000000"}, "WECHAT_PAY_PUBLIC_KEY"},
		{"no Alipay app private key", map[string]string{"ALIPAY_PRIVATE_KEY": ""}, "ALIPAY_PRIVATE_KEY"},
		{"an Alipay public key that does not parse", map[string]string{"ALIPAY_PUBLIC_KEY": "bm90IGEga2V5"}, "ALIPAY_PUBLIC_KEY"},
		{"no Alipay public key nor certificates", map[string]string{"ALIPAY_PUBLIC_KEY": ""}, "ALIPAY_PUBLIC_KEY"},
		{"the Alipay private key in the public key's place", map[string]string{"ALIPAY_PUBLIC_KEY": ac.PrivateKeyPEM}, "ALIPAY_PUBLIC_KEY"},
		{"BASE_URL http", map[string]string{"BASE_URL": "http://shop.example"}, "https"},
		{"a currency other than CNY", map[string]string{"PAY_CURRENCY": "USD"}, "PAY_CURRENCY"},
		{"the sandbox beside real providers", map[string]string{"PAY_PROVIDERS": "wechat,sandbox", "PAY_SANDBOX_ANYONE_CAN_PAY": "yes"}, "sandbox"},
		{"PAY_SANDBOX=on beside real providers", map[string]string{"PAY_SANDBOX": "on", "PAY_SANDBOX_ANYONE_CAN_PAY": "yes"}, "PAY_SANDBOX"},
		{"a PAY_SECRET that nothing uses", map[string]string{"PAY_SECRET": "a-real-providers-secret"}, "PAY_SECRET"},
		{"ALIPAY_SANDBOX of nonsense", map[string]string{"ALIPAY_SANDBOX": "maybe"}, "ALIPAY_SANDBOX"},
	} {
		env := good()
		for k, v := range tt.change {
			if v == "" {
				delete(env, k)
			} else {
				env[k] = v
			}
		}
		c, err := LoadConfig(envOf(env))
		if err == nil {
			err = c.checkPayment()
		}
		if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: %v, want an error naming %q", tt.what, err, tt.want)
		}
	}
}

// FAILS ON MAIN (medium). The poll after a sale: 200 older WeChat Pay payments, asked about 20 s ago
// (not due again for another 40 s: they are over ten minutes old), fill PaymentsToPoll's page of 200
// least recently checked. A payment made now — "asked about every round for its first minute" (due) —
// is the 201st and is not asked about at all until the older ones come due: with its callback lost, a
// paid order stays unpaid that long, and the more open payments the longer.
//
// The control, "alone", passes on main: the same payment with no older ones is found paid in a round.
func TestReview35PollDoesNotStarveNewPaymentsBehindOldOnes(t *testing.T) {
	t.Run("alone", func(t *testing.T) { pollFindsANewPaidPayment(t, 0) })
	t.Run("behind 200 older", func(t *testing.T) { pollFindsANewPaidPayment(t, 200) })
}

func pollFindsANewPaidPayment(t *testing.T, older int) {
	shop := &shopRoute{}
	// WeChat Pay's callbacks are lost on the way: only the poll can learn that a payment was paid.
	lost := &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, errLost })}
	wx := wechatfake.Start(t, wechatfake.Options{NotifyClient: lost})
	s := startLive(t, liveOpts{only: []string{"order_consumer", "payment_poll"}, payClients: map[string]*http.Client{payment.NameWeChat: wx.Client()}, tune: func(c *Config) {
		c.PaySandbox, c.PayProviders = false, payment.NameWeChat
		c.WeChatPay = wx.Config(shopNotifyURL + payment.NameWeChat)
		c.PayPollInterval = 300 * time.Millisecond
		shop.set(c.BaseURL)
	}})
	_, buy := newPaySale(t, s, 3)
	b, o := buy("rv_starved")
	_, old := buy("rv_old_payments")
	now := s.Clock.Now()
	// 200 open payments of a sale eleven minutes ago, checked 20 s ago (all of one other order: the poll
	// reads payments, not orders).
	for i := range older {
		if err := s.DB.Exec(`INSERT INTO payments (order_id, order_no, provider_id, status, amount_cents, created_at, updated_at, provider, pay_url, expires_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, old.ID, old.OrderNo, "RVOLD"+itoa(int64(i))+"P1", models.PaymentOpen, old.PriceCents,
			now.Add(-11*time.Minute), now.Add(-20*time.Second), payment.NameWeChat, "weixin://wxpay/old", now.Add(time.Hour)).Error; err != nil {
			t.Fatal(err)
		}
	}
	id, _ := payWith(t, b, o.OrderNo, payment.NameWeChat)
	if err := wx.Pay(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	// Every round for its first minute: within a few rounds the poll asks about it and finds it paid.
	waitStatus(t, s, o.OrderNo, models.OrderPaid, 20*s.Cfg.PayPollInterval+3*time.Second)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

var errLost = errors.New("the callback was lost on the way")

// startShopOfBothLosingWeChatCallbacks serves a shop that offers both, whose WeChat Pay callbacks are
// lost on the way (only the poll can learn that a WeChat Pay payment was paid); Alipay's arrive.
func startShopOfBothLosingWeChatCallbacks(t *testing.T, only ...string) (*liveServer, *wechatfake.Fake, *alipayfake.Fake) {
	t.Helper()
	shop := &shopRoute{}
	lost := &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, errLost })}
	wx := wechatfake.Start(t, wechatfake.Options{NotifyClient: lost})
	ali := alipayfake.Start(t, alipayfake.Options{})
	ali.Deliver = shop.RoundTrip
	clients := map[string]*http.Client{payment.NameWeChat: wx.Client(), payment.NameAlipay: ali.HTTPClient()}
	s := startLive(t, liveOpts{only: only, payClients: clients, tune: func(c *Config) {
		c.PaySandbox, c.PayProviders = false, payment.NameWeChat+","+payment.NameAlipay
		c.WeChatPay = wx.Config(shopNotifyURL + payment.NameWeChat)
		c.Alipay = ali.Config(shopNotifyURL + payment.NameAlipay)
		c.PayPollInterval = 300 * time.Millisecond
		shop.set(c.BaseURL)
	}})
	return s, wx, ali
}

// FAILS ON MAIN (medium). Alipay is down; WeChat Pay is up. The poll asks about the open payments least
// recently checked first, and the first that answers ErrUnavailable ends the round — without marking
// it checked, so the next round starts with it again, and the poll backs off towards a minute. An
// Alipay outage therefore stops the poll from ever reaching the WeChat Pay payments behind it: a
// WeChat Pay payment whose callback was lost is not found paid until Alipay is back. Each provider's
// outage should cost only its own payments.
//
// The control, "Alipay up", passes on main.
func TestReview35PollOfOneProviderNotBlindedByTheOthersOutage(t *testing.T) {
	for _, down := range []bool{false, true} {
		t.Run(map[bool]string{false: "Alipay up", true: "Alipay down"}[down], func(t *testing.T) {
			s, wx, ali := startShopOfBothLosingWeChatCallbacks(t, "order_consumer", "payment_poll")
			_, buy := newPaySale(t, s, 3)
			ba, oa := buy("rv_ali_waits")
			payWith(t, ba, oa.OrderNo, payment.NameAlipay) // made first: checked least recently
			if err := ali.Scan(mustPaymentOf(t, s, oa.ID, payment.NameAlipay)); err != nil {
				t.Fatal(err)
			}
			ali.SetDown(down)
			bw, ow := buy("rv_wx_paid")
			id, _ := payWith(t, bw, ow.OrderNo, payment.NameWeChat)
			if err := wx.Pay(context.Background(), id); err != nil {
				t.Fatal(err)
			}
			waitStatus(t, s, ow.OrderNo, models.OrderPaid, 30*s.Cfg.PayPollInterval+5*time.Second)
		})
	}
}

// mustPaymentOf is the order's payment at the provider.
func mustPaymentOf(t *testing.T, s *liveServer, orderID int64, provider string) string {
	t.Helper()
	var p models.Payment
	if err := s.DB.Where("order_id = ? AND provider = ?", orderID, provider).Order("id DESC").Take(&p).Error; err != nil {
		t.Fatal(err)
	}
	return p.ProviderID
}

// FAILS ON MAIN (medium). A refund callback settles the shop's refund whatever refund it is about: the
// callback names its out_refund_no (Notification.RefundID), but NotifyFrom marks the payment's refund
// done by payment alone. Here the shop's refund of the whole price has not reached WeChat Pay (it was
// down), and the merchant refunds one fen of the same payment in WeChat Pay's console; WeChat Pay's
// REFUND.SUCCESS callback of that one fen marks the shop's refund done: the shopper is told the price
// went back, the refunds job stops asking, and one fen went back.
func TestReview35RefundCallbackOfAnotherRefundDoesNotSettleTheShops(t *testing.T) {
	s, wx, _ := startShopOfBoth(t, "order_consumer")
	item, buy := newPaySale(t, s, 3)
	admin := withRole(t, s, "rv_other_refund_admin", models.RoleAdmin)
	b, o := buy("rv_other_refund")
	id, _ := payWith(t, b, o.OrderNo, payment.NameWeChat)
	if err := wx.Pay(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, s, o.OrderNo, models.OrderPaid, 10*time.Second)
	wx.SetMode(wechatfake.Unavailable)
	if r := admin.call("POST", "/api/admin/orders/"+o.OrderNo+"/refund", map[string]any{"reason": "cannot ship"}); r.Status != 200 {
		t.Fatalf("refund: %d %s", r.Status, r.Body)
	}
	f := refundOf(t, s, o.ID, models.RefundPending)
	wx.SetMode(wechatfake.Up)
	// The merchant, in WeChat Pay's console, refunds one fen of the payment (its own out_refund_no).
	console, err := wechatpay.New(wx.Config(shopNotifyURL+payment.NameWeChat), wx.Client())
	if err != nil {
		t.Fatal(err)
	}
	defer console.Stop()
	if _, err := console.Refund(context.Background(), id, payment.RefundRequest{RefundID: "CONSOLE1", AmountCents: 1, TotalCents: item.SeckillPriceCents}); err != nil {
		t.Fatal(err)
	}
	if err := wx.CompleteRefund(context.Background(), "CONSOLE1"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	var got models.Refund
	s.DB.Take(&got, f.ID)
	if _, fen := wx.Refunds(id); got.Status == models.RefundDone && fen != item.SeckillPriceCents {
		t.Errorf("the shop's refund %s of %d fen is %s, but WeChat Pay refunded %d fen (the console's, not the shop's)", f.RefundID(), f.AmountCents, got.Status, fen)
	}
}

// FAILS ON MAIN (medium, operator). Alipay is offered with an app private key that parses but is not
// the one whose public half is registered at Alipay (a key pasted from another app): the server starts
// (it cannot know), and every Pay with Alipay answers 503 "try again in a minute". Alipay's answer
// (isv.invalid-signature) is what the operator needs to fix it, but orders.Pay drops the provider's
// error when it maps it to payment_unavailable: nothing at WARN or ERROR says why no one can pay.
func TestReview35MisconfiguredAlipayIsToldToTheOperator(t *testing.T) {
	var logs bytes.Buffer
	w := &safeWriter{w: &logs}
	shop := &shopRoute{}
	wx := wechatfake.Start(t, wechatfake.Options{NotifyClient: shop.client()})
	ali := alipayfake.Start(t, alipayfake.Options{})
	ali.Deliver = shop.RoundTrip
	clients := map[string]*http.Client{payment.NameWeChat: wx.Client(), payment.NameAlipay: ali.HTTPClient()}
	s := startLive(t, liveOpts{only: []string{"order_consumer"}, log: newLogger(Config{}, w), payClients: clients, tune: func(c *Config) {
		c.PaySandbox, c.PayProviders = false, payment.NameWeChat+","+payment.NameAlipay
		c.WeChatPay = wx.Config(shopNotifyURL + payment.NameWeChat)
		c.Alipay = ali.Config(shopNotifyURL + payment.NameAlipay)
		c.Alipay.PrivateKeyPEM = ali.OtherKeyPEM() // not the app's key Alipay knows
		shop.set(c.BaseURL)
	}})
	_, buy := newPaySale(t, s, 3)
	b, o := buy("rv_wrong_key")
	r := b.call("POST", "/api/orders/"+o.OrderNo+"/pay", map[string]any{"provider": payment.NameAlipay})
	if r.Status == 200 {
		t.Fatalf("Alipay took a request signed with the wrong key: %s", r.Body)
	}
	if ali.Calls("alipay.trade.precreate") == 0 {
		t.Fatal("Alipay was not asked")
	}
	// WeChat Pay still works beside it.
	payWith(t, b, o.OrderNo, payment.NameWeChat)
	time.Sleep(200 * time.Millisecond)
	got := w.String()
	if !strings.Contains(got, "invalid-signature") && !strings.Contains(strings.ToLower(got), "refused") {
		t.Errorf("Pay with a wrongly keyed Alipay answered %d %s, and the logs say nothing of Alipay's refusal:\n%s", r.Status, r.Body, got)
	}
}

// Two presses of Pay at once with the same provider: one payment at the provider, one in the books,
// the same code shown to both.
func TestReview35ConcurrentPayWithOneProviderMakesOnePayment(t *testing.T) {
	s, wx, ali := startShopOfBoth(t, "order_consumer")
	_, buy := newPaySale(t, s, 3)
	for _, prov := range []string{payment.NameWeChat, payment.NameAlipay} {
		b, o := buy("rv_twice_" + prov)
		b.getCSRF()
		wx.SetDelay(200 * time.Millisecond)
		ali.SetDelay(200 * time.Millisecond)
		var wg sync.WaitGroup
		got := make([]reply, 3)
		for i := range got {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[i] = b.call("POST", "/api/orders/"+o.OrderNo+"/pay", map[string]any{"provider": prov})
			}()
		}
		wg.Wait()
		wx.SetDelay(0)
		ali.SetDelay(0)
		var first map[string]any
		for _, r := range got {
			if r.Status != 200 {
				t.Fatalf("%s: a press answered %d %s", prov, r.Status, r.Body)
			}
			j := r.json(t)
			if first == nil {
				first = j
			} else if j["payment_id"] != first["payment_id"] || j["pay_url"] != first["pay_url"] {
				t.Errorf("%s: presses at once gave %v and %v", prov, first, j)
			}
		}
		var n int64
		s.DB.Model(&models.Payment{}).Where("order_id = ?", o.ID).Count(&n)
		if n != 1 {
			t.Errorf("%s: %d payments in the books after three presses at once", prov, n)
		}
	}
}

// FAILS ON MAIN (medium). A shopper opens both codes and pays with one: the order is paid, and the
// other payment stays open in the books. Past its expiry it can never be paid (WeChat Pay's trade is
// past time_expire; Alipay never made the unscanned one), yet the poll asks about it every minute for
// ever: the poll only gives up on payments of *cancelled* orders (orders.Forgotten). After a few sales
// thousands of such payments fill the poll's page of 200, and each costs the provider a query a minute.
func TestReview35OtherPaymentOfAPaidOrderIsNotPolledForEver(t *testing.T) {
	for _, paidWith := range []string{payment.NameWeChat, payment.NameAlipay} {
		t.Run("paid with "+paidWith, func(t *testing.T) {
			s, wx, ali := startShopOfBoth(t, "order_consumer", "payment_poll")
			_, buy := newPaySale(t, s, 3)
			b, o := buy("rv_left_open")
			wxID, _ := payWith(t, b, o.OrderNo, payment.NameWeChat)
			aliID, _ := payWith(t, b, o.OrderNo, payment.NameAlipay)
			other := aliID
			if paidWith == payment.NameWeChat {
				if err := wx.Pay(context.Background(), wxID); err != nil {
					t.Fatal(err)
				}
			} else {
				if err := ali.Pay(aliID); err != nil {
					t.Fatal(err)
				}
				other = wxID
			}
			waitStatus(t, s, o.OrderNo, models.OrderPaid, 10*time.Second)
			// An hour on: the other payment expired long ago, at the shop and at both providers.
			s.Clock.Advance(time.Hour)
			wx.Advance(time.Hour)
			ali.Advance(time.Hour)
			calls := func() int {
				return wx.Calls("GET /v3/pay/transactions/out-trade-no/"+other) + ali.Calls("alipay.trade.query")
			}
			before := calls()
			time.Sleep(4 * s.Cfg.PayPollInterval)
			var p models.Payment
			s.DB.Where("provider_id = ?", other).Take(&p)
			if p.Status == models.PaymentOpen {
				t.Errorf("an hour after its expiry the order's other payment %s is still open, polled for ever (%d queries meanwhile)", other, calls()-before)
			}
		})
	}
}

// Item names as merchants write them: emoji (with joiners), a form's own characters, and a name far
// longer than WeChat Pay's 127 bytes: each provider takes the payment, and Alipay shows the name cut
// at a character, not in the middle of one.
func TestReview35SubjectsOfEveryShape(t *testing.T) {
	s, _, ali := startShopOfBoth(t, "order_consumer")
	item, buy := newPaySale(t, s, 10)
	for i, name := range []string{
		"👨‍👩‍👧‍👦 家庭装 & 10% off = 好价 #1?",
		strings.Repeat("🎁", 60),
		strings.Repeat("长", 100) + "尾",
		"a+b c%20d&sign=x",
	} {
		if err := s.DB.Exec("UPDATE items SET name = ? WHERE id = ?", name, item.ID).Error; err != nil {
			t.Fatal(err)
		}
		b, o := buy("rv_subject_" + itoa(int64(i)))
		payWith(t, b, o.OrderNo, payment.NameWeChat)
		id, _ := payWith(t, b, o.OrderNo, payment.NameAlipay)
		tr, _ := ali.Trade(id)
		if !utf8.ValidString(tr.Subject) || !strings.HasPrefix(name, tr.Subject) || tr.Subject == "" {
			t.Errorf("item %q: Alipay shows %q", name, tr.Subject)
		}
	}
}

// A code the provider closed (WeChat Pay's PAYERROR, an Alipay code that expired unscanned) while the
// order still waits: pressing Pay again makes a new payment of a new number, which pays the order.
func TestReview35PayAgainAfterTheFirstCodeClosed(t *testing.T) {
	s, wx, ali := startShopOfBoth(t, "order_consumer")
	_, buy := newPaySale(t, s, 3)
	for _, prov := range []string{payment.NameWeChat, payment.NameAlipay} {
		b, o := buy("rv_again_" + prov)
		first, _ := payWith(t, b, o.OrderNo, prov)
		// The poll heard the provider's final word: closed.
		if err := s.DB.Exec("UPDATE payments SET status = ? WHERE provider_id = ?", models.PaymentClosed, first).Error; err != nil {
			t.Fatal(err)
		}
		second, _ := payWith(t, b, o.OrderNo, prov)
		if second == first || !payment.ValidPaymentNo(second) {
			t.Fatalf("%s: Pay after the first code closed gave %s (the first was %s)", prov, second, first)
		}
		var err error
		if prov == payment.NameWeChat {
			err = wx.Pay(context.Background(), second)
		} else {
			err = ali.Pay(second)
		}
		if err != nil {
			t.Fatal(err)
		}
		waitStatus(t, s, o.OrderNo, models.OrderPaid, 10*time.Second)
	}
}

// The order's deadline comes while the payer is entering the password in WeChat (USERPAYING): the
// unpaid timeout does not cancel it (the close is refused), and when the payment completes the order is
// paid — not cancelled and refunded.
func TestReview35UnpaidTimeoutMeetsUserPaying(t *testing.T) {
	s, wx, _ := startShopOfBoth(t, "order_consumer", "unpaid_timeout")
	_, buy := newPaySale(t, s, 3)
	b, o := buy("rv_deadline_paying")
	id, _ := payWith(t, b, o.OrderNo, payment.NameWeChat)
	if err := wx.Paying(id); err != nil {
		t.Fatal(err)
	}
	s.Clock.Set(o.PayDeadline.Add(5 * time.Second))
	testenv.EventuallySaw(t, 10*time.Second, "the timeout to try to close the payment", func() (bool, string) {
		return wx.Calls("POST /v3/pay/transactions/out-trade-no/"+id+"/close") > 0, "not yet"
	})
	time.Sleep(2 * s.Cfg.PayPollInterval)
	if st := orderStatus(t, s, o.OrderNo); st != models.OrderPendingPayment {
		t.Fatalf("at the deadline, while its payer pays, the order is %s", st)
	}
	if err := wx.Pay(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, s, o.OrderNo, models.OrderPaid, 10*time.Second)
}
