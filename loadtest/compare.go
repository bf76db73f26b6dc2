package loadtest

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Figures are a scenario's headline figures, kept as JSON (the load tool's -json) to be set side by side
// with another run's: one instance against two, say.
type Figures struct {
	Scenario  string   `json:"scenario"`
	Shards    int      `json:"shards"`
	Requests  int      `json:"requests"`
	ReqPerSec float64  `json:"req_per_sec"`
	P50       float64  `json:"p50_ms"`
	P99       float64  `json:"p99_ms"`
	Answers   int      `json:"answers_2xx"` // 200 and 202 answers
	DrainRate float64  `json:"drain_per_sec,omitempty"`
	AuditOK   bool     `json:"audit_ok"`
	CPU       []CPUUse `json:"cpu,omitempty"`
	// The baseline, in the same run: its requests a second, and the CPU its own process ("baseline") and
	// Redis ("redis") used while as many requests were fired at it.
	Baseline          string   `json:"baseline,omitempty"`
	BaselineReqPerSec float64  `json:"baseline_req_per_sec,omitempty"`
	BaselineRequests  int      `json:"baseline_requests,omitempty"`
	BaselineCPU       []CPUUse `json:"baseline_cpu,omitempty"`
	// A buying scenario's orders, and the CPU used from the first buy until its queue was drained.
	Orders   int      `json:"orders,omitempty"`
	DrainCPU []CPUUse `json:"drain_cpu,omitempty"`
	Crowd    bool     `json:"crowd,omitempty"` // crowd and queue: no baseline, requests are the shoppers' pages'
}

// PerRequest answers the CPU the processes named name used a request, in microseconds, and whether they
// were measured.
func (f Figures) PerRequest(name string) (float64, bool) {
	s, ok := secondsOf(f.CPU, name)
	if !ok || f.Requests == 0 {
		return 0, false
	}
	return s * 1e6 / float64(f.Requests), true
}

// BaselinePerRequest is PerRequest for the baseline's processes: "baseline" (its own) or "redis".
func (f Figures) BaselinePerRequest(name string) (float64, bool) {
	s, ok := secondsOf(f.BaselineCPU, name)
	if !ok || f.BaselineRequests == 0 {
		return 0, false
	}
	return s * 1e6 / float64(f.BaselineRequests), true
}

// CPURatio answers the app's CPU a request over the baseline process's: the headline figure.
func (f Figures) CPURatio() (float64, bool) {
	app, ok1 := f.PerRequest("app")
	base, ok2 := f.BaselinePerRequest("baseline")
	if !ok1 || !ok2 || base <= 0 {
		return 0, false
	}
	return app / base, true
}

// WorkerPerOrder answers the worker's CPU an order, in microseconds, from the first buy until the queue
// was drained, and whether it was measured (a buying scenario, with a process named worker).
func (f Figures) WorkerPerOrder() (float64, bool) {
	s, ok := secondsOf(f.DrainCPU, "worker")
	if !ok || f.Orders == 0 {
		return 0, false
	}
	return s * 1e6 / float64(f.Orders), true
}

// RateRatio answers the scenario's requests a second over its baseline's.
func (f Figures) RateRatio() float64 {
	if f.BaselineReqPerSec == 0 {
		return 0
	}
	return f.ReqPerSec / f.BaselineReqPerSec
}

// FiguresOf takes the headline figures of reports.
func FiguresOf(reports []*Report) []Figures {
	out := make([]Figures, 0, len(reports))
	for _, r := range reports {
		msf := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
		f := Figures{Scenario: r.Scenario, Shards: max(r.Options.Shards, 1), Requests: r.Result.Requests, ReqPerSec: r.Result.Throughput(),
			P50: msf(r.Result.Latency.P50), P99: msf(r.Result.Latency.P99), Answers: r.Result.Kinds["200"] + r.Result.Kinds["202"],
			DrainRate: r.DrainRate, AuditOK: r.Audit == nil || r.Audit.OK(), CPU: r.CPU,
			Baseline: r.Baseline, BaselineReqPerSec: r.BaselineRS, BaselineRequests: r.BaselineRequests, BaselineCPU: r.BaselineCPU,
			Orders: r.Orders, DrainCPU: r.DrainCPU, Crowd: r.Crowd != nil}
		out = append(out, f)
	}
	return out
}

