package loadtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/redis/go-redis/v9"
)

// The crowd: shoppers who behave as the pages make people behave. Each arrives at a moment of their own
// (during the countdown, or after the start) and opens the item page, which asks who it is (GET /api/me,
// whose answer carries the CSRF token). Then, in a first-come sale (scenario crowd), the page polls the
// item every 2 s, and the shopper gets a captcha, clicks Buy within a second of the start and tries again
// a second after any answer that is not final; in a queue sale (scenario queue), the shopper joins the
// line with a captcha, the page polls the line's public document every second, asks the shopper's own
// place once after the draw, and asks the shopper's own standing only when the document says the turn
// may have come (INTERFACE: "When a page asks its own standing"); winners buy and follow their result.
// The public documents are shared by the shoppers of a process (shared.go). What is measured is what a
// shopper waits for, from the start (or a later arrival) to their final answer, bought or sold out; and
// what a shopper costs the instances, from their own counters.

// crowdLead is how long before its countdown the crowd's sale of n shoppers is approved: the instances
// draw captchas ahead for the shoppers they expect meanwhile (about a millisecond and a half each), so a
// bigger crowd's sale is approved earlier, as a real one is announced.
func crowdLead(n int) time.Duration { return 30*time.Second + time.Duration(n)*time.Millisecond }

// lateWindow is how long after the start the late half of a crowd of n arrives: five seconds, and half
// a millisecond a shopper beyond 10,000 (a hundred thousand arrive over 50 s, not 10,000 a second).
func lateWindow(n int) time.Duration { return max(5*time.Second, time.Duration(n)*time.Millisecond/2) }

// crowdTime is how long a crowd of n shoppers is given to have its final answers: five minutes, and a
// minute more for each 10,000 shoppers (on two shared cores, a hundred thousand shoppers' requests take
// the instances and the tool minutes of CPU between them).
//
// A queue crowd is given more: its joins carry proofs of work that the load tool pays on the cores the
// instances use, where each person's own device would pay one. At the floor's price (100,000) a join
// takes about 50,000 tries, 6 ms of a core with the plain solver when nothing else runs; with the instances
// on the same cores, solveEach a shopper.
func crowdTime(n int, mode string) time.Duration {
	d := 5*time.Minute + time.Duration(n/10_000)*time.Minute
	if mode == "queue" {
		d += time.Duration(n) * solveEach
	}
	return d
}

const solveEach = 20 * time.Millisecond

// crowdAddress is the address shopper i of a queue crowd comes from: ten shoppers an address, each
// address in an IPv4 /24 of its own (127.30.0.1, 127.30.1.1, ..., 127.30.249.1, 127.31.0.1, ...), as a
// crowd of people is spread over the networks of a country. A crowd of 100,000 takes 10,000 /24s, at
// most ten joins each: no prefix is crowded (the proof of work's price and the sifting's signal start at
// 20 joins of a /24). Shared loopback addresses would put the whole crowd in a few crowded prefixes,
// which is the scalper scenario's concern, not this one's.
// asPerson gives shopper i of a queue crowd an address (crowdAddress) and a browser of its own, as a
// person has. The scalper scenario, which runs the same shoppers, chooses its own.
func asPerson(mode string, u *User, i int) {
	if mode == "queue" {
		u.FromAddress(crowdAddress(i))
		u.UseDevice(&Device{})
	}
}

func crowdAddress(i int) netip.Addr {
	a := i / 10
	return netip.AddrFrom4([4]byte{127, byte(30 + a/250), byte(a % 250), 1})
}

// CrowdReport is what a crowd scenario saw.
type CrowdReport struct {
	Mode        string // first_come or queue
	Shoppers    int
	Late        int // arrived after the start
	Final       map[string]int
	Wait        Summary        // queue: from the start (or a later arrival); first come: from the first click; to the final answer
	Limited     map[string]int // 429 answers by step
	Errors      int            // transport errors
	PGPerSecond []float64      // PostgreSQL transactions each second of the crowd (when measured)
	Requests    int
	Unanswered  int           // shoppers without a final answer when the crowd's time (crowdTime) ran out
	Missed      int64         // queue: turns that ran out, as the room counts them
	SoldOutNews time.Duration // from the last unit taken (its 202) to the last shopper waiting then being told sold out
	Reloads     Reloads       // requests the pages sent again after a connection turned away or lost (OwnConnections)
	Procs       int           // processes the shoppers shopped from (0: this one)
	Countdown   time.Duration // from the first arrivals to the start

	Own     int            // requests the shoppers' pages sent themselves (Requests also counts the public documents they polled)
	Steps   map[string]int // those by step: me, captcha, join, place, standing, path, buy, result
	Fetched int64          // fetches of the public documents, one a second per process at most, whoever asked
	// Reached is what reached the instances in the crowd's window, from their /metrics (nil: not read).
	Reached Metrics
	// Proxied is the requests nginx answered in the window (its stub_status, as each instance's /metrics
	// reports it: the mean over the instances); 0 when not reported.
	Proxied float64
	// Statements are the app's own database statements each second of the crowd (seckill_db_statements_total,
	// summed over the instances; nil when they do not count them), Orders those on the orders table.
	Statements, Orders []float64
	// Transactions are the app's own database transactions each second (seckill_db_transactions_total; nil
	// when not counted): the figure the budget of PostgreSQL transactions a second is read from.
	Transactions []float64
	Lag          Summary // queue: from the server_time of the line's change a shopper acted on to the shopper seeing it
	// Line is when the line's document first said each change (queue), StartsAt the sale's start.
	Line     LineTimeline
	StartsAt time.Time
	ToolCPU  float64  // the load tool's own CPU time in the window, its shoppers' processes included (seconds)
	Pow      PowSpent // the proofs of work this process's shoppers solved (registrations and joins; not those of -procs' processes, whose CPU ToolCPU counts)
}

// ReachedPerShopper is the requests that reached the instances in the crowd's window, a shopper.
func (r *CrowdReport) ReachedPerShopper() float64 {
	return r.Reached.RequestsReached() / float64(max(r.Shoppers, 1))
}

