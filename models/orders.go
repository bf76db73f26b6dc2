package models

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"seckill/errs"
)

// NewOrder is an order a consumer writes for one queued message.
type NewOrder struct {
	OrderNo    string
	UserID     int64
	ActivityID int64
	PriceCents int64
	BoughtAt   time.Time
}

// Placement outcomes.
const (
	Placed      = "placed"      // the order is now in the database
	AlreadyHeld = "already"     // this very order was placed before (the message came twice)
	OtherOrder  = "other_order" // the user holds another order for the item: this one is refused
	NoStock     = "no_stock"    // the database has no stock left for it
)

// Placement is what became of one NewOrder.
type Placement struct {
	Outcome string
	OrderNo string // the order the user holds for the item
}

// ErrItemGone means the item is not in the database: its orders can never be placed.
var ErrItemGone = errors.New("item not in the database")

// errVersionConflict is an optimistic lock that lost too many times in a row.
var errVersionConflict = errors.New("item version kept changing")

// PlaceOrders writes a batch of one item's orders in one transaction: stock_sold moves under the
// optimistic lock on version, and each order comes with its stock log row and its purchase row, whose
// unique (user, item) index is the database's own line of defence against a second order. A message
// delivered twice finds its purchase and places nothing. The answer maps each order number to its fate.
func PlaceOrders(ctx context.Context, db *gorm.DB, itemID int64, orders []NewOrder, now time.Time, payTimeout time.Duration) (map[string]Placement, error) {
	out := make(map[string]Placement, len(orders))
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		clear(out)
		users := make([]int64, 0, len(orders))
		for _, o := range orders {
			users = append(users, o.UserID)
		}
		var held []Purchase
		if err := tx.Raw("SELECT user_id, order_no FROM purchases WHERE item_id = ? AND user_id IN ?", itemID, users).
			Scan(&held).Error; err != nil {
			return err
		}
		holder := make(map[int64]string, len(held))
		for _, p := range held {
			holder[p.UserID] = p.OrderNo
		}
		var fresh []NewOrder
		for _, o := range orders {
			switch prev, ok := holder[o.UserID]; {
			case ok && prev == o.OrderNo:
				out[o.OrderNo] = Placement{AlreadyHeld, prev}
			case ok:
				out[o.OrderNo] = Placement{OtherOrder, prev}
			default:
				holder[o.UserID] = o.OrderNo
				fresh = append(fresh, o)
			}
		}
		if len(fresh) == 0 {
			return nil
		}

		// The optimistic lock: read the version, write only if nobody moved it, else read again.
		var item Item
		var n int64
		for attempt := 0; ; attempt++ {
			if attempt == 50 {
				return errVersionConflict
			}
			err := tx.Raw("SELECT id, stock_total, stock_sold, version FROM items WHERE id = ?", itemID).Scan(&item).Error
			if err != nil {
				return err
			}
			if item.ID == 0 {
				return ErrItemGone
			}
			n = min(int64(len(fresh)), item.StockTotal-item.StockSold)
			if n <= 0 {
				n = 0
				break
			}
			res := tx.Exec("UPDATE items SET stock_sold = stock_sold + ?, version = version + 1, updated_at = ? WHERE id = ? AND version = ?",
				n, now, itemID, item.Version)
			if res.Error != nil {
				return res.Error
			}
			if res.RowsAffected == 1 {
				break
			}
		}
		for _, o := range fresh[n:] {
			out[o.OrderNo] = Placement{NoStock, ""}
		}
		fresh = fresh[:n]
		if n == 0 {
			return nil
		}

		rows := make([]Order, len(fresh))
		logs := make([]StockLog, len(fresh))
		buys := make([]Purchase, len(fresh))
		left := item.StockTotal - item.StockSold
		for i, o := range fresh {
			rows[i] = Order{OrderNo: o.OrderNo, UserID: o.UserID, ItemID: itemID, ActivityID: o.ActivityID, PriceCents: o.PriceCents,
				Status: OrderPendingPayment, PayDeadline: now.Add(payTimeout), CreatedAt: o.BoughtAt, UpdatedAt: now}
			logs[i] = StockLog{OrderNo: o.OrderNo, Kind: StockSell, ItemID: itemID, StockBefore: left - int64(i), StockAfter: left - int64(i) - 1, CreatedAt: now}
			buys[i] = Purchase{UserID: o.UserID, ItemID: itemID, OrderNo: o.OrderNo, CreatedAt: now}
			out[o.OrderNo] = Placement{Placed, o.OrderNo}
		}
		if err := tx.CreateInBatches(rows, 500).Error; err != nil {
			return err
		}
		if err := tx.CreateInBatches(logs, 500).Error; err != nil {
			return err
		}
		return tx.CreateInBatches(buys, 500).Error
	})
	if err != nil {
		return nil, fmt.Errorf("place %d orders of item %d: %w", len(orders), itemID, err)
	}
	return out, nil
}

// Buyers lists every purchase of an item: one per user, cancelled orders included.
func Buyers(ctx context.Context, db *gorm.DB, itemID int64) ([]Purchase, error) {
	var out []Purchase
	if err := db.WithContext(ctx).Raw("SELECT user_id, order_no FROM purchases WHERE item_id = ?", itemID).Scan(&out).Error; err != nil {
		return nil, fmt.Errorf("buyers of item %d: %w", itemID, err)
	}
	return out, nil
}

// OrdersOfUser lists a user's orders, newest first.
func OrdersOfUser(ctx context.Context, db *gorm.DB, userID int64) ([]Order, error) {
	var orders []Order
	if err := db.WithContext(ctx).Where("user_id = ?", userID).Order("created_at DESC, id DESC").Find(&orders).Error; err != nil {
		return nil, fmt.Errorf("orders of user %d: %w", userID, err)
	}
	return orders, nil
}

// OrderOfUser finds one of a user's orders; another user's, or none, answers errs.NotFound.
func OrderOfUser(ctx context.Context, db *gorm.DB, userID int64, orderNo string) (*Order, error) {
	var o Order
	err := db.WithContext(ctx).Where("order_no = ? AND user_id = ?", orderNo, userID).Take(&o).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, errs.New(errs.NotFound, "no such order")
	}
	if err != nil {
		return nil, fmt.Errorf("order %s: %w", orderNo, err)
	}
	return &o, nil
}

// OrderCounts counts an activity's orders per item and status.
func OrderCounts(ctx context.Context, db *gorm.DB, activityID int64) (map[int64]map[string]int64, error) {
	var rows []struct {
		ItemID int64
		Status string
		N      int64
	}
	err := db.WithContext(ctx).Raw("SELECT item_id, status, count(*) AS n FROM orders WHERE activity_id = ? GROUP BY item_id, status", activityID).
		Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("order counts: %w", err)
	}
	out := map[int64]map[string]int64{}
	for _, r := range rows {
		if out[r.ItemID] == nil {
			out[r.ItemID] = map[string]int64{}
		}
		out[r.ItemID][r.Status] = r.N
	}
	return out, nil
}
