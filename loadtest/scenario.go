package loadtest

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Options set a run up.
type Options struct {
	Admin, Merchant User // credentials from flags; the tool logs them in
	Users           int  // shoppers
	Requests        int  // buy requests (rush, soldout) or page views (pages)
	Conns           int  // concurrent connections
	Stock           int64
	Shards          int       // stock shards of the sale's item (0 or 1: not split)
	Log             io.Writer // progress lines
	MidRush         func()    // if set, called once when half the buys are answered (a test stops a server there)
	MidRushAt       float64   // the share of the buys answered when MidRush is called (0: a half)
	CPU             []Process // processes whose CPU time is measured while the requests are fired
	// Shop, when set, runs a crowd's shoppers elsewhere (the load tool's child processes: one process
	// holds at most its open-file limit of connections) and answers what they saw.
	Shop func(ctx context.Context, plan *CrowdPlan) (ShopReport, error)
	// Procs is how many processes Shop spreads the shoppers over (for the report).
	Procs int
	// Seed, when set, makes a scenario's n shoppers' accounts beforehand (named prefix0..), with the password
	// Password, instead of registering them through the API; the scenario logs each in.
	Seed func(ctx context.Context, prefix string, n int) ([]*User, error)
	// Metrics are the instances' /metrics addresses: a crowd reads what reached them, and their database
	// statements, from their own counters.
	Metrics []string
	// Rules are the queue crowd's sale's rules of who may take part (none by default). With one per
	// address, Addresses puts a delivery address of its own in each shopper's book beforehand (it needs
	// Seed's database), and each join gives it.
	Rules     Rules
	Addresses func(ctx context.Context, users []*User) ([]int64, error)
}

// ShopReport is what a crowd's shoppers saw, from the processes they shopped from: each one's outcome,
// the pages' reloads, and the fetches of the public documents the processes' shoppers shared.
type ShopReport struct {
	Outcomes []Outcome
	Reloads  Reloads
	Fetched  int64
	Line     LineTimeline // queue: when the line's document said what, as the process saw it
	CPU      float64      // the process's own CPU time, in seconds
}

// Report is one scenario's figures.
type Report struct {
	Scenario   string
	Options    Options
	Result     *Result
	Drain      time.Duration // from the last answer until nothing was queued
	DrainRate  float64       // orders written per second while draining (from the first buy)
	Audit      *Audit
	Setup      time.Duration
	Baseline   string   // the baseline it is compared with
	BaselineRS float64  // the baseline's requests per second, measured in the same run
	CPU        []CPUUse // CPU time of the measured processes while the requests were fired
	// The baseline's own process ("baseline") and Redis ("redis"), while as many requests as the
	// scenario's were fired at it over as many connections: what the app's CPU a request is set against.
	BaselineCPU      []CPUUse
	BaselineRequests int
	// A buying scenario's orders, and the CPU the processes used from the first buy until the queue was
	// drained: the order consumer (the worker, when it runs apart) writes most orders after the last answer.
	Orders   int
	DrainCPU []CPUUse
	// A buying scenario's sale, its books once drained and its shoppers: what its audit read.
	Sale  *Sale
	Stats Stats
	Users []*User
	Crowd *CrowdReport // the crowd scenarios' own figures
}

// Ratio is the scenario's throughput over its baseline's.
func (r *Report) Ratio() float64 {
	if r.BaselineRS == 0 {
		return 0
	}
	return r.Result.Throughput() / r.BaselineRS
}

func logf(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", args...)
	}
}

func bar(w io.Writer, what string, total int) func(done int) {
	step := max(total/20, 1)
	return func(done int) {
		if w != nil && (done%step == 0 || done == total) {
			n := done * 20 / max(total, 1)
			fmt.Fprintf(w, "\r  %-10s [%s%s] %d/%d", what, strings.Repeat("#", n), strings.Repeat(".", 20-n), done, total)
			if done == total {
				fmt.Fprintln(w)
			}
		}
	}
}

func (c *Client) logins(ctx context.Context, o *Options) error {
	if err := c.Start(ctx); err != nil {
		return err
	}
	if err := c.Login(ctx, &o.Admin); err != nil {
		return fmt.Errorf("admin login: %w", err)
	}
	if err := c.Login(ctx, &o.Merchant); err != nil {
		return fmt.Errorf("merchant login: %w", err)
	}
	return nil
}

