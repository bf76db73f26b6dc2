package app

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"seckill/internal/testenv"
	"seckill/models"
	"seckill/payment"
	"seckill/payment/alipay/alipayfake"
	"seckill/payment/wechatpay/wechatfake"
)

// startWeChatShop serves a shop that takes WeChat Pay alone, through a fake WeChat Pay that speaks its
// API v3 (signatures checked, answers and callbacks signed, certificates downloaded by the SDK).
func startWeChatShop(t *testing.T, only ...string) (*liveServer, *wechatfake.Fake) {
	t.Helper()
	shop := &shopRoute{}
	fake := wechatfake.Start(t, wechatfake.Options{NotifyClient: shop.client()})
	s := startLive(t, liveOpts{only: only, payClients: map[string]*http.Client{payment.NameWeChat: fake.Client()}, tune: func(c *Config) {
		c.PaySandbox, c.PayProviders = false, payment.NameWeChat
		c.WeChatPay = fake.Config(shopNotifyURL + payment.NameWeChat)
		shop.set(c.BaseURL)
	}})
	return s, fake
}

// shopNotifyURL is where the providers' fakes call the shop back: https, as the providers require; a
// shopRoute sends it to the test's server.
const shopNotifyURL = "https://shop.test/api/payments/notify/"

// shopRoute sends the providers' callbacks for https://shop.test to the test's server, once it listens.
type shopRoute struct{ base atomic.Value }

func (r *shopRoute) set(base string) { r.base.Store(base) }

func (r *shopRoute) RoundTrip(req *http.Request) (*http.Response, error) {
	base, _ := r.base.Load().(string)
	u, err := url.Parse(base)
	if err != nil || base == "" || req.URL.Host != "shop.test" {
		return nil, fmt.Errorf("no shop at %s", req.URL)
	}
	req = req.Clone(req.Context())
	req.URL.Scheme, req.URL.Host = u.Scheme, u.Host
	return http.DefaultTransport.RoundTrip(req)
}

func (r *shopRoute) client() *http.Client {
	return &http.Client{Transport: r, Timeout: 10 * time.Second}
}

