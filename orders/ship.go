package orders

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"seckill/errs"
	"seckill/models"
)

// ShipOutcome is what marking an order shipped did (the API answers it as it is spelled).
type ShipOutcome string

// The outcomes of Ship and of each row of ShipAll.
const (
	ShipDone      ShipOutcome = "shipped"   // the order is shipped now
	ShipUnchanged ShipOutcome = "unchanged" // it was shipped already, with this carrier and tracking number
	ShipCorrected ShipOutcome = "corrected" // it was shipped already: its carrier or tracking number changed
)

// Ship marks one of the merchant's paid orders shipped (or corrects a shipped order's carrier and
// tracking number). An order that is not the merchant's answers not found; one not paid, order_state.
func (s *Service) Ship(ctx context.Context, merchantID int64, orderNo string, sh models.Shipment) (ShipOutcome, *models.Order, error) {
	if err := sh.Check(); err != nil {
		return "", nil, err
	}
	now := s.Now()
	var outcome ShipOutcome
	var o *models.Order
	err := s.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var err error
		if o, err = models.LockMerchantOrder(tx, merchantID, orderNo); err != nil {
			return err
		}
		was, sent := o.Status, models.Shipment{Carrier: o.Carrier, TrackingNo: o.TrackingNo}
		if outcome, err = shipped(o, sh, now); err != nil {
			return err
		}
		switch outcome {
		case ShipDone:
			o.Status = was
			if err := change(tx, o, models.OrderShipped, now, map[string]any{"shipped_at": now, "carrier": o.Carrier, "tracking_no": o.TrackingNo}); err != nil {
				return err
			}
			return models.AuditShipments(tx, merchantID, models.AuditShip, []*models.Order{o}, nil, now)
		case ShipCorrected:
			if err := models.CorrectShipments(tx, []*models.Order{o}, now); err != nil {
				return err
			}
			return models.AuditShipments(tx, merchantID, models.AuditShipFix, []*models.Order{o}, map[string]models.Shipment{o.OrderNo: sent}, now)
		}
		return nil
	})
	if err != nil {
		if _, ok := err.(*errs.Error); ok {
			return "", nil, err
		}
		return "", nil, fmt.Errorf("ship order %s: %w", orderNo, err)
	}
	return outcome, o, nil
}

// shipped changes o in memory as shipping it with sh does, and answers the outcome: a shipped order's
// carrier and tracking number may be corrected; else only the table's move to shipped is allowed.
func shipped(o *models.Order, sh models.Shipment, now time.Time) (ShipOutcome, error) {
	var outcome ShipOutcome
	switch _, can := allowed(o.Status, models.OrderShipped); {
	case o.Status == models.OrderShipped && o.Carrier == sh.Carrier && o.TrackingNo == sh.TrackingNo:
		return ShipUnchanged, nil
	case o.Status == models.OrderShipped:
		outcome = ShipCorrected
	case can:
		outcome = ShipDone
		o.ShippedAt = &now
	default:
		return "", errs.Newf(errs.OrderState, "this order is %s: only a paid order can be shipped", o.Status)
	}
	o.Status, o.Carrier, o.TrackingNo, o.UpdatedAt = models.OrderShipped, sh.Carrier, sh.TrackingNo, now
	return outcome, nil
}

// ShipRow is one order of a batch to ship, and what became of it: an outcome, or an error a person can
// read (not found, order_state, bad fields).
type ShipRow struct {
	OrderNo  string
	Shipment models.Shipment
	Outcome  ShipOutcome
	Err      error
}

// shipBatch is how many orders one transaction of ShipAll ships.
const shipBatch = 500

var errNoSuchOrder = errs.New(errs.NotFound, "no such order")

// errNotThisSale is a CSV row naming no order of the sale it was sent to (none, or another sale's): not
// found, said beside its order number in the merchant's words.
var errNotThisSale = func() *errs.Error {
	e := errs.Bad(errs.W("order_no", "order_unknown"))
	e.Code = errs.NotFound
	return e
}()

// ShipAll ships a batch of one of the merchant's activities' orders (a CSV sent back), a few hundred to
// a transaction: each row gets its outcome or its error. Rows of orders not in the activity are not
// found. It answers an error only when the database fails (the rows before are shipped).
func (s *Service) ShipAll(ctx context.Context, merchantID, activityID int64, rows []ShipRow) error {
	if err := models.OwnActivity(ctx, s.DB, merchantID, activityID); err != nil {
		return err
	}
	now := s.Now()
	for start := 0; start < len(rows); start += shipBatch {
		chunk := rows[start:min(start+shipBatch, len(rows))]
		// Every row's order is looked up, its shipment checked after: a row naming no order of this sale
		// says so first, whatever its tracking number (a made-up number is rarely the only mistake).
		nos := make([]string, 0, len(chunk))
		for i := range chunk {
			nos = append(nos, chunk[i].OrderNo)
		}
		err := s.DB.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			var found []models.Order
			if len(nos) > 0 {
				var err error
				if found, err = models.LockOrders(tx, nos); err != nil {
					return err
				}
			}
			byNo := make(map[string]*models.Order, len(found))
			for i := range found {
				if found[i].ActivityID == activityID {
					byNo[found[i].OrderNo] = &found[i]
				}
			}
			done, corrected := map[int64]*models.Order{}, map[int64]*models.Order{}
			sent := map[string]models.Shipment{} // a shipped order's carrier and number before this batch
			for i := range chunk {
				r := &chunk[i]
				o, ok := byNo[r.OrderNo]
				if !ok {
					r.Err = errNotThisSale
					continue
				}
				if r.Err = r.Shipment.Check(); r.Err != nil {
					continue
				}
				_, before := done[o.ID]
				if _, seen := sent[o.OrderNo]; !seen && o.Status == models.OrderShipped {
					sent[o.OrderNo] = models.Shipment{Carrier: o.Carrier, TrackingNo: o.TrackingNo}
				}
				switch r.Outcome, r.Err = shipped(o, r.Shipment, now); {
				case r.Outcome == ShipDone || before && r.Outcome == ShipCorrected:
					done[o.ID] = o // shipped by this batch (a second row of it corrects what the first wrote)
				case r.Outcome == ShipCorrected:
					corrected[o.ID] = o
				}
			}
			if err := shipNow(tx, done, now); err != nil {
				return err
			}
			if err := models.CorrectShipments(tx, list(corrected), now); err != nil {
				return err
			}
			// Each order's story says how it left: one audit row per order, as the merchant.
			if err := models.AuditShipments(tx, merchantID, models.AuditShip, list(done), nil, now); err != nil {
				return err
			}
			return models.AuditShipments(tx, merchantID, models.AuditShipFix, list(corrected), sent, now)
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

// shipNow moves the paid orders of a batch (changed in memory by shipped) to shipped in one statement,
// each with its carrier and tracking number.
func shipNow(tx *gorm.DB, orders map[int64]*models.Order, now time.Time) error {
	if len(orders) == 0 {
		return nil
	}
	l := list(orders)
	ids := make([]int64, len(l))
	for i, o := range l {
		ids[i] = o.ID
	}
	set := models.ShipmentColumns(l)
	set["shipped_at"] = now
	n, err := apply(tx, moveShip, ids, now, set)
	if err == nil && n != int64(len(ids)) {
		err = fmt.Errorf("shipped %d of %d locked orders", n, len(ids))
	}
	return err
}

func list(m map[int64]*models.Order) []*models.Order {
	out := make([]*models.Order, 0, len(m))
	for _, o := range m {
		out = append(out, o)
	}
	return out
}
