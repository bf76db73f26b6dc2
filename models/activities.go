package models

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"seckill/errs"
)

// OpenActivities lists the approved activities that have not ended at now, soonest first, with their items.
func OpenActivities(ctx context.Context, db *gorm.DB, now time.Time) ([]Activity, error) {
	var acts []Activity
	err := db.WithContext(ctx).
		Preload("Items", func(db *gorm.DB) *gorm.DB { return db.Order("id") }).
		Where("state = ? AND ends_at > ?", ActivityApproved, now).
		Order("starts_at, id").
		Find(&acts).Error
	if err != nil {
		return nil, fmt.Errorf("open activities: %w", err)
	}
	return acts, nil
}

// ApprovedActivity returns one approved activity with its items; any other answers errs.NotFound.
func ApprovedActivity(ctx context.Context, db *gorm.DB, id int64) (*Activity, error) {
	var a Activity
	err := db.WithContext(ctx).
		Preload("Items", func(db *gorm.DB) *gorm.DB { return db.Order("id") }).
		Where("id = ? AND state = ?", id, ActivityApproved).
		Take(&a).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, errs.New(errs.NotFound, "no such activity")
	}
	if err != nil {
		return nil, fmt.Errorf("activity %d: %w", id, err)
	}
	return &a, nil
}

// ItemWithActivity returns an item of an approved activity, with that activity; any other answers errs.NotFound.
func ItemWithActivity(ctx context.Context, db *gorm.DB, id int64) (*Item, *Activity, error) {
	var it Item
	err := db.WithContext(ctx).Take(&it, "id = ?", id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil, errs.New(errs.NotFound, "no such item")
	}
	if err != nil {
		return nil, nil, fmt.Errorf("item %d: %w", id, err)
	}
	var a Activity
	err = db.WithContext(ctx).Where("id = ? AND state = ?", it.ActivityID, ActivityApproved).Take(&a).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil, errs.New(errs.NotFound, "no such item")
	}
	if err != nil {
		return nil, nil, fmt.Errorf("activity of item %d: %w", id, err)
	}
	return &it, &a, nil
}

// MerchantActivities lists a merchant's own activities, newest first, with their items.
func MerchantActivities(ctx context.Context, db *gorm.DB, merchantID int64) ([]Activity, error) {
	var acts []Activity
	err := db.WithContext(ctx).
		Preload("Items", func(db *gorm.DB) *gorm.DB { return db.Order("id") }).
		Where("merchant_id = ?", merchantID).
		Order("id DESC").
		Find(&acts).Error
	if err != nil {
		return nil, fmt.Errorf("activities of merchant %d: %w", merchantID, err)
	}
	return acts, nil
}
