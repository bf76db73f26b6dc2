package app

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"seckill/auth"
	"seckill/errs"
	"seckill/internal/testenv"
	"seckill/models"
	"seckill/payment"
)

// A shopper cancels an unpaid order: it is cancelled at once, its unit goes back on sale and the next
// shopper buys it, the books agree (the stock log, stock_sold, Redis), and the shopper who cancelled
// cannot buy the item again.
func TestShopperCancelsAnUnpaidOrder(t *testing.T) {
	s := startLive(t, liveOpts{only: []string{"order_consumer"}})
	ctx := context.Background()
	item, buy := newPaySale(t, s, 1)
	alice, ao := buy("cancel_alice")
	pay(t, alice, ao.OrderNo) // an open payment, closed at the provider by the cancel
	r := alice.call("POST", "/api/orders/"+ao.OrderNo+"/cancel", nil)
	if r.Status != 200 || r.json(t)["status"] != models.OrderCancelled {
		t.Fatalf("cancel: %d %s", r.Status, r.Body)
	}
	if left, _, err := s.Srv.Ledger.Left(ctx, item.ID); err != nil || left != 1 {
		t.Fatalf("after the cancel Redis holds %d (%v), want the unit back", left, err)
	}
	var it models.Item
	s.DB.First(&it, item.ID)
	var releases int64
	s.DB.Model(&models.StockLog{}).Where("order_no = ? AND kind = ? AND pending = ?", ao.OrderNo, models.StockRelease, false).Count(&releases)
	if it.StockSold != 0 || releases != 1 {
		t.Errorf("after the cancel: stock_sold %d, %d release rows done; want 0 and 1", it.StockSold, releases)
	}
	expect(t, "cancelling again", alice.call("POST", "/api/orders/"+ao.OrderNo+"/cancel", nil), 409, "order_state")
	expect(t, "paying a cancelled order", alice.call("POST", "/api/orders/"+ao.OrderNo+"/pay", nil), 409, "order_state")

	// The unit is bought by the next shopper; the one who cancelled cannot buy again.
	bob, bo := buy("cancel_bob")
	if bo.Status != models.OrderPendingPayment {
		t.Fatalf("the next shopper's order is %s", bo.Status)
	}
	tok, _ := auth.RandomToken(16)
	if err := s.Srv.Ledger.IssuePath(ctx, item.ID, ao.UserID, tok); !errs.Is(err, errs.AlreadyBought) {
		t.Errorf("the shopper who cancelled asks for a purchase path again: %v, want already_bought", err)
	}
	expect(t, "cancelling another's order", bob.call("POST", "/api/orders/"+ao.OrderNo+"/cancel", nil), 404, "not_found")
	if left, _, _ := s.Srv.Ledger.Left(ctx, item.ID); left != 0 {
		t.Errorf("after the next buy Redis holds %d, want 0", left)
	}
	s.DB.First(&it, item.ID)
	if it.StockSold != 1 {
		t.Errorf("stock_sold %d after the next buy, want 1", it.StockSold)
	}
}

// payDuringClose is the provider with a Pay from another tab slipped in while the cancel closes the
// order's payments, before the order is cancelled.
type payDuringClose struct {
	payment.Provider
	once sync.Once
	pay  func()
}

func (p *payDuringClose) Close(ctx context.Context, id string) (string, error) {
	st, err := p.Provider.Close(ctx, id)
	p.once.Do(p.pay)
	return st, err
}

// A payment made in another tab while the order is being cancelled is closed at the provider too: no
// payment of a cancelled order stays payable.
func TestPaymentMadeDuringTheCancelIsClosed(t *testing.T) {
	testenv.Long(t)
	s := startLive(t, liveOpts{only: []string{"order_consumer"}})
	_, buy := newPaySale(t, s, 2)
	b, o := buy("cancel_racer")
	first := pay(t, b, o.OrderNo)["payment_id"].(string)
	var second string
	s.Srv.Orders.Providers = only(&payDuringClose{Provider: s.Srv.Orders.Providers.Of(""), pay: func() {
		// Another payment, as a Pay in a second tab would make it (the first one is being closed).
		s.Redis.HSet(context.Background(), "sandbox:pay:{"+first+"}", "status", payment.StatusClosed)
		s.DB.Model(&models.Payment{}).Where("order_id = ?", o.ID).Update("status", models.PaymentClosed)
		second = pay(t, b, o.OrderNo)["payment_id"].(string)
	}})
	if r := b.call("POST", "/api/orders/"+o.OrderNo+"/cancel", nil); r.Status != 200 || r.json(t)["status"] != models.OrderCancelled {
		t.Fatalf("cancel: %d %s", r.Status, r.Body)
	}
	if second == "" || second == first {
		t.Fatalf("no second payment was made during the cancel (%q)", second)
	}
	if st := s.Redis.HGet(context.Background(), "sandbox:pay:{"+second+"}", "status").Val(); st == payment.StatusOpen {
		t.Errorf("the payment made during the cancel is %s at the provider, want closed", st)
	}
}

// TestCancelInABrowser: on the order page, in Chinese, the shopper presses 取消订单, confirms, and the page
// shows the order cancelled; the unit is back on sale.
func TestCancelInABrowser(t *testing.T) {
	testenv.Long(t)
	s := startLive(t, liveOpts{only: []string{"order_consumer"}})
	item, _ := newPaySale(t, s, 1)
	ctx := chrome(t)
	registerInBrowser(t, ctx, s.URL, "cancel_clicker")
	var u models.User
	if err := s.DB.Where("username = ?", "cancel_clicker").Take(&u).Error; err != nil {
		t.Fatal(err)
	}
	if _, err := s.Srv.Ledger.Take(context.Background(), item.ID, u.ID, issuePath(t, s, item.ID, u.ID), "SKclicker"); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 20*time.Second, "order SKclicker to be written", func() bool {
		_, err := models.OrderByNo(context.Background(), s.DB, "SKclicker")
		return err == nil
	})
	var confirmed atomic.Bool
	chromedp.ListenTarget(ctx, func(ev any) {
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			confirmed.Store(true)
			go func() { _ = chromedp.Run(ctx, page.HandleJavaScriptDialog(true)) }()
		}
	})
	var badge string
	run(t, ctx, "cancel on the order page",
		chromedp.Navigate(s.URL+"/lang/zh"),
		chromedp.Navigate(s.URL+"/orders/SKclicker"),
		chromedp.WaitVisible(`//button[@id="order-cancel"][contains(., "取消订单")]`),
		chromedp.Click("#order-cancel", chromedp.ByID),
		chromedp.WaitVisible(`//span[@class="badge"][contains(., "已取消")]`),
		chromedp.Text(".badge", &badge, chromedp.ByQuery),
	)
	if !confirmed.Load() {
		t.Error("the order was cancelled without asking")
	}
	// Its time is in the reader's zone and words, not raw UTC.
	var when string
	run(t, ctx, "the order's time", chromedp.Text("time[data-local]", &when, chromedp.ByQuery))
	if strings.Contains(when, "T") || strings.HasSuffix(when, "Z") || !strings.Contains(when, "年") {
		t.Errorf("the Chinese order page shows its time as %q", when)
	}
	if left, _, _ := s.Srv.Ledger.Left(context.Background(), item.ID); left != 1 {
		t.Errorf("after the cancel in the browser Redis holds %d, want the unit back", left)
	}
}
