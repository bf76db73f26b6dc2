package loadtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestLatencies(t *testing.T) {
	start := time.Now()
	l := NewLatencies(start)
	for i := 1; i <= 1000; i++ { // 1 ms .. 1000 ms, in the first two buckets
		l.Record(start.Add(time.Duration(i%2)*Bucket), time.Duration(i)*time.Millisecond)
	}
	s := l.Summary()
	if s.Count != 1000 {
		t.Fatalf("count %d", s.Count)
	}
	near := func(got, want time.Duration) bool { return got >= want*99/100 && got <= want*101/100 }
	if !near(s.P50, 500*time.Millisecond) || !near(s.P99, 990*time.Millisecond) || !near(s.Max, time.Second) {
		t.Errorf("p50 %v p99 %v max %v, want about 500ms, 990ms, 1s", s.P50, s.P99, s.Max)
	}
	per := l.PerSecond()
	if len(per) != 2 || per[0].Count != 500 || per[1].Count != 500 {
		t.Errorf("per second: %+v", per)
	}
}

func sampleReport(ok bool) *Report {
	res := &Result{Requests: 1000, Elapsed: 2 * time.Second, Kinds: map[string]int{"202": 100, "409 sold_out": 880, "403 invalid_path": 20},
		Latency:   Summary{Count: 1000, P50: 3 * time.Millisecond, P90: 9 * time.Millisecond, P99: 20 * time.Millisecond, Max: 40 * time.Millisecond},
		PerSecond: []Summary{{Count: 600, P50: time.Millisecond, P99: 10 * time.Millisecond}, {Count: 400, P50: 2 * time.Millisecond, P99: 20 * time.Millisecond}}}
	a := &Audit{}
	a.check(true, "first check")
	a.check(ok, "second check")
	return &Report{Scenario: "rush", Options: Options{Conns: 50}, Result: res, Audit: a, Baseline: "a Fiber handler with one EVALSHA", BaselineRS: 625,
		Drain: 250 * time.Millisecond, DrainRate: 44}
}

func TestReport(t *testing.T) {
	r := sampleReport(true)
	if r.Result.Throughput() != 500 || r.Ratio() != 0.8 {
		t.Fatalf("throughput %v ratio %v, want 500 and 0.8", r.Result.Throughput(), r.Ratio())
	}
	md := Markdown([]*Report{r}, map[string]string{"rush": "run-rush.svg"})
	for _, want := range []string{"### rush", "in 2.00 s: 500 req/s", "ratio 0.80", "| | 3.0 ms | 9.0 ms | 20.0 ms |", "| 409 sold_out | 880 |",
		"Audit **passed**", "- ok: second check", "](run-rush.svg)", "Queue drained 250.0 ms"} {
		if !strings.Contains(md, want) {
			t.Errorf("the Markdown report lacks %q:\n%s", want, md)
		}
	}
	if kinds := r.Result.KindsSorted(); kinds[0] != "409 sold_out" || kinds[2] != "403 invalid_path" {
		t.Errorf("answers not sorted by count: %v", kinds)
	}
	failed := Markdown([]*Report{sampleReport(false)}, nil)
	if !strings.Contains(failed, "Audit **FAILED**") || !strings.Contains(failed, "- FAILED: second check") {
		t.Errorf("a failed audit does not say so:\n%s", failed)
	}
	if term := Terminal([]*Report{sampleReport(false)}); !strings.Contains(term, "AUDIT FAILED: second check") {
		t.Errorf("the terminal report hides the failure: %s", term)
	}
	svg := string(ChartSVG(r))
	if !strings.HasPrefix(svg, "<svg") || strings.Count(svg, "<polyline") != 2 || strings.Count(svg, `fill="#dbe4f0"`) != 2 {
		t.Errorf("the chart lacks its two lines and two bars: %s", svg)
	}
}