// StatementsMax is the most database statements the app counted in a second of the crowd.
func (r *CrowdReport) StatementsMax() float64 { return maxOf(r.Statements) }

// PGMax is the most PostgreSQL transactions in a second of the crowd.
func (r *CrowdReport) PGMax() float64 { return maxOf(r.PGPerSecond) }

type crowdShopper struct {
	u         *User
	arrive    time.Time
	inLine    time.Time // queue: when the join was answered
	addressID int64     // queue: the delivery address the join gives (0: none, for a sale without the rule)
	mu        sync.Mutex
	Outcome
}

// Outcome is what one shopper of a crowd saw: in a crowd spread over processes, each sends its
// shoppers' outcomes back to the one that set the sale up and audits it.
type Outcome struct {
	Who     int
	Final   string
	Waited  time.Duration
	Queued  int       // 202 queued answers
	Took    time.Time // when the last 202 came
	Done    time.Time // when the final answer came
	Limited map[string]int
	Errors  int
	Reqs    int
	Lost    int            // buy answers lost (no answer, or a proxy's 502/504): the buy may have been queued all the same
	Session string         // the session cookie as the shopper last had it, for the audit to read their result
	Own     int            // requests the page sent itself; Reqs also counts the public documents it polled
	Steps   map[string]int // the page's own requests by step
	Lag     time.Duration  // queue: from the server's word of the change the shopper acted on to the shopper seeing it
	Lagged  bool           // Lag was measured

	// 202 unconfirmed answers: not a promise (Answer.Unconfirmed)
	Unconfirmed int
}

func newOutcome(who int) Outcome {
	return Outcome{Who: who, Limited: map[string]int{}, Steps: map[string]int{}}
}

// lostAnswer reports whether a buy's answer was lost: the order may stand all the same, and the audit
// looks for it on the result page.
func lostAnswer(a Answer, err error) bool {
	return err != nil || a.Status == http.StatusBadGateway || a.Status == http.StatusGatewayTimeout
}

func ctxEnded(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// made counts a poll of a public document: a request the shopper made, answered by the process's shared copy.
func (s *crowdShopper) made() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Reqs++
}

// saw records the lag of the change the shopper acts on: from the server's time in the first document
// that said it to now. A change from before the shopper was in line (a late joiner's) is no lag.
func (s *crowdShopper) saw(since time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.Lagged && !since.IsZero() && since.After(s.inLine) {
		s.Lag, s.Lagged = max(time.Since(since), 0), true
	}
}

func (s *crowdShopper) count(a Answer, err error, step string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Reqs++
	s.Own++
	s.Steps[step]++
	switch {
	case err != nil && ctxEnded(err): // the crowd's cap, not the server
	case err != nil:
		s.Errors++
	case a.Status == http.StatusTooManyRequests:
		s.Limited[step]++
	}
	if step == "buy" && lostAnswer(a, err) {
		s.Lost++
	}
}