// A shopper pays an order by WeChat Pay: the order page's Pay makes one Native payment for the order's
// price with the order's deadline, shows its weixin:// code, gives the same one back to a second press,
// and the order is paid when WeChat Pay's signed callback comes — once, however often it comes.
func TestWeChatPayFromQRCodeToPaid(t *testing.T) {
	s, fake := startWeChatShop(t, "order_consumer")
	item, buy := newPaySale(t, s, 3)
	b, o := buy("wx_payer")

	r := b.call("POST", "/api/orders/"+o.OrderNo+"/pay", map[string]any{"provider": "wechat"})
	if r.Status != 200 {
		t.Fatalf("pay: %d %s", r.Status, r.Body)
	}
	p := r.json(t)
	id, url := p["payment_id"].(string), p["pay_url"].(string)
	if p["provider"] != "wechat" || !strings.HasPrefix(url, "weixin://wxpay/") || !strings.HasPrefix(p["image"].(string), "data:image/png;base64,") {
		t.Fatalf("the payment answered %s", r.Body)
	}
	total, expire, ok := fake.Trade(id)
	if !ok || total != item.SeckillPriceCents || !expire.Equal(o.PayDeadline.Truncate(time.Second)) {
		t.Errorf("WeChat Pay holds %d fen expiring %v (%v), want %d expiring at the order's deadline %v", total, expire, ok, item.SeckillPriceCents, o.PayDeadline)
	}
	// Pressed again (another tab): the same code, and WeChat Pay was not asked for another payment.
	if again := b.call("POST", "/api/orders/"+o.OrderNo+"/pay", nil).json(t); again["payment_id"] != id || again["pay_url"] != url {
		t.Errorf("a second press gave %v, want the same payment %s", again, id)
	}
	if n := fake.Calls("POST /v3/pay/transactions/native"); n != 1 {
		t.Errorf("WeChat Pay was asked for %d payments, want 1", n)
	}
	// A provider the shop does not offer is refused in the shopper's words.
	expect(t, "pay with alipay", b.call("POST", "/api/orders/"+o.OrderNo+"/pay", map[string]any{"provider": "alipay"}), 400, "bad_request")

	if err := fake.Pay(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallySaw(t, 10*time.Second, "the order paid by the callback", func() (bool, string) {
		st := orderStatus(t, s, o.OrderNo)
		return st == models.OrderPaid, st
	})
	// WeChat Pay sends it again (it does until it hears SUCCESS): taken, and nothing changes.
	sent := fake.Sent()
	if len(sent) == 0 || sent[len(sent)-1].Status/100 != 2 {
		t.Fatalf("the shop's answer to the callback: %+v", sent)
	}
	if status, err := fake.Resend(context.Background(), sent[len(sent)-1]); err != nil || status/100 != 2 {
		t.Errorf("the callback again: %d %v", status, err)
	}
	var paid []models.Payment
	s.DB.Where("order_id = ? AND status = ?", o.ID, models.PaymentPaid).Find(&paid)
	if len(paid) != 1 || paid[0].Provider != payment.NameWeChat {
		t.Errorf("the order's paid payments: %+v", paid)
	}
}

// Callbacks that are not WeChat Pay's word change nothing: signed with another key, replayed after
// five minutes, or naming another amount than the payment's; each answered so that a genuine one would
// be sent again.
func TestWeChatPayRefusesCallbacksThatAreNotItsWord(t *testing.T) {
	s, fake := startWeChatShop(t, "order_consumer")
	item, buy := newPaySale(t, s, 3)
	b, o := buy("wx_forged")
	id := pay(t, b, o.OrderNo)["payment_id"].(string)
	// WeChat Pay takes the payment, but its callbacks are lost; the shop hears only forgeries.
	other, err := wechatfake.NewKeys()
	if err != nil {
		t.Fatal(err)
	}
	for what, opts := range map[string]wechatfake.NotifyOptions{
		"signed with another key":   {Key: other.PlatformKey},
		"replayed ten minutes late": {At: time.Now().Add(-10 * time.Minute)},
		"for one fen less":          {Total: item.SeckillPriceCents - 1},
	} {
		n, err := fake.TransactionNotify(id, opts)
		if err != nil {
			t.Fatal(err)
		}
		status, err := fake.Resend(context.Background(), n)
		if err != nil || status/100 == 2 {
			t.Errorf("a callback %s: answered %d %v, want a refusal", what, status, err)
		}
		if st := orderStatus(t, s, o.OrderNo); st != models.OrderPendingPayment {
			t.Fatalf("after a callback %s the order is %s", what, st)
		}
	}
	// A callback for a provider the shop does not offer: not found, in JSON.
	expect(t, "alipay's callback", newBrowser(t, s.URL).send("POST", "/api/payments/notify/alipay", []byte("a=b"), map[string]string{"Content-Type": "application/x-www-form-urlencoded"}), 404, "not_found")
}

// startShopOfBoth serves a shop that offers WeChat Pay and Alipay, each through its fake.
func startShopOfBoth(t *testing.T, only ...string) (*liveServer, *wechatfake.Fake, *alipayfake.Fake) {
	t.Helper()
	shop := &shopRoute{}
	wx := wechatfake.Start(t, wechatfake.Options{NotifyClient: shop.client()})
	ali := alipayfake.Start(t, alipayfake.Options{})
	ali.Deliver = shop.RoundTrip
	clients := map[string]*http.Client{payment.NameWeChat: wx.Client(), payment.NameAlipay: ali.HTTPClient()}
	s := startLive(t, liveOpts{only: only, payClients: clients, tune: func(c *Config) {
		c.PaySandbox, c.PayProviders = false, payment.NameWeChat+","+payment.NameAlipay
		c.WeChatPay = wx.Config(shopNotifyURL + payment.NameWeChat)
		c.Alipay = ali.Config(shopNotifyURL + payment.NameAlipay)
		shop.set(c.BaseURL)
	}})
	return s, wx, ali
}

// payWith presses Pay on the order page with a provider chosen: its QR code holds what the payer opens.
func payWith(t *testing.T, b *browser, no, provider string) (id, url string) {
	t.Helper()
	r := b.call("POST", "/api/orders/"+no+"/pay", map[string]any{"provider": provider})
	if r.Status != 200 {
		t.Fatalf("pay %s with %s: %d %s", no, provider, r.Status, r.Body)
	}
	j := r.json(t)
	if j["provider"] != provider || decodeQR(t, j["image"].(string)) != j["pay_url"] {
		t.Fatalf("pay with %s answered %v", provider, j)
	}
	return j["payment_id"].(string), j["pay_url"].(string)
}

// refundOf waits for the order's one refund to reach want, and answers it.
func refundOf(t *testing.T, s *liveServer, orderID int64, want string) models.Refund {
	t.Helper()
	var f models.Refund
	testenv.EventuallySaw(t, 20*time.Second, "the order's refund to be "+want, func() (bool, string) {
		var fs []models.Refund
		s.DB.Where("order_id = ?", orderID).Find(&fs)
		if len(fs) != 1 {
			return false, fmt.Sprintf("%d refunds", len(fs))
		}
		f = fs[0]
		return f.Status == want, f.Status + " " + f.LastError
	})
	return f
}

// A shopper offered both opens WeChat Pay's code, then Alipay's, and pays both: the order is paid once,
// by the first, and the second payment's money goes back by itself, once. Before the payer scans it,
// an Alipay payment does not exist at Alipay; the poll leaves it open.
func TestAlipayAndASecondPaymentOfAPaidOrderRefunded(t *testing.T) {
	s, wx, ali := startShopOfBoth(t, "order_consumer", "payment_poll", "refunds")
	item, buy := newPaySale(t, s, 3)
	b, o := buy("both_payer")

	wxID, _ := payWith(t, b, o.OrderNo, payment.NameWeChat)
	aliID, aliURL := payWith(t, b, o.OrderNo, payment.NameAlipay)
	if wxID == aliID || aliURL == "" {
		t.Fatalf("two providers gave payments %s and %s", wxID, aliID)
	}
	tr, ok := ali.Trade(aliID)
	if !ok || tr.TotalCents != item.SeckillPriceCents || tr.Status != "" || !tr.Expire.Equal(o.PayDeadline.Truncate(time.Second)) {
		t.Fatalf("Alipay holds %+v (%v), want %d unscanned until the order's deadline %v", tr, ok, item.SeckillPriceCents, o.PayDeadline)
	}
	// The poll asks Alipay, which does not know the unscanned payment yet: it stays open in the books.
	testenv.EventuallySaw(t, 10*time.Second, "the poll to ask Alipay", func() (bool, string) {
		return ali.Calls("alipay.trade.query") > 0, "not asked"
	})
	var p models.Payment
	s.DB.Where("provider_id = ?", aliID).Take(&p)
	if p.Status != models.PaymentOpen || p.Provider != payment.NameAlipay {
		t.Fatalf("the unscanned Alipay payment is %+v", p)
	}

	if err := wx.Pay(context.Background(), wxID); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, s, o.OrderNo, models.OrderPaid, 10*time.Second)
	if err := ali.Pay(aliID); err != nil {
		t.Fatal(err)
	}
	if sent := ali.Sent(); len(sent) == 0 || !sent[len(sent)-1].Acked() {
		t.Fatalf("Alipay's notification was not taken: %+v", sent)
	}
	f := refundOf(t, s, o.ID, models.RefundDone)
	if f.ProviderID != aliID || f.AmountCents != item.SeckillPriceCents || f.Kind != models.RefundLatePayment {
		t.Errorf("the refund: %+v", f)
	}
	if tr, _ := ali.Trade(aliID); tr.RefundedCents != item.SeckillPriceCents || tr.Refunds != 1 {
		t.Errorf("Alipay refunded %d fen in %d refunds, want the whole %d once", tr.RefundedCents, tr.Refunds, item.SeckillPriceCents)
	}
	if st := orderStatus(t, s, o.OrderNo); st != models.OrderPaid {
		t.Errorf("the order is %s, want still paid by WeChat Pay", st)
	}
	if n, fen := wx.Refunds(wxID); n != 0 || fen != 0 {
		t.Errorf("WeChat Pay's payment was refunded %d times (%d fen)", n, fen)
	}
}

