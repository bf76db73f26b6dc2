package main

import (
	"context"
	"os"
	"testing"
	"time"

	"seckill/loadtest"
)

// TestMain lets the test binary stand in for the load tool: baseline() starts os.Executable()
// baseline-serve, which is this binary under go test.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "baseline-serve" {
		if err := baselineServe(os.Args[2:]); err != nil {
			os.Stderr.WriteString("baseline-serve: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The baseline runs in a process of its own, answers every request, and its CPU is measured from that
// process's counters: nonzero after thousands of requests, and Redis's beside it when -cpu names it.
func TestBaselineInItsOwnProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, kind := range []string{"bare", "bare-page", "bare-json"} {
		// This process stands in for Redis: the measured names must come back in order, Redis's after
		// the baseline's own.
		procs := []loadtest.Process{{Name: "app", PIDs: []int{os.Getpid()}}, {Name: "redis", PIDs: []int{os.Getpid()}}}
		b, err := baseline(ctx, kind, "redis://127.0.0.1:1/0", procs, 5_000, 16)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if b.name != baselines[kind] || b.requests != 5_000 || b.rate <= 0 {
			t.Errorf("%s: %+v", kind, b)
		}
		if len(b.cpu) != 2 || b.cpu[0].Name != "baseline" || b.cpu[1].Name != "redis" {
			t.Fatalf("%s: measured %+v, want the baseline's process and redis", kind, b.cpu)
		}
		if b.cpu[0].Seconds <= 0 {
			t.Errorf("%s: the baseline's process used no CPU over 5,000 requests: %+v", kind, b.cpu)
		}
		t.Logf("%s: %.0f req/s, baseline %.1f µs a request", kind, b.rate, b.cpu[0].Seconds*1e6/float64(b.requests))
	}
	if _, err := baseline(ctx, "nonsense", "", nil, 1, 1); err == nil {
		t.Error("an unknown baseline was started")
	}
}

// An evalsha baseline whose Redis cannot be reached fails rather than report a flattering figure.
func TestBaselineFailsWithoutItsRedis(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := baseline(ctx, "evalsha", "redis://127.0.0.1:1/0", nil, 2, 1); err == nil {
		t.Error("the evalsha baseline passed with no Redis to run its script on")
	}
}

// The evalsha baseline runs its script on the Redis it is given (LOADTEST_TEST_REDIS, by default DB 12
// of the local Redis; skipped when there is none) and leaves no key behind.
func TestBaselineEvalsha(t *testing.T) {
	url := os.Getenv("LOADTEST_TEST_REDIS")
	if url == "" {
		url = "redis://127.0.0.1:6379/12"
	}
	rdb, err := openRedis(url)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Skipf("no Redis at %s: %v", url, err)
	}
	b, err := baseline(ctx, "evalsha", url, nil, 2_000, 8)
	if err != nil {
		t.Fatal(err)
	}
	if b.cpu[0].Name != "baseline" || b.cpu[0].Seconds <= 0 {
		t.Errorf("measured %+v", b.cpu)
	}
	if n := rdb.Exists(ctx, "loadtest:{baseline}").Val(); n != 0 {
		t.Error("the baseline's key was left in Redis")
	}
}
