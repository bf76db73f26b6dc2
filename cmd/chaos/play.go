package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"

	"seckill/loadtest"
)

// round is one sale with one fault.
type round struct {
	n        int
	fault    string
	scenario string
	at       float64 // the share of the buys answered when the fault struck
	rng      *rand.Rand

	rep                       *loadtest.Report
	err                       error // the scenario or the fault could not run
	struck, healed, recovered time.Time
	panics                    int
	queued                    int64  // orders queued and not yet written when the fault struck
	books                     string // the sale's books read straight from Redis and PostgreSQL
	booksOK                   bool
	lost                      int64                 // a lossy fault's bytes cut from Redis's append-only file
	flagged                   int                   // a lossy fault's: the reconciliation's warnings after it
	over                      int64                 // a lossy fault's: units Redis would sell that PostgreSQL cannot back, just after it
	flood                     *loadtest.FloodReport // conn-flood's: what the flood saw

	// A failover fault's: what it saw, and the probe's first buy queued after the strike (zero: none).
	failover     *failover
	masterStruck time.Time // when the master was killed or cut (a moment after struck: the fault asks the sentinels first)
	firstBuy     time.Time
	probe        *loadtest.Result // what the probe's buyers were answered
	probeAudit   *loadtest.Audit
	noWait       bool // run with REDIS_WAIT_REPLICAS=0: a failover fault's round measures a loss, as a lossy fault's
	// The sale's buys as the balancer answered them: 202 queued and 202 unconfirmed.
	queuedOK, unconfirmed int
}

// backIn is how long from the master's death or cut until the probe's first buy sent after it was
// queued (0: none was).
func (rd *round) backIn() time.Duration {
	if rd.firstBuy.IsZero() || rd.masterStruck.IsZero() {
		return 0
	}
	return rd.firstBuy.Sub(rd.masterStruck)
}

func (rd *round) lossy() bool {
	return faultsByName[rd.fault].lossy || rd.noWait && faultsByName[rd.fault].sentinels
}

// probeOK: the probe's sale passed its audit too (a round without a probe has nothing to fail).
func (rd *round) probeOK() bool { return rd.probeAudit == nil || rd.probeAudit.OK() }

// ok: the audit passed; for a lossy fault, PostgreSQL sold no unit beyond the stock (its own check).
func (rd *round) ok() bool {
	if rd.err != nil || rd.rep == nil || rd.rep.Audit == nil || rd.panics > 0 {
		return false
	}
	if rd.lossy() {
		st := rd.rep.Stats
		return st.OrdersPending+st.OrdersPaid+st.OrdersCancelled+st.OrdersRefunded <= rd.rep.Sale.Stock
	}
	return rd.rep.Audit.OK() && rd.booksOK && rd.probeOK()
}

// down is how long from the strike until every instance answered ready again.
func (rd *round) down() time.Duration { return rd.recovered.Sub(rd.struck) }

// afterHeal is how long from the fault's own end (the server started again, the link back) until then.
func (rd *round) afterHeal() time.Duration { return rd.recovered.Sub(rd.healed) }

func (rd *round) answers() string {
	if rd.rep == nil || rd.rep.Result == nil {
		return ""
	}
	res := rd.rep.Result
	kinds := res.KindsSorted()
	parts := make([]string, 0, len(kinds)+1)
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s %d", k, res.Kinds[k]))
	}
	if res.Errors > 0 {
		parts = append(parts, fmt.Sprintf("no answer %d", res.Errors))
	}
	return strings.Join(parts, ", ")
}

// felt says when the clients saw failures (no answer, or a 5xx), from the strike, and their first good
// answer after the last.
func (rd *round) felt() string {
	if rd.rep == nil || rd.rep.Result == nil || rd.rep.Result.FirstFailed.IsZero() {
		return "no failure"
	}
	res := rd.rep.Result
	since := func(t time.Time) time.Duration { return t.Sub(rd.struck).Round(time.Millisecond) }
	out := fmt.Sprintf("failures %v to %v", since(res.FirstFailed), since(res.LastFailed))
	if res.GoodAgain.IsZero() {
		return out + ", none good after (the buys ran out)"
	}
	return out + fmt.Sprintf(", good again at %v", since(res.GoodAgain))
}

