package orders

import (
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"seckill/errs"
	"seckill/models"
)

// statuses lists every status an order can be in, in the order of its life.
var statuses = []string{models.OrderPendingPayment, models.OrderPaid, models.OrderShipped, models.OrderRefunded, models.OrderCancelled}

// move names one allowed change of an order's status.
type move string

// The moves, each a row of the table below.
const (
	movePay    move = "pay"
	moveCancel move = "cancel"
	moveShip   move = "ship"
	moveRefund move = "refund"
	moveReturn move = "return"
)

// transition is one row of the table: from which status to which, why, and the operation of this
// package that makes it.
type transition struct {
	move     move
	from, to string
	why      string
	op       string
}

// transitions is the whole table of an order's allowed status changes: any other pair is refused. Every
// change goes through apply, which takes its row here; models.MoveOrder, the one statement that writes
// a status, is called from apply alone (transitions_test.go and only_test.go hold both to it).
var transitions = []transition{
	{movePay, models.OrderPendingPayment, models.OrderPaid,
		"the provider says a payment of it was paid: its callback, the poll, or a close that found it paid", "Service.Paid (paid.go)"},
	{moveCancel, models.OrderPendingPayment, models.OrderCancelled,
		"its buyer cancelled it, or its time to pay passed (the unpaid timeout): its unit goes back on sale", "Service.Cancel (cancel.go)"},
	{moveShip, models.OrderPaid, models.OrderShipped,
		"its merchant sent it, with a carrier and a tracking number", "Service.Ship, Service.ShipAll (ship.go)"},
	{moveRefund, models.OrderPaid, models.OrderRefunded,
		"an admin refunded it before it was shipped: its money goes back, its unit is not sold again", "Service.Refund (refund.go)"},
	{moveReturn, models.OrderShipped, models.OrderRefunded,
		"it came back after it was shipped (a return) and an admin refunded it: its money goes back, its unit is not sold again", "Service.Refund (refund.go)"},
}

// allowed answers the move that leads an order from status from to status to, if the table has one.
func allowed(from, to string) (move, bool) {
	for _, t := range transitions {
		if t.from == from && t.to == to {
			return t.move, true
		}
	}
	return "", false
}

func rowOf(m move) transition {
	for _, t := range transitions {
		if t.move == m {
			return t
		}
	}
	panic(fmt.Sprintf("orders: move %q is not in the table", m))
}

// apply makes move m, in tx, for the orders of ids that are still in its from-status, with the other
// columns of set, and answers how many moved (an order that left the from-status meanwhile does not).
func apply(tx *gorm.DB, m move, ids []int64, now time.Time, set map[string]any) (int64, error) {
	t := rowOf(m)
	return models.MoveOrder(tx, ids, t.from, t.to, now, set)
}

// change moves o, in tx, to status to, if the table allows it from o's status and the order is still in
// it; else it answers order_state and nothing changes. o follows.
func change(tx *gorm.DB, o *models.Order, to string, now time.Time, set map[string]any) error {
	m, ok := allowed(o.Status, to)
	if !ok {
		return errs.Newf(errs.OrderState, "this order is %s: it cannot become %s", words(o.Status), words(to))
	}
	n, err := apply(tx, m, []int64{o.ID}, now, set)
	if err != nil {
		return fmt.Errorf("order %s %s: %w", o.OrderNo, m, err)
	}
	if n == 0 {
		return errs.Newf(errs.OrderState, "this order is no longer %s: it cannot become %s", words(o.Status), words(to))
	}
	o.Status, o.UpdatedAt = to, now
	return nil
}

func words(status string) string { return strings.ReplaceAll(status, "_", " ") }
