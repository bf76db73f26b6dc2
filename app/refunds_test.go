package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"seckill/handlers"
	"seckill/internal/testenv"
	"seckill/models"
	"seckill/payment"
)

// flakyRefunds is the provider failing its first refunds as a provider that is down would, and counting
// the refunds that reached it.
type flakyRefunds struct {
	payment.Provider
	fail    atomic.Int64 // refunds to fail before letting them through
	reached atomic.Int64 // refunds the provider made (answered refunded)
}

func (f *flakyRefunds) Refund(ctx context.Context, id string, r payment.RefundRequest) (string, error) {
	if f.fail.Add(-1) >= 0 {
		return "", payment.ErrUnavailable
	}
	st, err := f.Provider.Refund(ctx, id, r)
	if err == nil {
		f.reached.Add(1)
	}
	return st, err
}

func auditActions(t *testing.T, s *liveServer, target string) []string {
	t.Helper()
	var acts []string
	if err := s.DB.Model(&models.AuditLog{}).Where("target = ?", target).Order("id").Pluck("action", &acts).Error; err != nil {
		t.Fatal(err)
	}
	return acts
}

func sandboxStatus(t *testing.T, s *liveServer, paymentID string) string {
	t.Helper()
	return s.Redis.HGet(context.Background(), "sandbox:pay:{"+paymentID+"}", "status").Val()
}

// Money that reaches a cancelled order goes back by itself: once, though the provider fails twice first,
// and however often the payment's callback comes again.
func TestLatePaymentIsRefundedOnceThoughTheProviderFailsTwice(t *testing.T) {
	testenv.Long(t)
	s := startLive(t, liveOpts{only: []string{"order_consumer"}})
	_, buy := newPaySale(t, s, 2)
	b, o := buy("late_payer")
	id := pay(t, b, o.OrderNo)["payment_id"].(string)
	// The order is cancelled while its payment is still open at the provider (the close was lost) ...
	if release, err := s.Srv.Orders.CancelInBooks(context.Background(), &o); release == 0 || err != nil {
		t.Fatalf("cancel: %v %v", release, err)
	}
	// ... and the payer pays it then: the callback finds the order cancelled.
	if r := b.call("POST", "/sandbox/pay/"+id+"/confirm", nil); r.Status != 302 {
		t.Fatalf("pressing Pay: %d", r.Status)
	}
	if st := orderStatus(t, s, o.OrderNo); st != models.OrderCancelled {
		t.Fatalf("the late payment made the cancelled order %s", st)
	}
	refunds, _ := models.RefundsOfOrder(context.Background(), s.DB, o.ID)
	if len(refunds) != 1 || refunds[0].Status != models.RefundPending || refunds[0].Kind != models.RefundLatePayment {
		t.Fatalf("after the late payment the refunds are %+v, want one pending", refunds)
	}
	if got := b.call("GET", "/api/orders/"+o.OrderNo, nil).json(t)["refund_status"]; got != "pending" {
		t.Errorf("the shopper's order says refund_status %v, want pending", got)
	}

	flaky := &flakyRefunds{Provider: s.Srv.Refunds.Providers.Of("")}
	flaky.fail.Store(2)
	s.Srv.Refunds.Providers = only(flaky)
	for round := 1; round <= 2; round++ {
		if err := s.Srv.Refunds.Once(context.Background()); !errors.Is(err, payment.ErrUnavailable) {
			t.Fatalf("round %d with the provider down answered %v", round, err)
		}
		if st := sandboxStatus(t, s, id); st != payment.StatusPaid {
			t.Fatalf("round %d: the payment is %s at the provider", round, st)
		}
	}
	// The provider is back; the callback of the payment comes again, and more rounds run.
	if err := s.Srv.Refunds.Once(context.Background()); err != nil {
		t.Fatalf("the round with the provider back: %v", err)
	}
	body, _ := json.Marshal(payment.Notification{PaymentID: id, OrderNo: o.OrderNo, AmountCents: o.PriceCents, Status: payment.StatusPaid, At: s.Clock.Now().Unix()})
	if r := newBrowser(t, s.URL).send("POST", handlers.NotifyPath, body, map[string]string{payment.SignatureHeader: payment.Sign(s.Cfg.callbackSecret(), body)}); r.Status != 200 {
		t.Fatalf("the callback again: %d %s", r.Status, r.Body)
	}
	for range 2 {
		if err := s.Srv.Refunds.Once(context.Background()); err != nil {
			t.Fatal(err)
		}
	}

	if n := flaky.reached.Load(); n != 1 {
		t.Errorf("the provider made %d refunds, want 1", n)
	}
	if st := sandboxStatus(t, s, id); st != payment.StatusRefunded {
		t.Errorf("the payment is %s at the provider, want refunded", st)
	}
	refunds, _ = models.RefundsOfOrder(context.Background(), s.DB, o.ID)
	if len(refunds) != 1 || refunds[0].Status != models.RefundDone || refunds[0].Attempts != 3 || refunds[0].DoneAt == nil {
		t.Errorf("the refunds: %+v, want one done after 3 tries", refunds)
	}
	got := b.call("GET", "/api/orders/"+o.OrderNo, nil).json(t)
	if got["status"] != "cancelled" || got["refund_status"] != "done" {
		t.Errorf("the shopper's order: %v", got)
	}
	b.setCookie("lang", "en")
	if pg := b.call("GET", "/orders/"+o.OrderNo, nil); !bytes.Contains(pg.Body, []byte("has been returned")) {
		t.Errorf("the order page does not say the money was returned")
	}
	if acts := strings.Join(auditActions(t, s, "order:"+o.OrderNo), ","); acts != "refund.request,refund.done" {
		t.Errorf("the audit log of the order: %s", acts)
	}
}

