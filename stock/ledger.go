// Package stock is the Redis side of a sale: every key of an item, the Lua scripts that take and give
// back stock, the purchase paths, the buyers' results and the order streams. All keys of one item share
// the hash tag {item:ID}, so each script touches one slot and the same code runs on a Redis Cluster.
package stock

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/errs"
)

// Results a buyer can have for an item.
const (
	ResultNone    = "none"
	ResultQueued  = "queued"
	ResultSuccess = "success"
	ResultSoldOut = "sold_out"
	ResultFailed  = "failed"
)

// PathTTL is how long a purchase path is valid.
const PathTTL = 60 * time.Second

// streamsKey lists the items that have an order stream, for the consumers to find.
const streamsKey = "sk:streams"

// Keys are the Redis keys of one item.
type Keys struct {
	Sale, Buyers, Results, Stream string
	item                          string
}

// KeysOf returns the keys of item id.
func KeysOf(id int64) Keys {
	tag := "sk:{item:" + strconv.FormatInt(id, 10) + "}:"
	return Keys{Sale: tag + "sale", Buyers: tag + "buyers", Results: tag + "results", Stream: tag + "orders", item: tag}
}

// Path is the key of a buyer's purchase path for this item.
func (k Keys) Path(userID int64) string { return k.item + "path:" + strconv.FormatInt(userID, 10) }

var (
	//go:embed take.lua
	takeLua string
	//go:embed path.lua
	pathLua string
	//go:embed preheat.lua
	preheatLua string
	//go:embed settle.lua
	settleLua string
	//go:embed restock.lua
	restockLua string

	takeScript    = redis.NewScript(takeLua)
	pathScript    = redis.NewScript(pathLua)
	preheatScript = redis.NewScript(preheatLua)
	settleScript  = redis.NewScript(settleLua)
	restockScript = redis.NewScript(restockLua)
)

// Restock gives the unit of a cancelled order back on sale, once per order, and answers the stock left
// (-1: the sale is not loaded; -2: this order's unit came back before).
func (l *Ledger) Restock(ctx context.Context, itemID int64, orderNo string) (int64, error) {
	k := KeysOf(itemID)
	n, err := restockScript.Run(ctx, l.rdb, []string{k.Sale, k.item + "restocked"}, orderNo).Int64()
	if err != nil {
		return 0, fmt.Errorf("restock item %d: %w", itemID, err)
	}
	return n, nil
}

// Ledger is an item's stock in Redis.
type Ledger struct {
	rdb redis.UniversalClient
	now func() time.Time
}

// NewLedger returns the ledger on rdb, with the app's clock (sale windows and paths are checked against it).
func NewLedger(rdb redis.UniversalClient, now func() time.Time) *Ledger {
	return &Ledger{rdb: rdb, now: now}
}

// Sale is what preheating loads for an item.
type Sale struct {
	ItemID, ActivityID int64
	StartsAt, EndsAt   time.Time
	PriceCents         int64
	StockTotal         int64
	StockLeft          int64            // stock_total minus the orders that are not cancelled
	Buyers             map[int64]string // user → order number of everyone with a purchase of the item, cancelled or not: one per user holds for the sale
}

// Refresh updates a loaded sale's window, price and cap, and reports false when the sale is not loaded
// (then Preheat must load it, buyers and all).
func (l *Ledger) Refresh(ctx context.Context, s Sale) (int64, bool, error) {
	res, err := l.runPreheat(ctx, s, true)
	if err != nil || res[0] == "missing" {
		return 0, false, err
	}
	left, _ := strconv.ParseInt(res[1], 10, 64)
	return left, true, nil
}

func (l *Ledger) runPreheat(ctx context.Context, s Sale, refreshOnly bool) ([]string, error) {
	only := "0"
	if refreshOnly {
		only = "1"
	}
	res, err := preheatScript.Run(ctx, l.rdb, []string{KeysOf(s.ItemID).Sale},
		max(s.StockLeft, 0), s.StockTotal, s.StartsAt.UnixMilli(), s.EndsAt.UnixMilli(), s.PriceCents, s.ActivityID, only).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("preheat item %d: %w", s.ItemID, err)
	}
	return res, nil
}

// Preheat loads a sale into Redis so that it is ready before it starts. Run again during a sale, it never
// raises the stock above what the database can back. It reports the stock left in Redis afterwards.
func (l *Ledger) Preheat(ctx context.Context, s Sale) (int64, error) {
	k := KeysOf(s.ItemID)
	// Buyers first: the sale hash does not exist until the script below makes it, so no buy can slip in
	// before the buyers are marked. Their results come back too, where Redis lost them.
	members := make([]any, 0, 1000)
	flush := func() error {
		if len(members) == 0 {
			return nil
		}
		_, err := l.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.SAdd(ctx, k.Buyers, members...)
			for _, m := range members {
				uid := strconv.FormatInt(m.(int64), 10)
				p.HSetNX(ctx, k.Results, uid, SuccessValue(s.Buyers[m.(int64)]))
			}
			return nil
		})
		members = members[:0]
		return err
	}
	for uid := range s.Buyers {
		members = append(members, uid)
		if len(members) == cap(members) {
			if err := flush(); err != nil {
				return 0, fmt.Errorf("preheat item %d: %w", s.ItemID, err)
			}
		}
	}
	if err := flush(); err != nil {
		return 0, fmt.Errorf("preheat item %d: %w", s.ItemID, err)
	}
	res, err := l.runPreheat(ctx, s, false)
	if err != nil {
		return 0, err
	}
	if err := l.rdb.SAdd(ctx, streamsKey, s.ItemID).Err(); err != nil {
		return 0, fmt.Errorf("preheat item %d: %w", s.ItemID, err)
	}
	left, _ := strconv.ParseInt(res[1], 10, 64)
	return left, nil
}

