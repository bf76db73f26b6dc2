package orders_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"seckill/errs"
	"seckill/internal/testenv"
	"seckill/models"
	"seckill/orders"
)

// After the win, on both databases the product runs on (PostgreSQL, and SQLite in demo mode): money
// reaching a cancelled order gets one refund however often it is seen; an admin's refund and a merchant's
// shipment move the order as the pages say.
func TestAfterTheWinOnBothDatabases(t *testing.T) {
	for name, open := range map[string]func(testing.TB) *gorm.DB{
		"postgres": testenv.Postgres,
		"sqlite":   testenv.SQLite,
	} {
		t.Run(name, func(t *testing.T) {
			db := open(t)
			ctx := context.Background()
			now := time.Now().UTC()
			svc := &orders.Service{DB: db, Now: func() time.Time { return now }, Log: slog.New(slog.DiscardHandler)}
			merchant, err := models.CreateUser(ctx, db, "m1", "hash", models.RoleMerchant)
			if err != nil {
				t.Fatal(err)
			}
			a, item := testenv.Sale(t, db, 5, now.Add(-time.Minute), now.Add(time.Hour))
			db.Model(&models.Activity{}).Where("id = ?", a.ID).Update("merchant_id", merchant.ID)
			placed, err := models.PlaceOrders(ctx, db, item.ID, []models.NewOrder{
				{OrderNo: "SKlate", UserID: 101, ActivityID: a.ID, PriceCents: 990, BoughtAt: now},
				{OrderNo: "SKpaid", UserID: 102, ActivityID: a.ID, PriceCents: 990, BoughtAt: now},
			}, now, 15*time.Minute)
			if err != nil || placed["SKpaid"].Outcome != models.Placed {
				t.Fatalf("place: %v %v", placed, err)
			}
			late, _ := models.OrderByNo(ctx, db, "SKlate")
			paid, _ := models.OrderByNo(ctx, db, "SKpaid")
			pay := func(o *models.Order, id string) *models.Payment {
				t.Helper()
				p, ok, err := models.AddPayment(ctx, db, o, models.NewPayment{ProviderID: id}, now)
				if err != nil || !ok {
					t.Fatalf("add payment: %v %v", ok, err)
				}
				return p
			}
			lateP, paidP := pay(late, "sbx_late"), pay(paid, "sbx_paid")
			if release, err := svc.CancelInBooks(ctx, late); release == 0 || err != nil {
				t.Fatalf("cancel: %v %v", release, err)
			}
			for range 2 { // the callback and the poll both see it paid
				if _, err := svc.Paid(ctx, lateP); err != nil {
					t.Fatal(err)
				}
			}
			if rs, _ := models.RefundsOfOrder(ctx, db, late.ID); len(rs) != 1 || rs[0].Kind != models.RefundLatePayment || rs[0].Status != models.RefundPending {
				t.Errorf("the late payment's refunds: %+v", rs)
			}
			if out, err := svc.Paid(ctx, paidP); err != nil || out != orders.PaidNow {
				t.Fatalf("pay: %+v %v", out, err)
			}

			// Shipped by its merchant only; then an admin cannot refund it.
			ship := models.Shipment{Carrier: "顺丰", TrackingNo: "SF123456"}
			if _, _, err := svc.Ship(ctx, merchant.ID+1, "SKpaid", ship); errs.Code(err) != errs.NotFound {
				t.Errorf("another merchant shipping the order: %v, want not found", err)
			}
			page, total, err := models.ActivityOrders(ctx, db, merchant.ID, a.ID, models.ToShip, 1)
			if err != nil || total != 1 || page[0].OrderNo != "SKpaid" {
				t.Fatalf("to ship: %v %d %v", page, total, err)
			}
			admin := models.Actor{ID: 9, Username: "admin"}
			if out, _, err := svc.Ship(ctx, merchant.ID, "SKpaid", ship); err != nil || out != orders.ShipDone {
				t.Fatalf("ship: %s %v", out, err)
			}
			// The shipping is in the order's story, as the merchant's.
			var shipRow models.AuditLog
			if err := db.Where("target = ? AND action = ?", "order:SKpaid", models.AuditShip).Take(&shipRow).Error; err != nil ||
				shipRow.ActorID != merchant.ID || shipRow.Actor != merchant.Username || !strings.Contains(shipRow.After, "SF123456") {
				t.Errorf("the shipping's audit row: %+v, %v", shipRow, err)
			}
			// A shipped order that came back (a return) is refunded through the same path.
			out, o, err := svc.Refund(ctx, admin, "SKpaid", "changed my mind")
			if err != nil || out != orders.Refunded || o.Status != models.OrderRefunded {
				t.Fatalf("refund: %v %v", o, err)
			}
			if out, _, err := svc.Refund(ctx, admin, "SKpaid", "again"); err != nil || out != orders.RefundedAlready {
				t.Errorf("refunding again: %v", err)
			}
			rs, _ := models.RefundsOfOrder(ctx, db, paid.ID)
			if len(rs) != 1 || rs[0].Kind != models.RefundByAdmin || rs[0].Reason != "changed my mind" {
				t.Errorf("the admin's refunds: %+v", rs)
			}
			if err := models.RefundSettled(ctx, db, rs[0].ID, models.RefundDone, "", now); err != nil {
				t.Fatal(err)
			}
			// A CSV's worth of rows: each order gets its own carrier and tracking number; a row of another
			// activity's order is not found; a correction keeps when it was shipped.
			more, err := models.PlaceOrders(ctx, db, item.ID, []models.NewOrder{
				{OrderNo: "SKc1", UserID: 201, ActivityID: a.ID, PriceCents: 990, BoughtAt: now},
				{OrderNo: "SKc2", UserID: 202, ActivityID: a.ID, PriceCents: 990, BoughtAt: now},
			}, now, 15*time.Minute)
			if err != nil || len(more) != 2 {
				t.Fatal(err)
			}
			db.Model(&models.Order{}).Where("order_no IN ?", []string{"SKc1", "SKc2"}).Updates(map[string]any{"status": models.OrderPaid})
			db.Model(&models.Order{}).Where("order_no = ?", "SKpaid").Updates(map[string]any{"status": models.OrderShipped})
			firstShipped := now.Add(-time.Hour)
			db.Model(&models.Order{}).Where("order_no = ?", "SKpaid").Update("shipped_at", firstShipped)
			rows := []orders.ShipRow{
				{OrderNo: "SKc1", Shipment: models.Shipment{Carrier: "EMS", TrackingNo: "EA0001"}},
				{OrderNo: "SKc2", Shipment: models.Shipment{Carrier: "顺丰", TrackingNo: "SF0002"}},
				{OrderNo: "SKpaid", Shipment: models.Shipment{Carrier: "顺丰", TrackingNo: "SF0003"}},
				{OrderNo: "SKnone", Shipment: models.Shipment{Carrier: "顺丰", TrackingNo: "SF0004"}},
			}
			if err := svc.ShipAll(ctx, merchant.ID, a.ID, rows); err != nil {
				t.Fatal(err)
			}
			if rows[0].Outcome != orders.ShipDone || rows[2].Outcome != orders.ShipCorrected || errs.Code(rows[3].Err) != errs.NotFound {
				t.Errorf("the rows: %+v", rows)
			}
			for no, want := range map[string]string{"SKc1": "EMS EA0001", "SKc2": "顺丰 SF0002", "SKpaid": "顺丰 SF0003"} {
				o, _ := models.OrderByNo(ctx, db, no)
				if got := o.Carrier + " " + o.TrackingNo; got != want || o.Status != models.OrderShipped || o.ShippedAt == nil {
					t.Errorf("order %s: %s %q, want shipped %q", no, o.Status, got, want)
				}
				if no == "SKpaid" && !o.ShippedAt.Equal(firstShipped.Truncate(time.Microsecond)) && o.ShippedAt.Sub(firstShipped).Abs() > time.Second {
					t.Errorf("the correction moved when it was shipped: %v, was %v", o.ShippedAt, firstShipped)
				}
			}

			states, err := models.RefundStates(ctx, db, []int64{late.ID, paid.ID})
			if err != nil || states[late.ID] != models.RefundPending || states[paid.ID] != models.RefundDone {
				t.Errorf("refund states: %v %v", states, err)
			}
		})
	}
}
