package loadtest

import (
	"bytes"
	"fmt"
	"strings"
	"time"
)

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

// micros writes microseconds of CPU, or a dash when they were not measured.
func micros(v float64, ok bool) string {
	if !ok {
		return "–"
	}
	return fmt.Sprintf("%.1f µs", v)
}

// times writes a ratio, or a dash when it could not be computed.
func times(v float64, ok bool) string {
	if !ok {
		return "–"
	}
	return fmt.Sprintf("%.2f×", v)
}

// Headline is the report's lead: each scenario's CPU a request, the app's and Redis's, beside its
// baseline's, read from the processes' own counters (/proc/PID/stat) while the requests were fired. CPU
// a request holds where requests a second do not: the load tool shares the machine's cores with the
// server, and takes more of them when the server is quicker. Requests a second follow, as the secondary
// figure. The processes are named as the -cpu flag named them: app (the web tier, or the whole server),
// worker (the order consumer, when it runs apart), redis.
func Headline(reports []*Report) string {
	figs := FiguresOf(reports)
	worker := false
	for _, f := range figs {
		_, ok := secondsOf(f.CPU, "worker")
		worker = worker || ok
	}
	var b strings.Builder
	b.WriteString("| scenario | against | app CPU a request | Redis CPU a request | baseline's CPU a request | baseline's Redis a request | app ÷ baseline |")
	if worker {
		b.WriteString(" worker CPU an order |")
	}
	b.WriteString("\n| --- | --- | --- | --- | --- | --- | --- |")
	if worker {
		b.WriteString(" --- |")
	}
	b.WriteString("\n")
	for _, f := range figs {
		against := f.Baseline
		if f.Crowd {
			against = "none (a crowd: a request is a shopper's page's)"
		} else if against == "" {
			against = "not measured"
		}
		app, aok := f.PerRequest("app")
		red, rok := f.PerRequest("redis")
		base, bok := f.BaselinePerRequest("baseline")
		bred, brok := f.BaselinePerRequest("redis")
		ratio, ok := f.CPURatio()
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |", f.Scenario, against, micros(app, aok), micros(red, rok),
			micros(base, bok), micros(bred, brok), times(ratio, ok))
		if worker {
			w, wok := f.WorkerPerOrder()
			cell := micros(w, wok)
			if wok {
				cell = fmt.Sprintf("%s (%d orders)", cell, f.Orders)
			}
			fmt.Fprintf(&b, " %s |", cell)
		}
		b.WriteString("\n")
	}
	b.WriteString("\nCPU a request is a process's user and system time while the scenario's requests were fired, over the requests; " +
		"the baseline's is its own process's (`loadtest baseline-serve`), fired with as many requests over as many connections. " +
		"Redis is one server for the whole machine: its figure counts whatever else used it meanwhile.")
	if worker {
		b.WriteString(" The worker's CPU an order runs from the first buy until the queue was drained.")
	}
	// The counters count in ticks of a hundredth of a second: with few requests a figure is coarse.
	fewest := 0
	for _, f := range figs {
		if f.Requests > 0 && (fewest == 0 || f.Requests < fewest) {
			fewest = f.Requests
		}
	}
	if fewest > 0 {
		fmt.Fprintf(&b, " The counters tick every 10 ms: at %d requests a tick is %.1f µs a request.", fewest, 1e6/clockTicks/float64(fewest))
	}
	b.WriteString("\n\n")
	head := false
	for _, f := range figs {
		if f.Crowd {
			continue // a crowd's requests are paced by its shoppers, not fired as fast as answered
		}
		if !head {
			b.WriteString("Requests a second, the secondary figure (the load tool takes its share of the same cores):\n\n")
			b.WriteString("| scenario | req/s | baseline's req/s | ratio |\n| --- | --- | --- | --- |\n")
			head = true
		}
		base, ratio := "–", "–"
		if f.BaselineReqPerSec > 0 {
			base, ratio = fmt.Sprintf("%.0f", f.BaselineReqPerSec), fmt.Sprintf("%.2f", f.RateRatio())
		}
		fmt.Fprintf(&b, "| %s | %.0f | %s | %s |\n", f.Scenario, f.ReqPerSec, base, ratio)
	}
	if head {
		b.WriteString("\n")
	}
	return b.String()
}