// Crowd runs a crowd of o.Users shoppers for o.Stock units: half arrive over the countdown, half in the
// seconds after the start; mode is "first_come" or "queue". transactions, when set, reads PostgreSQL's
// count of transactions, sampled each second; o.Metrics, when set, are the instances' /metrics, read
// before and after the crowd's window and each second of it.
func (c *Client) Crowd(ctx context.Context, rdb redis.UniversalClient, mode string, countdown time.Duration, o Options,
	transactions func(context.Context) (int64, error)) (*Report, error) {
	setup := time.Now()
	if err := c.logins(ctx, &o); err != nil {
		return nil, err
	}
	prefix := Name("cr")
	users, err := c.shoppers(ctx, rdb, o, mode, prefix)
	if err != nil {
		return nil, err
	}
	if transactions != nil || len(o.Metrics) > 0 {
		// A pause between the registrations and the sale: PostgreSQL reports a backend's transactions up
		// to 10 s after it went idle, and the crowd should not come on the heels of 10,000 registrations
		// (no real one does). Measured without it, the queue's p99 was 5.8 and 7.6 s; with it, 4.5 and 5.1.
		logf(o.Log, "%s: waiting 11 s after the registrations", mode)
		if !sleep(ctx, 11*time.Second) {
			return nil, ctx.Err()
		}
	}
	// The sale is approved a while before its countdown, as a real one is: each instance draws captchas
	// for the shoppers it expects in the meantime.
	var addresses []int64
	if mode == "queue" && o.Rules.OnePerAddress {
		if o.Addresses == nil {
			return nil, errors.New("a queue crowd of one entrant per address needs its shoppers' addresses seeded (-seed -db)")
		}
		logf(o.Log, "%s: seeding a delivery address for each shopper", mode)
		if addresses, err = o.Addresses(ctx, users); err != nil {
			return nil, err
		}
	}
	rules := Rules{}
	if mode == "queue" {
		rules = o.Rules
	}
	sale, err := c.SetUpSaleRules(ctx, &o.Merchant, &o.Admin, prefix, o.Stock, o.Shards, countdown+crowdLead(len(users)), 2*time.Hour, mode, rules)
	if err != nil {
		return nil, err
	}
	logf(o.Log, "%s: the sale is approved; the crowd comes in %v", mode, crowdLead(len(users)))
	if !sleep(ctx, time.Until(sale.StartsAt.Add(-countdown))) {
		return nil, ctx.Err()
	}
	now := time.Now()
	shoppers := make([]*crowdShopper, len(users))
	late := 0
	for i, u := range users {
		at := now.Add(time.Duration(rand.Int64N(int64(max(sale.StartsAt.Sub(now), time.Millisecond)))))
		if i%2 == 1 { // half arrive in the seconds after the start (lateWindow)
			at = sale.StartsAt.Add(time.Duration(rand.Int64N(int64(lateWindow(len(users))))))
			late++
		}
		shoppers[i] = &crowdShopper{u: u, arrive: at, Outcome: newOutcome(i)}
		asPerson(mode, u, i)
		if addresses != nil {
			shoppers[i].addressID = addresses[i]
		}
	}
	rep := &Report{Scenario: map[string]string{"first_come": "crowd", "queue": "queue"}[mode], Options: o, Setup: time.Since(setup)}
	cr := &CrowdReport{Mode: mode, Shoppers: len(users), Late: late, Final: map[string]int{}, Limited: map[string]int{}, Steps: map[string]int{},
		Countdown: countdown}
	logf(o.Log, "%s: %d shoppers arriving over the %v countdown and the %v after the start", mode, len(users), countdown.Round(time.Second), lateWindow(len(users)))

	var before Metrics
	if len(o.Metrics) > 0 {
		if before, err = ScrapeMetrics(ctx, o.Metrics); err != nil {
			return nil, err
		}
	}
	crowdCtx, stop := context.WithTimeout(ctx, crowdTime(len(users), mode))
	defer stop()
	var pg, statements, orders, txs []float64
	var sampled chan struct{}
	if transactions != nil || len(o.Metrics) > 0 {
		sampled = make(chan struct{})
		go func() {
			defer close(sampled)
			pg, statements, orders, txs = sampleEachSecond(crowdCtx, transactions, o.Metrics, before)
		}()
	}
	started := time.Now()
	cpuBefore := sampleCPU(o.CPU)
	toolBefore, _ := cpuSeconds(os.Getpid())
	if o.Shop != nil { // the shoppers shop from other processes, and send back what they saw
		plan := &CrowdPlan{Mode: mode, Sale: *sale, CSRF: c.csrf, Until: started.Add(crowdTime(len(users), mode))}
		for _, s := range shoppers {
			plan.Shoppers = append(plan.Shoppers, PlannedShopper{ID: s.u.ID, Name: s.u.Name, Session: s.u.session, Arrive: s.arrive,
				AddressID: s.addressID})
		}
		shop, err := o.Shop(ctx, plan) // each process ends its shoppers at plan.Until, then reports
		if err != nil {
			return nil, fmt.Errorf("the shoppers' processes: %w", err)
		}
		for _, out := range shop.Outcomes {
			if out.Who >= 0 && out.Who < len(shoppers) {
				shoppers[out.Who].Outcome = out
			}
		}
		cr.Reloads, cr.Procs, cr.Fetched, cr.Line, cr.ToolCPU = shop.Reloads, o.Procs, shop.Fetched, shop.Line, shop.CPU
	} else {
		c.runShoppers(crowdCtx, rdb, sale, shoppers, mode, bar(o.Log, "answered", len(shoppers)))
		cr.Reloads, cr.Fetched, cr.Line = c.Reloads(), c.Fetched(), c.LineTimeline(sale.ItemID)
	}
	cr.Pow = c.Pow()
	if toolAfter, err := cpuSeconds(os.Getpid()); err == nil {
		cr.ToolCPU += toolAfter - toolBefore
	}
	cr.StartsAt = sale.StartsAt
	if len(o.Metrics) > 0 { // the window's end: every shopper has a final answer (or the crowd's time ran out)
		after, err := ScrapeMetrics(ctx, o.Metrics)
		if err != nil {
			return nil, err
		}
		cr.Reached = after.Since(before)
		cr.Proxied = cr.Reached.Sum(nginxRequestsMetric) / float64(len(o.Metrics))
	}
	for _, s := range shoppers {
		if s.Session != "" {
			s.u.session = s.Session
		}
	}
	cpuAfter := sampleCPU(o.CPU)
	stop()
	if sampled != nil {
		<-sampled
	}
	rep.Result = &Result{Elapsed: time.Since(started), Kinds: map[string]int{}, Queued: map[int]int{}, Unconfirmed: map[int]int{}, Lost: map[int]int{}}
	rep.CPU = cpuUsed(o.CPU, cpuBefore, cpuAfter)
	// Up to an hour: a crowd's waits run past the requests' histogram's minute, which drops what it cannot hold.
	lat := hdrhistogram.New(1, time.Hour.Microseconds(), 3)
	lag := hdrhistogram.New(1, time.Hour.Microseconds(), 3)
	for _, s := range shoppers {
		cr.Final[s.Final]++
		rep.Result.Requests += s.Reqs
		cr.Own += s.Own
		cr.Errors += s.Errors
		for k, v := range s.Limited {
			cr.Limited[k] += v
		}
		for k, v := range s.Steps {
			cr.Steps[k] += v
		}
		if s.Lagged {
			_ = lag.RecordValue(max(s.Lag.Microseconds(), 1))
		}
		if s.Queued > 0 {
			rep.Result.Queued[s.Who] = s.Queued
		}
		if s.Unconfirmed > 0 {
			rep.Result.Unconfirmed[s.Who] = s.Unconfirmed
		}
		if s.Lost > 0 {
			rep.Result.Lost[s.Who] = s.Lost
		}
		rep.Result.Kinds[s.Final]++
		switch {
		case s.Final == "bought" || s.Final == "sold out":
			_ = lat.RecordValue(max(s.Waited.Microseconds(), 1))
		case s.Final == "":
			cr.Unanswered++ // at the crowd's cap: counted as waiting that long, so the percentiles do not flatter
			_ = lat.RecordValue(max(rep.Result.Elapsed.Microseconds(), 1))
		}
	}
	cr.Wait, cr.Requests, cr.PGPerSecond, cr.Lag = summarize(lat), rep.Result.Requests, pg, summarize(lag)
	cr.Statements, cr.Orders, cr.Transactions = statements, orders, txs
	var lastTaken time.Time
	for _, s := range shoppers {
		if s.Took.After(lastTaken) {
			lastTaken = s.Took
		}
	}
	for _, s := range shoppers {
		if s.Final == "sold out" && s.arrive.Before(lastTaken) && s.Done.Sub(lastTaken) > cr.SoldOutNews {
			cr.SoldOutNews = s.Done.Sub(lastTaken)
		}
	}
	rep.Crowd = cr
	st, drain, err := c.WaitDrained(ctx, &o.Admin, sale, 5*time.Minute)
	if err != nil {
		return nil, err
	}
	rep.Drain, rep.Sale, rep.Stats, rep.Users = drain, sale, st, users
	if mode == "queue" {
		var full struct {
			Items []struct {
				Line *struct {
					Missed int64 `json:"missed"`
				} `json:"line"`
			} `json:"items"`
		}
		if err := c.JSON(ctx, http.MethodGet, fmt.Sprintf("/api/admin/activities/%d/stats", sale.ActivityID), nil, &o.Admin, &full); err == nil {
			for _, it := range full.Items {
				if it.Line != nil {
					cr.Missed += it.Line.Missed
				}
			}
		}
	}
	rep.Audit = c.AuditSale(ctx, sale, st, users, rep.Result)
	rep.Audit.check(cr.Final["bought"]+cr.Final["sold out"] == len(shoppers),
		"every shopper has a final answer, bought or sold out (%d of %d; %v)", cr.Final["bought"]+cr.Final["sold out"], len(shoppers), cr.Final)
	if mode == "queue" {
		ok, err := c.checkDraw(ctx, sale.ItemID)
		rep.Audit.check(ok && err == nil, "the draw is the rule's order, checked from its public record (%v)", err)
	}
	return rep, nil
}

