package models

import (
	"encoding/json"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// AuditLog records one merchant or admin action: who, what, on what, the state before and after, when.
type AuditLog struct {
	ID      int64  `gorm:"primaryKey"`
	ActorID int64  `gorm:"not null;index;index:idx_audit_logs_actor_created,priority:1"`
	Actor   string `gorm:"size:32;not null"`
	Action  string `gorm:"size:40;not null;index:idx_audit_logs_action_created,priority:1"`
	Target  string `gorm:"size:60;not null;index;index:idx_audit_logs_target_created,priority:1"`
	Before  string `gorm:"type:text;not null;default:''"`
	After   string `gorm:"type:text;not null;default:''"`
	// The audit search pages newest first: each filter's index ends with the time (migration 00008).
	CreatedAt time.Time `gorm:"not null;index;index:idx_audit_logs_actor_created,priority:2;index:idx_audit_logs_action_created,priority:2;index:idx_audit_logs_target_created,priority:2"`
}

// Actor is who does an action.
type Actor struct {
	ID       int64
	Username string
}

// Audit writes an audit row in tx; before and after are stored as JSON (nil stays empty).
func Audit(tx *gorm.DB, who Actor, action, target string, before, after any, now time.Time) error {
	enc := func(v any) string {
		if v == nil {
			return ""
		}
		b, _ := json.Marshal(v)
		return string(b)
	}
	row := AuditLog{ActorID: who.ID, Actor: who.Username, Action: action, Target: target, Before: enc(before), After: enc(after), CreatedAt: now}
	if err := tx.Create(&row).Error; err != nil {
		return fmt.Errorf("audit %s: %w", action, err)
	}
	return nil
}

type activityAudit struct {
	Name        string    `json:"name"`
	Description string    `json:"description"`
	StartsAt    time.Time `json:"starts_at"`
	EndsAt      time.Time `json:"ends_at"`
	SaleMode    string    `json:"sale_mode"`
	State       string    `json:"state"`
	Reason      string    `json:"reason,omitempty"`
	// The rules, flat: each is a field of the audit's before and after.
	OnePerAddress          bool `json:"one_per_address"`
	AccountsBeforeApproval bool `json:"accounts_before"`
}

func auditOf(a *Activity) activityAudit {
	return activityAudit{a.Name, a.Description, a.StartsAt.UTC(), a.EndsAt.UTC(), a.SaleMode, a.State, a.ReviewReason, a.RuleOnePerAddress, a.RuleAccountsBeforeApproval}
}

type itemAudit struct {
	Name               string `json:"name"`
	Title              string `json:"title"`
	Description        string `json:"description"`
	OriginalPriceCents int64  `json:"original_price_cents"`
	SeckillPriceCents  int64  `json:"seckill_price_cents"`
	Stock              int64  `json:"stock"`
	StockShards        int    `json:"stock_shards"`
	Image              string `json:"image,omitempty"`
}

func itemAuditOf(it *Item) itemAudit {
	return itemAudit{it.Name, it.Title, it.Description, it.OriginalPriceCents, it.SeckillPriceCents, it.StockTotal, it.StockShards, it.Picture("960")}
}

// Audit actions of shipping: a merchant sent an order, or corrected a sent order's carrier or number.
const (
	AuditShip    = "order.ship"
	AuditShipFix = "order.ship_fix"
)

// AuditShipments writes, in tx, one audit row per order a merchant shipped (action AuditShip) or whose
// shipping it corrected (AuditShipFix), as the merchant: each order's story says how and when it left.
// was holds a corrected order's carrier and tracking number before (by order number): a correction's
// row keeps them, and names only the fields it changed.
func AuditShipments(tx *gorm.DB, merchantID int64, action string, orders []*Order, was map[string]Shipment, now time.Time) error {
	if len(orders) == 0 {
		return nil
	}
	who := Actor{ID: merchantID}
	if err := tx.Model(&User{}).Where("id = ?", merchantID).Pluck("username", &who.Username).Error; err != nil {
		return fmt.Errorf("audit %s: %w", action, err)
	}
	rows := make([]AuditLog, 0, len(orders))
	for _, o := range orders {
		var before, after map[string]string
		if action == AuditShip {
			before = map[string]string{"status": OrderPaid}
			after = map[string]string{"status": o.Status, "carrier": o.Carrier, "tracking_no": o.TrackingNo}
		} else {
			w := was[o.OrderNo]
			before, after = map[string]string{}, map[string]string{}
			if w.Carrier != o.Carrier {
				before["carrier"], after["carrier"] = w.Carrier, o.Carrier
			}
			if w.TrackingNo != o.TrackingNo {
				before["tracking_no"], after["tracking_no"] = w.TrackingNo, o.TrackingNo
			}
			if len(after) == 0 {
				continue // a batch's rows corrected it and back: nothing changed
			}
		}
		b, _ := json.Marshal(before)
		a, _ := json.Marshal(after)
		rows = append(rows, AuditLog{ActorID: who.ID, Actor: who.Username, Action: action, Target: "order:" + o.OrderNo,
			Before: string(b), After: string(a), CreatedAt: now})
	}
	if len(rows) == 0 {
		return nil
	}
	if err := tx.CreateInBatches(rows, 500).Error; err != nil {
		return fmt.Errorf("audit %s: %w", action, err)
	}
	return nil
}