// writeCPU writes what each measured tier spent on the requests: CPU time per request is the figure that
// holds when a shared machine makes requests a second noisy.
func writeCPU(b *strings.Builder, cpu []CPUUse, requests int) {
	if len(cpu) == 0 {
		return
	}
	b.WriteString("| CPU while firing | core-seconds | CPU per request | requests per core-second |\n| --- | --- | --- | --- |\n")
	for _, u := range cpu {
		per, each := "–", "–"
		if u.Seconds > 0 && requests > 0 {
			each = fmt.Sprintf("%.1f µs", u.Seconds*1e6/float64(requests))
			if u.Name != "worker" { // it answers no request: its cost a request is a share, not a rate
				per = fmt.Sprintf("%.0f", float64(requests)/u.Seconds)
			}
		}
		fmt.Fprintf(b, "| %s | %.2f | %s | %s |\n", u.Name, u.Seconds, each, per)
	}
	b.WriteString("\n")
}

// Markdown writes the reports as a Markdown section each, with their charts' file names.
func Markdown(reports []*Report, charts map[string]string) string {
	var b strings.Builder
	for _, r := range reports {
		res := r.Result
		fmt.Fprintf(&b, "### %s\n\n", r.Scenario)
		if r.Crowd != nil {
			crowdMarkdown(&b, r)
			writeCPU(&b, r.CPU, res.Requests)
			writeAudit(&b, r)
			continue
		}
		f := FiguresOf([]*Report{r})[0]
		if app, ok := f.PerRequest("app"); ok {
			fmt.Fprintf(&b, "App CPU **%s** a request", micros(app, true))
			if red, ok := f.PerRequest("redis"); ok {
				fmt.Fprintf(&b, " (Redis %s)", micros(red, true))
			}
			if base, ok := f.BaselinePerRequest("baseline"); ok {
				fmt.Fprintf(&b, "; %s, in a process of its own: %s", r.Baseline, micros(base, true))
				if red, ok := f.BaselinePerRequest("redis"); ok {
					fmt.Fprintf(&b, " (Redis %s)", micros(red, true))
				}
				if ratio, ok := f.CPURatio(); ok {
					fmt.Fprintf(&b, ", ratio **%s**", times(ratio, true))
				}
			}
			b.WriteString(".\n\n")
		}
		fmt.Fprintf(&b, "%d requests over %d connections in %.2f s: %.0f req/s", res.Requests, r.Options.Conns, res.Elapsed.Seconds(), res.Throughput())
		if r.BaselineRS > 0 {
			fmt.Fprintf(&b, "; %s measured in the same run: %.0f req/s, ratio %.2f", r.Baseline, r.BaselineRS, r.Ratio())
		}
		if r.Options.Shards > 1 {
			fmt.Fprintf(&b, "; the item's stock split over %d shards", r.Options.Shards)
		}
		b.WriteString(".\n\n")
		b.WriteString("| latency | p50 | p90 | p99 | p99.9 | max |\n| --- | --- | --- | --- | --- | --- |\n")
		l := res.Latency
		fmt.Fprintf(&b, "| | %s | %s | %s | %s | %s |\n\n", ms(l.P50), ms(l.P90), ms(l.P99), ms(l.P999), ms(l.Max))
		b.WriteString("| answer | count |\n| --- | --- |\n")
		for _, k := range res.KindsSorted() {
			fmt.Fprintf(&b, "| %s | %d |\n", k, res.Kinds[k])
		}
		if res.Errors > 0 {
			fmt.Fprintf(&b, "| no answer (transport error) | %d |\n", res.Errors)
		}
		b.WriteString("\n")
		writeCPU(&b, append(append([]CPUUse(nil), r.CPU...), duringBaseline(r.BaselineCPU)...), res.Requests)
		if len(r.DrainCPU) > 0 && r.Orders > 0 {
			fmt.Fprintf(&b, "From the first buy until the queue was drained (%d orders):", r.Orders)
			for i, u := range r.DrainCPU {
				sep := ","
				if i == 0 {
					sep = ""
				}
				fmt.Fprintf(&b, "%s %s %.2f core-seconds (%.1f µs an order)", sep, u.Name, u.Seconds, u.Seconds*1e6/float64(r.Orders))
			}
			b.WriteString(".\n\n")
		}
		if r.Drain > 0 || r.DrainRate > 0 {
			fmt.Fprintf(&b, "Queue drained %s after the last answer; orders written at %.0f/s from the first buy to the drained queue.\n\n", ms(r.Drain), r.DrainRate)
		}
		writeAudit(&b, r)
		if f, ok := charts[r.Scenario]; ok {
			fmt.Fprintf(&b, "![%s: latency and throughput over time](%s)\n\n", r.Scenario, f)
		}
	}
	return b.String()
}