func (rd *round) summary() string {
	switch {
	case rd.err != nil:
		return "FAILED: " + rd.err.Error()
	case !rd.ok():
		return fmt.Sprintf("FAILED audit: %s; %s (panics in the logs: %d)", strings.Join(rd.rep.Audit.Failures, "; "), rd.books, rd.panics) + rd.failoverLine()
	case rd.lossy() && rd.failover != nil:
		return "without WAIT: the audit says: " + strings.Join(append(rd.rep.Audit.Failures, rd.books), "; ") + rd.failoverLine()
	case rd.lossy():
		return fmt.Sprintf("%d bytes of Redis's writes lost; Redis would then sell %d units PostgreSQL cannot back; the audit says: %s; the reconciliation warned %d times",
			rd.lost, rd.over, strings.Join(rd.rep.Audit.Failures, "; "), rd.flagged)
	}
	flood := ""
	if rd.flood != nil {
		flood = "; " + rd.flood.String()
	}
	return fmt.Sprintf("ok: %d orders queued at the strike; down %v (%v after the fault healed); clients: %s; answers: %s; %s", rd.queued,
		rd.down().Round(time.Millisecond), rd.afterHeal().Round(time.Millisecond), rd.felt(), rd.answers(), rd.books) + flood + rd.failoverLine()
}

// play runs the round's sale through the world with its fault, and audits it.
func (w *world) play(ctx context.Context, c *config, rd *round) {
	before := w.panics()
	client := loadtest.NewClient(w.frontURL, c.conns)
	defer client.Close()
	o := loadtest.Options{Admin: loadtest.User{Name: adminName, Password: w.adminPass}, Merchant: loadtest.User{Name: merchantName, Password: w.merchPass},
		Conns: c.conns, MidRushAt: rd.at, Seed: w.seed}
	switch rd.scenario {
	case "rush":
		o.Users, o.Requests, o.Stock = max(int(20_000*c.scale), 20), max(int(100_000*c.scale), 100), 100
	case "big":
		o.Users = max(int(10_000*c.scale), 20)
		o.Requests, o.Stock = o.Users, int64(o.Users)
	}
	// A failover fault's round has a probe: a sale of its own whose buyers buy after the strike.
	var pr *buyProbe
	if faultsByName[rd.fault].sentinels {
		var err error
		if pr, err = w.newProbe(ctx); err != nil {
			rd.err = fmt.Errorf("the probe's sale: %w", err)
			return
		}
	}
	var probing sync.WaitGroup
	struck := make(chan struct{}) // closed when the strike is over
	var strikeErr error
	o.MidRush = func() {
		rd.queued, _ = w.backlog(ctx)
		rd.struck = time.Now()
		w.flood, w.failover = nil, nil
		w.struckAt.Store(0)
		if pr != nil {
			probing.Go(func() { rd.firstBuy, rd.probe = pr.buy(ctx, struck, w.strikeMoment) })
		}
		rd.healed, strikeErr = faultsByName[rd.fault].strike(ctx, w, c, rd.rng)
		close(struck)
		rd.flood, rd.failover = w.flood, w.failover
		rd.masterStruck = w.strikeMoment()
		if strikeErr == nil {
			strikeErr = waitFor(ctx, 2*time.Minute, "every instance ready after the fault", w.allReady)
		}
		rd.recovered = time.Now()
	}
	w.bal.takeBuys()
	rd.rep, rd.err = client.Buying(ctx, w.rdb, rd.scenario, o)
	probing.Wait()
	rd.noWait = c.waitReplicas == 0
	if pr != nil && rd.probe != nil && rd.err == nil {
		rd.probeAudit, rd.err = pr.audit(ctx, rd.probe)
	}
	if rd.rep != nil && rd.rep.Sale != nil {
		item := fmt.Sprint(rd.rep.Sale.ItemID)
		for _, b := range w.bal.takeBuys() {
			switch {
			case b.item != item || b.status != http.StatusAccepted:
			case b.unconfirmed:
				rd.unconfirmed++
			default:
				rd.queuedOK++
			}
		}
	}
	if rd.err == nil && strikeErr != nil {
		rd.err = strikeErr
	}
	if rd.err == nil && rd.struck.IsZero() {
		rd.err = fmt.Errorf("the fault never struck")
	}
	rd.panics = w.panics() - before
	if rd.err == nil && rd.rep != nil && rd.rep.Sale != nil {
		rd.books, rd.booksOK = w.books(ctx, rd.rep.Sale.ItemID)
	}
	if rd.lossy() && rd.err == nil {
		rd.lost, rd.over = w.lost, w.over
		// The reconciliation looks every 10 s and warns of a difference that lasts two looks.
		warned := w.logLines("stock books do not add up")
		sleep(ctx, 25*time.Second)
		rd.flagged = w.logLines("stock books do not add up") - warned
	}
}

