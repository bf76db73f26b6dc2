// Package models holds the GORM models of the product, their queries and the migrations. The tables follow
// the seed design: users, activities and their items, orders with a stock log, one purchase per (user, item)
// and payments.
package models

import (
	"context"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// lockForUpdate locks the rows a query reads until its transaction ends (PostgreSQL's FOR UPDATE).
var lockForUpdate = clause.Locking{Strength: "UPDATE"}

// Roles of a user.
const (
	RoleShopper  = "shopper"
	RoleMerchant = "merchant"
	RoleAdmin    = "admin"
)

// ValidRole reports whether r is one of the three roles.
func ValidRole(r string) bool { return r == RoleShopper || r == RoleMerchant || r == RoleAdmin }

// Activity states: draft → pending_review → approved | rejected; rejected → pending_review after an edit.
const (
	ActivityDraft         = "draft"
	ActivityPendingReview = "pending_review"
	ActivityApproved      = "approved"
	ActivityRejected      = "rejected"
)

// How an activity sells: to whoever buys first after the start, or through a waiting room whose line is
// drawn at the start.
const (
	SaleFirstCome = "first_come"
	SaleQueue     = "queue"
)

// Order states.
const (
	OrderPendingPayment = "pending_payment"
	OrderPaid           = "paid"
	OrderCancelled      = "cancelled"
	OrderShipped        = "shipped"  // paid, and the merchant sent it (with a carrier and a tracking number)
	OrderRefunded       = "refunded" // paid, then refunded by an admin before it was shipped: its unit is not sold again
)

// Stock log kinds: a sale takes one from stock, a release (an unpaid order cancelled) gives it back.
const (
	StockSell    = "sell"
	StockRelease = "release"
)

// Payment states at our side.
const (
	PaymentOpen   = "open"
	PaymentPaid   = "paid"
	PaymentClosed = "closed"
)

// User is an account. SessionVersion is bumped to end every session of the user at once; AuthChangedAt
// says when it or the role last changed, so that every instance can learn of it.
type User struct {
	ID             int64      `gorm:"primaryKey"`
	Username       string     `gorm:"size:32;not null;uniqueIndex"`
	PasswordHash   string     `gorm:"size:100;not null"`
	Role           string     `gorm:"size:16;not null;default:shopper"`
	SessionVersion int64      `gorm:"not null;default:1"`
	AuthChangedAt  *time.Time `gorm:"index"`
	// BlockedAt: an admin blocked the account (nil when not): it cannot log in, and its sessions ended.
	BlockedAt   *time.Time
	BlockReason string    `gorm:"type:text;not null;default:''"`
	CreatedAt   time.Time `gorm:"not null"`
	UpdatedAt   time.Time `gorm:"not null"`
	// Email is the account's address, lowercased (unique: one account an address), nil for none;
	// EmailVerifiedAt is when a link mailed to it was followed (nil: not yet). Migration 00005.
	Email           *string `gorm:"size:254;uniqueIndex:idx_users_email"`
	EmailVerifiedAt *time.Time
}

// Activity is a flash sale a merchant runs: a window of time and the items on sale in it.
type Activity struct {
	ID           int64      `gorm:"primaryKey"`
	MerchantID   int64      `gorm:"not null;index"`
	Name         string     `gorm:"size:200;not null"`
	Description  string     `gorm:"type:text;not null;default:''"`
	StartsAt     time.Time  `gorm:"not null;index"`
	EndsAt       time.Time  `gorm:"not null;index"`
	State        string     `gorm:"size:20;not null;index;default:draft"`
	SaleMode     string     `gorm:"size:16;not null;default:first_come"` // SaleFirstCome or SaleQueue, fixed once approved
	QueueOpensAt *time.Time // when the waiting room of a queue sale opens: set at approval, never before it
	// The emergency stop: paused by an admin or its merchant (StoppedBy) since PausedAt (nil when running),
	// or ended early (EndsAt moved to then); StopReason is the reason for the last pause, resume or end.
	PausedAt     *time.Time
	EndedEarly   bool   `gorm:"not null;default:false"`
	StopReason   string `gorm:"type:text;not null;default:''"`
	ReviewerID   *int64
	ReviewReason string `gorm:"type:text;not null;default:''"`
	ReviewedAt   *time.Time
	CreatedAt    time.Time `gorm:"not null"`
	UpdatedAt    time.Time `gorm:"not null"`
	// The sale's rules, fixed once approved (Rules). EligibleThrough is the highest account id when it
	// was approved: accounts are numbered in the order they are made, so those made before have ids at
	// most it.
	RuleOnePerAddress          bool `gorm:"not null;default:false"`
	RuleAccountsBeforeApproval bool `gorm:"not null;default:false"`
	EligibleThrough            *int64
	// StoppedBy: the role that made the last pause or early end, StopByMerchant or StopByAdmin ("" before
	// migration 00009: an admin's); its merchant resumes only its own pause.
	// DecisionUnseen: the reviewer approved or rejected it and its merchant has not opened its console
	// since (the badge). Migration 00009 (columns come last, in the order the migrations add them).
	StoppedBy      string `gorm:"size:16;not null;default:''"`
	DecisionUnseen bool   `gorm:"not null;default:false"`
	Items          []Item `gorm:"constraint:OnDelete:CASCADE"`
}

// Item is a product on sale in an activity. StockSold moves only under the optimistic lock on Version.
type Item struct {
	ID                 int64     `gorm:"primaryKey"`
	ActivityID         int64     `gorm:"not null;index"`
	Name               string    `gorm:"size:200;not null"`
	Title              string    `gorm:"size:200;not null;default:''"`
	Description        string    `gorm:"type:text;not null;default:''"`
	ImageURL           string    `gorm:"size:500;not null;default:''"` // an image hosted elsewhere
	ImageKey           string    `gorm:"size:32;not null;default:''"`  // an uploaded image's sum: its sizes are Images
	OriginalPriceCents int64     `gorm:"not null"`
	SeckillPriceCents  int64     `gorm:"not null"`
	StockTotal         int64     `gorm:"not null"`
	StockSold          int64     `gorm:"not null;default:0"`
	StockShards        int       `gorm:"not null;default:1"` // Redis stock shards a hot item's sale is split over
	Version            int64     `gorm:"not null;default:0"`
	CreatedAt          time.Time `gorm:"not null"`
	UpdatedAt          time.Time `gorm:"not null"`
}

// Order is one unit of an item bought by a user.
type Order struct {
	ID          int64     `gorm:"primaryKey"`
	OrderNo     string    `gorm:"size:32;not null;uniqueIndex"`
	UserID      int64     `gorm:"not null;index:idx_orders_user_created,priority:1"`
	ItemID      int64     `gorm:"not null;index"`
	ActivityID  int64     `gorm:"not null;index:idx_orders_activity_created,priority:1"`
	PriceCents  int64     `gorm:"not null"`
	Status      string    `gorm:"size:20;not null;index:idx_orders_status_created,priority:1"`
	PayDeadline time.Time `gorm:"not null;index"`
	PaidAt      *time.Time
	CancelledAt *time.Time
	// Address is the copy of the delivery address the buyer chose (nil until then): paying needs one.
	Address *Delivery `gorm:"serializer:json;type:text"`
	// Shipping, set by the merchant once the order is paid.
	ShippedAt  *time.Time
	Carrier    string `gorm:"size:200;not null;default:''"`
	TrackingNo string `gorm:"size:64;not null;default:''"`
	// An admin's refund of a paid order.
	RefundedAt   *time.Time
	RefundReason string `gorm:"type:text;not null;default:''"`
	// The admins' search pages newest first: each filter's index ends with the time (migration 00008);
	// user_id, activity_id and status are found through these (their single-column indexes are gone).
	CreatedAt time.Time `gorm:"not null;index;index:idx_orders_user_created,priority:2;index:idx_orders_status_created,priority:2;index:idx_orders_activity_created,priority:2"`
	UpdatedAt time.Time `gorm:"not null"`
	// CancelReason says why it was cancelled (CancelByBuyer, CancelUnpaid); "" for an order that is not,
	// or was cancelled before reasons were kept (migration 00006, hence last).
	CancelReason string `gorm:"size:16;not null;default:''"`
}

// StockLog records every move of an item's stock in the database. One row per (order, kind): a message
// delivered twice or a cancel run twice cannot log twice.
type StockLog struct {
	ID          int64  `gorm:"primaryKey"`
	OrderNo     string `gorm:"size:32;not null;uniqueIndex:idx_stock_log_order_kind"`
	Kind        string `gorm:"size:16;not null;uniqueIndex:idx_stock_log_order_kind"`
	ItemID      int64  `gorm:"not null;index"`
	StockBefore int64  `gorm:"not null"` // stock left before the move
	StockAfter  int64  `gorm:"not null"` // stock left after it
	// Pending marks a release whose unit is not back in Redis yet: the unpaid-timeout job retries it.
	Pending   bool      `gorm:"not null;default:false;index"`
	CreatedAt time.Time `gorm:"not null"`
}

// Purchase is the database's own line of defence against a second order: one row per (user, item), kept
// even when the order is cancelled, since the one-per-user rule holds for the whole sale.
type Purchase struct {
	ID        int64     `gorm:"primaryKey"`
	UserID    int64     `gorm:"not null;uniqueIndex:idx_purchase_user_item"`
	ItemID    int64     `gorm:"not null;uniqueIndex:idx_purchase_user_item"`
	OrderNo   string    `gorm:"size:32;not null;uniqueIndex"`
	CreatedAt time.Time `gorm:"not null"`
}

// Payment is an order's payment at the provider.
type Payment struct {
	ID          int64     `gorm:"primaryKey"`
	OrderID     int64     `gorm:"not null;index"`
	OrderNo     string    `gorm:"size:32;not null;index"`
	ProviderID  string    `gorm:"size:64;not null;uniqueIndex"`
	Status      string    `gorm:"size:16;not null;index"`
	AmountCents int64     `gorm:"not null"`
	CreatedAt   time.Time `gorm:"not null"`
	UpdatedAt   time.Time `gorm:"not null"`
	// Provider names the provider the payment is at (PAY_PROVIDERS' names; "" for the http-protocol
	// provider of before, the sandbox or PAY_PROVIDER_URL).
	Provider string `gorm:"size:16;not null;default:''"`
	// PayURL is what the payer opens (the QR code's content), kept for the providers that make a payment
	// once and give it back (WeChat Pay, Alipay); "" for the others, which are asked again.
	PayURL string `gorm:"size:512;not null;default:''"`
	// ExpiresAt is when the provider stops taking the payment (the order's deadline), if it was told.
	ExpiresAt *time.Time
}

// All lists every model, in the order the migrations create them.
func All() []any {
	return []any{&User{}, &Activity{}, &Item{}, &Order{}, &StockLog{}, &Purchase{}, &Payment{}, &AuditLog{}, &Address{}, &Refund{}, &Image{},
		&Appeal{}, &Session{}, &Mail{}, &Token{}, &Reminder{}, &DrawSeed{}}
}

// Atomically runs fn in one transaction of db: a caller outside models (a handler writing an e-mail's
// token and its mail) composes models' own functions, given tx, so that they happen together or not at
// all. fn writes no SQL of its own.
func Atomically(ctx context.Context, db *gorm.DB, fn func(tx *gorm.DB) error) error {
	return db.WithContext(ctx).Transaction(fn)
}
