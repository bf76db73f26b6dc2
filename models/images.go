package models

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"seckill/errs"
)

// Image is one size of an uploaded item image, kept in the database so that every instance serves it.
// Its name says what it holds ("<sum>-<size>.jpg", the sum being the upload's): it never changes, so
// it is cached for a year.
type Image struct {
	Name      string    `gorm:"primaryKey;size:48"`
	Data      []byte    `gorm:"not null"`
	CreatedAt time.Time `gorm:"not null"`
}

// ImageName names one size of an upload.
func ImageName(sum, size string) string { return sum + "-" + size + ".jpg" }

// Picture answers where the pages get the item's image at size ("960" or "480"): the uploaded image,
// else the address the merchant gave (image_url), else "" (the pages draw a placeholder).
func (it *Item) Picture(size string) string {
	if it.ImageKey != "" {
		return "/images/" + ImageName(it.ImageKey, size)
	}
	return it.ImageURL
}

// SetItemImage gives an item of a draft or rejected activity of the merchant an uploaded image: its
// sizes (JPEG by size name) are stored under the upload's sum, and the item points at them. Audited as
// an edit of the activity.
func SetItemImage(ctx context.Context, db *gorm.DB, who Actor, activityID, itemID int64, sum string, sizes map[string][]byte, now time.Time) (*Item, error) {
	var it Item
	_, err := changeActivity(ctx, db, who, who.ID, activityID, ActEdit, now, func(tx *gorm.DB, a *Activity, _ string) (any, any, error) {
		if err := tx.Take(&it, "id = ? AND activity_id = ?", itemID, a.ID).Error; errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, nil, errs.New(errs.NotFound, "no such item")
		} else if err != nil {
			return nil, nil, err
		}
		// The uploads this changes, locked in one order: another item taking the same file (the same sum)
		// at the same moment must not see its sizes deleted as unused under it.
		if err := lockSums(tx, sum, it.ImageKey); err != nil {
			return nil, nil, err
		}
		for size, data := range sizes {
			img := Image{Name: ImageName(sum, size), Data: data, CreatedAt: now}
			if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&img).Error; err != nil {
				return nil, nil, err
			}
		}
		before := itemAuditOf(&it)
		old := it.ImageKey
		it.ImageKey, it.UpdatedAt = sum, now
		if err := tx.Model(&it).Select("image_key", "updated_at").Updates(&it).Error; err != nil {
			return nil, nil, err
		}
		return before, itemAuditOf(&it), dropUnused(tx, old)
	})
	if err != nil {
		return nil, err
	}
	return &it, nil
}

// RemoveItemImage takes an item's uploaded image away (its image_url, if any, shows again), for an item
// of a draft or rejected activity of the merchant. Audited as an edit of the activity.
func RemoveItemImage(ctx context.Context, db *gorm.DB, who Actor, activityID, itemID int64, now time.Time) (*Item, error) {
	return SetItemImage(ctx, db, who, activityID, itemID, "", nil, now)
}

// lockSums locks uploads by their sums until tx ends (PostgreSQL's advisory locks, taken in one order;
// SQLite runs one writing transaction at a time).
func lockSums(tx *gorm.DB, sums ...string) error {
	if tx.Dialector.Name() != "postgres" {
		return nil
	}
	sort.Strings(sums)
	for _, sum := range sums {
		if sum == "" {
			continue
		}
		if err := tx.Exec("SELECT pg_advisory_xact_lock(?, hashtext(?))", imageLockSpace, sum).Error; err != nil {
			return err
		}
	}
	return nil
}

// imageLockSpace is the first key of the uploads' advisory locks, apart from the migration's.
const imageLockSpace = 0x1ae9e

// dropUnused deletes the sizes of an upload no item shows any more, so that uploading again and again
// does not grow the database. The caller holds the upload's lock (lockSums).
func dropUnused(tx *gorm.DB, sum string) error {
	if sum == "" {
		return nil
	}
	var users int64
	if err := tx.Model(&Item{}).Where("image_key = ?", sum).Count(&users).Error; err != nil || users > 0 {
		return err
	}
	names := make([]string, 0, len(sizeNames))
	for _, size := range sizeNames {
		names = append(names, ImageName(sum, size))
	}
	return tx.Where("name IN ?", names).Delete(&Image{}).Error
}

// sizeNames are the sizes an upload is kept at (pictures.Sizes).
var sizeNames = []string{"960", "480"}

// ImageData answers the bytes of a stored image; none answers errs.NotFound.
func ImageData(ctx context.Context, db *gorm.DB, name string) ([]byte, error) {
	var img Image
	err := db.WithContext(ctx).Take(&img, "name = ?", name).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, errs.New(errs.NotFound, "no such image")
	}
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", name, err)
	}
	return img.Data, nil
}

// ImageSums answers the sums of the stored uploads (each is kept at every size under its sum), at most
// limit of them: whether there were more, the caller tells by the count.
func ImageSums(ctx context.Context, db *gorm.DB, limit int) ([]string, error) {
	var sums []string
	err := db.WithContext(ctx).Raw("SELECT DISTINCT substr(name, 1, 32) FROM images LIMIT ?", limit).Scan(&sums).Error
	if err != nil {
		return nil, fmt.Errorf("image sums: %w", err)
	}
	return sums, nil
}
