package models

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"gorm.io/gorm"

	"seckill/errs"
)

// ItemInput is what a merchant gives for an item.
type ItemInput struct {
	Name               string `json:"name"`
	Title              string `json:"title"`
	Description        string `json:"description"`
	ImageURL           string `json:"image_url"`
	OriginalPriceCents int64  `json:"original_price_cents"`
	SeckillPriceCents  int64  `json:"seckill_price_cents"`
	Stock              int64  `json:"stock"`
	StockShards        int    `json:"stock_shards"` // optional: 1 (the default) to MaxStockShards
	// ImageHosts are the hosts whose https:// addresses ImageURL may name (IMAGE_HOSTS): set by the
	// handler from the configuration, never read from the request.
	ImageHosts []string `json:"-"`
}

// maxStockShards is the most stock shards an item can be split over.
const maxStockShards = 64

// AddItem adds an item to a draft or rejected activity of the merchant.
func AddItem(ctx context.Context, db *gorm.DB, who Actor, activityID int64, in ItemInput, now time.Time) (*Item, error) {
	var it Item
	_, err := changeActivity(ctx, db, who, who.ID, activityID, ActEdit, now, func(tx *gorm.DB, a *Activity, _ string) (any, any, error) {
		it = Item{ActivityID: a.ID, Name: in.Name, Title: in.Title, Description: in.Description, ImageURL: in.ImageURL,
			OriginalPriceCents: in.OriginalPriceCents, SeckillPriceCents: in.SeckillPriceCents, StockTotal: in.Stock, StockShards: in.StockShards, CreatedAt: now, UpdatedAt: now}
		err := tx.Create(&it).Error
		return nil, itemAuditOf(&it), err
	})
	if err != nil {
		return nil, err
	}
	return &it, nil
}

// UpdateItem changes an item of a draft or rejected activity of the merchant.
func UpdateItem(ctx context.Context, db *gorm.DB, who Actor, activityID, itemID int64, in ItemInput, now time.Time) (*Item, error) {
	var it Item
	_, err := changeActivity(ctx, db, who, who.ID, activityID, ActEdit, now, func(tx *gorm.DB, a *Activity, _ string) (any, any, error) {
		if err := tx.Take(&it, "id = ? AND activity_id = ?", itemID, a.ID).Error; errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, nil, errs.New(errs.NotFound, "no such item")
		} else if err != nil {
			return nil, nil, err
		}
		before := itemAuditOf(&it)
		it.Name, it.Title, it.Description, it.ImageURL = in.Name, in.Title, in.Description, in.ImageURL
		it.OriginalPriceCents, it.SeckillPriceCents, it.StockTotal, it.UpdatedAt = in.OriginalPriceCents, in.SeckillPriceCents, in.Stock, now
		it.StockShards = in.StockShards
		err := tx.Save(&it).Error
		return before, itemAuditOf(&it), err
	})
	if err != nil {
		return nil, err
	}
	return &it, nil
}

// DeleteItem removes an item from a draft or rejected activity of the merchant.
func DeleteItem(ctx context.Context, db *gorm.DB, who Actor, activityID, itemID int64, now time.Time) error {
	_, err := changeActivity(ctx, db, who, who.ID, activityID, ActEdit, now, func(tx *gorm.DB, a *Activity, _ string) (any, any, error) {
		var it Item
		if err := tx.Take(&it, "id = ? AND activity_id = ?", itemID, a.ID).Error; errors.Is(err, gorm.ErrRecordNotFound) {
			return nil, nil, errs.New(errs.NotFound, "no such item")
		} else if err != nil {
			return nil, nil, err
		}
		if err := lockSums(tx, it.ImageKey); err != nil {
			return nil, nil, err
		}
		if err := tx.Delete(&it).Error; err != nil {
			return nil, nil, err
		}
		return itemAuditOf(&it), nil, dropUnused(tx, it.ImageKey)
	})
	return err
}