// sampleEachSecond reads, each second until ctx ends, PostgreSQL's transactions (when transactions is
// set) and the app's database statements from the instances' metrics (when urls are given and they count
// them), and answers each second's growth: PostgreSQL's transactions, the app's statements, those on
// orders, and the app's transactions (when it counts them).
func sampleEachSecond(ctx context.Context, transactions func(context.Context) (int64, error), urls []string,
	before Metrics) (pg, statements, orders, txs []float64) {
	var last int64
	pgOK := transactions != nil
	if pgOK {
		var err error
		last, err = transactions(ctx)
		pgOK = err == nil
	}
	prev := before
	counted := before.Has(statementsMetric)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if pgOK {
			n, err := transactions(ctx)
			if err != nil {
				pgOK = false
			} else {
				pg = append(pg, float64(max(n-last-1, 0))) // less the sampling query's own
				last = n
			}
		}
		if counted {
			m, err := ScrapeMetrics(ctx, urls)
			if err != nil {
				counted = false
				continue
			}
			d := m.Since(prev)
			statements = append(statements, d.Sum(statementsMetric))
			orders = append(orders, d.Sum(statementsMetric, `table="orders"`))
			if m.Has(transactionsMetric) {
				txs = append(txs, d.Sum(transactionsMetric))
			}
			prev = m
		}
	}
}

// runShoppers has each shopper shop, and answers once every one has a final answer or ctx ends.
func (c *Client) runShoppers(ctx context.Context, rdb redis.UniversalClient, sale *Sale, shoppers []*crowdShopper, mode string, progress func(int)) {
	var wg sync.WaitGroup
	var finished int
	var fmu sync.Mutex
	for _, s := range shoppers {
		wg.Go(func() {
			c.shop(ctx, rdb, sale, s, mode)
			s.Session = s.u.session
			fmu.Lock()
			finished++
			progress(finished)
			fmu.Unlock()
		})
	}
	wg.Wait()
}

// CrowdPlan is what a crowd's shoppers need to shop from another process: the sale, who they are and
// when they come, and when the crowd's time runs out.
type CrowdPlan struct {
	Mode     string
	Sale     Sale
	CSRF     string
	Until    time.Time
	Shoppers []PlannedShopper // shopper i is Shoppers[i]; a process shops for a slice of them
}

// PlannedShopper is one registered, logged-in shopper of a plan.
type PlannedShopper struct {
	ID            int64
	Name, Session string
	Arrive        time.Time
	AddressID     int64 // the delivery address its join gives (0: none)
}

// Shop runs the plan's shoppers i of every n (shard i of n: i, i+n, i+2n, ...) and answers what each
// saw, and the pages' reloads.
func (c *Client) Shop(ctx context.Context, rdb redis.UniversalClient, plan *CrowdPlan, shard, n int) ([]Outcome, Reloads) {
	ctx, cancel := context.WithDeadline(ctx, plan.Until)
	defer cancel()
	c.csrf = plan.CSRF
	var shoppers []*crowdShopper
	for i := shard; i < len(plan.Shoppers); i += max(n, 1) {
		p := plan.Shoppers[i]
		u := &User{ID: p.ID, Name: p.Name, session: p.Session}
		asPerson(plan.Mode, u, i)
		shoppers = append(shoppers, &crowdShopper{u: u, arrive: p.Arrive, addressID: p.AddressID, Outcome: newOutcome(i)})
	}
	sale := plan.Sale
	c.runShoppers(ctx, rdb, &sale, shoppers, plan.Mode, func(int) {})
	outs := make([]Outcome, len(shoppers))
	for i, s := range shoppers {
		outs[i] = s.Outcome
	}
	return outs, c.Reloads()
}

