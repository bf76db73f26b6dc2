package models_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"seckill/errs"
	"seckill/internal/testenv"
	"seckill/models"
)

// TestTheLastAdminStaysUnderConcurrency: two admins taking each other's role (or blocking each other)
// at the same moment, on PostgreSQL, never leave the shop with no active admin: one change is done and
// the other is refused with last_admin, every round.
func TestTheLastAdminStaysUnderConcurrency(t *testing.T) {
	testenv.Long(t)
	db := testenv.Postgres(t)
	ctx := context.Background()
	a, err := models.CreateUser(ctx, db, "admin_a", "h", models.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	b, err := models.CreateUser(ctx, db, "admin_b", "h", models.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	actors := []models.Actor{{ID: a.ID, Username: a.Username}, {ID: b.ID, Username: b.Username}}
	changes := map[string]func(who models.Actor, target int64) error{
		"demote": func(who models.Actor, target int64) error {
			_, err := models.SetRole(ctx, db, who, target, models.RoleMerchant, time.Now())
			return err
		},
		"block": func(who models.Actor, target int64) error {
			_, err := models.SetBlocked(ctx, db, who, target, true, "testing the last admin", time.Now())
			return err
		},
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			for round := range 25 {
				restore(t, db, a.ID, b.ID)
				var wg sync.WaitGroup
				start := make(chan struct{})
				errc := make([]error, 2)
				for i := range 2 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						errc[i] = change(actors[i], actors[1-i].ID)
					}()
				}
				close(start)
				wg.Wait()
				refused := 0
				for _, err := range errc {
					switch {
					case err == nil:
					case errs.Is(err, errs.LastAdmin):
						refused++
					default:
						t.Fatalf("round %d: %v", round, err)
					}
				}
				var active int64
				db.Model(&models.User{}).Where("role = ? AND blocked_at IS NULL", models.RoleAdmin).Count(&active)
				if active != 1 || refused != 1 {
					t.Fatalf("round %d: %d active admins left and %d of the 2 changes refused; want 1 and 1", round, active, refused)
				}
			}
		})
	}
	// Alone, the last admin cannot demote itself either.
	restore(t, db, a.ID, b.ID)
	if _, err := models.SetRole(ctx, db, actors[1], b.ID, models.RoleShopper, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := models.SetRole(ctx, db, actors[0], a.ID, models.RoleShopper, time.Now()); !errs.Is(err, errs.LastAdmin) {
		t.Errorf("the last admin demoting itself: %v, want %s", err, errs.LastAdmin)
	}
}

// restore makes both users active admins again.
func restore(t *testing.T, db *gorm.DB, ids ...int64) {
	t.Helper()
	if err := db.Exec("UPDATE users SET role = ?, blocked_at = NULL WHERE id IN ?", models.RoleAdmin, ids).Error; err != nil {
		t.Fatal(err)
	}
}
