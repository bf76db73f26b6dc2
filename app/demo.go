package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/glebarez/sqlite"
	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"seckill/auth"
	"seckill/jobs"
	"seckill/models"
)

// demoAccounts are the accounts demo mode makes on its first start. Demo mode runs on a developer's own
// machine with a throwaway SQLite file; these passwords are printed at every start and protect nothing.
var demoAccounts = []struct{ Username, Password, Role string }{
	{"admin", "demo-boss-pass", models.RoleAdmin},
	{"merchant", "demo-seller-pass", models.RoleMerchant},
	{"shopper", "demo-buyer-pass", models.RoleShopper},
}

// refreshDemoPasswords gives each demo account that no longer takes its published password that password
// again: the passwords changed when weak ones were refused (issue 28), and demo data from before would
// otherwise refuse the ones the log prints.
func refreshDemoPasswords(ctx context.Context, db *gorm.DB, bcryptCost int) error {
	for _, a := range demoAccounts {
		u, err := models.UserByUsername(ctx, db, a.Username)
		if err != nil || auth.CheckPassword(u.PasswordHash, a.Password) {
			continue // gone or renamed: nothing to give back; or it already works
		}
		hash, err := auth.HashPassword(a.Password, bcryptCost)
		if err != nil {
			return err
		}
		if err := db.WithContext(ctx).Model(&models.User{}).Where("id = ?", u.ID).Update("password_hash", hash).Error; err != nil {
			return fmt.Errorf("seed: demo password of %s: %w", a.Username, err)
		}
	}
	return nil
}

// openSQLite opens (and creates) the demo database file at path.
func openSQLite(path string) (*gorm.DB, error) {
	// WAL lets pages read while the order consumer writes; immediate transactions take the write lock at
	// BEGIN, so two writers wait for each other instead of failing half-way.
	dsn := path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_txlock=immediate"
	db, err := gorm.Open(sqlite.Open(dsn), gormConfig())
	if err != nil {
		return nil, fmt.Errorf("sqlite %s: %w", path, err)
	}
	return db, nil
}

// demoRuntime is what demo mode runs on: a SQLite file and an in-process Redis whose clock it advances.
type demoRuntime struct {
	db    *gorm.DB
	redis redis.UniversalClient
	mr    *miniredis.Miniredis
	stop  context.CancelFunc
	done  chan struct{}
}

func openDemo(ctx context.Context, cfg *Config, log *slog.Logger) (*demoRuntime, error) {
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("DATA_DIR: %w", err)
	}
	secret, err := demoSecret(filepath.Join(cfg.DataDir, "session.secret"))
	if err != nil {
		return nil, err
	}
	cfg.SessionSecret = secret

	dbPath := filepath.Join(cfg.DataDir, "seckill.db")
	db, err := openSQLite(dbPath)
	if err != nil {
		return nil, err
	}
	// The in-process Redis listens on loopback, where any user of the machine could otherwise read the
	// captcha answers or change the stock: it takes a password of its own, made at each start.
	pw := make([]byte, 16)
	if _, err := rand.Read(pw); err != nil {
		return nil, fmt.Errorf("in-process redis password: %w", err)
	}
	password := hex.EncodeToString(pw)
	mr := miniredis.NewMiniRedis()
	mr.RequireAuth(password)
	if err := mr.StartAddr("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("in-process redis: %w", err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), Password: password})

	// miniredis expires keys only when told to: advance its clock with the real one, or captchas,
	// purchase paths and QR codes would never expire.
	cctx, stop := context.WithCancel(context.Background())
	d := &demoRuntime{db: db, redis: rdb, mr: mr, stop: stop, done: make(chan struct{})}
	last := time.Now() // miniredis follows the wall clock, as a real Redis does
	go func() {
		defer close(d.done)
		_ = jobs.Every(cctx, 250*time.Millisecond, func(context.Context) error {
			now := time.Now()
			mr.SetTime(now)
			mr.FastForward(now.Sub(last))
			last = now
			return nil
		}, nil)
	}()
	log.Warn("demo mode: DATABASE_URL and REDIS_URL are unset, so data lives in a SQLite file and an in-process Redis; set both for production",
		"sqlite", dbPath, "redis", mr.Addr())
	return d, nil
}