// A shopper cancels an order whose Alipay code nobody has scanned: Alipay cannot close what it does not
// know, and the cancel goes through; the code could still be scanned until it expires, so the shop
// follows the payment, and money paid late goes back by itself.
func TestCancelBeforeTheAlipayCodeIsScannedFollowsItUntilItExpires(t *testing.T) {
	s, _, ali := startShopOfBoth(t, "order_consumer", "payment_poll", "refunds")
	item, buy := newPaySale(t, s, 3)
	b, o := buy("ali_late")
	id, _ := payWith(t, b, o.OrderNo, payment.NameAlipay)
	if r := b.call("POST", "/api/orders/"+o.OrderNo+"/cancel", nil); r.Status != 200 {
		t.Fatalf("cancel with an unscanned Alipay code: %d %s", r.Status, r.Body)
	}
	var p models.Payment
	s.DB.Where("provider_id = ?", id).Take(&p)
	if p.Status != models.PaymentOpen {
		t.Errorf("the unscanned payment of the cancelled order is %s, want open (followed until it expires)", p.Status)
	}
	// Scanned and paid after the cancel: the money goes back.
	if err := ali.Pay(id); err != nil {
		t.Fatal(err)
	}
	refundOf(t, s, o.ID, models.RefundDone)
	if tr, _ := ali.Trade(id); tr.RefundedCents != item.SeckillPriceCents || tr.Refunds != 1 {
		t.Errorf("Alipay refunded %d in %d refunds, want %d once", tr.RefundedCents, tr.Refunds, item.SeckillPriceCents)
	}
	if st := orderStatus(t, s, o.OrderNo); st != models.OrderCancelled {
		t.Errorf("the order is %s, want cancelled", st)
	}

	// Another nobody ever scans: once it has expired the shop stops following it.
	b2, o2 := buy("ali_never")
	id2, _ := payWith(t, b2, o2.OrderNo, payment.NameAlipay)
	if r := b2.call("POST", "/api/orders/"+o2.OrderNo+"/cancel", nil); r.Status != 200 {
		t.Fatalf("cancel: %d %s", r.Status, r.Body)
	}
	s.Clock.Advance(s.Cfg.PayTimeout + 5*time.Minute)
	testenv.EventuallySaw(t, 15*time.Second, "the expired payment closed", func() (bool, string) {
		var p models.Payment
		s.DB.Where("provider_id = ?", id2).Take(&p)
		return p.Status == models.PaymentClosed, p.Status
	})
}