// An admin refunds a paid order with a reason: audited, the order refunded, the money back once, and
// the unit not sold again.
func TestAdminRefundIsAuditedAndDoesNotRestock(t *testing.T) {
	s := startLive(t, liveOpts{only: []string{"order_consumer"}})
	item, _ := newPaySale(t, s, 3)
	shopper, o := paidOrderFor(t, s, item, "refund_me", homeAddress)
	_, shipped := paidOrderFor(t, s, item, "refund_shipped", homeAddress)
	_, unpaid := orderFor(t, s, item, "refund_unpaid")
	admin := withRole(t, s, "refund_admin", models.RoleAdmin)
	ctx := context.Background()
	leftBefore, loaded, err := s.Srv.Ledger.Left(ctx, item.ID)
	if err != nil || !loaded {
		t.Fatalf("stock left in Redis: %v %v", loaded, err)
	}
	path := "/api/admin/orders/" + o.OrderNo + "/refund"

	expect(t, "a shopper refunds", shopper.call("POST", path, map[string]any{"reason": "mine"}), 403, "forbidden")
	r := admin.call("POST", path, map[string]any{"reason": "  "})
	expect(t, "a refund without a reason", r, 400, "bad_request")
	if f, _ := r.json(t)["fields"].(map[string]any); f["reason"] == nil {
		t.Errorf("a refund without a reason names %v", r.json(t)["fields"])
	}
	expect(t, "an unknown order", admin.call("POST", "/api/admin/orders/SKnone/refund", map[string]any{"reason": "x"}), 404, "not_found")
	expect(t, "an unpaid order", admin.call("POST", "/api/admin/orders/"+unpaid.OrderNo+"/refund", map[string]any{"reason": "x"}), 409, "order_state")
	s.DB.Model(&models.Order{}).Where("id = ?", shipped.ID).Update("status", models.OrderShipped)

	// The longest reason there may be, in Chinese (500 characters, 1,500 bytes).
	reason := "买家地址无法送达" + strings.Repeat("。", 492)
	r = admin.call("POST", path, map[string]any{"reason": reason})
	if r.Status != 200 {
		t.Fatalf("the refund: %d %s", r.Status, r.Body)
	}
	j := r.json(t)
	rs := j["refunds"].([]any)
	if j["order"].(map[string]any)["status"] != "refunded" || len(rs) != 1 || rs[0].(map[string]any)["status"] != "done" {
		t.Fatalf("the refund answered %s", r.Body)
	}
	paymentID := rs[0].(map[string]any)["payment_id"].(string)
	if st := sandboxStatus(t, s, paymentID); st != payment.StatusRefunded {
		t.Errorf("the payment is %s at the provider", st)
	}
	// Again: nothing more.
	if r := admin.call("POST", path, map[string]any{"reason": "again"}); r.Status != 200 || len(r.json(t)["refunds"].([]any)) != 1 {
		t.Errorf("refunding again: %d %s", r.Status, r.Body)
	}

	// Audited, with the reason and who.
	var row models.AuditLog
	s.DB.Where("action = ? AND target = ?", "order.refund", "order:"+o.OrderNo).Take(&row)
	if row.Actor != "refund_admin" || !strings.Contains(row.After, reason) || !strings.Contains(row.Before, "paid") {
		t.Errorf("the audit row: %+v", row)
	}
	if acts := strings.Join(auditActions(t, s, "order:"+o.OrderNo), ","); acts != "refund.request,order.refund,refund.done" {
		t.Errorf("the audit log of the order: %s", acts)
	}

	// Not restocked: the database and Redis still count it sold.
	var it models.Item
	s.DB.Take(&it, item.ID)
	var releases int64
	s.DB.Model(&models.StockLog{}).Where("order_no = ? AND kind = ?", o.OrderNo, models.StockRelease).Count(&releases)
	leftAfter, _, err := s.Srv.Ledger.Left(ctx, item.ID)
	if err != nil {
		t.Fatal(err)
	}
	if it.StockSold != 3 || releases != 0 || leftAfter != leftBefore {
		t.Errorf("after the refund: stock_sold %d (want 3), releases %d, Redis left %d (was %d)", it.StockSold, releases, leftAfter, leftBefore)
	}

	// The sale's figures: the refunded order sold, apart; the shipped one paid and shipped.
	stats := admin.call("GET", "/api/admin/activities/"+itoa(item.ActivityID)+"/stats", nil).json(t)
	if stats["orders_refunded"] != 1.0 || stats["orders_paid"] != 1.0 || stats["orders_shipped"] != 1.0 || stats["orders_pending"] != 1.0 {
		t.Errorf("the sale's figures: %v", stats)
	}

	// The shopper sees it refunded, with the reason; the admin's page shows it.
	got := shopper.call("GET", "/api/orders/"+o.OrderNo, nil).json(t)
	if got["status"] != "refunded" || got["refund_reason"] != reason || got["refund_status"] != "done" || got["refunded_at"] == nil {
		t.Errorf("the shopper's order: %v", got)
	}
	shopper.setCookie("lang", "zh")
	if pg := shopper.call("GET", "/orders/"+o.OrderNo, nil); !bytes.Contains(pg.Body, []byte(reason)) || !bytes.Contains(pg.Body, []byte("已退款")) {
		t.Errorf("the shopper's order page does not show the refund")
	}
	if pg := admin.call("GET", "/admin/orders?no="+o.OrderNo, nil); pg.Status != 200 || !bytes.Contains(pg.Body, []byte(reason)) || !bytes.Contains(pg.Body, []byte(paymentID)) {
		t.Errorf("the admin's orders page: %d", pg.Status)
	}

	// A shipped order that came back (a return) is refunded through the same path: its money goes back,
	// and its unit is not sold again either.
	r = admin.call("POST", "/api/admin/orders/"+shipped.OrderNo+"/refund", map[string]any{"reason": "returned: the box was broken"})
	if r.Status != 200 || r.json(t)["order"].(map[string]any)["status"] != "refunded" {
		t.Fatalf("refunding a shipped order: %d %s", r.Status, r.Body)
	}
	s.DB.Take(&it, item.ID)
	s.DB.Model(&models.StockLog{}).Where("order_no = ? AND kind = ?", shipped.OrderNo, models.StockRelease).Count(&releases)
	if leftAfter, _, err = s.Srv.Ledger.Left(ctx, item.ID); err != nil {
		t.Fatal(err)
	}
	if it.StockSold != 3 || releases != 0 || leftAfter != leftBefore {
		t.Errorf("after the return: stock_sold %d (want 3), releases %d, Redis left %d (was %d)", it.StockSold, releases, leftAfter, leftBefore)
	}
	row = models.AuditLog{}
	s.DB.Where("action = ? AND target = ?", "order.refund", "order:"+shipped.OrderNo).Take(&row)
	if !strings.Contains(row.Before, "shipped") || !strings.Contains(row.After, "returned") {
		t.Errorf("the return's audit row: %+v", row)
	}
}