// Buying runs a sale: `perUser` buy requests per shopper (the first with its path, the rest replaying
// it), all fired at once from the start, then the drain and the audit. rush: 100,000 requests from
// 20,000 shoppers for 100 units; big: one request each from 10,000 shoppers for 10,000 units.
func (c *Client) Buying(ctx context.Context, rdb redis.UniversalClient, name string, o Options) (*Report, error) {
	setup := time.Now()
	if err := c.logins(ctx, &o); err != nil {
		return nil, err
	}
	prefix := Name("lt")
	users, err := c.shoppers(ctx, rdb, o, name, prefix)
	if err != nil {
		return nil, err
	}
	sale, err := c.SetUpSale(ctx, &o.Merchant, &o.Admin, prefix, o.Stock, o.Shards, 2*time.Second)
	if err != nil {
		return nil, err
	}
	if err := WaitUntil(ctx, sale.StartsAt.Add(100*time.Millisecond)); err != nil {
		return nil, err
	}
	logf(o.Log, "%s: captcha and path for each shopper", name)
	paths, err := c.GetPaths(ctx, rdb, users, sale.ItemID, bar(o.Log, "paths", len(users)))
	if err != nil {
		return nil, err
	}
	perUser := max(o.Requests/max(o.Users, 1), 1)
	reqs := make([]Request, 0, o.Users*perUser)
	for i, u := range users {
		for range perUser {
			reqs = append(reqs, Request{Method: http.MethodPost, Path: fmt.Sprintf("/api/items/%d/buy/%s", sale.ItemID, paths[i]), User: u, Who: i})
		}
	}
	rand.Shuffle(len(reqs), func(i, j int) { reqs[i], reqs[j] = reqs[j], reqs[i] })
	rep := &Report{Scenario: name, Options: o, Setup: time.Since(setup)}
	logf(o.Log, "%s: firing %d buys over %d connections", name, len(reqs), o.Conns)
	progress := bar(o.Log, "buys", len(reqs))
	var mid sync.WaitGroup
	if o.MidRush != nil {
		var once sync.Once
		show := progress
		progress = func(done int) {
			show(done)
			at := o.MidRushAt
			if at <= 0 || at >= 1 {
				at = 0.5
			}
			if done >= int(float64(len(reqs))*at) {
				once.Do(func() { mid.Add(1); go func() { defer mid.Done(); o.MidRush() }() })
			}
		}
	}
	cpuBefore := sampleCPU(o.CPU)
	rep.CPU = measureCPU(o.CPU, func() { rep.Result = c.Fire(ctx, reqs, o.Conns, progress) })
	mid.Wait()
	st, drain, err := c.WaitDrained(ctx, &o.Admin, sale, 5*time.Minute)
	if err != nil {
		return nil, err
	}
	rep.DrainCPU = cpuUsed(o.CPU, cpuBefore, sampleCPU(o.CPU))
	rep.Orders = int(st.OrdersPending + st.OrdersPaid + st.OrdersCancelled + st.OrdersRefunded)
	rep.Drain = drain
	if total := rep.Result.Elapsed + drain; total > 0 {
		rep.DrainRate = float64(st.OrdersPending+st.OrdersPaid+st.OrdersCancelled) / total.Seconds()
	}
	rep.Sale, rep.Stats, rep.Users = sale, st, users
	rep.Audit = c.AuditSale(ctx, sale, st, users, rep.Result)
	return rep, nil
}

// SoldOut runs a sustained load on an item that is sold out: every answer should come from memory.
func (c *Client) SoldOut(ctx context.Context, rdb redis.UniversalClient, o Options) (*Report, error) {
	if err := c.logins(ctx, &o); err != nil {
		return nil, err
	}
	prefix := Name("so")
	users, err := c.shoppers(ctx, rdb, o, "soldout", prefix)
	if err != nil {
		return nil, err
	}
	sale, err := c.SetUpSale(ctx, &o.Merchant, &o.Admin, prefix, 1, 1, 2*time.Second)
	if err != nil {
		return nil, err
	}
	if err := WaitUntil(ctx, sale.StartsAt.Add(100*time.Millisecond)); err != nil {
		return nil, err
	}
	first, err := c.GetPaths(ctx, rdb, users[:1], sale.ItemID, nil)
	if err != nil {
		return nil, err
	}
	if a, err := c.Do(ctx, http.MethodPost, fmt.Sprintf("/api/items/%d/buy/%s", sale.ItemID, first[0]), nil, users[0]); err != nil || a.Status != http.StatusAccepted {
		return nil, fmt.Errorf("the one unit: %v %v", a.Kind(), err)
	}
	reqs := make([]Request, o.Requests)
	for i := range reqs {
		w := 1 + i%max(len(users)-1, 1)
		reqs[i] = Request{Method: http.MethodPost, Path: fmt.Sprintf("/api/items/%d/buy/%032x", sale.ItemID, i), User: users[w%len(users)], Who: w % len(users)}
	}
	rep := &Report{Scenario: "soldout", Options: o}
	logf(o.Log, "soldout: firing %d buys at a sold-out item", len(reqs))
	rep.CPU = measureCPU(o.CPU, func() { rep.Result = c.Fire(ctx, reqs, o.Conns, bar(o.Log, "buys", len(reqs))) })
	st, _, err := c.WaitDrained(ctx, &o.Admin, sale, time.Minute)
	if err != nil {
		return nil, err
	}
	rep.Audit = &Audit{}
	rep.Audit.check(rep.Result.Kinds["409 sold_out"] == len(reqs), "every buy at the sold-out item answered 409 sold_out (%d of %d)", rep.Result.Kinds["409 sold_out"], len(reqs))
	rep.Audit.check(st.OrdersPending == 1 && st.StockLeft == 0, "one order, nothing left (%d orders, %d left)", st.OrdersPending, st.StockLeft)
	return rep, nil
}

// Pages runs anonymous views of the home page and an item's page.
func (c *Client) Pages(ctx context.Context, o Options) (*Report, error) {
	if err := c.logins(ctx, &o); err != nil {
		return nil, err
	}
	sale, err := c.SetUpSale(ctx, &o.Merchant, &o.Admin, Name("pg"), 10, 1, time.Minute)
	if err != nil {
		return nil, err
	}
	reqs := make([]Request, o.Requests)
	for i := range reqs {
		p := fmt.Sprintf("/items/%d", sale.ItemID)
		if i%5 == 0 {
			p = "/"
		}
		reqs[i] = Request{Method: http.MethodGet, Path: p}
	}
	rep := &Report{Scenario: "pages", Options: o}
	logf(o.Log, "pages: %d anonymous page views", len(reqs))
	rep.CPU = measureCPU(o.CPU, func() { rep.Result = c.Fire(ctx, reqs, o.Conns, bar(o.Log, "views", len(reqs))) })
	rep.Audit = &Audit{}
	rep.Audit.check(rep.Result.Kinds["200"] == len(reqs), "every view answered 200 (%d of %d)", rep.Result.Kinds["200"], len(reqs))
	return rep, nil
}