// SideBySide is a Markdown table of runs' figures, scenario by scenario: throughput and p99 for each
// run, the last run's throughput over the first's, and what one request cost each measured process.
func SideBySide(labels []string, runs [][]Figures) string {
	var b strings.Builder
	b.WriteString("| scenario |")
	for _, l := range labels {
		fmt.Fprintf(&b, " %s: req/s | p99 |", l)
	}
	if len(runs) > 1 {
		fmt.Fprintf(&b, " %s ÷ %s |", labels[len(labels)-1], labels[0])
	}
	b.WriteString(" audits |\n|" + strings.Repeat(" --- |", 2+2*len(labels)+min(len(runs)-1, 1)) + "\n")
	key := func(f Figures) string {
		if f.Shards > 1 {
			return fmt.Sprintf("%s, %d shards", f.Scenario, f.Shards)
		}
		return f.Scenario
	}
	var order []string
	by := make([]map[string]Figures, len(runs))
	for i, run := range runs {
		by[i] = map[string]Figures{}
		for _, f := range run {
			k := key(f)
			if i == 0 {
				order = append(order, k)
			}
			by[i][k] = f
		}
	}
	for _, k := range order {
		fmt.Fprintf(&b, "| %s |", k)
		ok := true
		for i := range runs {
			f, found := by[i][k]
			if !found {
				b.WriteString(" – | – |")
				continue
			}
			ok = ok && f.AuditOK
			fmt.Fprintf(&b, " %.0f | %.1f ms |", f.ReqPerSec, f.P99)
		}
		if len(runs) > 1 {
			first, last := by[0][k], by[len(runs)-1][k]
			if first.ReqPerSec > 0 && last.ReqPerSec > 0 {
				fmt.Fprintf(&b, " %.2f |", last.ReqPerSec/first.ReqPerSec)
			} else {
				b.WriteString(" – |")
			}
		}
		if ok {
			b.WriteString(" passed |\n")
		} else {
			b.WriteString(" **FAILED** |\n")
		}
	}
	// The headline: the app's CPU a request, and over its baseline's, per run.
	measured := false
	for _, run := range runs {
		for _, f := range run {
			_, ok := f.PerRequest("app")
			measured = measured || ok
		}
	}
	if measured {
		b.WriteString("\nThe app's CPU a request, and over its baseline's (a process of its own, as many requests):\n\n| scenario |")
		for _, l := range labels {
			fmt.Fprintf(&b, " %s: app | ÷ baseline |", l)
		}
		b.WriteString("\n|" + strings.Repeat(" --- |", 1+2*len(labels)) + "\n")
		for _, k := range order {
			fmt.Fprintf(&b, "| %s |", k)
			for i := range runs {
				f, found := by[i][k]
				app, ok := f.PerRequest("app")
				ratio, rok := f.CPURatio()
				fmt.Fprintf(&b, " %s | %s |", micros(app, found && ok), times(ratio, found && rok))
			}
			b.WriteString("\n")
		}
	}
	// What a request costs each tier: requests per core-second of CPU, per run.
	names := map[string]bool{}
	var procs []string
	for _, run := range runs {
		for _, f := range run {
			for _, u := range f.CPU {
				if !names[u.Name] {
					names[u.Name] = true
					procs = append(procs, u.Name)
				}
			}
		}
	}
	if len(procs) == 0 {
		return b.String()
	}
	b.WriteString("\nRequests per core-second of CPU, by process (what one core of each tier serves):\n\n| scenario |")
	for _, l := range labels {
		for _, p := range procs {
			fmt.Fprintf(&b, " %s: %s |", l, p)
		}
	}
	b.WriteString("\n|" + strings.Repeat(" --- |", 1+len(labels)*len(procs)) + "\n")
	for _, k := range order {
		fmt.Fprintf(&b, "| %s |", k)
		for i := range runs {
			f := by[i][k]
			for _, p := range procs {
				cell := "–"
				for _, u := range f.CPU {
					if u.Name == p && u.Seconds > 0 {
						cell = fmt.Sprintf("%.0f", float64(f.Requests)/u.Seconds)
					}
				}
				fmt.Fprintf(&b, " %s |", cell)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// Median takes several runs of the same scenarios and answers, scenario by scenario, the median of each
// figure (the noise of a shared machine differs from run to run); an audit passed only if it passed in
// every run.
func Median(runs [][]Figures) []Figures {
	if len(runs) == 1 {
		return runs[0]
	}
	key := func(f Figures) string { return fmt.Sprintf("%s/%d", f.Scenario, f.Shards) }
	var out []Figures
	for _, first := range runs[0] {
		var same []Figures
		for _, run := range runs {
			for _, f := range run {
				if key(f) == key(first) {
					same = append(same, f)
				}
			}
		}
		m := first
		pick := func(get func(Figures) float64) float64 {
			v := make([]float64, len(same))
			for i, f := range same {
				v[i] = get(f)
			}
			return median(v)
		}
		m.ReqPerSec = pick(func(f Figures) float64 { return f.ReqPerSec })
		m.P50 = pick(func(f Figures) float64 { return f.P50 })
		m.P99 = pick(func(f Figures) float64 { return f.P99 })
		m.DrainRate = pick(func(f Figures) float64 { return f.DrainRate })
		m.BaselineReqPerSec = pick(func(f Figures) float64 { return f.BaselineReqPerSec })
		cpu := func(of func(Figures) []CPUUse) []CPUUse {
			var out []CPUUse
			for _, u := range of(first) {
				out = append(out, CPUUse{Name: u.Name, Seconds: pick(func(f Figures) float64 {
					s, _ := secondsOf(of(f), u.Name)
					return s
				})})
			}
			return out
		}
		m.CPU = cpu(func(f Figures) []CPUUse { return f.CPU })
		m.BaselineCPU = cpu(func(f Figures) []CPUUse { return f.BaselineCPU })
		m.DrainCPU = cpu(func(f Figures) []CPUUse { return f.DrainCPU })
		for _, f := range same {
			m.AuditOK = m.AuditOK && f.AuditOK
		}
		out = append(out, m)
	}
	return out
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