// duringBaseline names the baseline's processes for a scenario's CPU table, beside the app's.
func duringBaseline(us []CPUUse) []CPUUse {
	out := make([]CPUUse, len(us))
	for i, u := range us {
		out[i] = CPUUse{Name: u.Name + ", during the baseline", Seconds: u.Seconds}
		if u.Name == "baseline" {
			out[i].Name = "the baseline's own process"
		}
	}
	return out
}

func writeAudit(b *strings.Builder, r *Report) {
	if r.Audit == nil {
		return
	}
	verdict := "**passed**"
	if !r.Audit.OK() {
		verdict = "**FAILED**"
	}
	fmt.Fprintf(b, "Audit %s:\n\n", verdict)
	for _, c := range r.Audit.Checks {
		fmt.Fprintf(b, "- %s\n", c)
	}
	b.WriteString("\n")
}

// Terminal is a short summary for the terminal.
func Terminal(reports []*Report) string {
	var b strings.Builder
	for _, r := range reports {
		res := r.Result
		if cr := r.Crowd; cr != nil {
			fmt.Fprintf(&b, "%-8s %d shoppers: start → final p50 %s p90 %s p99 %s; final %v; 429 %v; PostgreSQL max %.0f/s; sold-out news %s; missed turns %d",
				r.Scenario, cr.Shoppers, ms(cr.Wait.P50), ms(cr.Wait.P90), ms(cr.Wait.P99), cr.Final, cr.Limited, cr.PGMax(), ms(cr.SoldOutNews), cr.Missed)
			fmt.Fprintf(&b, "; requests a shopper: %.2f made", float64(cr.Requests)/float64(max(cr.Shoppers, 1)))
			if cr.Reached != nil {
				fmt.Fprintf(&b, ", %.2f reached the instances", cr.ReachedPerShopper())
			}
			if len(cr.Statements) > 0 {
				fmt.Fprintf(&b, "; statements max %.0f/s (orders %.0f/s)", cr.StatementsMax(), maxOf(cr.Orders))
			}
			if cr.Lag.Count > 0 {
				fmt.Fprintf(&b, "; lag p99 %s", ms(cr.Lag.P99))
			}
			if r.Audit != nil && !r.Audit.OK() {
				fmt.Fprintf(&b, "  AUDIT FAILED: %s", strings.Join(r.Audit.Failures, "; "))
			} else if r.Audit != nil {
				b.WriteString("  audit ok")
			}
			b.WriteString("\n")
			continue
		}
		fmt.Fprintf(&b, "%-8s", r.Scenario)
		f := FiguresOf([]*Report{r})[0]
		if app, ok := f.PerRequest("app"); ok {
			fmt.Fprintf(&b, " app %s/req", micros(app, true))
			if ratio, ok := f.CPURatio(); ok {
				base, _ := f.BaselinePerRequest("baseline")
				fmt.Fprintf(&b, " (%s of %s's %s)", times(ratio, true), r.Baseline, micros(base, true))
			}
			if w, ok := f.WorkerPerOrder(); ok {
				fmt.Fprintf(&b, ", worker %s/order", micros(w, true))
			}
			b.WriteString(";")
		}
		fmt.Fprintf(&b, " %8.0f req/s", res.Throughput())
		if r.BaselineRS > 0 {
			fmt.Fprintf(&b, " (%.2f of %s)", r.Ratio(), r.Baseline)
		}
		fmt.Fprintf(&b, "  p50 %s p99 %s max %s", ms(res.Latency.P50), ms(res.Latency.P99), ms(res.Latency.Max))
		if r.Audit != nil {
			if r.Audit.OK() {
				b.WriteString("  audit ok")
			} else {
				fmt.Fprintf(&b, "  AUDIT FAILED: %s", strings.Join(r.Audit.Failures, "; "))
			}
		}
		b.WriteString("\n    ")
		for _, k := range res.KindsSorted() {
			fmt.Fprintf(&b, "%s ×%d  ", k, res.Kinds[k])
		}
		b.WriteString("\n")
	}
	return b.String()
}

