package testenv

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"seckill/models"
	"seckill/stock"
)

// Sale makes an approved activity with one item of the given stock, sold between starts and ends.
func Sale(t testing.TB, db *gorm.DB, stockTotal int64, starts, ends time.Time) (models.Activity, models.Item) {
	t.Helper()
	a := models.Activity{MerchantID: 1, Name: "Test sale", State: models.ActivityApproved, StartsAt: starts.UTC(), EndsAt: ends.UTC(),
		Items: []models.Item{{Name: "Test item", Title: "A gadget for the tests", ImageURL: "/assets/img/demo-2.svg", OriginalPriceCents: 10000, SeckillPriceCents: 990, StockTotal: stockTotal}}}
	if err := db.Create(&a).Error; err != nil {
		t.Fatalf("sale fixture: %v", err)
	}
	return a, a.Items[0]
}

// Users makes n shoppers named prefix0, prefix1, ... whose password is "password" (hashed at cost 4).
func Users(t testing.TB, db *gorm.DB, prefix string, n int) []models.User {
	t.Helper()
	const hash = "$2a$04$wBv5zqP0P9d8hH0m3bH2UuF8B2FQ5j5v2hS7oS8tC0w8cY4bW5d6K" // any bcrypt hash: these users log in by cookie
	users := make([]models.User, n)
	now := time.Now().UTC()
	for i := range users {
		users[i] = models.User{Username: fmt.Sprintf("%s%d", prefix, i), PasswordHash: hash, Role: models.RoleShopper,
			SessionVersion: 1, CreatedAt: now, UpdatedAt: now}
	}
	if err := db.CreateInBatches(users, 1000).Error; err != nil {
		t.Fatalf("users fixture: %v", err)
	}
	return users
}

// Ledger is stock.NewLedger with group commit as GROUP_COMMIT says (on unless "off"): the tests that
// take stock run both ways (.ci/run runs them again with GROUP_COMMIT=off).
func Ledger(rdb redis.UniversalClient, now func() time.Time) *stock.Ledger {
	l := stock.NewLedger(rdb, now)
	l.GroupCommit(GroupCommit())
	return l
}

// GroupCommit reports whether the tests run with group commit on.
func GroupCommit() bool { return os.Getenv("GROUP_COMMIT") != "off" }
