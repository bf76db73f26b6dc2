package models_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"gorm.io/gorm"

	"seckill/errs"
	"seckill/internal/testenv"
	"seckill/models"
)

func TestMigrateTwice(t *testing.T) {
	for name, open := range map[string]func(testing.TB) *gorm.DB{
		"postgres": testenv.Postgres,
		"sqlite":   testenv.SQLite,
	} {
		t.Run(name, func(t *testing.T) {
			db := open(t) // migrated once
			ctx := context.Background()
			if _, err := models.CreateUser(ctx, db, "before", "hash", models.RoleShopper); err != nil {
				t.Fatal(err)
			}
			if err := models.Migrate(ctx, db); err != nil {
				t.Fatalf("second migration: %v", err)
			}
			if _, err := models.UserByUsername(ctx, db, "before"); err != nil {
				t.Errorf("a row written before the second migration is gone: %v", err)
			}
			for _, m := range models.All() {
				if !db.Migrator().HasTable(m) {
					t.Errorf("table of %T missing", m)
				}
			}
			checkDefences(t, db)
		})
	}
}

// checkDefences asserts the database's own lines of defence: one purchase per (user, item), one user per
// name, one stock log row per (order, kind).
func checkDefences(t *testing.T, db *gorm.DB) {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	if err := db.Create(&models.Purchase{UserID: 1, ItemID: 7, OrderNo: "SK1", CreatedAt: now}).Error; err != nil {
		t.Fatal(err)
	}
	err := db.Create(&models.Purchase{UserID: 1, ItemID: 7, OrderNo: "SK2", CreatedAt: now}).Error
	if !errors.Is(err, gorm.ErrDuplicatedKey) {
		t.Errorf("a second purchase of one item by one user: err = %v, want a duplicate key", err)
	}
	if err := db.Create(&models.Purchase{UserID: 2, ItemID: 7, OrderNo: "SK3", CreatedAt: now}).Error; err != nil {
		t.Errorf("another user's purchase of the same item was refused: %v", err)
	}

	if _, err := models.CreateUser(ctx, db, "dup", "h", models.RoleShopper); err != nil {
		t.Fatal(err)
	}
	if _, err := models.CreateUser(ctx, db, "dup", "h", models.RoleShopper); !errs.Is(err, errs.UsernameTaken) {
		t.Errorf("a taken username: err = %v, want %s", err, errs.UsernameTaken)
	}

	log := models.StockLog{OrderNo: "SK1", Kind: models.StockSell, ItemID: 7, StockBefore: 10, StockAfter: 9, CreatedAt: now}
	if err := db.Create(&log).Error; err != nil {
		t.Fatal(err)
	}
	log.ID = 0
	if err := db.Create(&log).Error; !errors.Is(err, gorm.ErrDuplicatedKey) {
		t.Errorf("a second sell log for one order: err = %v, want a duplicate key", err)
	}
}

func TestMigrateConcurrentlyOnPostgres(t *testing.T) {
	url := testenv.PostgresSchema(t)
	errc := make(chan error, 3)
	for range 3 {
		go func() {
			db, err := gorm.Open(postgresOpen(url), testenv.GormConfig())
			if err != nil {
				errc <- err
				return
			}
			defer func() {
				if d, err := db.DB(); err == nil {
					d.Close()
				}
			}()
			errc <- models.Migrate(context.Background(), db)
		}()
	}
	for range 3 {
		if err := <-errc; err != nil {
			t.Errorf("instances migrating at once: %v", err)
		}
	}
}