// ChartSVG draws a run's p50 and p99 latency per second (lines, left axis) and requests per second
// (bars, right axis).
func ChartSVG(r *Report) []byte {
	const w, h, left, right, top, bottom = 760, 260, 60, 60, 20, 34
	pw, ph := float64(w-left-right), float64(h-top-bottom)
	secs := r.Result.PerSecond
	var peakLat time.Duration = time.Millisecond
	var peakN int64 = 1
	for _, s := range secs {
		peakLat = max(peakLat, s.P99)
		peakN = max(peakN, s.Count)
	}
	n := max(len(secs), 1)
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`, w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/><text x="%d" y="14" font-size="13" fill="#1d2330">%s: latency (lines) and requests per second (bars)</text>`, w, h, left, r.Scenario)
	bw := pw / float64(n)
	for i, s := range secs {
		bh := ph * float64(s.Count) / float64(peakN)
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#dbe4f0"/>`, float64(left)+bw*float64(i)+1, float64(top)+ph-bh, max(bw-2, 1), bh)
	}
	line := func(color string, pick func(Summary) time.Duration) {
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="`, color)
		for i, s := range secs {
			x := float64(left) + bw*(float64(i)+0.5)
			y := float64(top) + ph*(1-float64(pick(s))/float64(peakLat))
			fmt.Fprintf(&b, "%.1f,%.1f ", x, y)
		}
		b.WriteString(`"/>`)
	}
	line("#1a7f37", func(s Summary) time.Duration { return s.P50 })
	line("#d4351c", func(s Summary) time.Duration { return s.P99 })
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end" fill="#d4351c">%s</text><text x="%d" y="%d" text-anchor="end" fill="#5b6475">0</text>`,
		left-6, top+8, ms(peakLat), left-6, top+int(ph))
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#5b6475">%d req/s</text>`, w-right+6, top+8, int64(float64(peakN)/Bucket.Seconds()))
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#1a7f37">p50</text><text x="%d" y="%d" fill="#d4351c">p99</text><text x="%d" y="%d" fill="#5b6475">%.1f s from the first request, in steps of %v</text>`,
		left, h-10, left+40, h-10, left+90, h-10, float64(len(secs))*Bucket.Seconds(), Bucket)
	b.WriteString(`</svg>`)
	return b.Bytes()
}

