package orders

import (
	"context"
	"fmt"
	"testing"
	"time"

	"gorm.io/gorm"

	"seckill/errs"
	"seckill/internal/testenv"
	"seckill/models"
)

// The table as the docs and the pages say it: today's rules, each move once, between known statuses.
func TestTheTableIsTodaysRules(t *testing.T) {
	want := map[[2]string]move{
		{models.OrderPendingPayment, models.OrderPaid}:      movePay,
		{models.OrderPendingPayment, models.OrderCancelled}: moveCancel,
		{models.OrderPaid, models.OrderShipped}:             moveShip,
		{models.OrderPaid, models.OrderRefunded}:            moveRefund,
		{models.OrderShipped, models.OrderRefunded}:         moveReturn,
	}
	if len(transitions) != len(want) {
		t.Errorf("the table has %d rows, want %d", len(transitions), len(want))
	}
	moves := map[move]bool{}
	for _, tr := range transitions {
		if want[[2]string{tr.from, tr.to}] != tr.move {
			t.Errorf("row %s: %s → %s is not one of today's rules", tr.move, tr.from, tr.to)
		}
		if moves[tr.move] {
			t.Errorf("move %s is in the table twice", tr.move)
		}
		moves[tr.move] = true
		if tr.why == "" || tr.op == "" {
			t.Errorf("row %s says neither why nor which operation", tr.move)
		}
	}
}

// Every allowed change succeeds and every other (from, to) pair is refused, on both databases the
// product runs on (PostgreSQL, and SQLite in demo mode); an order that left its status meanwhile does
// not move either.
func TestEveryPairOfStatuses(t *testing.T) {
	for name, open := range map[string]func(testing.TB) *gorm.DB{
		"postgres": testenv.Postgres,
		"sqlite":   testenv.SQLite,
	} {
		t.Run(name, func(t *testing.T) {
			db := open(t)
			ctx := context.Background()
			now := time.Now().UTC().Truncate(time.Second)
			n := 0
			order := func(status string) *models.Order {
				t.Helper()
				n++
				o := models.Order{OrderNo: fmt.Sprintf("SKpair%d", n), UserID: int64(n), ItemID: 1, ActivityID: 1, PriceCents: 990,
					Status: status, PayDeadline: now.Add(time.Minute), CreatedAt: now, UpdatedAt: now}
				if err := db.Create(&o).Error; err != nil {
					t.Fatal(err)
				}
				return &o
			}
			statusOf := func(o *models.Order) string {
				t.Helper()
				got, err := models.OrderByNo(ctx, db, o.OrderNo)
				if err != nil {
					t.Fatal(err)
				}
				return got.Status
			}
			for _, from := range statuses {
				for _, to := range statuses {
					o := order(from)
					_, can := allowed(from, to)
					err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error { return change(tx, o, to, now, nil) })
					switch got := statusOf(o); {
					case can && (err != nil || got != to):
						t.Errorf("%s → %s is allowed: err %v, the order is %s", from, to, err, got)
					case !can && (errs.Code(err) != errs.OrderState || got != from):
						t.Errorf("%s → %s is not allowed: err %v, the order is %s", from, to, err, got)
					}
				}
			}
			// Read while it waited for payment, paid before the cancel's write: the cancel does not happen.
			o := order(models.OrderPendingPayment)
			if err := db.Model(&models.Order{}).Where("id = ?", o.ID).Update("status", models.OrderPaid).Error; err != nil {
				t.Fatal(err)
			}
			err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error { return change(tx, o, models.OrderCancelled, now, nil) })
			if errs.Code(err) != errs.OrderState || statusOf(o) != models.OrderPaid {
				t.Errorf("cancelling an order paid meanwhile: err %v, the order is %s, want order_state and paid", err, statusOf(o))
			}
		})
	}
}
