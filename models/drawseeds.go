package models

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// DrawSeed is the draw seed of a queue item's waiting room (migration 00011), kept so that a Redis that
// lost the room reopens it with the same seed. Sealed is the seed encrypted under a key only the app
// holds (stock.Seeds seals and opens it): whoever reads this table learns the published hash, never the
// seed. Written once, before the hash is published, and never changed.
type DrawSeed struct {
	ItemID    int64     `gorm:"primaryKey;autoIncrement:false"`
	SeedHash  string    `gorm:"size:64;not null"`
	Sealed    []byte    `gorm:"not null"`
	CreatedAt time.Time `gorm:"not null"`
}

// DrawSeeds keeps the draw seeds in db.
type DrawSeeds struct{ DB *gorm.DB }

// KeepSeed writes s unless the item has a seed already, and answers the one kept: of two instances
// opening the same room at once, both publish the first one written.
func (d DrawSeeds) KeepSeed(ctx context.Context, s DrawSeed) (DrawSeed, error) {
	err := d.DB.WithContext(ctx).Exec(`INSERT INTO draw_seeds (item_id, seed_hash, sealed, created_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (item_id) DO NOTHING`, s.ItemID, s.SeedHash, s.Sealed, s.CreatedAt).Error
	if err != nil {
		return DrawSeed{}, fmt.Errorf("keep the draw seed of item %d: %w", s.ItemID, err)
	}
	kept, found, err := d.SeedOf(ctx, s.ItemID)
	if err == nil && !found {
		err = fmt.Errorf("keep the draw seed of item %d: not there after writing it", s.ItemID)
	}
	return kept, err
}

// SeedOf answers the item's kept seed; found is false when it has none.
func (d DrawSeeds) SeedOf(ctx context.Context, itemID int64) (s DrawSeed, found bool, err error) {
	err = d.DB.WithContext(ctx).Where("item_id = ?", itemID).Take(&s).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return DrawSeed{}, false, nil
	case err != nil:
		return DrawSeed{}, false, fmt.Errorf("the draw seed of item %d: %w", itemID, err)
	}
	return s, true, nil
}
