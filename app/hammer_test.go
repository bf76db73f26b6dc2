package app

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"seckill/handlers"
)

// The benchmarks measure the server's own CPU time a request. The server runs in the benchmark's
// process; the requests come from a child process (this test binary, started with hammerEnv set), so
// that the process's CPU counters, its allocation count and a -cpuprofile hold the server's work and
// none of the load generator's. Requests a second are reported too, as a secondary figure: on a shared
// machine they blur the server's cost with the client's.

// hammerEnv names the plan file a child reads; set, the test binary is a load generator and runs no test.
const hammerEnv = "SECKILL_HAMMER_PLAN"

func TestMain(m *testing.M) {
	if plan := os.Getenv(hammerEnv); plan != "" {
		os.Exit(runHammer(plan))
	}
	os.Exit(m.Run())
}

// hammerPlan is what the child fires: N requests over Conns connections, request i being Requests[i %
// len(Requests)], each answered with status Want.
type hammerPlan struct {
	Addr     string
	Method   string
	Conns    int
	N        int
	Want     int
	Requests []hammerRequest
}

type hammerRequest struct {
	Path, Cookie, CSRF string
	Place              string // the X-Line-Place header: a waiting shopper's signed place
}

type hammerResult struct {
	Elapsed    time.Duration
	Bad        int64
	FirstError string
}

// runHammer is the child: it reads the plan, says "ready", waits for a line on stdin, fires, and writes
// its result as JSON.
func runHammer(planFile string) int {
	b, err := os.ReadFile(planFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var p hammerPlan
	if err := json.Unmarshal(b, &p); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return 2
	}
	client := &fasthttp.Client{MaxConnsPerHost: p.Conns * 2}
	var i, bad atomic.Int64
	var first atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for range p.Conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			for {
				k := int(i.Add(1)) - 1
				if k >= p.N {
					return
				}
				r := p.Requests[k%len(p.Requests)]
				req.Reset()
				req.SetRequestURI("http://" + p.Addr + r.Path)
				req.Header.SetMethod(p.Method)
				if r.Cookie != "" {
					req.Header.Set("Cookie", r.Cookie)
				}
				if r.CSRF != "" {
					req.Header.Set(handlers.CSRFHeader, r.CSRF)
				}
				if r.Place != "" {
					req.Header.Set(handlers.PlaceHeader, r.Place)
				}
				if err := client.Do(req, resp); err != nil || resp.StatusCode() != p.Want {
					if bad.Add(1) == 1 {
						first.Store(fmt.Sprintf("request %d: %v %d %s", k, err, resp.StatusCode(), resp.Body()))
					}
				}
			}
		}()
	}
	wg.Wait()
	res := hammerResult{Elapsed: time.Since(start), Bad: bad.Load()}
	if s, ok := first.Load().(string); ok {
		res.FirstError = s
	}
	_ = json.NewEncoder(os.Stdout).Encode(res)
	return 0
}

// serverCost is what a burst of requests cost this process (the server) and Redis.
type serverCost struct {
	requests int
	cpu      time.Duration // this process's user and system time
	allocs   uint64        // heap allocations
	elapsed  time.Duration // the child's wall-clock time, first request to last answer
}

// hammerOut fires n requests of method at addr from a child process over conns connections, request i
// being next(i), and reports the server's CPU time and allocations a request (and req/s, secondary).
// Every answer must have the status want.
func hammerOut(b *testing.B, method, addr string, n, conns int, next func(i int) (path, cookie, csrf string), want int) serverCost {
	b.Helper()
	return hammerRequests(b, method, addr, n, conns, func(i int) hammerRequest {
		path, cookie, csrf := next(i)
		return hammerRequest{Path: path, Cookie: cookie, CSRF: csrf}
	}, want)
}

// hammerRequests is hammerOut with requests of any kind.
func hammerRequests(b *testing.B, method, addr string, n, conns int, next func(i int) hammerRequest, want int) serverCost {
	b.Helper()
	// Distinct requests are sent once each in the plan; a plan repeats them when next does (its period
	// is found by comparing with the first).
	p := hammerPlan{Addr: addr, Method: method, Conns: conns, N: n, Want: want}
	for i := range n {
		r := next(i)
		if i > 0 && r == p.Requests[0] {
			break
		}
		p.Requests = append(p.Requests, r)
	}
	planFile := filepath.Join(b.TempDir(), "plan.json")
	js, err := json.Marshal(p)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(planFile, js, 0o600); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), hammerEnv+"="+planFile)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Wait() }()
	defer stdin.Close() // a child still waiting for "go" ends
	out := bufio.NewReader(stdout)
	if line, err := out.ReadString('\n'); err != nil || line != "ready\n" {
		b.Fatalf("load generator: %q %v", line, err)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	allocs := ms.Mallocs
	stopProfile := profileBurst(b)
	b.ResetTimer()
	cpu, calls := cpuTime(), syscallCount()
	if _, err := stdin.Write([]byte("go\n")); err != nil {
		b.Fatal(err)
	}
	var res hammerResult
	if err := json.NewDecoder(out).Decode(&res); err != nil {
		b.Fatalf("load generator's result: %v", err)
	}
	used, called := cpuTime()-cpu, syscallCount()-calls
	b.StopTimer()
	stopProfile()
	runtime.ReadMemStats(&ms)
	if res.Bad > 0 {
		b.Fatalf("%d of %d answers were not %d; the first: %s", res.Bad, n, want, res.FirstError)
	}
	c := serverCost{requests: n, cpu: used, allocs: ms.Mallocs - allocs, elapsed: res.Elapsed}
	b.ReportMetric(float64(c.cpu.Nanoseconds())/1e3/float64(n), "server-cpu-µs/req")
	b.ReportMetric(float64(c.allocs)/float64(n), "server-allocs/req")
	b.ReportMetric(float64(n)/c.elapsed.Seconds(), "req/s")
	if called > 0 {
		b.ReportMetric(float64(called)/float64(n), "server-syscalls/req")
	}
	return c
}

// profileEnv names a directory: set, each burst's CPU profile (the burst's alone, not the benchmark's
// set-up) is written there as NAME.prof, NAME being the benchmark's.
const profileEnv = "SECKILL_BENCH_PROFILE"

func profileBurst(b *testing.B) (stop func()) {
	dir := os.Getenv(profileEnv)
	if dir == "" {
		return func() {}
	}
	name := strings.NewReplacer("/", "_", " ", "_").Replace(b.Name())
	f, err := os.Create(filepath.Join(dir, name+".prof"))
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() { pprof.StopCPUProfile(); _ = f.Close() }
}

// syscallCount is how many read and write system calls this process has made (/proc/self/io's syscr
// and syscw): a count, steadier than a time, of what a request costs the kernel.
func syscallCount() int64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0
	}
	var n int64
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ": ")
		if k == "syscr" || k == "syscw" {
			c, _ := strconv.ParseInt(v, 10, 64)
			n += c
		}
	}
	return n
}

// cpuTime is the CPU time this process has used, user and system (its children's not included).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
