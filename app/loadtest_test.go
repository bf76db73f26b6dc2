package app

import (
	"context"
	"slices"
	"testing"

	"seckill/internal/testenv"
	"seckill/loadtest"
	"seckill/models"
)

// TestLoadToolOnASmallSale runs the load tool's scenarios against a live server, over HTTP as it does
// against a real one, and checks its audit passes — and that it would notice an oversell.
func TestLoadToolOnASmallSale(t *testing.T) {
	testenv.Long(t)
	s := startLive(t, liveOpts{tune: func(c *Config) { c.RateLimitIP = false }})
	withRole(t, s, "lt_admin", models.RoleAdmin)
	withRole(t, s, "lt_merchant", models.RoleMerchant)
	o := loadtest.Options{Admin: loadtest.User{Name: "lt_admin", Password: passwordOf("lt_admin")},
		Merchant: loadtest.User{Name: "lt_merchant", Password: passwordOf("lt_merchant")}, Users: 40, Requests: 120, Conns: 20, Stock: 10}
	ctx := context.Background()
	c := loadtest.NewClient(s.URL, o.Conns)
	defer c.Close()

	rush, err := c.Buying(ctx, s.Redis, "rush", o)
	if err != nil {
		t.Fatal(err)
	}
	if !rush.Audit.OK() || rush.Result.Kinds["202"] != 10 || rush.Result.Requests != 120 {
		t.Fatalf("rush: audit %v, answers %v", rush.Audit.Checks, rush.Result.Kinds)
	}
	// The same audit on made-up books: more queued than the stock must fail it.
	fake := *rush.Result
	fake.Queued = map[int]int{0: 1}
	for i := range 11 {
		fake.Queued[i] = 1
	}
	if a := c.AuditSale(ctx, &loadtest.Sale{Stock: 10, ItemID: 1, ActivityID: 1}, loadtest.Stats{StockTotal: 10}, make([]*loadtest.User, 11), &fake); a.OK() {
		t.Error("the audit passed 11 queued buyers for 10 units")
	}

	// An answer lost with a server that died may hide a queued order: the audit finds it on that buyer's
	// result page. Two of the rush's buyers are told their answers were lost.
	var winners []int
	for who := range rush.Result.Queued {
		winners = append(winners, who)
	}
	without := func(drop ...int) map[int]int {
		m := map[int]int{}
		for who, n := range rush.Result.Queued {
			if !slices.Contains(drop, who) {
				m[who] = n
			}
		}
		return m
	}
	lost := *rush.Result
	lost.Queued = without(winners[0], winners[1])
	lost.Lost = map[int]int{winners[0]: 1, winners[1]: 3}
	if a := c.AuditSale(ctx, rush.Sale, rush.Stats, rush.Users, &lost); !a.OK() ||
		!slices.Contains(a.Checks, "ok: orders in the database (10) are the 202 answers (8) and the orders found behind 2 of the 4 answers lost") {
		t.Errorf("two orders behind lost answers: %v", a.Checks)
	}
	// An order behind no answer at all fails it, even with another buyer's answer lost.
	lost.Queued = without(winners[0])
	lost.Lost = map[int]int{winners[1]: 1}
	if a := c.AuditSale(ctx, rush.Sale, rush.Stats, rush.Users, &lost); a.OK() {
		t.Error("an order with neither a 202 nor a lost answer passed the audit")
	}
	lost.Lost = nil
	if a := c.AuditSale(ctx, rush.Sale, rush.Stats, rush.Users, &lost); a.OK() {
		t.Error("10 orders for 9 answers passed the audit")
	}

	// The same rush on an item split over four stock shards, from eight client addresses.
	sharded := o
	sharded.Shards = 4
	c8 := loadtest.NewClient(s.URL, o.Conns)
	c8.Sources(8)
	defer c8.Close()
	rush4, err := c8.Buying(ctx, s.Redis, "rush", sharded)
	if err != nil {
		t.Fatal(err)
	}
	if !rush4.Audit.OK() || rush4.Result.Kinds["202"] != 10 {
		t.Fatalf("sharded rush: audit %v, answers %v", rush4.Audit.Checks, rush4.Result.Kinds)
	}

	so := o
	so.Users, so.Requests = 5, 60
	sold, err := c.SoldOut(ctx, s.Redis, so)
	if err != nil {
		t.Fatal(err)
	}
	if !sold.Audit.OK() {
		t.Errorf("soldout: %v", sold.Audit.Checks)
	}
	pages, err := c.Pages(ctx, loadtest.Options{Admin: o.Admin, Merchant: o.Merchant, Requests: 50, Conns: 10})
	if err != nil {
		t.Fatal(err)
	}
	if !pages.Audit.OK() {
		t.Errorf("pages: %v", pages.Audit.Checks)
	}
}
