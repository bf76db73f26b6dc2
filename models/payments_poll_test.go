package models_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"gorm.io/gorm"

	"seckill/internal/testenv"
	"seckill/models"
)

// The poll asks WeChat Pay and Alipay about a payment less often as it ages (every round in its first
// minute, every 15 seconds until ten minutes, then every minute), and the sandbox every round: in
// PostgreSQL and in the demo's SQLite alike. A young payment is due even behind many old ones.
func TestPaymentsToPollAskAboutOldPaymentsLessOften(t *testing.T) {
	for name, db := range map[string]*gorm.DB{"postgres": testenv.Postgres(t), "sqlite": testenv.SQLite(t)} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			now := time.Date(2026, 11, 26, 20, 0, 0, 0, time.UTC)
			_, item := testenv.Sale(t, db, 10, now.Add(-time.Hour), now.Add(time.Hour))
			user := testenv.Users(t, db, "poll", 1)[0]
			o := models.Order{OrderNo: "SKpoll", UserID: user.ID, ItemID: item.ID, ActivityID: item.ActivityID, PriceCents: 990,
				Status: models.OrderPendingPayment, PayDeadline: now.Add(time.Hour), CreatedAt: now, UpdatedAt: now}
			if err := db.Create(&o).Error; err != nil {
				t.Fatal(err)
			}
			want := map[string]bool{}
			n := 0
			add := func(provider string, age, lastAsked time.Duration, due bool) {
				n++
				id := fmt.Sprintf("%s_%v_%v_%d", provider, age, lastAsked, n)
				p := models.Payment{OrderID: o.ID, OrderNo: o.OrderNo, ProviderID: id, Provider: provider, Status: models.PaymentOpen,
					AmountCents: 990, CreatedAt: now.Add(-age), UpdatedAt: now.Add(-lastAsked)}
				if err := db.Create(&p).Error; err != nil {
					t.Fatal(err)
				}
				want[id] = due
			}
			add("wechat", 30*time.Second, 2*time.Second, true) // its first minute: every round
			add("wechat", 5*time.Minute, 10*time.Second, false)
			add("alipay", 5*time.Minute, 16*time.Second, true)
			add("alipay", 12*time.Minute, 30*time.Second, false) // past ten minutes: every minute
			add("wechat", 12*time.Minute, 61*time.Second, true)
			add("sandbox", 12*time.Minute, time.Second, true)
			add("", 12*time.Minute, time.Second, true)
			got, err := models.PaymentsToPoll(ctx, db, now, []string{"wechat", "alipay"}, 100)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, p := range got {
				ids = append(ids, p.ProviderID)
			}
			for id, due := range want {
				if slices.Contains(ids, id) != due {
					t.Errorf("%s: due %v, want %v", id, !due, due)
				}
			}
			// Behind 300 old payments asked about a moment ago, a new one is still asked about this round.
			for i := 0; i < 300; i++ {
				add("alipay", 20*time.Minute, time.Second, false)
			}
			add("alipay", 5*time.Second, 0, true)
			young := fmt.Sprintf("alipay_5s_0s_%d", n)
			if got, err = models.PaymentsToPoll(ctx, db, now, []string{"wechat", "alipay"}, 200); err != nil || !slices.ContainsFunc(got, func(p models.Payment) bool { return p.ProviderID == young }) {
				t.Errorf("a new payment behind 300 old ones is not due: %d listed, %v", len(got), err)
			}
		})
	}
}
