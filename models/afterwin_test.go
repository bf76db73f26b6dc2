package models_test

import (
	"context"
	"testing"
	"time"

	"gorm.io/gorm"

	"seckill/errs"
	"seckill/internal/testenv"
	"seckill/models"
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
				p, ok, err := models.AddPayment(ctx, db, o, id, now)
				if err != nil || !ok {
					t.Fatalf("add payment: %v %v", ok, err)
				}
				return p
			}
			lateP, paidP := pay(late, "sbx_late"), pay(paid, "sbx_paid")
			if ok, err := models.CancelUnpaid(ctx, db, late, now); !ok || err != nil {
				t.Fatalf("cancel: %v %v", ok, err)
			}
			for range 2 { // the callback and the poll both see it paid
				if _, err := models.MarkPaid(ctx, db, lateP, now); err != nil {
					t.Fatal(err)
				}
			}
			if rs, _ := models.RefundsOfOrder(ctx, db, late.ID); len(rs) != 1 || rs[0].Kind != models.RefundLatePayment || rs[0].Status != models.RefundPending {
				t.Errorf("the late payment's refunds: %+v", rs)
			}
			if out, err := models.MarkPaid(ctx, db, paidP, now); err != nil || !out.Paid {
				t.Fatalf("pay: %+v %v", out, err)
			}

			// Shipped by its merchant only; then an admin cannot refund it.
			ship := models.Shipment{Carrier: "顺丰", TrackingNo: "SF123456"}
			if _, _, err := models.ShipOrder(ctx, db, merchant.ID+1, "SKpaid", ship, now); errs.Code(err) != errs.NotFound {
				t.Errorf("another merchant shipping the order: %v, want not found", err)
			}
			page, total, err := models.ActivityOrders(ctx, db, merchant.ID, a.ID, models.ToShip, 1)
			if err != nil || total != 1 || page[0].OrderNo != "SKpaid" {
				t.Fatalf("to ship: %v %d %v", page, total, err)
			}
			admin := models.Actor{ID: 9, Username: "admin"}
			if out, _, err := models.ShipOrder(ctx, db, merchant.ID, "SKpaid", ship, now); err != nil || out != models.ShipDone {
				t.Fatalf("ship: %s %v", out, err)
			}
			if _, err := models.RefundOrder(ctx, db, admin, "SKpaid", "changed my mind", now); errs.Code(err) != errs.OrderState {
				t.Errorf("refunding a shipped order: %v, want order_state", err)
			}
			db.Model(&models.Order{}).Where("order_no = ?", "SKpaid").Update("status", models.OrderPaid)
			o, err := models.RefundOrder(ctx, db, admin, "SKpaid", "changed my mind", now)
			if err != nil || o.Status != models.OrderRefunded {
				t.Fatalf("refund: %v %v", o, err)
			}
			if _, err := models.RefundOrder(ctx, db, admin, "SKpaid", "again", now); err != nil {
				t.Errorf("refunding again: %v", err)
			}
			rs, _ := models.RefundsOfOrder(ctx, db, paid.ID)
			if len(rs) != 1 || rs[0].Kind != models.RefundByAdmin || rs[0].Reason != "changed my mind" {
				t.Errorf("the admin's refunds: %+v", rs)
			}
			if err := models.RefundSettled(ctx, db, rs[0].ID, models.RefundDone, "", now); err != nil {
				t.Fatal(err)
			}
			states, err := models.RefundStates(ctx, db, []int64{late.ID, paid.ID})
			if err != nil || states[late.ID] != models.RefundPending || states[paid.ID] != models.RefundDone {
				t.Errorf("refund states: %v %v", states, err)
			}
		})
	}
}
