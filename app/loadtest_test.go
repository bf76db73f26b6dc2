package app

import (
	"context"
	"testing"

	"seckill/loadtest"
	"seckill/models"
)

// TestLoadToolOnASmallSale runs the load tool's scenarios against a live server, over HTTP as it does
// against a real one, and checks its audit passes — and that it would notice an oversell.
func TestLoadToolOnASmallSale(t *testing.T) {
	s := startLiveWith(t, nil, nil, func(c *Config) { c.RateLimitIP = false }, nil)
	withRole(t, s, "lt_admin", models.RoleAdmin)
	withRole(t, s, "lt_merchant", models.RoleMerchant)
	o := loadtest.Options{Admin: loadtest.User{Name: "lt_admin", Password: "lt_admin password"},
		Merchant: loadtest.User{Name: "lt_merchant", Password: "lt_merchant password"}, Users: 40, Requests: 120, Conns: 20, Stock: 10}
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

	// An answer lost with a server that died may hide a queued order; an order beyond those is a fault.
	lost := loadtest.Result{Kinds: map[string]int{"502": 2}, Queued: map[int]int{}}
	books := loadtest.Stats{StockTotal: 10, OrdersPending: 2, StockLeft: 8}
	if a := c.AuditSale(ctx, &loadtest.Sale{Stock: 10, ItemID: 1}, books, nil, &lost); !a.OK() {
		t.Errorf("two orders behind two lost answers failed the audit: %v", a.Failures)
	}
	lost.Kinds = map[string]int{"502": 1}
	if a := c.AuditSale(ctx, &loadtest.Sale{Stock: 10, ItemID: 1}, books, nil, &lost); a.OK() {
		t.Error("two orders behind one lost answer passed the audit")
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