// shop is one shopper, from arrival to a final answer (or the crowd's end).
func (c *Client) shop(ctx context.Context, rdb redis.UniversalClient, sale *Sale, s *crowdShopper, mode string) {
	if err := WaitUntil(ctx, s.arrive); err != nil {
		return
	}
	from := s.arrive
	if from.Before(sale.StartsAt) {
		from = sale.StartsAt
	}
	end := func(final string) {
		s.Final, s.Waited, s.Done = final, time.Since(from), time.Now()
	}
	if !c.pageLoad(ctx, s) {
		return
	}
	captcha := func() map[string]string {
		for ctx.Err() == nil {
			fields, retry, err := c.SolveCaptcha(ctx, rdb, s.u)
			s.count(Answer{Status: map[bool]int{true: 429, false: 200}[retry]}, err, "captcha")
			if err == nil && !retry {
				return fields
			}
			sleep(ctx, time.Second)
		}
		return nil
	}
	wait := func(d time.Duration) bool { return sleep(ctx, d) }
	if mode == "queue" {
		c.queueShopper(ctx, sale, s, captcha, wait, end)
		return
	}
	// The item page polls the item every 2 s while it is open: a public document, shared.
	item := c.public(fmt.Sprintf("/api/items/%d", sale.ItemID))
	pageCtx, closePage := context.WithCancel(ctx)
	pageDone := make(chan struct{})
	defer func() { closePage(); <-pageDone }() // the page's counts are read once the shopper is done
	go func() {
		defer close(pageDone)
		for {
			_, _, _ = item.get(pageCtx)
			if pageCtx.Err() != nil {
				return
			}
			s.made()
			if !sleep(pageCtx, 2*time.Second) {
				return
			}
		}
	}()
	fields := captcha()
	if fields == nil {
		return
	}
	if time.Now().Before(sale.StartsAt) { // everyone clicks within a second of the start
		if !wait(time.Until(sale.StartsAt) + time.Duration(rand.Int64N(int64(time.Second)))) {
			return
		}
	}
	from = time.Now() // a first-come shopper's wait counts from their first click
	for ctx.Err() == nil {
		a, err := c.Do(ctx, http.MethodPost, fmt.Sprintf("/api/items/%d/path", sale.ItemID), fields, s.u)
		s.count(a, err, "path")
		switch {
		case err != nil || a.Status == http.StatusTooManyRequests:
		case a.Code == "sold_out":
			end("sold out")
			return
		case a.Code == "already_bought":
			end("bought")
			return
		case a.Status == 200:
			var p struct{ Path string }
			_ = jsonUnmarshal(a.Body, &p)
			b, err := c.Do(ctx, http.MethodPost, fmt.Sprintf("/api/items/%d/buy/%s", sale.ItemID, p.Path), nil, s.u)
			s.count(b, err, "buy")
			switch {
			case err == nil && b.Status == http.StatusAccepted:
				if b.Unconfirmed() {
					s.Unconfirmed++
				} else {
					s.Queued++
				}
				s.Took = time.Now()
				end(c.followResult(ctx, sale, s, wait, b.Unconfirmed()))
				return
			case err == nil && b.Code == "sold_out":
				end("sold out")
				return
			}
			fields = captcha() // the captcha was used: a new one for the next try
		default: // bad_captcha, not_started, ...: the captcha is used up
			fields = captcha()
		}
		if fields == nil || !wait(time.Second) {
			return
		}
	}
}

// pageLoad is what the item page asks when it opens: who the shopper is, with the CSRF token its
// requests carry (GET /api/me). A server whose /api/me carries no token is asked for one apart, as the
// pages did before (GET /api/csrf). Answers false when the crowd's time ran out first.
func (c *Client) pageLoad(ctx context.Context, s *crowdShopper) bool {
	for ctx.Err() == nil {
		var me struct {
			CSRF string `json:"csrf_token"`
		}
		a, err := c.Do(ctx, http.MethodGet, "/api/me", nil, s.u)
		s.count(a, err, "me")
		if err == nil && a.Status == http.StatusOK && jsonUnmarshal(a.Body, &me) == nil {
			if me.CSRF != "" {
				s.u.csrf = me.CSRF
				return true
			}
			var t struct{ Token string }
			a, err := c.Do(ctx, http.MethodGet, "/api/csrf", nil, s.u)
			s.count(a, err, "csrf")
			if err == nil && a.Status == http.StatusOK && jsonUnmarshal(a.Body, &t) == nil && t.Token != "" {
				s.u.csrf = t.Token
				return true
			}
		}
		if !sleep(ctx, time.Second) {
			return false
		}
	}
	return false
}

// followResult polls the buyer's result each second as the page does, until it is final. After a 202
// unconfirmed (unconfirmed), as item.js does, a result of none or sold_out is not final: the take may
// have been lost with a Redis master, and the result then settles as failed (reason lost) only once the
// take is found gone, about 30 s later (stock.UnconfirmedGrace). So the follow-up goes on, every 2 s as
// the page, until the result settles or unconfirmedWithin of waiting has passed; a sold_out then is
// final, a none is no answer ("").
func (c *Client) followResult(ctx context.Context, sale *Sale, s *crowdShopper, wait func(time.Duration) bool, unconfirmed bool) string {
	var waited time.Duration // the follow-up's bound after an unconfirmed buy, counted in the waits it made
	for ctx.Err() == nil {
		var r struct{ Status string }
		a, err := c.Do(ctx, http.MethodGet, fmt.Sprintf("/api/items/%d/result", sale.ItemID), nil, s.u)
		s.count(a, err, "result")
		pause := time.Second
		if err == nil && a.Status == 200 && jsonUnmarshal(a.Body, &r) == nil {
			unsettled := unconfirmed && (r.Status == "none" || r.Status == "sold_out")
			switch {
			case r.Status == "success":
				return "bought"
			case r.Status == "failed", r.Status == "sold_out" && !unsettled:
				return "sold out"
			case unsettled && waited >= unconfirmedWithin:
				if r.Status == "sold_out" {
					return "sold out"
				}
				return ""
			case unsettled:
				pause = 2 * time.Second
			}
		}
		if !wait(pause) {
			break
		}
		waited += pause
	}
	return ""
}

// When a page that joined before the start asks its place: placeAfterStart after the start, and up to
// placeSpread and placeSpreadEach an entrant later, at random (item.js's own figures).
const (
	placeAfterStart = 500 * time.Millisecond
	placeSpread     = time.Second
	placeSpreadEach = 100 * time.Microsecond // and a tenth of a millisecond more an entrant
)

// ruleRefusals are the answers of a sale's rules to a join: final, whatever the page tries again.
var ruleRefusals = map[string]bool{"address_limit": true, "not_eligible": true, "staff": true}

// standing is the contract's `queue`, as far as a page reads it.
type standing struct {
	State      string  `json:"state"`
	Position   *int64  `json:"position"`
	Path       string  `json:"path"`
	PlaceToken *string `json:"place_token"`
}