// A payment of a cancelled order that could not be closed at the provider stays followed: the poller
// closes it, or, if the payer paid it meanwhile (and the callback was lost), finds the money and refunds it.
func TestPaymentLeftOpenOnACancelledOrderIsFollowed(t *testing.T) {
	testenv.Long(t)
	s := startLive(t, liveOpts{only: []string{"order_consumer"}})
	_, buy := newPaySale(t, s, 2)
	ctx := context.Background()
	open := func(name string) (models.Order, string) {
		b, o := buy(name)
		id := pay(t, b, o.OrderNo)["payment_id"].(string)
		if release, err := s.Srv.Orders.CancelInBooks(ctx, &o); release == 0 || err != nil {
			t.Fatalf("cancel: %v %v", release, err)
		}
		p, err := models.PaymentByProviderID(ctx, s.DB, id)
		if err != nil {
			t.Fatal(err)
		}
		// The close at the provider failed, so the payment is open in the books again (closeLate).
		if err := models.ReopenPayment(ctx, s.DB, p.ID, s.Clock.Now()); err != nil {
			t.Fatal(err)
		}
		return o, id
	}
	left, leftID := open("left_open")
	paid, paidID := open("paid_later")
	s.Redis.HSet(ctx, "sandbox:pay:{"+paidID+"}", "status", payment.StatusPaid) // paid, its callback lost
	if err := s.Srv.PaymentPoll.Once(ctx); err != nil {
		t.Fatal(err)
	}
	if st := sandboxStatus(t, s, leftID); st != payment.StatusClosed {
		t.Errorf("the payment left open is %s at the provider, want closed", st)
	}
	if p, _ := models.PaymentByProviderID(ctx, s.DB, leftID); p.Status != models.PaymentClosed {
		t.Errorf("the payment left open is %s in the books, want closed", p.Status)
	}
	if rs, _ := models.RefundsOfOrder(ctx, s.DB, paid.ID); len(rs) != 1 || rs[0].ProviderID != paidID {
		t.Errorf("the payment paid later: refunds %+v, want one", rs)
	}
	for _, o := range []models.Order{left, paid} {
		if st := orderStatus(t, s, o.OrderNo); st != models.OrderCancelled {
			t.Errorf("order %s is %s, want it to stay cancelled", o.OrderNo, st)
		}
	}
}

