package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/loadtest"
)

// The busy run (-busy N) strikes no fault: it measures two of issue 36's goals in the Sentinel world.
// A busy, healthy master must not be failed over: the load tool's heaviest buying scenarios run at full
// speed while the sentinels watch with the documented settings, and the run counts what they saw (their
// +sdown, +odown and +switch-master) and how close the master came (the longest a sentinel had gone
// without a good PING reply, and the slowest PING of our own through the proxy the sentinels use). And
// WAIT's cost with group commit: the big sale (a take and a WAIT for every buy) with REDIS_WAIT_REPLICAS
// 0 and 1, alternating in the same run, so both meet the same machine; buys a second, p99 and the
// instances' CPU a request.

// busyRun is one scenario's figures in the busy run.
type busyRun struct {
	round, wait int
	scenario    string
	requests    int
	rps         float64
	p99, max    time.Duration
	appCPU      float64 // the instances' CPU seconds while the requests were fired
	redisCPU    float64 // the master's
	unconfirmed int
	auditOK     bool
	failures    []string
}

func (b busyRun) perRequest(s float64) float64 { return s / float64(max(b.requests, 1)) * 1e6 }

// masterWatch is how close the master came to being taken for dead while it watched.
type masterWatch struct {
	mu          sync.Mutex
	pings       int
	slowPing    time.Duration // our own PINGs through the master's proxy
	failedPings int
	sentinelGap time.Duration // the most any sentinel's last-ok-ping-reply said
	flagged     []string      // flags other than master a sentinel gave it (s_down, o_down)
}

// watch PINGs the master through its proxy every 50 ms and asks each sentinel about it every 200 ms,
// until ctx ends.
func (s *sentinelSet) watch(ctx context.Context, m int, mw *masterWatch) {
	c := redis.NewClient(&redis.Options{Addr: s.links[m].Addr(), PoolSize: 1, MaxRetries: -1, ReadTimeout: 10 * time.Second})
	defer c.Close()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		t := time.Now()
		err := c.Ping(ctx).Err()
		took := time.Since(t)
		mw.mu.Lock()
		if err != nil && ctx.Err() == nil {
			mw.failedPings++
		} else if err == nil {
			mw.pings++
			mw.slowPing = max(mw.slowPing, took)
		}
		mw.mu.Unlock()
		if n%4 != 0 {
			continue
		}
		for _, sp := range s.sentinels {
			info, err := sp.client.Master(ctx, masterName).Result()
			if err != nil {
				continue
			}
			var ms int64
			fmt.Sscan(info["last-ok-ping-reply"], &ms)
			mw.mu.Lock()
			mw.sentinelGap = max(mw.sentinelGap, time.Duration(ms)*time.Millisecond)
			if f := info["flags"]; f != "master" {
				mw.flagged = append(mw.flagged, f)
			}
			mw.mu.Unlock()
		}
	}
}

// sentinelEvents counts the lines of the sentinels' logs that tell of a master taken for dead or replaced.
func (s *sentinelSet) sentinelEvents() map[string]int {
	out := map[string]int{}
	for k := range s.sentinels {
		b, err := os.ReadFile(filepath.Join(s.dir, fmt.Sprintf("sentinel-%d.log", k)))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			for _, ev := range []string{"+sdown master", "+odown master", "+switch-master", "+try-failover"} {
				if strings.Contains(line, ev) {
					out[ev]++
				}
			}
		}
	}
	return out
}

// runID answers server i's run_id, read straight from its port.
func (s *sentinelSet) runID(ctx context.Context, i int) string {
	c := redis.NewClient(&redis.Options{Addr: s.nodes[i].addr(), MaxRetries: -1})
	defer c.Close()
	text, err := c.Info(ctx, "server").Result()
	if err != nil {
		return "(" + err.Error() + ")"
	}
	for _, line := range strings.Split(text, "\r\n") {
		if v, ok := strings.CutPrefix(line, "run_id:"); ok {
			return v
		}
	}
	return "(none)"
}

