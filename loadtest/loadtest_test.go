package loadtest

import (
	"fmt"
	"os"
	"strings"
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
	for _, want := range []string{"### rush", "**500 req/s**", "ratio **0.80**", "| | 3.0 ms | 9.0 ms | 20.0 ms |", "| 409 sold_out | 880 |",
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
	for _, want := range []string{"| buys while stock lasts ≥ 0.8 of one EVALSHA (big) | 0.80 | yes |", "| orders drained ≥ 5,000/s (big) | 6000/s | yes |",
		"| p99 < 50 ms at 50 connections (rush) | 20.0 ms | yes |"} {
		if !strings.Contains(g, want) {
			t.Errorf("goals lack %q:\n%s", want, g)
		}
	}
	big.BaselineRS = 1000
	if g := Goals([]*Report{big}); !strings.Contains(g, "| 0.50 | **no** |") {
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