// probeAnswers says what the probe's buyers were answered.
func probeAnswers(res *loadtest.Result) string {
	parts := []string{}
	for _, k := range res.KindsSorted() {
		parts = append(parts, fmt.Sprintf("%s %d", k, res.Kinds[k]))
	}
	if res.Errors > 0 {
		parts = append(parts, fmt.Sprintf("no answer %d", res.Errors))
	}
	return strings.Join(parts, ", ")
}

// failoverLine says what a failover fault's round saw ("" for the others).
func (rd *round) failoverLine() string {
	if rd.failover == nil {
		return ""
	}
	fo := rd.failover
	out := fmt.Sprintf("; new master named after %v", fo.promoted.Round(time.Millisecond))
	if rd.fault == "redis-partition" {
		if fo.alone >= 0 {
			out += fmt.Sprintf(", the cut master refused writes after %v", fo.alone.Round(time.Millisecond))
		} else {
			out += ", the cut master never counted its replicas gone"
		}
	}
	if b := rd.backIn(); b > 0 {
		out += fmt.Sprintf("; first probe buy queued %v after the master was killed or cut", b.Round(time.Millisecond))
	} else {
		out += "; no probe buy queued"
	}
	if rd.probe != nil {
		out += fmt.Sprintf(" (probe: %d buyers sent, %s)", rd.probe.Requests, probeAnswers(rd.probe))
	}
	if rd.probeAudit != nil && !rd.probeAudit.OK() {
		out += "; the probe's audit: " + strings.Join(rd.probeAudit.Failures, "; ")
	}
	return out + fmt.Sprintf("; set whole again after %v; the sale's 202s: %d queued, %d unconfirmed", fo.whole.Round(time.Millisecond), rd.queuedOK, rd.unconfirmed)
}

func table(rounds []*round) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-6s %-14s %-5s %6s %9s %11s  %s\n", "round", "fault", "sale", "at", "down", "after heal", "audit")
	for _, rd := range rounds {
		verdict := "ok"
		if !rd.ok() {
			verdict = "FAILED"
		}
		fmt.Fprintf(&b, "%-6d %-14s %-5s %5.0f%% %9v %11v  %s\n", rd.n, rd.fault, rd.scenario, rd.at*100,
			rd.down().Round(time.Millisecond), rd.afterHeal().Round(time.Millisecond), verdict)
	}
	return b.String()
}