// reason turns a script's refusal into the contract's error.
func reason(code string) error {
	switch code {
	case errs.InvalidPath:
		return errs.New(errs.InvalidPath, "this purchase link is not valid: get a new one")
	case errs.NotStarted:
		return errs.New(errs.NotStarted, "the sale has not started yet")
	case errs.Ended:
		return errs.New(errs.Ended, "the sale has ended")
	case errs.SoldOut:
		return errs.New(errs.SoldOut, "sold out")
	case errs.AlreadyBought:
		return errs.New(errs.AlreadyBought, "you have already bought this item")
	case "not_found":
		return errs.New(errs.NotFound, "this item is not on sale")
	}
	return fmt.Errorf("stock: unexpected answer %q", code)
}

// IssuePath gives the buyer a single-use purchase path for the item, valid for PathTTL, if the buyer may
// still buy it.
func (l *Ledger) IssuePath(ctx context.Context, itemID, userID int64, token string) error {
	k := KeysOf(itemID)
	res, err := pathScript.Run(ctx, l.rdb, []string{k.Sale, k.Buyers, k.Path(userID)},
		userID, token, l.now().UnixMilli(), PathTTL.Milliseconds()).StringSlice()
	if err != nil {
		return fmt.Errorf("issue path: %w", err)
	}
	if res[0] != "ok" {
		return reason(res[0])
	}
	return nil
}

// Take is the buy: it checks the path, the window, the buyer and the stock, and takes one unit and queues
// the order, all in one script. It answers the stock left, or the contract's reason.
func (l *Ledger) Take(ctx context.Context, itemID, userID int64, path, orderNo string) (int64, error) {
	k := KeysOf(itemID)
	res, err := takeScript.Run(ctx, l.rdb, []string{k.Sale, k.Buyers, k.Path(userID), k.Stream},
		userID, path, l.now().UnixMilli(), orderNo).StringSlice()
	if err != nil {
		return 0, fmt.Errorf("take: %w", err)
	}
	if res[0] != ResultQueued {
		return 0, reason(res[0])
	}
	left, _ := strconv.ParseInt(res[1], 10, 64)
	return left, nil
}

// Settlement is what to do with an order message that will not become a new order.
type Settlement struct {
	GiveBack bool   // the unit goes back on sale
	Result   string // the buyer's new result ('' keeps it)
	Rebuy    bool   // the buyer may buy again
}

// Settle acknowledges the message and applies s, once: a message settled before changes nothing again.
// It reports whether this call settled it.
func (l *Ledger) Settle(ctx context.Context, itemID int64, m OrderMessage, s Settlement) (bool, error) {
	k := KeysOf(itemID)
	flag := func(b bool) string {
		if b {
			return "1"
		}
		return "0"
	}
	n, err := settleScript.Run(ctx, l.rdb, []string{k.Sale, k.Buyers, k.Results, k.Stream},
		m.ID, m.UserID, flag(s.GiveBack), s.Result, flag(s.Rebuy)).Int64()
	if err != nil {
		return false, fmt.Errorf("settle order message %s: %w", m.ID, err)
	}
	return n == 1, nil
}

// Left answers the stock left in Redis, and false when the sale is not loaded.
func (l *Ledger) Left(ctx context.Context, itemID int64) (int64, bool, error) {
	v, err := l.rdb.HGet(ctx, KeysOf(itemID).Sale, "left").Int64()
	if errors.Is(err, redis.Nil) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("stock left: %w", err)
	}
	return v, true, nil
}

// Result is a buyer's result for an item.
type Result struct {
	Status  string `json:"status"`
	OrderNo string `json:"order_no,omitempty"`
	Message string `json:"message,omitempty"`
}

// Encoded results as the results hash keeps them.
// SuccessValue is the result of a buyer who holds an order.
func SuccessValue(orderNo string) string { return "success:" + orderNo }

// FailedValue is the result of a buyer whose order could not be made.
func FailedValue(message string) string { return "failed:" + message }

// ResultOf reads a buyer's result: a marked buyer whose order is not settled yet is queued, and a buyer
// with none sees sold_out once the item is sold out.
func (l *Ledger) ResultOf(ctx context.Context, itemID, userID int64) (Result, error) {
	k := KeysOf(itemID)
	uid := strconv.FormatInt(userID, 10)
	var resCmd, leftCmd *redis.StringCmd
	var buyerCmd *redis.BoolCmd
	_, err := l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		resCmd = p.HGet(ctx, k.Results, uid)
		buyerCmd = p.SIsMember(ctx, k.Buyers, uid)
		leftCmd = p.HGet(ctx, k.Sale, "left")
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return Result{}, fmt.Errorf("result: %w", err)
	}
	// A failed buyer is no longer marked; marked again, it is a new attempt, queued.
	v, _ := resCmd.Result()
	switch {
	case strings.HasPrefix(v, "success:"):
		return Result{Status: ResultSuccess, OrderNo: strings.TrimPrefix(v, "success:")}, nil
	case buyerCmd.Val():
		return Result{Status: ResultQueued}, nil
	case strings.HasPrefix(v, "failed:"):
		return Result{Status: ResultFailed, Message: strings.TrimPrefix(v, "failed:")}, nil
	}
	if left, err := leftCmd.Int64(); err == nil && left <= 0 {
		return Result{Status: ResultSoldOut}, nil
	}
	return Result{Status: ResultNone}, nil
}