// queueShopper joins the line and follows it from the line's public document, asking its own standing
// only when the document says its turn may have come, until bought or sold out.
func (c *Client) queueShopper(ctx context.Context, sale *Sale, s *crowdShopper, captcha func() map[string]string,
	wait func(time.Duration) bool, end func(string)) {
	var position int64 // 0: not known yet
	var token string   // the signed place, sent with each own standing
	adopt := func(q standing) {
		if q.Position != nil && *q.Position > 0 {
			position = *q.Position
		}
		if q.PlaceToken != nil && *q.PlaceToken != "" {
			token = *q.PlaceToken
		}
	}
	// A sale of one entrant per address: the page reads the address book once it loads, as item.js does,
	// and its join hands back the chosen address's card, so that the join reads no address book.
	card := ""
	if s.addressID > 0 {
		a, err := c.Do(ctx, http.MethodGet, "/api/addresses", nil, s.u)
		s.count(a, err, "addresses")
		var book []struct {
			ID   int64  `json:"id"`
			Card string `json:"card"`
		}
		if err == nil && a.Status == http.StatusOK && jsonUnmarshal(a.Body, &book) == nil {
			for _, b := range book {
				if b.ID == s.addressID {
					card = b.Card
				}
			}
		}
	}
	join := func() (standing, bool) {
		for ctx.Err() == nil {
			// The proof of work first, as the page solves it while the person types the captcha: a captcha
			// drawn first could outlive its five minutes while the load tool's solvers are busy.
			proof, retry, err := c.SolvePow(ctx, s.u, joinQuery(sale.ItemID))
			s.count(Answer{Status: map[bool]int{true: 429, false: 200}[retry]}, err, "altcha")
			if err != nil || retry {
				if !wait(time.Second) {
					return standing{}, false
				}
				continue
			}
			fields := captcha()
			if fields == nil {
				return standing{}, false
			}
			body := map[string]any{"altcha": proof}
			for k, v := range fields {
				body[k] = v
			}
			if s.addressID > 0 {
				body["address_id"] = s.addressID
				body["address_card"] = card
			}
			a, err := c.Do(ctx, http.MethodPost, fmt.Sprintf("/api/items/%d/queue", sale.ItemID), body, s.u)
			s.count(a, err, "join")
			if err == nil && ruleRefusals[a.Code] { // final: the same join would be refused again
				end("refused " + a.Code)
				return standing{}, false
			}
			var q standing
			if err == nil && a.Status == 200 && jsonUnmarshal(a.Body, &q) == nil {
				s.mu.Lock()
				s.inLine = time.Now()
				s.mu.Unlock()
				position, token = 0, ""
				adopt(q)
				return q, true
			}
			if !wait(time.Second) {
				return standing{}, false
			}
		}
		return standing{}, false
	}
	ask := func(step string) (standing, bool) {
		var h map[string]string
		if token != "" {
			h = map[string]string{"X-Line-Place": token}
		}
		a, err := c.DoHeader(ctx, http.MethodGet, fmt.Sprintf("/api/items/%d/queue", sale.ItemID), nil, s.u, h)
		s.count(a, err, step)
		var q standing
		if err == nil && a.Code == "bad_place" {
			token = "" // the next ask goes without it
		}
		if err != nil || a.Status != 200 || jsonUnmarshal(a.Body, &q) != nil {
			return standing{}, false
		}
		adopt(q)
		return q, true
	}
	var d lineDoc // the line's document as the page last read it
	// held: the last standing said sold out, or waiting with the document's let_in past the place (its
	// turn ended, or the instance asked had not heard yet): the place is kept, and asked again only when
	// the document's count of re-admissions moves, as the page does.
	held := false
	var readmitted int64
	// act does what a standing says: done when the shopper has a final answer, rejoin when its turn ran out.
	act := func(q standing) (done, rejoin bool) {
		held = false
		switch q.State {
		case "your_turn":
			b, err := c.Do(ctx, http.MethodPost, fmt.Sprintf("/api/items/%d/buy/%s", sale.ItemID, q.Path), nil, s.u)
			s.count(b, err, "buy")
			switch {
			case err == nil && b.Status == http.StatusAccepted:
				if b.Unconfirmed() {
					s.Unconfirmed++
				} else {
					s.Queued++
				}
				s.Took = time.Now()
				end(c.followResult(ctx, sale, s, wait, b.Unconfirmed()))
				return true, false
			case err == nil && b.Code == "sold_out":
				end("sold out")
				return true, false
			case lostAnswer(b, err): // it may have been taken all the same: the result tells
				if r := c.followResult(ctx, sale, s, wait, false); r != "" {
					end(r)
					return true, false
				}
			}
		case "bought":
			end(c.followResult(ctx, sale, s, wait, false))
			return true, false
		case "sold_out": // the page shows it, and keeps its place: a unit may come back (readmitted)
			end("sold out")
			held = true
		case "ended":
			end("sold out")
			return true, false
		case "missed", "out":
			return false, true
		case "waiting": // below the line's front by the document: held there, as the page holds it
			held = position > 0 && position <= d.LetIn
		}
		return false, false
	}
	q, ok := join()
	if !ok {
		return
	}
	line := c.public(linePath(sale.ItemID))
	askedAt := int64(-1) // the let_in of the last own standing asked
	// A page that joined before the start asks its place a moment after the start, as item.js does,
	// without waiting for the document to say the draw is written (the cache's second would hold the
	// winners back); the moment is spread over a second, so that the crowd does not ask all at once.
	draw := rand.Float64()
	placeAt := func(entrants int64) time.Time {
		return sale.StartsAt.Add(placeAfterStart + time.Duration(draw*float64(placeSpread+time.Duration(entrants)*placeSpreadEach)))
	}
	askAt := placeAt(0)
	placeTried := !time.Now().Before(sale.StartsAt) // a late joiner has its place from the join
	for ctx.Err() == nil {
		if q.State != "" {
			done, rejoin := act(q)
			if done {
				return
			}
			if rejoin {
				if q, ok = join(); !ok {
					return
				}
				askedAt = -1
				continue
			}
			if q.State != "waiting" && q.State != "sold_out" {
				askedAt = -1 // a turn that did not buy: ask again at the next look
			}
			readmitted = d.Readmitted
			if d.State == "" {
				readmitted = -1 // the join's answer, before any document: the next one's count is the mark
			}
			q = standing{}
		}
		if position == 0 && !placeTried {
			if until := time.Until(askAt); until < time.Second {
				if !wait(max(until, 0)) {
					return
				}
				placeTried = true
				if q, _ = ask("place"); position > 0 {
					continue
				}
			}
		}
		if !wait(time.Second) {
			return
		}
		_, v, err := line.get(ctx)
		s.made()
		if err != nil || v.doc.State == "" {
			continue
		}
		d = v.doc
		switch {
		case d.over(): // the page shows it; no request of its own
			s.saw(v.overAt)
			if s.Final == "" {
				end("sold out")
			}
			return
		case !d.Drawn:
			if !placeTried {
				askAt = placeAt(d.Entrants)
			}
		case position == 0 && !placeTried && time.Now().Before(askAt): // its moment comes
		case position == 0: // drawn: the page learns its place once
			q, _ = ask("place")
			if at, ok := v.letInSince(position); ok && position > 0 {
				s.saw(at)
			}
		case held:
			if readmitted < 0 {
				readmitted = d.Readmitted
			} else if d.Readmitted != readmitted { // someone below let_in was let in again: it may be this page
				q, _ = ask("standing")
			}
		case position <= d.LetIn && d.LetIn != askedAt: // the line reached the place: once for each let_in
			if at, ok := v.letInSince(position); ok {
				s.saw(at)
			}
			askedAt = d.LetIn
			q, _ = ask("standing")
		}
	}
}