// ItemNames maps item ids to their names.
func ItemNames(ctx context.Context, db *gorm.DB, ids []int64) (map[int64]string, error) {
	out := map[int64]string{}
	if len(ids) == 0 {
		return out, nil
	}
	// An activity's thousands of orders name a few items: each is asked for once.
	err := inChunks(unique(ids), func(chunk []int64) error {
		var items []Item
		if err := db.WithContext(ctx).Select("id", "name").Where("id IN ?", chunk).Find(&items).Error; err != nil {
			return err
		}
		for _, it := range items {
			out[it.ID] = it.Name
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("item names: %w", err)
	}
	return out, nil
}

// inListMost is the most values one query's IN list takes: PostgreSQL takes 65,535 parameters a
// statement and SQLite 32,766.
const inListMost = 10_000

// inChunks calls fn with ids in chunks of at most inListMost.
func inChunks(ids []int64, fn func([]int64) error) error {
	for start := 0; start < len(ids); start += inListMost {
		if err := fn(ids[start:min(start+inListMost, len(ids))]); err != nil {
			return err
		}
	}
	return nil
}

// unique answers ids without repeats, in their first order.
func unique(ids []int64) []int64 {
	seen := make(map[int64]bool, len(ids))
	out := make([]int64, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// Validate checks the input against the contract's rules (an item's rules do not depend on the time):
// every bad field at once.
func (in *ItemInput) Validate(time.Time) error {
	in.Name, in.Title, in.ImageURL = strings.TrimSpace(in.Name), strings.TrimSpace(in.Title), strings.TrimSpace(in.ImageURL)
	var why []errs.Why
	why = append(why, text("name", in.Name, true, 200, false)...)
	why = append(why, text("title", in.Title, false, 200, false)...)
	why = append(why, text("description", in.Description, false, 5000, true)...)
	if len(in.ImageURL) > 500 || !ValidImageURL(in.ImageURL, in.ImageHosts) {
		if len(in.ImageHosts) == 0 {
			why = append(why, errs.W("image_url", "image_url_local"))
		} else {
			why = append(why, errs.W("image_url", "image_url_hosts", strings.Join(in.ImageHosts, ", ")))
		}
	}
	if in.OriginalPriceCents <= 0 {
		why = append(why, errs.W("original_price_cents", "positive"))
	}
	switch {
	case in.SeckillPriceCents <= 0:
		why = append(why, errs.W("seckill_price_cents", "positive"))
	case in.OriginalPriceCents > 0 && in.SeckillPriceCents > in.OriginalPriceCents:
		why = append(why, errs.W("seckill_price_cents", "not_above_original"))
	}
	if in.Stock < 1 || in.Stock > 1_000_000 {
		why = append(why, errs.W("stock", "between", 1, "1,000,000"))
	}
	switch {
	case in.StockShards < 0 || in.StockShards > maxStockShards:
		why = append(why, errs.W("stock_shards", "between", 1, maxStockShards))
	case in.Stock >= 1 && int64(in.StockShards) > in.Stock:
		why = append(why, errs.W("stock_shards", "not_above_stock"))
	}
	if len(why) > 0 {
		return errs.Bad(why...)
	}
	if in.StockShards == 0 {
		in.StockShards = 1
	}
	return nil
}

// ValidImageURL reports whether an item may show the image at u ("" is none): a path on this site (an
// upload's /images/…, the demo's /assets/…), or an https:// address on one of hosts (IMAGE_HOSTS, which
// the pages' Content-Security-Policy names too). Whatever a browser could read as another site is not a
// path: //host/x (a scheme-relative address), a backslash (/\host/x is //host/x to a browser), a
// scheme. Nor is an address on any other host taken: a picture from a site of the merchant's choosing is
// a tracking pixel on every visitor's page.
func ValidImageURL(u string, hosts []string) bool {
	if u == "" {
		return true
	}
	if BadText(u, false) || strings.ContainsAny(u, "\\ ") {
		return false
	}
	if strings.HasPrefix(u, "/") {
		p, err := url.Parse(u)
		return !strings.HasPrefix(u, "//") && err == nil && p.Scheme == "" && p.Host == "" && p.User == nil
	}
	p, err := url.Parse(u)
	if err != nil || !strings.HasPrefix(u, "https://") || p.User != nil || p.Host == "" || p.Opaque != "" {
		return false
	}
	for _, h := range hosts {
		if strings.EqualFold(p.Host, h) {
			return true
		}
	}
	return false
}

// ItemsWithImageURLs answers the id and image_url of every item that has one, for a check at start.
func ItemsWithImageURLs(ctx context.Context, db *gorm.DB) ([]Item, error) {
	var items []Item
	if err := db.WithContext(ctx).Select("id", "image_url").Where("image_url <> ''").Order("id").Find(&items).Error; err != nil {
		return nil, fmt.Errorf("items with image addresses: %w", err)
	}
	return items, nil
}