// Goals checks the figures against the product's goals: one row per goal with the scenario it is read
// from, what was measured, and whether it was met.
func Goals(reports []*Report) string {
	by := map[string]*Report{}
	for _, r := range reports {
		by[r.Scenario] = r
	}
	var b strings.Builder
	b.WriteString("| goal | measured | |\n| --- | --- | --- |\n")
	row := func(goal, measured string, met bool) {
		mark := "met"
		if !met {
			mark = "**not met**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", goal, measured, mark)
	}
	// The goals on CPU: the app's CPU a request at most 1.5 times its baseline's, each in a
	// process of its own, measured while as many requests were fired at each.
	cpuRow := func(goal string, r *Report) {
		f := FiguresOf([]*Report{r})[0]
		app, aok := f.PerRequest("app")
		base, bok := f.BaselinePerRequest("baseline")
		ratio, ok := f.CPURatio()
		if !ok {
			fmt.Fprintf(&b, "| %s | not measured (app %s, baseline %s: give -cpu app=PID) | – |\n", goal, micros(app, aok), micros(base, bok))
			return
		}
		measured := fmt.Sprintf("%s ÷ %s = %s", micros(app, true), micros(base, true), times(ratio, true))
		if red, ok := f.PerRequest("redis"); ok {
			bred, _ := f.BaselinePerRequest("redis")
			measured += fmt.Sprintf(" (Redis %s against %s)", micros(red, true), micros(bred, true))
		}
		row(goal, measured, ratio <= 1.5)
	}
	if r := by["soldout"]; r != nil {
		cpuRow("sold-out buy answer: app CPU a request ≤ 1.5× a bare Fiber handler's (soldout)", r)
	}
	for _, name := range []string{"rush", "big"} {
		if r := by[name]; r != nil {
			cpuRow(fmt.Sprintf("a buy in stock: app CPU a request ≤ 1.5× a Fiber handler with one EVALSHA (%s)", name), r)
		}
	}
	if r := by["big"]; r != nil {
		row("buys while stock lasts ≥ 0.8 of one EVALSHA (big)", fmt.Sprintf("%.2f", r.Ratio()), r.Ratio() >= 0.8)
		row("orders drained ≥ 5,000/s (big)", fmt.Sprintf("%.0f/s", r.DrainRate), r.DrainRate >= 5000)
	}
	if r := by["soldout"]; r != nil {
		row("sold-out answers ≥ 0.8 of a bare handler (soldout)", fmt.Sprintf("%.2f", r.Ratio()), r.Ratio() >= 0.8)
	}
	if r := by["pages"]; r != nil {
		row("detail page ≥ 0.7 of a bare handler (pages)", fmt.Sprintf("%.2f", r.Ratio()), r.Ratio() >= 0.7)
	}
	for _, name := range []string{"queue", "crowd"} {
		if r := by[name]; r != nil && r.Crowd != nil {
			cr := r.Crowd
			row(fmt.Sprintf("every shopper a final answer, p99 ≤ 5 s from the start or a later arrival (%s)", name), ms(cr.Wait.P99),
				cr.Wait.P99 <= 5*time.Second && cr.Final["bought"]+cr.Final["sold out"] == cr.Shoppers)
			limited := 0
			for _, n := range cr.Limited {
				limited += n
			}
			row(fmt.Sprintf("no 429 to a shopper asking at most once a second (%s)", name), fmt.Sprint(cr.Limited), limited == 0)
			if cr.Reached != nil {
				row(fmt.Sprintf("requests reaching the instances ≤ 6 a shopper (%s, %d shoppers)", name, cr.Shoppers),
					fmt.Sprintf("%.2f (%.2f made)", cr.ReachedPerShopper(), float64(cr.Requests)/float64(max(cr.Shoppers, 1))), cr.ReachedPerShopper() <= 6)
			}
			// The app's own counters when the instances keep them (its transactions; else its statements,
			// at least as many as the transactions they make up), else PostgreSQL's count of transactions.
			switch {
			case len(cr.Transactions) > 0:
				row(fmt.Sprintf("PostgreSQL ≤ 50 transactions a second during the crowd (%s; the app's own counters)", name),
					fmt.Sprintf("%.0f/s at most; statements %.0f/s, on orders %.0f/s", maxOf(cr.Transactions), cr.StatementsMax(), maxOf(cr.Orders)),
					maxOf(cr.Transactions) <= 50)
			case len(cr.Statements) > 0:
				row(fmt.Sprintf("PostgreSQL ≤ 50 transactions a second during the crowd (%s; the app's statements, orders apart)", name),
					fmt.Sprintf("%.0f statements/s at most (orders %.0f/s)", cr.StatementsMax(), maxOf(cr.Orders)), cr.StatementsMax() <= 50)
			case len(cr.PGPerSecond) > 0:
				row(fmt.Sprintf("PostgreSQL ≤ 50 transactions a second during the crowd (%s; pg_stat_database)", name), fmt.Sprintf("%.0f/s", cr.PGMax()), cr.PGMax() <= 50)
			}
		}
	}
	if r := by["rush"]; r != nil {
		row(fmt.Sprintf("p99 < 50 ms at %d connections (rush)", r.Options.Conns), ms(r.Result.Latency.P99), r.Result.Latency.P99 < 50*time.Millisecond)
	}
	return b.String()
}
