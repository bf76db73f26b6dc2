package models_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
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

// TestMigrateReportsUsernamesThatDifferOnlyByCase: accounts from before names were unique ignoring case
// (Ada and ada) are listed in the log by id and name, never merged; the unique index waits for them to be
// resolved, new clashes are refused meanwhile, and the next migration after adds it.
func TestMigrateReportsUsernamesThatDifferOnlyByCase(t *testing.T) {
	for name, open := range map[string]func(testing.TB) *gorm.DB{
		"postgres": testenv.Postgres,
		"sqlite":   testenv.SQLite,
	} {
		t.Run(name, func(t *testing.T) {
			db := open(t)
			ctx := context.Background()
			if !db.Migrator().HasIndex(&models.User{}, models.UsernameIndex) {
				t.Fatal("a fresh database has no unique index on lower(username)")
			}
			// A database from before the rule: no index, two names that differ only by case.
			if err := db.Exec("DROP INDEX " + models.UsernameIndex).Error; err != nil {
				t.Fatal(err)
			}
			now := time.Now().UTC()
			old := []models.User{{Username: "Ada", PasswordHash: "h", Role: models.RoleAdmin, SessionVersion: 1, CreatedAt: now, UpdatedAt: now},
				{Username: "ada", PasswordHash: "h", Role: models.RoleShopper, SessionVersion: 1, CreatedAt: now, UpdatedAt: now}}
			if err := db.Create(&old).Error; err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			prev := slog.Default()
			slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
			err := models.Migrate(ctx, db)
			slog.SetDefault(prev)
			if err != nil {
				t.Fatalf("migrating with the clash: %v", err)
			}
			for _, want := range []string{fmt.Sprintf("%d:Ada", old[0].ID), fmt.Sprintf("%d:ada", old[1].ID), models.UsernameIndex} {
				if !strings.Contains(logs.String(), want) {
					t.Errorf("the migration's log does not name %q:\n%s", want, logs.String())
				}
			}
			if db.Migrator().HasIndex(&models.User{}, models.UsernameIndex) {
				t.Error("the index was added over the clash")
			}
			var n int64
			db.Model(&models.User{}).Where("lower(username) = 'ada'").Count(&n)
			if n != 2 {
				t.Errorf("%d accounts named ada in some case after the migration, want both kept", n)
			}
			if _, err := models.CreateUser(ctx, db, "ADA", "h", models.RoleShopper); !errs.Is(err, errs.UsernameTaken) {
				t.Errorf("a third ADA without the index: %v, want %s", err, errs.UsernameTaken)
			}
			// Each logs in by its own spelling.
			for _, u := range old {
				if got, err := models.UserByUsername(ctx, db, u.Username); err != nil || got.ID != u.ID {
					t.Errorf("%s is found as %v, %v", u.Username, got, err)
				}
			}
			// Resolved by hand: the next migration adds the index.
			if err := db.Model(&models.User{}).Where("id = ?", old[1].ID).Update("username", "ada_2").Error; err != nil {
				t.Fatal(err)
			}
			if err := models.Migrate(ctx, db); err != nil {
				t.Fatal(err)
			}
			if !db.Migrator().HasIndex(&models.User{}, models.UsernameIndex) {
				t.Fatal("no index after the clash was resolved")
			}
			dup := models.User{Username: "ADA_2", PasswordHash: "h", Role: models.RoleShopper, SessionVersion: 1, CreatedAt: now, UpdatedAt: now}
			if err := db.Create(&dup).Error; !errors.Is(err, gorm.ErrDuplicatedKey) {
				t.Errorf("a row written past the application, ADA_2 beside ada_2: %v, want a duplicate key", err)
			}
		})
	}
}
