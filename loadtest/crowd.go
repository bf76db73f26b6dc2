package loadtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/redis/go-redis/v9"
)

// The crowd: shoppers who behave as the pages make people behave. Each arrives at a moment of their own
// (during the countdown, or after the start), opens the item page (which polls the item every 2 s), and
// then, in a first-come sale (scenario crowd), gets a captcha, clicks Buy within a second of the start and
// tries again a second after any answer that is not final; in a queue sale (scenario queue), joins the
// line with a captcha, polls their standing as the page does, and buys when their turn comes. What is
// measured is what a shopper waits for: from the start (or a later arrival) to their final answer,
// bought or sold out.

// crowdLead is how long before its countdown the crowd's sale is approved.
const crowdLead = 30 * time.Second

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
	Unanswered  int           // shoppers without a final answer when the crowd's five minutes ran out
	Missed      int64         // queue: turns that ran out, as the room counts them
	SoldOutNews time.Duration // from the last unit taken (its 202) to the last shopper waiting then being told sold out
	Reloads     Reloads       // requests the pages sent again after a connection turned away or lost (OwnConnections)
	Procs       int           // processes the shoppers shopped from (0: this one)
}

// PGMax is the most PostgreSQL transactions in a second of the crowd.
func (r *CrowdReport) PGMax() float64 {
	m := 0.0
	for _, v := range r.PGPerSecond {
		m = max(m, v)
	}
	return m
}

type crowdShopper struct {
	u      *User
	arrive time.Time
	mu     sync.Mutex
	Outcome
}

// Outcome is what one shopper of a crowd saw: in a crowd spread over processes, each sends its
// shoppers' outcomes back to the one that set the sale up and audits it.
type Outcome struct {
	Who     int
	Final   string
	Waited  time.Duration
	Queued  int       // 202 answers
	Took    time.Time // when the last 202 came
	Done    time.Time // when the final answer came
	Limited map[string]int
	Errors  int
	Reqs    int
	Lost    int    // buy answers lost (no answer, or a proxy's 502/504): the buy may have been queued all the same
	Session string // the session cookie as the shopper last had it, for the audit to read their result
}

// lostAnswer reports whether a buy's answer was lost: the order may stand all the same, and the audit
// looks for it on the result page.
func lostAnswer(a Answer, err error) bool {
	return err != nil || a.Status == http.StatusBadGateway || a.Status == http.StatusGatewayTimeout
}