func TestGoals(t *testing.T) {
	big := sampleReport(true)
	big.Scenario = "big"
	big.DrainRate = 6000
	rush := sampleReport(true) // p99 20 ms
	g := Goals([]*Report{big, rush})
	for _, want := range []string{"| buys while stock lasts ≥ 0.8 of one EVALSHA (big) | 0.80 | met |", "| orders drained ≥ 5,000/s (big) | 6000/s | met |",
		"| p99 < 50 ms at 50 connections (rush) | 20.0 ms | met |",
		"| a buy in stock: app CPU a request ≤ 1.5× a Fiber handler with one EVALSHA (rush) | not measured (app –, baseline –: give -cpu app=PID) | – |"} {
		if !strings.Contains(g, want) {
			t.Errorf("goals lack %q:\n%s", want, g)
		}
	}
	big.BaselineRS = 1000
	if g := Goals([]*Report{big}); !strings.Contains(g, "| 0.50 | **not met** |") {
		t.Errorf("a missed goal is not marked:\n%s", g)
	}
}

func TestCPUOfProcesses(t *testing.T) {
	ps, err := ParseProcesses(fmt.Sprintf("self=%d;gone=999999999", os.Getpid()))
	if err != nil || len(ps) != 2 || ps[0].Name != "self" || ps[0].PIDs[0] != os.Getpid() {
		t.Fatalf("parsed %+v, %v", ps, err)
	}
	for _, bad := range []string{"self", "=1", "self=x", "self=-3"} {
		if _, err := ParseProcesses(bad); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
	// Burn at least 0.2 s of this process's CPU, however long the shared machine makes that take.
	burn := func() {
		start, _ := cpuSeconds(os.Getpid())
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
			if now, _ := cpuSeconds(os.Getpid()); now-start >= 0.2 {
				return
			}
			for i := 0; i < 1e6; i++ {
				_ = i * i
			}
		}
	}
	use := measureCPU(ps, burn)
	if use[0].Name != "self" || use[0].Seconds < 0.2 || use[1].Seconds != 0 {
		t.Errorf("measured %+v, want at least 0.2 s for self and nothing for a process that does not exist", use)
	}
	r := sampleReport(true)
	r.CPU = use[:1]
	if md := Markdown([]*Report{r}, nil); !strings.Contains(md, "| self | ") || !strings.Contains(md, "requests per core-second") {
		t.Errorf("the report lacks the CPU table:\n%s", md)
	}
}

func TestSideBySide(t *testing.T) {
	one, two := sampleReport(true), sampleReport(true)
	one.CPU = []CPUUse{{Name: "app", Seconds: 2}}
	two.CPU = []CPUUse{{Name: "app", Seconds: 4}}
	two.Result = &Result{Requests: 1000, Elapsed: time.Second, Kinds: map[string]int{"202": 100}}
	big := sampleReport(false)
	big.Scenario, big.Options.Shards = "big", 4
	md := SideBySide([]string{"one", "two"}, [][]Figures{FiguresOf([]*Report{one, big}), FiguresOf([]*Report{two})})
	for _, want := range []string{"| rush | 500 | 20.0 ms | 1000 |", "| 2.00 | passed |", "| big, 4 shards | 500 | 20.0 ms | – | – | – | **FAILED** |",
		"| scenario | one: app | two: app |", "| rush | 500 | 250 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("the table lacks %q:\n%s", want, md)
		}
	}
}

func TestMedianOfRuns(t *testing.T) {
	run := func(rps, cpu float64, ok bool) []Figures {
		return []Figures{{Scenario: "big", Shards: 1, ReqPerSec: rps, P99: rps / 100, AuditOK: ok, CPU: []CPUUse{{Name: "app", Seconds: cpu}}}}
	}
	m := Median([][]Figures{run(300, 3, true), run(100, 1, true), run(200, 5, true)})
	if len(m) != 1 || m[0].ReqPerSec != 200 || m[0].P99 != 2 || m[0].CPU[0].Seconds != 3 || !m[0].AuditOK {
		t.Errorf("median of three runs: %+v", m)
	}
	if m := Median([][]Figures{run(100, 1, true), run(300, 3, false)}); m[0].ReqPerSec != 200 || m[0].AuditOK {
		t.Errorf("median of two runs, one audit failed: %+v", m)
	}
}