// The order's deadline comes (or the shopper cancels) while the payer is paying in WeChat
// (USERPAYING): the close is refused, the order is not cancelled, and the payment, when it completes,
// pays it.
func TestWeChatCloseMeetingAPaymentInProgressIsNotLost(t *testing.T) {
	s, wx, _ := startShopOfBoth(t, "order_consumer")
	_, buy := newPaySale(t, s, 3)
	b, o := buy("wx_paying")
	id, _ := payWith(t, b, o.OrderNo, payment.NameWeChat)
	if err := wx.Paying(id); err != nil {
		t.Fatal(err)
	}
	r := b.call("POST", "/api/orders/"+o.OrderNo+"/cancel", nil)
	expect(t, "cancel while paying", r, 503, "payment_unavailable")
	if msg := r.json(t)["message"].(string); !strings.Contains(msg, "being paid right now") {
		t.Errorf("the shopper is told %q, want that the order is being paid", msg)
	}
	if st := orderStatus(t, s, o.OrderNo); st != models.OrderPendingPayment {
		t.Fatalf("the order is %s while its payment is being made", st)
	}
	if err := wx.Pay(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, s, o.OrderNo, models.OrderPaid, 10*time.Second)
}

// An admin refunds a WeChat Pay order: WeChat Pay makes the refund over time (PROCESSING), the shop
// asks again with the same refund number (one refund), and WeChat Pay's refund callback settles it.
func TestWeChatRefundIsMadeOnceAndSettledByItsCallback(t *testing.T) {
	s, wx, _ := startShopOfBoth(t, "order_consumer", "refunds")
	item, buy := newPaySale(t, s, 3)
	b, o := buy("wx_refunded")
	id, _ := payWith(t, b, o.OrderNo, payment.NameWeChat)
	if err := wx.Pay(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, s, o.OrderNo, models.OrderPaid, 10*time.Second)
	admin := withRole(t, s, "wx_refund_admin", models.RoleAdmin)
	r := admin.call("POST", "/api/admin/orders/"+o.OrderNo+"/refund", map[string]any{"reason": "买家地址无法送达" + strings.Repeat("。", 200)})
	if r.Status != 200 {
		t.Fatalf("the refund: %d %s", r.Status, r.Body)
	}
	f := refundOf(t, s, o.ID, models.RefundPending)
	// The refunds job asks again meanwhile: still one refund at WeChat Pay.
	time.Sleep(3 * s.Cfg.PayPollInterval)
	if n, fen := wx.Refunds(id); n != 1 || fen != item.SeckillPriceCents {
		t.Fatalf("WeChat Pay holds %d refunds of %d fen, want one of %d", n, fen, item.SeckillPriceCents)
	}
	if err := wx.CompleteRefund(context.Background(), f.RefundID()); err != nil {
		t.Fatal(err)
	}
	refundOf(t, s, o.ID, models.RefundDone)
	if st := orderStatus(t, s, o.OrderNo); st != models.OrderRefunded {
		t.Errorf("the order is %s, want refunded", st)
	}
}