func ctxEnded(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

func (s *crowdShopper) count(a Answer, err error, step string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Reqs++
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
// count of transactions, sampled each second.
func (c *Client) Crowd(ctx context.Context, rdb redis.UniversalClient, mode string, countdown time.Duration, o Options,
	transactions func(context.Context) (int64, error)) (*Report, error) {
	setup := time.Now()
	if err := c.logins(ctx, &o); err != nil {
		return nil, err
	}
	prefix := Name("cr")
	logf(o.Log, "%s: registering %d shoppers", mode, o.Users)
	users, err := c.RegisterUsers(ctx, rdb, prefix, o.Users, bar(o.Log, "register", o.Users))
	if err != nil {
		return nil, err
	}
	if transactions != nil {
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
	sale, err := c.SetUpSale(ctx, &o.Merchant, &o.Admin, prefix, o.Stock, o.Shards, countdown+crowdLead, mode)
	if err != nil {
		return nil, err
	}
	logf(o.Log, "%s: the sale is approved; the crowd comes in %v", mode, crowdLead)
	if !sleep(ctx, time.Until(sale.StartsAt.Add(-countdown))) {
		return nil, ctx.Err()
	}
	now := time.Now()
	shoppers := make([]*crowdShopper, len(users))
	late := 0
	for i, u := range users {
		at := now.Add(time.Duration(rand.Int64N(int64(max(sale.StartsAt.Sub(now), time.Millisecond)))))
		if i%2 == 1 { // half arrive in the five seconds after the start
			at = sale.StartsAt.Add(time.Duration(rand.Int64N(int64(5 * time.Second))))
			late++
		}
		shoppers[i] = &crowdShopper{u: u, arrive: at, Outcome: Outcome{Who: i, Limited: map[string]int{}}}
	}
	rep := &Report{Scenario: map[string]string{"first_come": "crowd", "queue": "queue"}[mode], Options: o, Setup: time.Since(setup)}
	cr := &CrowdReport{Mode: mode, Shoppers: len(users), Late: late, Final: map[string]int{}, Limited: map[string]int{}}
	logf(o.Log, "%s: %d shoppers arriving over the %v countdown and the 5 s after the start", mode, len(users), countdown.Round(time.Second))

	crowdCtx, stop := context.WithTimeout(ctx, 5*time.Minute)
	defer stop()
	var pg []float64
	var pgDone chan struct{}
	if transactions != nil {
		pgDone = make(chan struct{})
		go func() {
			defer close(pgDone)
			last, err := transactions(ctx)
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for err == nil {
				select {
				case <-crowdCtx.Done():
					return
				case <-t.C:
				}
				n, e := transactions(ctx)
				if e != nil {
					return
				}
				pg = append(pg, float64(max(n-last-1, 0))) // less the sampling query's own
				last = n
			}
		}()
	}
	started := time.Now()
	cpuBefore := sampleCPU(o.CPU)
	if o.Shop != nil { // the shoppers shop from other processes, and send back what they saw
		plan := &CrowdPlan{Mode: mode, Sale: *sale, CSRF: c.csrf, Until: started.Add(5 * time.Minute)}
		for _, s := range shoppers {
			plan.Shoppers = append(plan.Shoppers, PlannedShopper{ID: s.u.ID, Name: s.u.Name, Session: s.u.session, Arrive: s.arrive})
		}
		outs, reloads, err := o.Shop(ctx, plan) // each process ends its shoppers at plan.Until, then reports
		if err != nil {
			return nil, fmt.Errorf("the shoppers' processes: %w", err)
		}
		for _, out := range outs {
			if out.Who >= 0 && out.Who < len(shoppers) {
				shoppers[out.Who].Outcome = out
			}
		}
		cr.Reloads, cr.Procs = reloads, o.Procs
	} else {
		c.runShoppers(crowdCtx, rdb, sale, shoppers, mode, bar(o.Log, "answered", len(shoppers)))
		cr.Reloads = c.Reloads()
	}
	for _, s := range shoppers {
		if s.Session != "" {
			s.u.session = s.Session
		}
	}
	cpuAfter := sampleCPU(o.CPU)
	stop()
	if pgDone != nil {
		<-pgDone
	}
	rep.Result = &Result{Elapsed: time.Since(started), Kinds: map[string]int{}, Queued: map[int]int{}, Lost: map[int]int{}}
	rep.CPU = cpuUsed(o.CPU, cpuBefore, cpuAfter)
	// Up to an hour: a crowd's waits run past the requests' histogram's minute, which drops what it cannot hold.
	lat := hdrhistogram.New(1, time.Hour.Microseconds(), 3)
	for _, s := range shoppers {
		cr.Final[s.Final]++
		rep.Result.Requests += s.Reqs
		cr.Errors += s.Errors
		for k, v := range s.Limited {
			cr.Limited[k] += v
		}
		if s.Queued > 0 {
			rep.Result.Queued[s.Who] = s.Queued
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
	cr.Wait, cr.Requests, cr.PGPerSecond = summarize(lat), rep.Result.Requests, pg
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
		shoppers = append(shoppers, &crowdShopper{u: &User{ID: p.ID, Name: p.Name, session: p.Session}, arrive: p.Arrive,
			Outcome: Outcome{Who: i, Limited: map[string]int{}}})
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
	// The item page polls the item every 2 s while it is open.
	pageCtx, closePage := context.WithCancel(ctx)
	pageDone := make(chan struct{})
	defer func() { closePage(); <-pageDone }() // the page's counts are read once the shopper is done
	go func() {
		defer close(pageDone)
		for {
			var page *User // the shared pool; a page of its own sends its cookie on its own connection
			if c.own {
				page = s.u
			}
			a, err := c.Do(pageCtx, http.MethodGet, fmt.Sprintf("/api/items/%d", sale.ItemID), nil, page)
			if pageCtx.Err() != nil {
				return
			}
			s.count(a, err, "item")
			select {
			case <-pageCtx.Done():
				return
			case <-time.After(2 * time.Second):
			}
		}
	}()
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
				s.Queued++
				s.Took = time.Now()
				end(c.followResult(ctx, sale, s, wait))
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

// followResult polls the buyer's result each second as the page does, until it is final.
func (c *Client) followResult(ctx context.Context, sale *Sale, s *crowdShopper, wait func(time.Duration) bool) string {
	for ctx.Err() == nil {
		var r struct{ Status string }
		a, err := c.Do(ctx, http.MethodGet, fmt.Sprintf("/api/items/%d/result", sale.ItemID), nil, s.u)
		s.count(a, err, "result")
		if err == nil && a.Status == 200 && jsonUnmarshal(a.Body, &r) == nil {
			switch r.Status {
			case "success":
				return "bought"
			case "failed", "sold_out":
				return "sold out"
			}
		}
		if !wait(time.Second) {
			break
		}
	}
	return ""
}

// queueShopper joins the line and follows the standing until bought or sold out.
func (c *Client) queueShopper(ctx context.Context, sale *Sale, s *crowdShopper, captcha func() map[string]string,
	wait func(time.Duration) bool, end func(string)) {
	join := func() bool {
		for ctx.Err() == nil {
			fields := captcha()
			if fields == nil {
				return false
			}
			a, err := c.Do(ctx, http.MethodPost, fmt.Sprintf("/api/items/%d/queue", sale.ItemID), fields, s.u)
			s.count(a, err, "join")
			if err == nil && a.Status == 200 {
				return true
			}
			if !wait(time.Second) {
				return false
			}
		}
		return false
	}
	if !join() {
		return
	}
	for ctx.Err() == nil {
		var q struct {
			State string `json:"state"`
			Ahead *int64 `json:"ahead"`
			Path  string `json:"path"`
		}
		a, err := c.Do(ctx, http.MethodGet, fmt.Sprintf("/api/items/%d/queue", sale.ItemID), nil, s.u)
		s.count(a, err, "status")
		next := 2 * time.Second
		if err == nil && a.Status == 200 && jsonUnmarshal(a.Body, &q) == nil {
			switch q.State {
			case "your_turn":
				b, err := c.Do(ctx, http.MethodPost, fmt.Sprintf("/api/items/%d/buy/%s", sale.ItemID, q.Path), nil, s.u)
				s.count(b, err, "buy")
				if err == nil && b.Status == http.StatusAccepted {
					s.Queued++
					s.Took = time.Now()
					end(c.followResult(ctx, sale, s, wait))
					return
				}
				if err == nil && b.Code == "sold_out" {
					end("sold out")
					return
				}
				next = time.Second
			case "bought":
				end(c.followResult(ctx, sale, s, wait))
				return
			case "sold_out", "ended":
				end("sold out")
				return
			case "missed", "out":
				if !join() {
					return
				}
				continue
			default: // as item.js does: every second near the front or in the first 15 s after the start
				if q.Ahead != nil && *q.Ahead < 50 || time.Since(sale.StartsAt) < 15*time.Second {
					next = time.Second
				}
			}
		}
		if !wait(next) {
			return
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
	fmt.Fprintf(b, "%d shoppers (%d arriving after the start) for %d units, %s; %d requests in %.1f s.\n\n",
		cr.Shoppers, cr.Late, r.Options.Stock, map[string]string{"queue": "through the waiting room", "first_come": "first come"}[cr.Mode],
		cr.Requests, r.Result.Elapsed.Seconds())
	b.WriteString("| start or later join (queue), first click (first come) → final answer | p50 | p90 | p99 | max |\n| --- | --- | --- | --- | --- |\n")
	fmt.Fprintf(b, "| | %s | %s | %s | %s |\n\n", ms(cr.Wait.P50), ms(cr.Wait.P90), ms(cr.Wait.P99), ms(cr.Wait.Max))
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
	fmt.Fprintf(b, "\nThe last shopper waiting when the last unit was taken heard it was sold out %s after.", ms(cr.SoldOutNews))
	if cr.Mode == "queue" {
		fmt.Fprintf(b, " Turns that ran out unused: %d.", cr.Missed)
	}
	b.WriteString("\n")
	if len(cr.PGPerSecond) > 0 {
		total := 0.0
		for _, v := range cr.PGPerSecond {
			total += v
		}
		fmt.Fprintf(b, "\nPostgreSQL during the crowd: at most %.0f transactions a second, %.1f on average (each second: %v). "+
			"A backend reports its transactions when it next goes idle, up to a second late, so a second's count "+
			"may hold some of the one before; the average is exact.\n", cr.PGMax(), total/float64(len(cr.PGPerSecond)), cr.PGPerSecond)
	}
	if cr.Unanswered > 0 {
		fmt.Fprintf(b, "\n%d shoppers had no final answer when the crowd's time ran out; the percentiles count them as waiting it all.\n", cr.Unanswered)
	}
	if cr.Errors > 0 {
		fmt.Fprintf(b, "\nTransport errors: %d.\n", cr.Errors)
	}
	if cr.Procs > 1 {
		fmt.Fprintf(b, "\nThe shoppers shopped from %d processes of the load tool.\n", cr.Procs)
	}
	if rl := cr.Reloads; rl.Refused+rl.Lost > 0 {
		fmt.Fprintf(b, "\nRequests the pages sent again: %d turned away at accept (503 or 429, Retry-After), %d after a connection lost before an answer.\n",
			rl.Refused, rl.Lost)
	}
	b.WriteString("\n")
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