// cpuReports are a rush, a soldout and a queue crowd with their processes' CPU: the rush's app spent 50
// µs a request against its baseline's 25, the soldout's 30 against 25, and the rush's worker 300 µs on
// each of its 100 orders.
func cpuReports() []*Report {
	rush := sampleReport(true) // 1,000 requests, 500 req/s against 625
	rush.CPU = []CPUUse{{Name: "app", Seconds: 0.05}, {Name: "worker", Seconds: 0.002}, {Name: "redis", Seconds: 0.01}}
	rush.BaselineCPU, rush.BaselineRequests = []CPUUse{{Name: "baseline", Seconds: 0.025}, {Name: "redis", Seconds: 0.005}}, 1000
	rush.Orders, rush.DrainCPU = 100, []CPUUse{{Name: "app", Seconds: 0.06}, {Name: "worker", Seconds: 0.03}, {Name: "redis", Seconds: 0.012}}
	sold := sampleReport(true)
	sold.Scenario, sold.Baseline, sold.BaselineRS = "soldout", "a bare Fiber handler", 400
	sold.CPU = []CPUUse{{Name: "app", Seconds: 0.03}, {Name: "worker", Seconds: 0.001}, {Name: "redis", Seconds: 0}}
	sold.BaselineCPU, sold.BaselineRequests = []CPUUse{{Name: "baseline", Seconds: 0.025}, {Name: "redis", Seconds: 0.001}}, 1000
	queue := &Report{Scenario: "queue", Options: Options{Conns: 50}, Crowd: &CrowdReport{},
		Result: &Result{Requests: 4000, Elapsed: 10 * time.Second, Kinds: map[string]int{}}, CPU: []CPUUse{{Name: "app", Seconds: 0.2}}}
	return []*Report{rush, sold, queue}
}

func TestHeadline(t *testing.T) {
	h := Headline(cpuReports())
	for _, want := range []string{
		"| scenario | against | app CPU a request | Redis CPU a request | baseline's CPU a request | baseline's Redis a request | app ÷ baseline | worker CPU an order |",
		"| rush | a Fiber handler with one EVALSHA | 50.0 µs | 10.0 µs | 25.0 µs | 5.0 µs | 2.00× | 300.0 µs (100 orders) |",
		"| soldout | a bare Fiber handler | 30.0 µs | 0.0 µs | 25.0 µs | 1.0 µs | 1.20× | – |",
		"| queue | none (a crowd: a request is a shopper's page's) | 50.0 µs | – | – | – | – | – |",
		"| scenario | req/s | baseline's req/s | ratio |", "| rush | 500 | 625 | 0.80 |", "| soldout | 500 | 400 | 1.25 |",
		"at 1000 requests a tick is 10.0 µs a request",
	} {
		if !strings.Contains(h, want) {
			t.Errorf("the headline lacks %q:\n%s", want, h)
		}
	}
	if strings.Contains(h, "| queue | 400 |") {
		t.Errorf("a crowd's requests a second are set against no baseline:\n%s", h)
	}
	// The CPU table comes first, requests a second after it.
	if strings.Index(h, "app ÷ baseline") > strings.Index(h, "baseline's req/s") {
		t.Errorf("requests a second lead the headline:\n%s", h)
	}
	// A run of crowds only has no table of requests a second.
	if h := Headline(cpuReports()[2:]); strings.Contains(h, "req/s") {
		t.Errorf("a crowd's requests a second in the headline:\n%s", h)
	}
	// Without a worker measured apart there is no worker column.
	one := sampleReport(true)
	one.CPU = []CPUUse{{Name: "app", Seconds: 0.05}}
	if h := Headline([]*Report{one}); strings.Contains(h, "worker") || !strings.Contains(h, "| rush | a Fiber handler with one EVALSHA | 50.0 µs | – | – | – | – |") {
		t.Errorf("a run without a worker or a baseline's CPU:\n%s", h)
	}
}

