package models

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"gorm.io/gorm"
)

// migrateLockID is the PostgreSQL advisory lock that makes instances starting together migrate one at a time.
const migrateLockID = 0x5ec1c111

// Migrate brings the schema up to date. It only adds what is missing, so running it twice, or on every
// start of every instance, does no harm. On PostgreSQL it runs in one transaction under an advisory lock:
// DDL is transactional there, so a failed migration leaves nothing half done.
func Migrate(ctx context.Context, db *gorm.DB) error {
	db = db.WithContext(ctx)
	var err error
	if db.Dialector.Name() == "postgres" {
		err = db.Transaction(func(tx *gorm.DB) error {
			if err := tx.Exec("SELECT pg_advisory_xact_lock(?)", migrateLockID).Error; err != nil {
				return err
			}
			if err := tx.AutoMigrate(All()...); err != nil {
				return err
			}
			return usernameRule(ctx, tx)
		})
	} else if err = db.AutoMigrate(All()...); err == nil {
		err = usernameRule(ctx, db)
	}
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// UsernameIndex is the unique index that makes usernames unique ignoring case (ADA is taken when ada is).
const UsernameIndex = "idx_users_username_lower"

// usernameRule adds UsernameIndex. Accounts made before the rule whose names differ only by case are
// never merged or renamed here: they are logged, by id and name, and the index waits until an operator
// has resolved them (the next migration adds it); meanwhile CreateUser refuses any new clash itself.
func usernameRule(ctx context.Context, db *gorm.DB) error {
	if db.Migrator().HasIndex(&User{}, UsernameIndex) {
		return nil
	}
	clashes, err := UsernameClashes(ctx, db)
	if err != nil {
		return err
	}
	if len(clashes) > 0 {
		names := make([]string, len(clashes))
		for i, u := range clashes {
			names[i] = fmt.Sprintf("%d:%s", u.ID, u.Username)
		}
		slog.WarnContext(ctx, "usernames that differ only by case: rename or merge them by hand (id:name); "+
			"the unique index on lower(username) is added by the first migration after, and new clashes are refused meanwhile",
			"accounts", strings.Join(names, " "), "index", UsernameIndex)
		return nil
	}
	return db.Exec("CREATE UNIQUE INDEX " + UsernameIndex + " ON users (lower(username))").Error
}
