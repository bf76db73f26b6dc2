package alipayfake_test

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"seckill/payment"
	"seckill/payment/alipay"
	"seckill/payment/alipay/alipayfake"
)

// The shop's tests start a fake, make the provider with the fake's config and HTTP client, route the
// fake's notifications to the shop's notify handler, and play the payer with Scan and Pay.
func Example() {
	f, err := alipayfake.New(alipayfake.Options{})
	if err != nil {
		panic(err)
	}
	defer f.Close()
	p, err := alipay.New(f.Config("https://shop.example/api/payments/notify/alipay"), f.HTTPClient())
	if err != nil {
		panic(err)
	}
	f.Deliver = alipayfake.DeliverTo(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		n, err := p.ReadNotify(r.Context(), r.Header, body)
		fmt.Println("notified:", n.PaymentID, n.Status, n.AmountCents, err)
		status, ct, b := p.Ack(err == nil)
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(status)
		_, _ = w.Write(b)
	}))

	ctx := context.Background()
	created, _ := p.Create(ctx, payment.Request{PaymentNo: "P20261126001", AmountCents: 990, Subject: "Tea"})
	fmt.Println("created:", created.ID)
	_, err = p.Query(ctx, created.ID)
	fmt.Println("before the scan:", err)
	_ = f.Pay(created.ID)
	st, _ := p.Query(ctx, created.ID)
	fmt.Println("after:", st)
	// Output:
	// created: P20261126001
	// before the scan: payment not found at the provider: alipay: ACQ.TRADE_NOT_EXIST
	// notified: P20261126001 paid 990 <nil>
	// after: paid
}