func TestCPUGoals(t *testing.T) {
	g := Goals(cpuReports())
	for _, want := range []string{
		"| sold-out buy answer: app CPU a request ≤ 1.5× a bare Fiber handler's (soldout) | 30.0 µs ÷ 25.0 µs = 1.20× (Redis 0.0 µs against 1.0 µs) | met |",
		"| a buy in stock: app CPU a request ≤ 1.5× a Fiber handler with one EVALSHA (rush) | 50.0 µs ÷ 25.0 µs = 2.00× (Redis 10.0 µs against 5.0 µs) | **not met** |",
	} {
		if !strings.Contains(g, want) {
			t.Errorf("goals lack %q:\n%s", want, g)
		}
	}
	md := Markdown(cpuReports()[:1], nil)
	for _, want := range []string{"App CPU **50.0 µs** a request (Redis 10.0 µs); a Fiber handler with one EVALSHA, in a process of its own: 25.0 µs (Redis 5.0 µs), ratio **2.00×**.",
		"| the baseline's own process | 0.03 | 25.0 µs |", "| redis, during the baseline | 0.01 | 5.0 µs |", "| worker | 0.00 | 2.0 µs |",
		"From the first buy until the queue was drained (100 orders): app 0.06 core-seconds (600.0 µs an order), worker 0.03 core-seconds (300.0 µs an order)"} {
		if !strings.Contains(md, want) {
			t.Errorf("the scenario's section lacks %q:\n%s", want, md)
		}
	}
	if term := Terminal(cpuReports()[:1]); !strings.Contains(term, "rush     app 50.0 µs/req (2.00× of a Fiber handler with one EVALSHA's 25.0 µs), worker 300.0 µs/order;      500 req/s") {
		t.Errorf("the terminal's line: %s", term)
	}
}

// The figures kept as JSON carry the baseline's CPU, and compare sets the app's CPU a request and its
// ratio side by side; the median of runs takes the baseline's CPU too.
func TestFiguresCarryTheBaseline(t *testing.T) {
	figs := FiguresOf(cpuReports())
	b, err := json.Marshal(figs)
	if err != nil {
		t.Fatal(err)
	}
	var back []Figures
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if r, ok := back[0].CPURatio(); !ok || r != 2 || !back[2].Crowd {
		t.Errorf("the figures read back: %+v", back)
	}
	md := SideBySide([]string{"one", "two"}, [][]Figures{figs, back})
	if !strings.Contains(md, "| scenario | one: app | ÷ baseline | two: app | ÷ baseline |") || !strings.Contains(md, "| rush | 50.0 µs | 2.00× | 50.0 µs | 2.00× |") {
		t.Errorf("compare lacks the CPU table:\n%s", md)
	}
	slower := FiguresOf(cpuReports())
	slower[0].BaselineCPU = []CPUUse{{Name: "baseline", Seconds: 0.05}, {Name: "redis", Seconds: 0.005}}
	if m := Median([][]Figures{figs, back, slower}); m[0].BaselineCPU[0].Seconds != 0.025 {
		t.Errorf("the median's baseline CPU: %+v", m[0].BaselineCPU)
	}
}

// A request's own headers go with it when fired: the poll scenario's status polls carry the signed place
// their page holds.
func TestFireSendsARequestsHeaders(t *testing.T) {
	var signed atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Line-Place") == "place-1" {
			signed.Add(1)
		}
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	c := NewClient(srv.URL, 4)
	defer c.Close()
	reqs := make([]Request, 40)
	for i := range reqs {
		reqs[i] = Request{Method: http.MethodGet, Path: "/api/items/1/queue"}
		if i%2 == 0 {
			reqs[i].Header = map[string]string{"X-Line-Place": "place-1"}
		}
	}
	res := c.Fire(context.Background(), reqs, 4, nil)
	if res.Kinds["200"] != 40 || signed.Load() != 20 {
		t.Errorf("answers %v, %d with the place, want 40 and 20", res.Kinds, signed.Load())
	}
}

// A measurement waits while a measured process is busy (a server refilling its captcha pool, say), and
// starts at once when it is quiet; Redis is not waited for.
func TestQuiesceWaitsForABusyProcess(t *testing.T) {
	self := []Process{{Name: "app", PIDs: []int{os.Getpid()}}}
	start := time.Now()
	quiesce(self, 0.05, 5*time.Second)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("a quiet process was waited for %v", d)
	}
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	time.AfterFunc(time.Second, func() { close(stop) })
	start = time.Now()
	quiesce(self, 0.05, 5*time.Second)
	if d := time.Since(start); d < time.Second || d > 4*time.Second {
		t.Errorf("a process busy for a second was waited for %v, want a little over a second", d)
	}
	start = time.Now()
	quiesce([]Process{{Name: "redis", PIDs: []int{os.Getpid()}}}, 0.05, 5*time.Second)
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("Redis was waited for (%v)", d)
	}
}
