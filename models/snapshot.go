package models

import (
	"context"
	"database/sql"

	"gorm.io/gorm"
)

// InSnapshot runs read in one read-only transaction that sees one snapshot of the database
// (PostgreSQL's repeatable read; an SQLite transaction sees one already): what it reads in several
// queries agrees, whatever is written meanwhile.
func InSnapshot(ctx context.Context, db *gorm.DB, read func(tx *gorm.DB) error) error {
	var opts *sql.TxOptions
	if db.Dialector.Name() == "postgres" {
		opts = &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}
	}
	return db.WithContext(ctx).Transaction(read, opts)
}