// report is the run in Markdown: each round's fault, moment, answers, recovery and audit, and the
// recovery times by fault.
func report(c *config, rounds []*round) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Chaos run, %s\n\nSeed %d; %d rounds of %d faults; scale %g (rush: %d shoppers, %d buys, 100 units; big: %d shoppers and units); "+
		"Redis appendfsync %s; network cuts %v; two instances behind a balancer. Replay: `go run ./cmd/chaos -seed %d -rounds %d -scale %g -faults %s`.\n\n",
		time.Now().UTC().Format(time.RFC3339), c.seed, c.rounds, len(c.faults), c.scale, max(int(20_000*c.scale), 20), max(int(100_000*c.scale), 100),
		max(int(10_000*c.scale), 20), c.fsync, c.cut, c.seed, c.rounds, c.scale, strings.Join(c.faults, ","))
	b.WriteString("### Faults\n\n")
	for _, f := range c.faults {
		fmt.Fprintf(&b, "- `%s`: %s\n", f, describe(f, c))
	}
	b.WriteString("\n### Recovery by fault\n\nDown: from the strike until every instance answers ready again. After heal: from the fault's own end (the server started again, the link back).\n\n")
	b.WriteString("| fault | rounds | down (median, max) | after heal (median, max) | audits passed |\n| --- | --- | --- | --- | --- |\n")
	for _, f := range c.faults {
		var downs, heals []time.Duration
		passed, n := 0, 0
		for _, rd := range rounds {
			if rd.fault != f {
				continue
			}
			n++
			if rd.ok() {
				passed++
			}
			if !rd.recovered.IsZero() {
				downs, heals = append(downs, rd.down()), append(heals, rd.afterHeal())
			}
		}
		fmt.Fprintf(&b, "| `%s` | %d | %s | %s | %d of %d |\n", f, n, medianMax(downs), medianMax(heals), passed, n)
	}
	b.WriteString("\n### Rounds\n\nWhat the clients felt, from the strike: their failed answers (no answer, or a 5xx) and their first good answer after the last. " +
		"Down: until every instance answered ready.\n\n| round | fault | sale | struck at | queued then | answers the clients saw | what they felt | orders | down | audit |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, rd := range rounds {
		orders := ""
		if rd.rep != nil {
			st := rd.rep.Stats
			orders = fmt.Sprintf("%d of %d units", st.OrdersPending+st.OrdersPaid+st.OrdersCancelled+st.OrdersRefunded, st.StockTotal)
		}
		verdict := "passed"
		switch {
		case rd.err != nil:
			verdict = "**failed**: " + rd.err.Error()
		case !rd.ok():
			verdict = "**failed**: " + strings.Join(append(rd.rep.Audit.Failures, rd.books), "; ")
			if !rd.probeOK() {
				verdict += "; the probe's sale: " + strings.Join(rd.probeAudit.Failures, "; ")
			}
			if rd.panics > 0 {
				verdict += fmt.Sprintf("; %d panic lines in the logs", rd.panics)
			}
		}
		fmt.Fprintf(&b, "| %d | `%s` | %s | %.0f%% of the buys | %d | %s | %s | %s | %v | %s |\n", rd.n, rd.fault, rd.scenario, rd.at*100,
			rd.queued, rd.answers(), rd.felt(), orders, rd.down().Round(time.Millisecond), verdict)
	}
	b.WriteString(failoverSection(c, rounds))
	for _, rd := range rounds {
		if rd.flood != nil {
			fmt.Fprintf(&b, "\nRound %d, `%s` during %s: %s\n", rd.n, rd.fault, rd.scenario, strings.ReplaceAll(rd.flood.String(), "\n  ", "; "))
		}
	}
	for _, rd := range rounds {
		if !rd.lossy() || rd.rep == nil || rd.rep.Audit == nil {
			continue
		}
		if rd.failover != nil {
			fmt.Fprintf(&b, "\n### Round %d, `%s` during %s, without WAIT: what the audits said\n\nThe round's sale:\n\n", rd.n, rd.fault, rd.scenario)
			for _, line := range rd.rep.Audit.Checks {
				fmt.Fprintf(&b, "- %s\n", line)
			}
			fmt.Fprintf(&b, "- the books %s\n", rd.books)
			if rd.probeAudit != nil {
				fmt.Fprintf(&b, "\nThe probe's sale (its buyers bought from the strike on; %s):\n\n", probeAnswers(rd.probe))
				for _, line := range rd.probeAudit.Checks {
					fmt.Fprintf(&b, "- %s\n", line)
				}
			}
			continue
		}
		fmt.Fprintf(&b, "\n### Round %d, `%s` during %s: what the books said\n\n%d bytes of the append-only file cut (the writes of the last second before the kill). "+
			"Just after Redis came back it would have sold %d units that PostgreSQL cannot back. "+
			"The reconciliation warned %d times in the 25 s after the sale drained. The audit:\n\n", rd.n, rd.fault, rd.scenario, rd.lost, rd.over, rd.flagged)
		for _, line := range rd.rep.Audit.Checks {
			fmt.Fprintf(&b, "- %s\n", line)
		}
		fmt.Fprintf(&b, "- the books %s\n", rd.books)
	}
	b.WriteString("\nEach audit (the load tool's, then the harness's own reading of Redis and PostgreSQL): the 202 answers and the orders do not exceed the stock; nobody was queued twice; " +
		"stock left in Redis is the stock minus the orders in PostgreSQL; nothing is left queued; every buyer answered 202 has an order of " +
		"their own, found through their result as they would find it; an answer lost to the fault (no answer, or the balancer's 502) " +
		"that queued an order all the same is found the same way and counted; no order belongs to two buyers; read straight from Redis and PostgreSQL, " +
		"nothing is queued, Redis's count plus the orders not cancelled make the stock, and stock_sold is the orders. And no panic in the instances' logs.\n")
	return b.String()
}

