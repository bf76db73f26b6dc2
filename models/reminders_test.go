package models_test

import (
	"context"
	"testing"
	"time"

	"gorm.io/gorm"

	"seckill/internal/testenv"
	"seckill/models"
)

// A reminder is asked once (the second ask changes nothing, the first language stays), listed with its
// sale while the sale has not ended, and deleted; on PostgreSQL and on SQLite (demo mode).
func TestRemindersAreAskedOnceListedAndDeleted(t *testing.T) {
	for _, d := range []struct {
		name string
		open func(testing.TB) *gorm.DB
	}{{"postgres", testenv.Postgres}, {"sqlite", testenv.SQLite}} {
		t.Run(d.name, func(t *testing.T) {
			db, ctx := d.open(t), context.Background()
			now := time.Now().UTC().Truncate(time.Second)
			a, _ := testenv.Sale(t, db, 5, now.Add(time.Hour), now.Add(2*time.Hour))
			over, _ := testenv.Sale(t, db, 5, now.Add(-2*time.Hour), now.Add(-time.Hour))
			u := testenv.Users(t, db, "rem_"+d.name, 1)[0]
			for i, want := range []bool{true, false} {
				lang := []string{"zh", "en"}[i]
				if created, err := models.AddReminder(ctx, db, u.ID, a.ID, lang, now); err != nil || created != want {
					t.Fatalf("ask %d: created %v, %v; want %v", i+1, created, err, want)
				}
			}
			if _, err := models.AddReminder(ctx, db, u.ID, over.ID, "en", now); err != nil {
				t.Fatal(err)
			}
			list, err := models.RemindersOf(ctx, db, u.ID, now)
			if err != nil || len(list) != 1 || list[0].ActivityID != a.ID || list[0].Lang != "zh" || list[0].Name != "Test sale" ||
				!list[0].StartsAt.Equal(a.StartsAt) || !list[0].CreatedAt.Equal(now) || list[0].StartSentAt != nil {
				t.Fatalf("the list = %+v, %v; want the sale to come alone, in Chinese, nothing sent", list, err)
			}
			if r, found, err := models.ReminderOf(ctx, db, u.ID, a.ID); err != nil || !found || r.Lang != "zh" || r.Name != "Test sale" {
				t.Fatalf("ReminderOf = %+v, %v, %v", r, found, err)
			}
			if err := models.DeleteReminder(ctx, db, u.ID, a.ID); err != nil {
				t.Fatal(err)
			}
			if list, err := models.RemindersOf(ctx, db, u.ID, now); err != nil || len(list) != 0 {
				t.Fatalf("after the delete: %+v, %v", list, err)
			}
			if _, found, err := models.ReminderOf(ctx, db, u.ID, a.ID); err != nil || found {
				t.Fatalf("ReminderOf after the delete: found %v, %v", found, err)
			}
		})
	}
}