// checkDraw reads the draw's public record and checks its order by the rule.
func (c *Client) checkDraw(ctx context.Context, itemID int64) (bool, error) {
	var d struct {
		SeedHash string   `json:"seed_hash"`
		Seed     string   `json:"seed"`
		Tickets  []string `json:"tickets"`
	}
	if err := c.JSON(ctx, http.MethodGet, fmt.Sprintf("/api/items/%d/draw", itemID), nil, nil, &d); err != nil {
		return false, err
	}
	if sha256hex(d.Seed) != d.SeedHash {
		return false, fmt.Errorf("the seed does not hash to the published hash")
	}
	if !sort.SliceIsSorted(d.Tickets, func(i, j int) bool {
		return sha256hex(d.Seed+d.Tickets[i]) < sha256hex(d.Seed+d.Tickets[j])
	}) {
		return false, fmt.Errorf("the tickets are not in the rule's order")
	}
	return true, nil
}

func sha256hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// sleep waits d or until ctx ends, and reports whether it waited the whole time.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// crowdMarkdown is a crowd scenario's section body.
func crowdMarkdown(b *strings.Builder, r *Report) {
	cr := r.Crowd
	fmt.Fprintf(b, "%d shoppers (%d arriving after the start) for %d units, %s; %d requests made in %.1f s.\n\n",
		cr.Shoppers, cr.Late, r.Options.Stock, map[string]string{"queue": "through the waiting room", "first_come": "first come"}[cr.Mode],
		cr.Requests, r.Result.Elapsed.Seconds())
	procs := "this process"
	if cr.Procs > 1 {
		procs = fmt.Sprintf("%d processes of the load tool", cr.Procs)
	}
	fmt.Fprintf(b, "Settings: half the shoppers arrive over a %v countdown, half in the %v after the start; the sale is approved %v "+
		"before the countdown; the shoppers shop from %s over %d keep-alive connections, sharing one fetch a second of each public "+
		"document per process; accounts %s.\n\n", cr.Countdown.Round(time.Second), lateWindow(cr.Shoppers), crowdLead(cr.Shoppers), procs, r.Options.Conns,
		map[bool]string{true: "seeded beforehand and logged in before the countdown", false: "registered through the API before the countdown"}[r.Options.Seed != nil])
	if cr.Mode == "queue" {
		var rules []string
		if r.Options.Rules.OnePerAddress {
			rules = append(rules, "one entrant per delivery address (each shopper's own, seeded with the account; every join gives it)")
		}
		if r.Options.Rules.AccountsBeforeApproval {
			rules = append(rules, "accounts from before the approval")
		}
		if len(rules) == 0 {
			rules = append(rules, "none")
		}
		fmt.Fprintf(b, "The sale's rules: %s; every join pays its proof of work (`GET /api/altcha`, solved by the load tool) at the server's price.\n\n",
			strings.Join(rules, ", "))
	}
	b.WriteString("| start or later join (queue), first click (first come) → final answer | p50 | p90 | p99 | max |\n| --- | --- | --- | --- | --- |\n")
	fmt.Fprintf(b, "| | %s | %s | %s | %s |\n", ms(cr.Wait.P50), ms(cr.Wait.P90), ms(cr.Wait.P99), ms(cr.Wait.Max))
	if cr.Lag.Count > 0 {
		fmt.Fprintf(b, "| lag: from the line's change (its `server_time`) to the shopper seeing it (%d shoppers) | %s | %s | %s | %s |\n",
			cr.Lag.Count, ms(cr.Lag.P50), ms(cr.Lag.P90), ms(cr.Lag.P99), ms(cr.Lag.Max))
	}
	b.WriteString("\n")
	writeCost(b, cr)
	b.WriteString("| final answer | shoppers |\n| --- | --- |\n")
	for _, k := range sortedKeys(cr.Final) {
		name := k
		if name == "" {
			name = "none (the crowd's time ran out)"
		}
		fmt.Fprintf(b, "| %s | %d |\n", name, cr.Final[k])
	}
	b.WriteString("\n| 429 answers by step | count |\n| --- | --- |\n")
	for _, k := range sortedKeys(cr.Limited) {
		fmt.Fprintf(b, "| %s | %d |\n", k, cr.Limited[k])
	}
	if len(cr.Limited) == 0 {
		b.WriteString("| (none) | 0 |\n")
	}
	if l := cr.Line; !l.Drawn.IsZero() {
		at := func(t time.Time) string {
			if t.IsZero() {
				return "never"
			}
			return fmt.Sprintf("%+.1f s", t.Sub(cr.StartsAt).Seconds())
		}
		fmt.Fprintf(b, "\nThe line's document, by the server times of the first ones fetched that said each (from the start): drawn %s; "+
			"first let in %s; let in to %d by %s; sold out %s.\n", at(l.Drawn), at(l.FirstLetIn), l.LetIn, at(l.LastLetIn), at(l.Over))
	}
	if cr.Pow.Solves > 0 {
		fmt.Fprintf(b, "\nProof of work: %s.\n", cr.Pow)
	}
	if cr.ToolCPU > 0 {
		fmt.Fprintf(b, "\nThe load tool's shoppers used %.1f core-seconds in the window, %.2f ms a shopper.\n", cr.ToolCPU, cr.ToolCPU*1000/float64(max(cr.Shoppers, 1)))
	}
	fmt.Fprintf(b, "\nThe last shopper waiting when the last unit was taken heard it was sold out %s after.", ms(cr.SoldOutNews))
	if cr.Mode == "queue" {
		fmt.Fprintf(b, " Turns that ran out unused: %d.", cr.Missed)
	}
	b.WriteString("\n")
	if len(cr.Statements) > 0 {
		fmt.Fprintf(b, "\nThe database during the crowd, by the app's own counters (`seckill_db_statements_total`, every instance): "+
			"at most %.0f statements a second, %.1f on average; on orders at most %.0f a second, %.1f on average (each second: %v).\n",
			cr.StatementsMax(), mean(cr.Statements), maxOf(cr.Orders), mean(cr.Orders), cr.Statements)
	}
	if len(cr.Transactions) > 0 {
		fmt.Fprintf(b, "\nTransactions, by the app's own counters (`seckill_db_transactions_total`, a statement outside one counting as one): "+
			"at most %.0f a second, %.1f on average (each second: %v).\n", maxOf(cr.Transactions), mean(cr.Transactions), cr.Transactions)
	}
	if len(cr.PGPerSecond) > 0 {
		fmt.Fprintf(b, "\nPostgreSQL during the crowd (`pg_stat_database`): at most %.0f transactions a second, %.1f on average (each second: %v). "+
			"A backend reports its transactions when it next goes idle, up to a second late, so a second's count "+
			"may hold some of the one before; the average is exact.\n", cr.PGMax(), mean(cr.PGPerSecond), cr.PGPerSecond)
	}
	if cr.Unanswered > 0 {
		fmt.Fprintf(b, "\n%d shoppers had no final answer when the crowd's time ran out; the percentiles count them as waiting it all.\n", cr.Unanswered)
	}
	if cr.Errors > 0 {
		fmt.Fprintf(b, "\nTransport errors: %d.\n", cr.Errors)
	}
	if rl := cr.Reloads; rl.Refused+rl.Lost > 0 {
		fmt.Fprintf(b, "\nRequests the pages sent again: %d turned away at accept (503 or 429, Retry-After), %d after a connection lost before an answer.\n",
			rl.Refused, rl.Lost)
	}
	b.WriteString("\n")
}

