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

// Clean trims the fields and answers what is wrong with each (none when it is good).
func (s *Shipment) Clean() []errs.Why {
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

// ShipOutcome is what marking an order shipped did.
const (
	ShipDone      = "shipped"   // the order is shipped now
	ShipUnchanged = "unchanged" // it was shipped already, with this carrier and tracking number
	ShipCorrected = "corrected" // it was shipped already: its carrier or tracking number changed
)

// ShipOrder marks one of the merchant's paid orders shipped (or corrects a shipped order's carrier and
// tracking number). An order that is not the merchant's answers not found; one not paid, order_state.
func ShipOrder(ctx context.Context, db *gorm.DB, merchantID int64, orderNo string, s Shipment, now time.Time) (string, *Order, error) {
	if err := s.check(); err != nil {
		return "", nil, err
	}
	var outcome string
	var o Order
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		mine := tx.Model(&Activity{}).Select("id").Where("merchant_id = ?", merchantID)
		err := tx.Clauses(lockForUpdate).Where("order_no = ? AND activity_id IN (?)", orderNo, mine).Take(&o).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return errNoSuchOrder
		}
		if err != nil {
			return err
		}
		outcome, err = ship(tx, &o, s, now)
		return err
	})
	if err != nil {
		if _, ok := err.(*errs.Error); ok {
			return "", nil, err
		}
		return "", nil, fmt.Errorf("ship order %s: %w", orderNo, err)
	}
	return outcome, &o, nil
}

var errNoSuchOrder = errs.New(errs.NotFound, "no such order")

// check answers the 400 of a shipment with bad fields: every one of them at once.
func (s *Shipment) check() error {
	if bad := s.Clean(); len(bad) > 0 {
		return errs.Bad(bad...)
	}
	return nil
}

// ship marks o (locked by tx) shipped with s, or corrects it, and answers the outcome.
func ship(tx *gorm.DB, o *Order, s Shipment, now time.Time) (string, error) {
	outcome, err := shipped(o, s, now)
	if err != nil || outcome == ShipUnchanged {
		return outcome, err
	}
	return outcome, tx.Model(o).Select("status", "shipped_at", "carrier", "tracking_no", "updated_at").Updates(o).Error
}

// shipped changes o in memory as shipping it with s does, and answers the outcome.
func shipped(o *Order, s Shipment, now time.Time) (string, error) {
	var outcome string
	switch {
	case o.Status == OrderShipped && o.Carrier == s.Carrier && o.TrackingNo == s.TrackingNo:
		return ShipUnchanged, nil
	case o.Status == OrderShipped:
		outcome = ShipCorrected
	case o.Status == OrderPaid:
		outcome = ShipDone
		o.ShippedAt = &now
	default:
		return "", errs.Newf(errs.OrderState, "this order is %s: only a paid order can be shipped", o.Status)
	}
	o.Status, o.Carrier, o.TrackingNo, o.UpdatedAt = OrderShipped, s.Carrier, s.TrackingNo, now
	return outcome, nil
}

// writeShipped writes the shipments of orders (changed in memory by shipped) in one statement.
func writeShipped(tx *gorm.DB, orders []*Order, now time.Time) error {
	if len(orders) == 0 {
		return nil
	}
	var carrier, tracking strings.Builder
	args := make([]any, 0, 4*len(orders)+4)
	carrier.WriteString("CASE id")
	for _, o := range orders {
		carrier.WriteString(" WHEN ? THEN ?")
		args = append(args, o.ID, o.Carrier)
	}
	tracking.WriteString(" END, tracking_no = CASE id")
	for _, o := range orders {
		tracking.WriteString(" WHEN ? THEN ?")
		args = append(args, o.ID, o.TrackingNo)
	}
	ids := make([]int64, len(orders))
	for i, o := range orders {
		ids[i] = o.ID
	}
	// An order shipped now gets now; a corrected one keeps when it was shipped.
	args = append(args, now, OrderShipped, now, ids)
	return tx.Exec("UPDATE orders SET carrier = "+carrier.String()+tracking.String()+
		" END, shipped_at = COALESCE(shipped_at, ?), status = ?, updated_at = ? WHERE id IN ?", args...).Error
}

// ShipRow is one order of a batch to ship, and what became of it: an outcome, or an error a person can
// read (not found, order_state, bad fields).
type ShipRow struct {
	OrderNo  string
	Shipment Shipment
	Outcome  string
	Err      error
}

// shipBatch is how many orders one transaction of ShipOrders ships.
const shipBatch = 500

// ShipOrders ships a batch of one of the merchant's activities' orders (a CSV sent back), a few hundred
// to a transaction: each row gets its outcome or its error. Rows of orders not in the activity are not
// found. It answers an error only when the database fails (the rows before are shipped).
func ShipOrders(ctx context.Context, db *gorm.DB, merchantID, activityID int64, rows []ShipRow, now time.Time) error {
	if err := OwnActivity(ctx, db, merchantID, activityID); err != nil {
		return err
	}
	for start := 0; start < len(rows); start += shipBatch {
		chunk := rows[start:min(start+shipBatch, len(rows))]
		nos := make([]string, 0, len(chunk))
		for i := range chunk {
			if chunk[i].Err = chunk[i].Shipment.check(); chunk[i].Err == nil {
				nos = append(nos, chunk[i].OrderNo)
			}
		}
		err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			var found []Order
			if len(nos) > 0 {
				// By order number alone, the activity checked below: with the activity in the query, PostgreSQL's
				// generic plan (from the sixth batch on) scanned the whole activity's orders for each batch.
				if err := tx.Clauses(lockForUpdate).Where("order_no IN ?", nos).Order("id").Find(&found).Error; err != nil {
					return err
				}
			}
			changed := map[int64]*Order{}
			byNo := make(map[string]*Order, len(found))
			for i := range found {
				if found[i].ActivityID == activityID {
					byNo[found[i].OrderNo] = &found[i]
				}
			}
			for i := range chunk {
				r := &chunk[i]
				if r.Err != nil {
					continue
				}
				o, ok := byNo[r.OrderNo]
				if !ok {
					r.Err = errNoSuchOrder
					continue
				}
				if r.Outcome, r.Err = shipped(o, r.Shipment, now); r.Outcome == ShipDone || r.Outcome == ShipCorrected {
					changed[o.ID] = o
				}
			}
			list := make([]*Order, 0, len(changed))
			for _, o := range changed {
				list = append(list, o)
			}
			return writeShipped(tx, list, now)
		})
		if err != nil {
			for i := range chunk {
				chunk[i].Outcome, chunk[i].Err = "", nil
			}
			return fmt.Errorf("ship orders of activity %d: %w", activityID, err)
		}
	}
	return nil
}