// failClose is the provider failing to close the payments named, and answering open for those named in
// queryOpen whatever it holds (a payment paid between the poller's question and its close).
type failClose struct {
	payment.Provider
	mu        sync.Mutex
	fail      map[string]bool
	queryOpen map[string]bool
}

func (f *failClose) Close(ctx context.Context, id string) (string, error) {
	f.mu.Lock()
	fail := f.fail[id]
	f.mu.Unlock()
	if fail {
		return "", payment.ErrUnavailable
	}
	return f.Provider.Close(ctx, id)
}

func (f *failClose) Query(ctx context.Context, id string) (string, error) {
	f.mu.Lock()
	open := f.queryOpen[id]
	f.mu.Unlock()
	if open {
		return payment.StatusOpen, nil
	}
	return f.Provider.Query(ctx, id)
}

// A payment made in another tab while the order is cancelled, which the provider cannot close then, is
// open in the books again; the poller closes it once the provider answers, or, if the payer paid it just
// before the poller's close, records the money and refunds it.
func TestPaymentTheCancelCannotCloseIsFollowed(t *testing.T) {
	testenv.Long(t)
	s := startLive(t, liveOpts{only: []string{"order_consumer"}})
	_, buy := newPaySale(t, s, 3)
	ctx := context.Background()
	provider := &failClose{Provider: s.Srv.Orders.Providers.Of(""), fail: map[string]bool{}, queryOpen: map[string]bool{}}
	cancelWithPaymentInAnotherTab := func(name string) (models.Order, string) {
		b, o := buy(name)
		first := pay(t, b, o.OrderNo)["payment_id"].(string)
		var second string
		s.Srv.Orders.Providers = only(&payDuringClose{Provider: provider, pay: func() {
			s.Redis.HSet(ctx, "sandbox:pay:{"+first+"}", "status", payment.StatusClosed)
			s.DB.Model(&models.Payment{}).Where("order_id = ?", o.ID).Update("status", models.PaymentClosed)
			second = pay(t, b, o.OrderNo)["payment_id"].(string)
			provider.mu.Lock()
			provider.fail[second] = true // the provider cannot close it now
			provider.mu.Unlock()
		}})
		if r := b.call("POST", "/api/orders/"+o.OrderNo+"/cancel", nil); r.Status != 200 {
			t.Fatalf("cancel: %d %s", r.Status, r.Body)
		}
		p, err := models.PaymentByProviderID(ctx, s.DB, second)
		if err != nil || p.Status != models.PaymentOpen {
			t.Fatalf("the payment the cancel could not close: %+v %v, want open in the books", p, err)
		}
		return o, second
	}
	_, closeLater := cancelWithPaymentInAnotherTab("close_later")
	paidOrder, paidJustBefore := cancelWithPaymentInAnotherTab("paid_before_close")
	// The provider is back; one of them was paid just before the poller's close.
	provider.mu.Lock()
	provider.fail = map[string]bool{}
	provider.queryOpen[paidJustBefore] = true
	provider.mu.Unlock()
	s.Redis.HSet(ctx, "sandbox:pay:{"+paidJustBefore+"}", "status", payment.StatusPaid)
	s.Srv.PaymentPoll.Providers = only(provider)
	if err := s.Srv.PaymentPoll.Once(ctx); err != nil {
		t.Fatal(err)
	}
	if st := sandboxStatus(t, s, closeLater); st != payment.StatusClosed {
		t.Errorf("the payment the cancel could not close is %s at the provider, want closed", st)
	}
	if rs, _ := models.RefundsOfOrder(ctx, s.DB, paidOrder.ID); len(rs) != 1 || rs[0].ProviderID != paidJustBefore {
		t.Errorf("the payment paid just before the poller's close: refunds %+v, want one", rs)
	}
}