// writeCost writes what a shopper cost: the requests the shoppers made, those the load tool sent, and
// those that reached the instances (their own counters), each a shopper; then the pages' own requests
// by step, and the routes that reached the instances most.
func writeCost(b *strings.Builder, cr *CrowdReport) {
	n := float64(max(cr.Shoppers, 1))
	b.WriteString("| what a shopper cost | requests | a shopper |\n| --- | --- | --- |\n")
	fmt.Fprintf(b, "| made by the shoppers' pages (their polls of the public documents included) | %d | %.2f |\n", cr.Requests, float64(cr.Requests)/n)
	sent := int64(cr.Own) + cr.Fetched
	fmt.Fprintf(b, "| sent by the load tool (the pages' own, and %d fetches of the public documents shared by each process's shoppers) | %d | %.2f |\n",
		cr.Fetched, sent, float64(sent)/n)
	if cr.Reached != nil {
		fmt.Fprintf(b, "| **reached the instances** (the sum of their `seckill_http_requests_total` over the crowd's window) | %.0f | **%.2f** |\n",
			cr.Reached.RequestsReached(), cr.ReachedPerShopper())
	} else {
		b.WriteString("| reached the instances | not read (no -metrics) | |\n")
	}
	if cr.Proxied > 0 {
		fmt.Fprintf(b, "| answered by nginx, from its cache or the instances (its stub_status, every client's request) | %.0f | %.2f |\n",
			cr.Proxied, cr.Proxied/n)
	}
	if own := cr.Reached.byLabel(nginxAnswersMetric, "answer"); len(own) > 0 {
		t, parts := 0.0, []string{}
		for _, k := range sortedKeys(own) {
			t += own[k]
			parts = append(parts, fmt.Sprintf("%s %.0f", k, own[k]))
		}
		fmt.Fprintf(b, "| of those, answered by nginx without an instance (its edge log: %s) | %.0f | %.2f |\n", strings.Join(parts, ", "), t, t/n)
	}
	b.WriteString("\n| the pages' own requests, by step | requests | a shopper |\n| --- | --- | --- |\n")
	for _, k := range sortedKeys(cr.Steps) {
		fmt.Fprintf(b, "| %s | %d | %.2f |\n", k, cr.Steps[k], float64(cr.Steps[k])/n)
	}
	if cr.Reached != nil {
		b.WriteString("\n| reached the instances, by route | requests | a shopper |\n| --- | --- | --- |\n")
		for i, rc := range cr.Reached.routes() {
			if i == 12 {
				break
			}
			fmt.Fprintf(b, "| %s | %.0f | %.2f |\n", rc.route, rc.n, rc.n/n)
		}
	}
	b.WriteString("\n")
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	t := 0.0
	for _, x := range v {
		t += x
	}
	return t / float64(len(v))
}

func maxOf(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
