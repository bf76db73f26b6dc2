package app

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"seckill/internal/testenv"
	"seckill/models"
)

// A shopper offered WeChat Pay and Alipay chooses on the order page: each provider's name, its QR code
// holding what its app opens, the words of its app ("Scan with Alipay to pay"), a link only for a code a
// browser can open (Alipay's https, not WeChat's weixin://), in English and Chinese; paid by WeChat
// Pay, the page shows the order paid.
func TestChoosingWeChatPayOrAlipayInABrowser(t *testing.T) {
	testenv.Long(t)
	s, wx, _ := startShopOfBoth(t, "order_consumer")
	_, buy := newPaySale(t, s, 4)
	ctx := chrome(t)
	for _, tt := range []struct {
		lang, wechat, alipay, scanAlipay, scanWeChat, paid string
	}{
		{"en", "WeChat Pay", "Alipay", "Scan with Alipay to pay", "Scan with WeChat to pay", "Paid"},
		{"zh", "微信支付", "支付宝", "请用支付宝扫一扫付款", "请用微信扫一扫付款", "已支付"},
	} {
		name := "pay_choice_" + tt.lang
		_, o := buy(name)
		if tt.lang == "en" {
			loginInBrowser(t, ctx, s.URL, name, passwordOf(name))
		} else {
			run(t, ctx, "log out", chromedp.Navigate(s.URL+"/logout"))
			loginInBrowser(t, ctx, s.URL, name, passwordOf(name))
		}
		var choices, scan, img string
		var linkHidden bool
		run(t, ctx, "the order page in "+tt.lang,
			chromedp.Navigate(s.URL+"/lang/"+tt.lang),
			chromedp.Navigate(s.URL+"/orders/"+o.OrderNo),
			chromedp.WaitVisible("#pay-choice", chromedp.ByID),
			chromedp.Text("#pay-choice", &choices, chromedp.ByID),
			chromedp.Click(`#pay-choice input[value="alipay"]`, chromedp.ByQuery),
			chromedp.Click("#pay-start", chromedp.ByID),
			chromedp.WaitVisible("#pay-qr img[src^='data:image/png']", chromedp.ByQuery),
			chromedp.Text(".pay-scan:not([hidden])", &scan, chromedp.ByQuery),
			chromedp.AttributeValue("#pay-qr img", "src", &img, nil, chromedp.ByQuery),
			chromedp.Evaluate(`document.getElementById("pay-link-line").hidden`, &linkHidden),
		)
		if !strings.Contains(choices, tt.wechat) || !strings.Contains(choices, tt.alipay) || strings.Index(choices, tt.wechat) > strings.Index(choices, tt.alipay) {
			t.Errorf("%s: the choice reads %q, want %s then %s", tt.lang, choices, tt.wechat, tt.alipay)
		}
		if strings.TrimSpace(scan) != tt.scanAlipay || !strings.HasPrefix(decodeQR(t, img), "https://qr.alipay.com/") || linkHidden {
			t.Errorf("%s: Alipay's code says %q, holds %q, link hidden %v", tt.lang, scan, decodeQR(t, img), linkHidden)
		}
		shot(t, ctx, "order-pay-alipay-"+tt.lang)

		// Another method: the Alipay code goes, and Pay makes WeChat Pay's.
		run(t, ctx, "WeChat Pay instead",
			chromedp.Click(`#pay-choice input[value="wechat"]`, chromedp.ByQuery),
			chromedp.WaitNotVisible("#pay-qr", chromedp.ByID),
			chromedp.Click("#pay-start", chromedp.ByID),
			chromedp.WaitVisible(`.pay-scan[data-provider="wechat"]`, chromedp.ByQuery),
			chromedp.Text(".pay-scan:not([hidden])", &scan, chromedp.ByQuery),
			chromedp.AttributeValue("#pay-qr img", "src", &img, nil, chromedp.ByQuery),
			chromedp.Evaluate(`document.getElementById("pay-link-line").hidden`, &linkHidden),
		)
		code := decodeQR(t, img)
		if strings.TrimSpace(scan) != tt.scanWeChat || !strings.HasPrefix(code, "weixin://wxpay/") || !linkHidden {
			t.Errorf("%s: WeChat Pay's code says %q, holds %q, link hidden %v", tt.lang, scan, code, linkHidden)
		}
		shot(t, ctx, "order-pay-wechat-"+tt.lang)

		var p models.Payment
		s.DB.Where("order_id = ? AND provider = ?", o.ID, "wechat").Take(&p)
		if err := wx.Pay(context.Background(), p.ProviderID); err != nil {
			t.Fatal(err)
		}
		var badge string
		run(t, ctx, "paid",
			chromedp.WaitVisible(".order-detail.status-paid", chromedp.ByQuery),
			chromedp.Text(".order-detail .badge", &badge, chromedp.ByQuery),
		)
		if strings.TrimSpace(badge) != tt.paid {
			t.Errorf("%s: the paid order's badge reads %q", tt.lang, badge)
		}
	}
}
