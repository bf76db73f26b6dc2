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
