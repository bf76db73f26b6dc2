package main

import (
	"strings"
	"testing"
	"time"
)

// The busy run's summary takes the medians of the big sales alone (the rush's figures are of another
// scenario), and sets WAIT's against no WAIT's.
func TestBusyMediansSetWaitAgainstNoWait(t *testing.T) {
	runs := []busyRun{
		{scenario: "big", wait: 0, requests: 1000, rps: 1000, p99: 100 * time.Millisecond, appCPU: 0.2},
		{scenario: "big", wait: 0, requests: 1000, rps: 3000, p99: 300 * time.Millisecond, appCPU: 0.1},
		{scenario: "big", wait: 1, requests: 1000, rps: 1800, p99: 200 * time.Millisecond, appCPU: 0.15},
		{scenario: "big", wait: 1, requests: 1000, rps: 1400, p99: 400 * time.Millisecond, appCPU: 0.15},
		{scenario: "rush", wait: 1, requests: 1000, rps: 9000, p99: time.Second},
	}
	got := busyMedians(runs)
	for _, want := range []string{
		"REDIS_WAIT_REPLICAS=0, medians of 2: 2000 buys/s, p99 200.0 ms, CPU a request: instances 150.0 µs",
		"REDIS_WAIT_REPLICAS=1, medians of 2: 1600 buys/s, p99 300.0 ms, CPU a request: instances 150.0 µs",
		"with WAIT, 0.80 of the buys a second without",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the summary lacks %q:\n%s", want, got)
		}
	}
}
