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

// Why an order was cancelled (Order.CancelReason): the words "orders.why.<reason>" say it to its buyer.
const (
	CancelByBuyer = "buyer"  // its buyer cancelled it
	CancelUnpaid  = "unpaid" // its time to pay passed (the unpaid timeout)
)

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

// OrdersOfUserIn lists a user's orders in one status (every one for ""), newest first.
func OrdersOfUserIn(ctx context.Context, db *gorm.DB, userID int64, status string) ([]Order, error) {
	var orders []Order
	q := db.WithContext(ctx).Where("user_id = ?", userID)
	if status != "" {
		q = q.Where("status = ?", status)
	}
	if err := q.Order("created_at DESC, id DESC").Find(&orders).Error; err != nil {
		return nil, fmt.Errorf("orders of user %d: %w", userID, err)
	}
	return orders, nil
}

// OrderItems answers what an orders list shows of each of the items ids: name and picture (the
// id, name, image_url and image_key of each item).
func OrderItems(ctx context.Context, db *gorm.DB, ids []int64) (map[int64]Item, error) {
	out := map[int64]Item{}
	if len(ids) == 0 {
		return out, nil
	}
	err := inChunks(unique(ids), func(chunk []int64) error {
		var items []Item
		if err := db.WithContext(ctx).Select("id", "name", "image_url", "image_key").Where("id IN ?", chunk).Find(&items).Error; err != nil {
			return err
		}
		for _, it := range items {
			out[it.ID] = it
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("items of orders: %w", err)
	}
	return out, nil
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

// OrderCents sums an activity's orders' prices by item and status (cents), as OrderCounts counts them:
// the dashboard's money taken and given back.
func OrderCents(ctx context.Context, db *gorm.DB, activityID int64) (map[int64]map[string]int64, error) {
	var rows []struct {
		ItemID int64
		Status string
		Cents  int64
	}
	err := db.WithContext(ctx).Raw("SELECT item_id, status, COALESCE(SUM(price_cents), 0) AS cents FROM orders WHERE activity_id = ? GROUP BY item_id, status", activityID).
		Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("order sums: %w", err)
	}
	out := map[int64]map[string]int64{}
	for _, r := range rows {
		if out[r.ItemID] == nil {
			out[r.ItemID] = map[string]int64{}
		}
		out[r.ItemID][r.Status] = r.Cents
	}
	return out, nil
}

// OrderByNo finds an order by number.
func OrderByNo(ctx context.Context, db *gorm.DB, orderNo string) (*Order, error) {
	var o Order
	err := db.WithContext(ctx).Where("order_no = ?", orderNo).Take(&o).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, errNoSuchOrder
	}
	if err != nil {
		return nil, fmt.Errorf("order %s: %w", orderNo, err)
	}
	return &o, nil
}

var errNoSuchOrder = errs.New(errs.NotFound, "no such order")

// MoveOrder is the one statement that writes an order's status: the orders of ids that are in status
// from move to status to, with the other columns of set, and it answers how many moved. Only the orders
// package calls it, once its table of transitions (orders/transitions.go) allows from → to; a test there
// fails if anything else calls it, or if another statement of this package writes an order's status.
func MoveOrder(tx *gorm.DB, ids []int64, from, to string, now time.Time, set map[string]any) (int64, error) {
	change := map[string]any{"status": to, "updated_at": now}
	for k, v := range set {
		change[k] = v
	}
	res := tx.Model(&Order{}).Where("id IN ? AND status = ?", ids, from).Updates(change)
	return res.RowsAffected, res.Error
}

// OrderStatus reads, in tx, an order's status.
func OrderStatus(tx *gorm.DB, id int64) (string, error) {
	var st string
	err := tx.Raw("SELECT status FROM orders WHERE id = ?", id).Scan(&st).Error
	return st, err
}

// LockOrder reads, in tx, an order by number with its row locked until tx ends; none answers not found.
func LockOrder(tx *gorm.DB, orderNo string) (*Order, error) {
	var o Order
	err := tx.Clauses(lockForUpdate).Where("order_no = ?", orderNo).Take(&o).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, errNoSuchOrder
	}
	return &o, err
}

// ReleaseUnit gives, in tx, a cancelled order's unit back in the database: stock_sold − 1 under the
// optimistic lock on the item's version, and a release row in the stock log, pending until the unit is
// back in Redis too. It answers the release row's id.
func ReleaseUnit(tx *gorm.DB, o *Order, now time.Time) (int64, error) {
	var item Item
	for attempt := 0; ; attempt++ {
		if attempt == 50 {
			return 0, errVersionConflict
		}
		if err := tx.Raw("SELECT id, stock_total, stock_sold, version FROM items WHERE id = ?", o.ItemID).Scan(&item).Error; err != nil {
			return 0, err
		}
		res := tx.Exec("UPDATE items SET stock_sold = stock_sold - 1, version = version + 1, updated_at = ? WHERE id = ? AND version = ? AND stock_sold > 0",
			now, o.ItemID, item.Version)
		if res.Error != nil {
			return 0, res.Error
		}
		if res.RowsAffected == 1 {
			break
		}
	}
	left := item.StockTotal - item.StockSold
	release := StockLog{OrderNo: o.OrderNo, Kind: StockRelease, ItemID: o.ItemID, StockBefore: left, StockAfter: left + 1, Pending: true, CreatedAt: now}
	err := tx.Create(&release).Error
	return release.ID, err
}

// LiveOrders counts an item's orders that hold a unit: every one not cancelled.
func LiveOrders(ctx context.Context, db *gorm.DB, itemID int64) (int64, error) {
	var live int64
	if err := db.WithContext(ctx).Raw("SELECT count(*) FROM orders WHERE item_id = ? AND status <> ?", itemID, OrderCancelled).Scan(&live).Error; err != nil {
		return 0, fmt.Errorf("live orders of item %d: %w", itemID, err)
	}
	return live, nil
}

// OrderFigures are what an item's orders say for its sale's fairness report.
type OrderFigures struct {
	Orders    int64      // every order made (each took a unit)
	Buyers    int64      // the accounts that made them
	Cancelled int64      // unpaid or cancelled: their units went back on sale
	Refunded  int64      // paid, then refunded
	SoldOutAt *time.Time // when the order that took the last of the stock was made (nil: never sold out)
}

// ItemOrderFigures answers the item's order figures, its stock being stockTotal.
func ItemOrderFigures(ctx context.Context, db *gorm.DB, itemID, stockTotal int64) (OrderFigures, error) {
	var f OrderFigures
	err := db.WithContext(ctx).Model(&Order{}).Where("item_id = ?", itemID).
		Select("COUNT(*) AS orders, COUNT(DISTINCT user_id) AS buyers, "+
			"COALESCE(SUM(CASE WHEN status = ? THEN 1 ELSE 0 END), 0) AS cancelled, "+
			"COALESCE(SUM(CASE WHEN status = ? THEN 1 ELSE 0 END), 0) AS refunded", OrderCancelled, OrderRefunded).
		Scan(&f).Error
	if err != nil {
		return f, fmt.Errorf("order figures of item %d: %w", itemID, err)
	}
	if stockTotal > 0 && f.Orders >= stockTotal {
		var at []time.Time
		if err := db.WithContext(ctx).Model(&Order{}).Where("item_id = ?", itemID).Order("created_at, id").
			Offset(int(stockTotal-1)).Limit(1).Pluck("created_at", &at).Error; err != nil {
			return f, fmt.Errorf("sold-out time of item %d: %w", itemID, err)
		}
		if len(at) == 1 {
			f.SoldOutAt = &at[0]
		}
	}
	return f, nil
}