// WeChat Pay is down: Pay says so at once in the shopper's words, and the order keeps its deadline.
func TestPayWhileWeChatPayIsDown(t *testing.T) {
	s, wx, _ := startShopOfBoth(t, "order_consumer")
	_, buy := newPaySale(t, s, 3)
	b, o := buy("wx_down")
	wx.SetMode(wechatfake.Unavailable)
	expect(t, "pay while WeChat Pay is down", b.call("POST", "/api/orders/"+o.OrderNo+"/pay", map[string]any{"provider": "wechat"}), 503, "payment_unavailable")
	if st := orderStatus(t, s, o.OrderNo); st != models.OrderPendingPayment {
		t.Errorf("the order is %s", st)
	}
	wx.SetMode(wechatfake.Up)
	payWith(t, b, o.OrderNo, payment.NameWeChat)
}

// Alipay's notifications never reach the shop (its address unreachable): the poll asks Alipay and finds
// the money, and a refund asked while Alipay is down waits, pending, until Alipay is back, then is made
// once.
func TestLostCallbacksAndADownProviderLoseNoMoney(t *testing.T) {
	s, _, ali := startShopOfBoth(t, "order_consumer", "payment_poll", "refunds")
	item, buy := newPaySale(t, s, 3)
	ali.Deliver = func(*http.Request) (*http.Response, error) { return nil, fmt.Errorf("the shop cannot be reached") }
	b, o := buy("ali_unheard")
	id, _ := payWith(t, b, o.OrderNo, payment.NameAlipay)
	if err := ali.Pay(id); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, s, o.OrderNo, models.OrderPaid, 15*time.Second)

	ali.SetDown(true)
	admin := withRole(t, s, "ali_refund_admin", models.RoleAdmin)
	if r := admin.call("POST", "/api/admin/orders/"+o.OrderNo+"/refund", map[string]any{"reason": "out of stock at the warehouse"}); r.Status != 200 {
		t.Fatalf("the refund: %d %s", r.Status, r.Body)
	}
	if f := refundOf(t, s, o.ID, models.RefundPending); f.LastError == "" {
		t.Errorf("a refund Alipay could not take says no why: %+v", f)
	}
	ali.SetDown(false)
	refundOf(t, s, o.ID, models.RefundDone)
	if tr, _ := ali.Trade(id); tr.RefundedCents != item.SeckillPriceCents || tr.Refunds != 1 {
		t.Errorf("Alipay refunded %d in %d refunds, want %d once", tr.RefundedCents, tr.Refunds, item.SeckillPriceCents)
	}
	waitStatus(t, s, o.OrderNo, models.OrderRefunded, 10*time.Second)
}