// restartWaiting starts the instances again with REDIS_WAIT_REPLICAS=n.
func (w *world) restartWaiting(ctx context.Context, n int) error {
	for _, in := range w.instances {
		in.kill()
		for i, kv := range in.env {
			if strings.HasPrefix(kv, "REDIS_WAIT_REPLICAS=") {
				in.env[i] = fmt.Sprintf("REDIS_WAIT_REPLICAS=%d", n)
			}
		}
		if err := in.start(ctx); err != nil {
			return err
		}
	}
	return nil
}

// busy runs c.busy rounds: in each the big sale with REDIS_WAIT_REPLICAS 0 and 1 (the order alternating
// round by round), then the rush with 1, all at -scale and -conns, while the master is watched.
func (w *world) busy(ctx context.Context, c *config, out io.Writer) error {
	s := w.set
	if err := s.waitReplicas(ctx, 0); err != nil {
		return err
	}
	for _, sp := range s.sentinels {
		if err := sp.client.Set(ctx, masterName, "down-after-milliseconds", fmt.Sprint(c.busyDownAfter.Milliseconds())).Err(); err != nil {
			return fmt.Errorf("set the sentinels' down-after-milliseconds: %w", err)
		}
	}
	m, err := s.master(ctx)
	if err != nil {
		return err
	}
	runID, before := s.runID(ctx, m), s.sentinelEvents()
	fmt.Fprintf(out, "busy: master redis-%d run_id %s; sentinels: down-after-milliseconds %d, failover-timeout %d, quorum 2; %d rounds, scale %g, %d connections\n",
		m, runID, c.busyDownAfter.Milliseconds(), failoverTimeout.Milliseconds(), c.busy, c.scale, c.conns)
	mw := &masterWatch{}
	watching, stopWatch := context.WithCancel(ctx)
	var watched sync.WaitGroup
	watched.Go(func() { s.watch(watching, m, mw) })
	defer func() { stopWatch(); watched.Wait() }()

	var runs []busyRun
	for r := range c.busy {
		waits := []int{0, 1}
		if r%2 == 1 {
			waits = []int{1, 0}
		}
		plan := []struct {
			scenario string
			wait     int
		}{{"big", waits[0]}, {"big", waits[1]}, {"rush", 1}}
		for _, p := range plan {
			if err := w.restartWaiting(ctx, p.wait); err != nil {
				return err
			}
			br, err := w.busyScenario(ctx, c, m, p.scenario, p.wait)
			if err != nil {
				return fmt.Errorf("round %d, %s with REDIS_WAIT_REPLICAS=%d: %w", r+1, p.scenario, p.wait, err)
			}
			br.round = r + 1
			fmt.Fprintf(out, "round %d: %-4s WAIT %d: %d requests, %.0f/s, p99 %v, max %v; CPU a request: instances %.1f µs, master %.1f µs; unconfirmed %d; audit ok %v %s\n",
				br.round, br.scenario, br.wait, br.requests, br.rps, br.p99, br.max, br.perRequest(br.appCPU), br.perRequest(br.redisCPU), br.unconfirmed, br.auditOK,
				strings.Join(br.failures, "; "))
			runs = append(runs, br)
		}
	}
	stopWatch()
	watched.Wait()
	after, nowMaster := s.sentinelEvents(), -1
	if i, err := s.master(ctx); err == nil {
		nowMaster = i
	}
	events := []string{}
	for _, ev := range []string{"+sdown master", "+odown master", "+try-failover", "+switch-master"} {
		events = append(events, fmt.Sprintf("%s %d", ev, after[ev]-before[ev]))
	}
	runIDAfter := s.runID(ctx, m)
	mw.mu.Lock()
	fmt.Fprintf(out, "\nbusy: the sentinels logged %s; master before redis-%d, after redis-%d; run_id %s (same: %v)\n",
		strings.Join(events, ", "), m, nowMaster, runIDAfter, runIDAfter == runID)
	fmt.Fprintf(out, "busy: the longest a sentinel had gone without a good PING reply: %v (down after %v); our %d PINGs through the proxy every 50 ms: slowest %v, %d failed; flags other than master: %v\n",
		mw.sentinelGap, c.busyDownAfter, mw.pings, mw.slowPing, mw.failedPings, mw.flagged)
	mw.mu.Unlock()
	fmt.Fprint(out, busyMedians(runs))
	return nil
}