func (d *demoRuntime) Close() {
	d.stop()
	<-d.done
	_ = d.redis.Close()
	d.mr.Close()
	if sqlDB, err := d.db.DB(); err == nil {
		_ = sqlDB.Close()
	}
}

// demoSecret reads the demo session secret, making it on the first start, so that sessions outlive a restart.
func demoSecret(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil && len(strings.TrimSpace(string(b))) >= 32 {
		return strings.TrimSpace(string(b)), nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("demo session secret: %w", err)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	secret := hex.EncodeToString(raw)
	if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("demo session secret: %w", err)
	}
	return secret, nil
}

// seedDemo fills an empty database with the demo accounts and an approved queue sale that starts two
// minutes from now with three items (its waiting room open at once). It does nothing when any user exists, so it runs once per database.
func seedDemo(ctx context.Context, db *gorm.DB, now time.Time, bcryptCost int) (bool, error) {
	var n int64
	if err := db.WithContext(ctx).Model(&models.User{}).Count(&n).Error; err != nil {
		return false, fmt.Errorf("seed: %w", err)
	}
	if n > 0 {
		// A demo database from before the published passwords changed still logs in with them.
		return false, refreshDemoPasswords(ctx, db, bcryptCost)
	}
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var ids = map[string]int64{}
		for _, a := range demoAccounts {
			hash, err := auth.HashPassword(a.Password, bcryptCost)
			if err != nil {
				return err
			}
			u, err := models.CreateUser(ctx, tx, a.Username, hash, a.Role)
			if err != nil {
				return err
			}
			ids[a.Role] = u.ID
		}
		reviewer := ids[models.RoleAdmin]
		starts := now.Add(2 * time.Minute).Truncate(time.Second).UTC()
		act := models.Activity{
			MerchantID:  ids[models.RoleMerchant],
			Name:        "Opening Day Flash Sale",
			Description: "Three gadgets at a fraction of their price, while stock lasts. One of each per person, one entry per delivery address; new accounts may join too.",
			StartsAt:    starts,
			EndsAt:      starts.Add(24 * time.Hour),
			State:       models.ActivityApproved,
			SaleMode:    models.SaleQueue, // the waiting room opens at once: join during the countdown
			// One entrant per delivery address (the page asks for one when joining); accounts made after
			// approval may take part, so that a newcomer who registers can try it.
			RuleOnePerAddress: true,
			QueueOpensAt:      &now,
			ReviewerID:        &reviewer,
			ReviewedAt:        &now,
			Items: []models.Item{
				{Name: "Aurora Phone X", Title: "6.5\" OLED, 256 GB", Description: "A flagship phone for the price of a case.",
					ImageURL: "/assets/img/demo-1.svg", OriginalPriceCents: 499900, SeckillPriceCents: 99900, StockTotal: 100},
				{Name: "Echo Buds Pro", Title: "Noise-cancelling earbuds", Description: "Thirty hours of music on one charge.",
					ImageURL: "/assets/img/demo-2.svg", OriginalPriceCents: 129900, SeckillPriceCents: 19900, StockTotal: 50},
				{Name: "Pulse Watch 3", Title: "Heart rate, GPS, 10-day battery", Description: "Ten of them. Be quick.",
					ImageURL: "/assets/img/demo-3.svg", OriginalPriceCents: 199900, SeckillPriceCents: 29900, StockTotal: 10},
			},
		}
		return tx.Create(&act).Error
	})
	if err != nil {
		return false, fmt.Errorf("seed: %w", err)
	}
	return true, nil
}