// failoverSection is the failover faults' own table: when Sentinel named a new master, when a cut master
// stopped taking writes, when the probe's first buy was queued, and the sale's 202s queued and unconfirmed.
func failoverSection(c *config, rounds []*round) string {
	var b strings.Builder
	for _, rd := range rounds {
		if rd.failover == nil {
			continue
		}
		if b.Len() == 0 {
			wait := fmt.Sprintf("REDIS_WAIT_REPLICAS=%d (a buy's batch waits for a replica's acknowledgement, REDIS_WAIT_TIMEOUT 100ms, before its buyers are told queued)", c.waitReplicas)
			if c.waitReplicas == 0 {
				wait = "REDIS_WAIT_REPLICAS=0 (no WAIT: buyers are told queued as soon as the master took their units)"
			}
			fmt.Fprintf(&b, "\n### Failovers\n\nA Redis master, two replicas and three sentinels of the run's own (Redis %s): `min-replicas-to-write 1`, `min-replicas-max-lag %d`, "+
				"`maxmemory-policy noeviction`, appendonly (appendfsync %s); Sentinel quorum 2, `down-after-milliseconds %d`, `failover-timeout %d`. "+
				"The instances reach them through the sentinels (REDIS_URL with master_name), %s. "+
				"First buy: a probe sale beside the round's sends a buyer every %v from the strike until the fault is over (the set whole again); "+
				"from the master's death or cut to the first of them sent after it answered 202 queued; the probe's sale is audited as the round's (a 202 unconfirmed counted as an answer that promised nothing). "+
				"Whole again: the old master back as a replica and both replicas online.\n\n"+
				"| round | fault | sale | new master named | cut master refused writes | first buy queued | whole again | the sale's 202s: queued, unconfirmed | the probe's answers | audits |\n"+
				"| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n",
				redisVersion(), minReplicasMaxLag, c.fsync, downAfter.Milliseconds(), failoverTimeout.Milliseconds(), wait, probeEvery)
		}
		fo := rd.failover
		alone := "–"
		if rd.fault == "redis-partition" {
			alone = "not seen"
			if fo.alone >= 0 {
				alone = fo.alone.Round(10 * time.Millisecond).String()
			}
		}
		first := "none"
		if b := rd.backIn(); b > 0 {
			first = b.Round(10 * time.Millisecond).String()
		}
		verdict := "passed"
		switch {
		case rd.lossy():
			verdict = "without WAIT: see below"
		case !rd.ok():
			verdict = "**failed**"
		}
		probed := ""
		if rd.probe != nil {
			probed = fmt.Sprintf("%d sent: %s", rd.probe.Requests, probeAnswers(rd.probe))
		}
		fmt.Fprintf(&b, "| %d | `%s` | %s | %v | %s | %s | %v | %d, %d | %s | %s |\n", rd.n, rd.fault, rd.scenario, fo.promoted.Round(10*time.Millisecond),
			alone, first, fo.whole.Round(10*time.Millisecond), rd.queuedOK, rd.unconfirmed, probed, verdict)
	}
	return b.String()
}

// redisVersion answers the installed redis-server's version, as it prints it.
func redisVersion() string {
	out, err := exec.Command("redis-server", "--version").Output()
	if err != nil {
		return "of unknown version"
	}
	for _, f := range strings.Fields(string(out)) {
		if v, ok := strings.CutPrefix(f, "v="); ok {
			return v
		}
	}
	return strings.TrimSpace(string(out))
}

func medianMax(ds []time.Duration) string {
	if len(ds) == 0 {
		return "–"
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return fmt.Sprintf("%v, %v", ds[len(ds)/2].Round(10*time.Millisecond), ds[len(ds)-1].Round(10*time.Millisecond))
}