// busyScenario runs one buying scenario with the master's and the instances' CPU measured.
func (w *world) busyScenario(ctx context.Context, c *config, m int, scenario string, wait int) (busyRun, error) {
	client := loadtest.NewClient(w.frontURL, c.conns)
	defer client.Close()
	var pids []int
	for _, in := range w.instances {
		pids = append(pids, in.cmd.Process.Pid)
	}
	o := loadtest.Options{Admin: loadtest.User{Name: adminName, Password: w.adminPass}, Merchant: loadtest.User{Name: merchantName, Password: w.merchPass},
		Conns: c.conns, Seed: w.seed,
		CPU: []loadtest.Process{{Name: "app", PIDs: pids}, {Name: "redis", PIDs: []int{w.set.nodes[m].cmd.Process.Pid}}}}
	switch scenario {
	case "rush":
		o.Users, o.Requests, o.Stock = max(int(20_000*c.scale), 20), max(int(100_000*c.scale), 100), 100
	case "big":
		o.Users = max(int(10_000*c.scale), 20)
		o.Requests, o.Stock = o.Users, int64(o.Users)
	}
	rep, err := client.Buying(ctx, w.rdb, scenario, o)
	w.bal.takeBuys() // the balancer's record of buys is the fault rounds'
	if err != nil {
		return busyRun{}, err
	}
	br := busyRun{wait: wait, scenario: scenario, requests: rep.Result.Requests, rps: rep.Result.Throughput(),
		p99: rep.Result.Latency.P99, max: rep.Result.Latency.Max, auditOK: rep.Audit.OK(), failures: rep.Audit.Failures}
	for _, u := range rep.CPU {
		switch u.Name {
		case "app":
			br.appCPU = u.Seconds
		case "redis":
			br.redisCPU = u.Seconds
		}
	}
	for _, n := range rep.Result.Unconfirmed {
		br.unconfirmed += n
	}
	return br, nil
}

// busyMedians answers the big sale's medians with and without WAIT, and their ratio.
func busyMedians(runs []busyRun) string {
	med := func(xs []float64) float64 {
		if len(xs) == 0 {
			return 0
		}
		sort.Float64s(xs)
		if len(xs)%2 == 1 {
			return xs[len(xs)/2]
		}
		return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
	}
	var b strings.Builder
	fig := map[int][4][]float64{}
	for _, r := range runs {
		if r.scenario != "big" {
			continue
		}
		f := fig[r.wait]
		f[0], f[1] = append(f[0], r.rps), append(f[1], float64(r.p99.Microseconds())/1000)
		f[2], f[3] = append(f[2], r.perRequest(r.appCPU)), append(f[3], r.perRequest(r.redisCPU))
		fig[r.wait] = f
	}
	var rps [2]float64
	for _, wait := range []int{0, 1} {
		f := fig[wait]
		rps[wait] = med(f[0])
		fmt.Fprintf(&b, "busy: big, REDIS_WAIT_REPLICAS=%d, medians of %d: %.0f buys/s, p99 %.1f ms, CPU a request: instances %.1f µs, master %.1f µs\n",
			wait, len(f[0]), rps[wait], med(f[1]), med(f[2]), med(f[3]))
	}
	if rps[0] > 0 {
		fmt.Fprintf(&b, "busy: with WAIT, %.2f of the buys a second without (goal: at least 0.80)\n", rps[1]/rps[0])
	}
	return b.String()
}
