package models

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"gorm.io/gorm"

	"seckill/errs"
)

// Fulfilment: a merchant sees the paid orders of its activities with their delivery addresses and marks
// them shipped. A merchant never sees, nor ships, another merchant's order: it answers not found.

// OrdersPerPage is how many orders a merchant's page of orders holds.
const OrdersPerPage = 50

// Which of an activity's orders a merchant lists.
const (
	ToShip  = "to_ship" // paid, not shipped yet
	Shipped = "shipped"
	AllPaid = "all" // paid or shipped
)

// ValidOrderFilter reports whether f names one of the lists above.
func ValidOrderFilter(f string) bool { return f == ToShip || f == Shipped || f == AllPaid }

func filterStatuses(f string) []string {
	switch f {
	case ToShip:
		return []string{OrderPaid}
	case Shipped:
		return []string{OrderShipped}
	}
	return []string{OrderPaid, OrderShipped}
}

// ActivityOrders lists one page (from 1) of an activity's paid or shipped orders, oldest payment first,
// with how many there are in all. The activity must be the merchant's (else not found).
func ActivityOrders(ctx context.Context, db *gorm.DB, merchantID, activityID int64, filter string, page int) ([]Order, int64, error) {
	if err := OwnActivity(ctx, db, merchantID, activityID); err != nil {
		return nil, 0, err
	}
	q := db.WithContext(ctx).Model(&Order{}).Where("activity_id = ? AND status IN ?", activityID, filterStatuses(filter))
	var total int64
	if err := q.Count(&total).Error; err != nil {
		return nil, 0, fmt.Errorf("count orders of activity %d: %w", activityID, err)
	}
	var out []Order
	err := q.Order("paid_at, id").Offset((max(page, 1) - 1) * OrdersPerPage).Limit(OrdersPerPage).Find(&out).Error
	if err != nil {
		return nil, 0, fmt.Errorf("orders of activity %d: %w", activityID, err)
	}
	return out, total, nil
}

// CountActivityOrders counts an activity's orders of a list (ToShip, Shipped, AllPaid); the caller has
// checked the activity is the merchant's.
func CountActivityOrders(ctx context.Context, db *gorm.DB, activityID int64, filter string) (int64, error) {
	var n int64
	err := db.WithContext(ctx).Model(&Order{}).Where("activity_id = ? AND status IN ?", activityID, filterStatuses(filter)).Count(&n).Error
	if err != nil {
		return 0, fmt.Errorf("count orders of activity %d: %w", activityID, err)
	}
	return n, nil
}

// AllActivityOrders lists every paid or shipped order of one of the merchant's activities, for its CSV.
func AllActivityOrders(ctx context.Context, db *gorm.DB, merchantID, activityID int64, filter string) ([]Order, error) {
	if err := OwnActivity(ctx, db, merchantID, activityID); err != nil {
		return nil, err
	}
	var out []Order
	err := db.WithContext(ctx).Where("activity_id = ? AND status IN ?", activityID, filterStatuses(filter)).
		Order("paid_at, id").Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("orders of activity %d: %w", activityID, err)
	}
	return out, nil
}

// OwnActivity answers not found unless the activity is the merchant's.
func OwnActivity(ctx context.Context, db *gorm.DB, merchantID, activityID int64) error {
	var n int64
	if err := db.WithContext(ctx).Model(&Activity{}).Where("id = ? AND merchant_id = ?", activityID, merchantID).Count(&n).Error; err != nil {
		return fmt.Errorf("activity %d: %w", activityID, err)
	}
	if n == 0 {
		return errs.New(errs.NotFound, "no such activity")
	}
	return nil
}

// Shipment is how an order was sent.
type Shipment struct {
	Carrier    string `json:"carrier"`
	TrackingNo string `json:"tracking_no"`
}

const maxCarrier = 50

var trackingNo = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{2,38}[A-Za-z0-9]$`)

// clean trims the fields and answers what is wrong with each (none when it is good).
func (s *Shipment) clean() []errs.Why {
	var bad []errs.Why
	if w := lineText("carrier", &s.Carrier, maxCarrier); w != nil {
		bad = append(bad, *w)
	}
	s.TrackingNo = strings.TrimSpace(s.TrackingNo)
	if !trackingNo.MatchString(s.TrackingNo) {
		bad = append(bad, errs.W("tracking_no", "tracking_no"))
	}
	return bad
}

// Check answers the 400 of a shipment with bad fields: every one of them at once.
func (s *Shipment) Check() error {
	if bad := s.clean(); len(bad) > 0 {
		return errs.Bad(bad...)
	}
	return nil
}

// LockMerchantOrder reads, in tx, one of the merchant's orders by number with its row locked until tx
// ends; another merchant's, or none, answers not found.
func LockMerchantOrder(tx *gorm.DB, merchantID int64, orderNo string) (*Order, error) {
	var o Order
	mine := tx.Model(&Activity{}).Select("id").Where("merchant_id = ?", merchantID)
	err := tx.Clauses(lockForUpdate).Where("order_no = ? AND activity_id IN (?)", orderNo, mine).Take(&o).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, errNoSuchOrder
	}
	return &o, err
}

// LockOrders reads, in tx, the orders of these numbers with their rows locked until tx ends, by id.
func LockOrders(tx *gorm.DB, orderNos []string) ([]Order, error) {
	var found []Order
	// By order number alone (the caller checks the activity): with the activity in the query, PostgreSQL's
	// generic plan (from the sixth batch on) scanned the whole activity's orders for each batch.
	err := tx.Clauses(lockForUpdate).Where("order_no IN ?", orderNos).Order("id").Find(&found).Error
	return found, err
}

// ShipmentColumns answers the columns carrier and tracking_no of orders (each its own, as changed in
// memory), for one statement that writes them all.
func ShipmentColumns(orders []*Order) map[string]any {
	var carrier, tracking strings.Builder
	cargs := make([]any, 0, 2*len(orders))
	targs := make([]any, 0, 2*len(orders))
	carrier.WriteString("CASE id")
	tracking.WriteString("CASE id")
	for _, o := range orders {
		carrier.WriteString(" WHEN ? THEN ?")
		tracking.WriteString(" WHEN ? THEN ?")
		cargs = append(cargs, o.ID, o.Carrier)
		targs = append(targs, o.ID, o.TrackingNo)
	}
	carrier.WriteString(" END")
	tracking.WriteString(" END")
	return map[string]any{"carrier": gorm.Expr(carrier.String(), cargs...), "tracking_no": gorm.Expr(tracking.String(), targs...)}
}

// CorrectShipments writes, in tx, new carriers and tracking numbers of shipped orders (changed in
// memory) in one statement; when they were shipped, and their status, stay.
func CorrectShipments(tx *gorm.DB, orders []*Order, now time.Time) error {
	if len(orders) == 0 {
		return nil
	}
	ids := make([]int64, len(orders))
	for i, o := range orders {
		ids[i] = o.ID
	}
	change := ShipmentColumns(orders)
	change["updated_at"] = now
	return tx.Model(&Order{}).Where("id IN ? AND status = ?", ids, OrderShipped).Updates(change).Error
}
