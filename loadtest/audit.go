package loadtest

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"
)

// Audit is the verdict on a sale once its queue has drained.
type Audit struct {
	Checks   []string // what was checked, each with its outcome
	Failures []string
}

// OK reports whether every check passed.
func (a *Audit) OK() bool { return len(a.Failures) == 0 }

func (a *Audit) check(ok bool, format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	if ok {
		a.Checks = append(a.Checks, "ok: "+line)
	} else {
		a.Failures = append(a.Failures, line)
		a.Checks = append(a.Checks, "FAILED: "+line)
	}
}

// AuditSale checks the outcome: no unit sold beyond the stock, no user queued twice, every queued buyer
// with an order of their own (and no two buyers with one order), and the admin stats agreeing.
func (c *Client) AuditSale(ctx context.Context, s *Sale, st Stats, users []*User, res *Result) *Audit {
	a := &Audit{}
	queued := 0
	twice := 0
	for _, n := range res.Queued {
		queued += n
		if n > 1 {
			twice++
		}
	}
	orders := st.OrdersPending + st.OrdersPaid + st.OrdersCancelled + st.OrdersRefunded
	// A 202 unconfirmed is not a promise: it ends as an order or as a result saying the buy did not go
	// through (lost with a Redis master). Only the orders behind them count with the promises below.
	madeUnconfirmed, toldLost, undecided := c.followUnconfirmed(ctx, s, users, res)
	if told := len(res.Unconfirmed); told > 0 {
		a.Checks = append(a.Checks, fmt.Sprintf("202 unconfirmed answers: %d buyers, %d with an order, %d told it did not go through",
			told, madeUnconfirmed, toldLost))
		a.check(undecided == 0, "every buyer answered 202 unconfirmed ended with an order or was told it did not go through (%d neither)", undecided)
	}
	a.check(int64(queued+madeUnconfirmed) <= s.Stock, "202 answers (%d) do not exceed the stock (%d)", queued+madeUnconfirmed, s.Stock)
	a.check(orders <= s.Stock, "orders in the database (%d) do not exceed the stock (%d)", orders, s.Stock)
	a.check(twice == 0, "no user was queued twice (%d were)", twice)
	a.check(st.StockLeft == s.Stock-orders, "stock left (%d) is the stock (%d) minus the orders (%d)", st.StockLeft, s.Stock, orders)
	a.check(st.Queued == 0, "nothing left queued (%d)", st.Queued)

	seen := map[string]int{}
	var why []string            // what the first buyers without an order saw
	without := map[string]int{} // what every buyer without an order saw, by their result's status
	// order finds the order of user who through the result page, as the buyer would, and checks it is theirs.
	order := func(who int, queued bool) (found, ok bool) {
		u := users[who]
		name := fmt.Sprintf("#%d", who)
		if u != nil {
			name = u.Name
		}
		var r struct {
			Status  string `json:"status"`
			OrderNo string `json:"order_no"`
			Message string `json:"message"`
		}
		if err := c.JSON(ctx, http.MethodGet, fmt.Sprintf("/api/items/%d/result", s.ItemID), nil, u, &r); err != nil || r.Status != "success" {
			if !queued {
				return false, false // a lost answer that queued nothing: as it should
			}
			without["result "+r.Status]++
			if len(why) < 5 {
				why = append(why, fmt.Sprintf("user %s: result %q %s %v", name, r.Status, r.Message, err))
			}
			return false, false
		}
		seen[r.OrderNo]++
		a2, err := c.Patient(ctx, http.MethodGet, "/api/orders/"+r.OrderNo, nil, u)
		ok = err == nil && a2.Status == 200 && strings.Contains(string(a2.Body), `"status":"pending_payment"`)
		if !ok {
			without["an order not theirs or not waiting for payment"]++
		}
		if !ok && len(why) < 5 {
			why = append(why, fmt.Sprintf("user %s: order %s answered %d %.200s %v", name, r.OrderNo, a2.Status, a2.Body, err))
		}
		return true, ok
	}
	missing := 0
	for who := range res.Queued {
		if _, ok := order(who, true); !ok {
			missing++
		}
	}
	if len(why) > 0 {
		kinds := make([]string, 0, len(without))
		for k, n := range without {
			kinds = append(kinds, fmt.Sprintf("%s: %d", k, n))
		}
		sort.Strings(kinds)
		why = append([]string{"by what they saw: " + strings.Join(kinds, ", ")}, why...)
		a.Checks = append(a.Checks, "seen: "+strings.Join(why, "; "))
		a.Failures = append(a.Failures, "what they saw: "+strings.Join(why, "; "))
	}
	// A buy whose answer was lost (no answer, or a proxy's 502/504 when a server died with it in
	// flight) may have queued an order all the same: the buyer finds it on the result page.
	recovered, lost, broken := 0, 0, 0
	for who, n := range res.Lost {
		lost += n
		if res.Queued[who] > 0 || res.Unconfirmed[who] > 0 {
			continue
		}
		found, ok := order(who, false)
		if found {
			recovered++
		}
		if found && !ok {
			broken++
		}
	}
	promised := queued + madeUnconfirmed // the 202 answers below: queued, and unconfirmed that became orders
	if lost == 0 {
		a.check(orders == int64(promised), "orders in the database (%d) equal the 202 answers (%d)", orders, promised)
	} else {
		a.check(orders == int64(promised+recovered) && recovered <= lost,
			"orders in the database (%d) are the 202 answers (%d) and the orders found behind %d of the %d answers lost",
			orders, promised, recovered, lost)
		a.check(broken == 0, "every order behind a lost answer is its buyer's own (%d are not)", broken)
	}
	shared := 0
	for _, n := range seen {
		if n > 1 {
			shared++
		}
	}
	a.check(missing == 0, "every queued buyer has an order of their own (%d without)", missing)
	a.check(shared == 0, "no order belongs to two buyers (%d do)", shared)
	return a
}

// unconfirmedWithin bounds how long the audit follows the results of buyers answered 202 unconfirmed: a
// take lost with a Redis master is found by a reconciliation round (every 10 s) once it is 30 s old
// (stock.UnconfirmedGrace).
const unconfirmedWithin = 90 * time.Second

// followUnconfirmed follows the result of every buyer answered 202 unconfirmed (and never 202 queued,
// whose order the audit checks as a promise) until it is success (an order) or failed, reason lost (told
// it did not go through), and counts each, and those still neither within unconfirmedWithin.
func (c *Client) followUnconfirmed(ctx context.Context, s *Sale, users []*User, res *Result) (made, lost, neither int) {
	left := map[int]bool{}
	for who := range res.Unconfirmed {
		if res.Queued[who] == 0 {
			left[who] = true
		}
	}
	deadline := time.Now().Add(unconfirmedWithin)
	for len(left) > 0 && ctx.Err() == nil {
		for who := range left {
			var r struct{ Status, Reason string }
			if err := c.JSON(ctx, http.MethodGet, fmt.Sprintf("/api/items/%d/result", s.ItemID), nil, users[who], &r); err != nil {
				continue
			}
			switch {
			case r.Status == "success":
				made++
				delete(left, who)
			case r.Status == "failed" && r.Reason == "lost":
				lost++
				delete(left, who)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	return made, lost, len(left)
}
