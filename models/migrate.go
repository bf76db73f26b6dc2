package models

import (
	"context"
	"fmt"

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
			return tx.AutoMigrate(All()...)
		})
	} else {
		err = db.AutoMigrate(All()...)
	}
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}
