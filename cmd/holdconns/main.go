// Command holdconns holds many open client connections to nginx, as a crowd of browsers waiting with
// their keep-alive connections does, and counts what the edge and the instances hold meanwhile: the
// issue's "nginx holds 100,000 open client connections while the instances keep a few each".
//
//	go run ./cmd/holdconns -target 127.0.0.1:8090 -conns 100000 -path /api/items/1/line -app-ports 8081,8082
//
// A process here cannot open more than 20,000 files, so the connections are spread over child processes
// (-procs), each dialling from loopback addresses of its own (127.0.0.2 and up: one source address has
// 28,000 ports) and each sending a cheap, cacheable GET on every connection every -every, so that nginx's
// keep-alive timeout does not close them. Once all are open it holds them for -hold, reading how many TCP
// connections nginx's port and the instances' ports hold (from /proc/net/tcp), then prints one JSON
// report on stdout and exits 0 if every connection was open and answered.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

type options struct {
	target   string
	conns    int
	procs    int
	path     string
	every    time.Duration
	hold     time.Duration
	ramp     time.Duration
	appPorts []int
	report   string // a Markdown section for docs/performance.md, written here when set
	child    int    // >0: this is child number child, holding conns connections
}

func parse(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("holdconns", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.target, "target", "127.0.0.1:8090", "nginx's address")
	fs.IntVar(&o.conns, "conns", 100_000, "connections to hold in all")
	fs.IntVar(&o.procs, "procs", 0, "child processes (0: one per 16,000 connections)")
	fs.StringVar(&o.path, "path", "/healthz", "the GET each connection sends (a cached one: it should not reach an instance)")
	fs.DurationVar(&o.every, "every", 20*time.Second, "how often each connection sends it")
	fs.DurationVar(&o.hold, "hold", 30*time.Second, "how long to hold them once all are open")
	fs.DurationVar(&o.ramp, "ramp", 60*time.Second, "at most this long to open them")
	ports := fs.String("app-ports", "", "the instances' ports, comma-separated, whose connections are counted")
	fs.StringVar(&o.report, "report", "", "also write the result as a Markdown section (docs/performance.md's conns-held) to this file")
	fs.IntVar(&o.child, "child", 0, "internal: run as child N")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	for _, p := range strings.Split(*ports, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 || n > 65535 {
			return o, fmt.Errorf("-app-ports: %q is not a port", p)
		}
		o.appPorts = append(o.appPorts, n)
	}
	if o.conns <= 0 {
		return o, errors.New("-conns must be positive")
	}
	if o.procs <= 0 {
		o.procs = (o.conns + 15_999) / 16_000
	}
	if o.conns/o.procs > 18_000 {
		return o, fmt.Errorf("%d connections a process: more than the 20,000 files a process may open here; raise -procs", o.conns/o.procs)
	}
	return o, nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	o, err := parse(os.Args[1:], os.Stderr)
	if err == nil {
		if o.child > 0 {
			err = runChild(ctx, o, os.Stdout)
		} else {
			err = runParent(ctx, o, os.Stdout, os.Stderr)
		}
	}
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "holdconns:", err)
		os.Exit(1)
	}
}

// tally is what a child reports, one JSON line a second.
type tally struct {
	Child    int   `json:"child"`
	Open     int64 `json:"open"`     // connected, and their last request answered
	Answers  int64 `json:"answers"`  // answers read
	Failures int64 `json:"failures"` // dials or requests that failed
	Status   map[int]int64
	Reasons  map[string]int64 // failures by kind
}

// runChild opens o.conns connections from its own source address range and keeps them busy until ctx
// ends, printing its tally every second.
func runChild(ctx context.Context, o options, out io.Writer) error {
	var open, answers, failures atomic.Int64
	var mu sync.Mutex
	status := map[int]int64{}
	reasons := map[string]int64{}
	fail := func(kind string, err error) {
		failures.Add(1)
		mu.Lock()
		reasons[kind+": "+reason(err)]++
		mu.Unlock()
	}
	// 127.0.0.{2+...}: each child gets source addresses of its own, each used for at most 20,000.
	perAddr := 20_000
	addrs := (o.conns + perAddr - 1) / perAddr
	first := 2 + (o.child-1)*addrs
	req := []byte("GET " + o.path + " HTTP/1.1\r\nHost: " + o.target + "\r\nUser-Agent: holdconns\r\n\r\n")
	var wg sync.WaitGroup
	gap := o.ramp / time.Duration(max(o.conns, 1)) / 2
	for i := range o.conns {
		src := &net.TCPAddr{IP: net.IPv4(127, 0, byte((first+i/perAddr)/256), byte((first+i/perAddr)%256))}
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := net.Dialer{LocalAddr: src, Timeout: 10 * time.Second}
			var c net.Conn
			var br *bufio.Reader
			up := false
			defer func() {
				if up {
					open.Add(-1)
				}
				if c != nil {
					c.Close()
				}
			}()
			for ctx.Err() == nil {
				if c == nil {
					var err error
					if c, err = d.DialContext(ctx, "tcp", o.target); err != nil {
						c = nil
						fail("dial", err)
						sleep(ctx, time.Second)
						continue
					}
					br = bufio.NewReaderSize(c, 1024)
				}
				c.SetDeadline(time.Now().Add(15 * time.Second))
				_, err := c.Write(req)
				var res *http.Response
				if err == nil {
					res, err = http.ReadResponse(br, nil)
				}
				if err == nil {
					_, err = io.Copy(io.Discard, res.Body)
					res.Body.Close()
				}
				if err != nil {
					if ctx.Err() == nil {
						fail("request", err)
					}
					if up {
						open.Add(-1)
						up = false
					}
					c.Close()
					c = nil
					continue
				}
				answers.Add(1)
				mu.Lock()
				status[res.StatusCode]++
				mu.Unlock()
				if !up {
					open.Add(1)
					up = true
				}
				// Spread over the period, so that the connections do not all ask in the same second.
				sleep(ctx, o.every/2+time.Duration(rand.Int64N(int64(o.every))))
			}
		}()
		if gap > 0 {
			sleep(ctx, gap)
		}
	}
	enc := json.NewEncoder(out)
	report := func() error {
		mu.Lock()
		st := make(map[int]int64, len(status))
		for k, v := range status {
			st[k] = v
		}
		rs := make(map[string]int64, len(reasons))
		for k, v := range reasons {
			rs[k] = v
		}
		mu.Unlock()
		return enc.Encode(tally{Child: o.child, Open: open.Load(), Answers: answers.Load(), Failures: failures.Load(), Status: st, Reasons: rs})
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for ctx.Err() == nil {
		if err := report(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
	wg.Wait()
	return nil
}

// reason is an error's kind without the addresses and ports that make every one different.
func reason(err error) string {
	var op *net.OpError
	switch {
	case errors.As(err, &op) && op.Err != nil:
		return op.Op + " " + op.Err.Error()
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "closed by the server"
	}
	return err.Error()
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// Report is what the parent prints when it is done.
type Report struct {
	Asked          int              `json:"asked"`
	Procs          int              `json:"procs"`
	Open           int64            `json:"open"`     // client connections open and answered, at the end of the hold
	Failures       int64            `json:"failures"` // dials and requests that failed, over the whole run
	Answers        int64            `json:"answers"`  // answers read
	Status         map[int]int64    `json:"status"`   // answers by status code
	Reasons        map[string]int64 `json:"failure_reasons"`
	OpenedIn       seconds          `json:"opened_in_s"`    // until every connection was open (0: never)
	EdgeConns      int              `json:"edge_conns"`     // TCP connections established to nginx's port (its side), at the end
	InstanceConns  map[int]int      `json:"instance_conns"` // established to each instance's port, at the end
	InstanceMaxSum int              `json:"instance_max"`   // the most the instances held at once, during the hold
	Held           seconds          `json:"held_s"`         // how long all were held open
	MinOpenInHold  int64            `json:"min_open_in_hold"`
}

// seconds is a duration written in JSON as seconds.
type seconds time.Duration

func (s seconds) MarshalJSON() ([]byte, error) {
	return strconv.AppendFloat(nil, time.Duration(s).Seconds(), 'f', 3, 64), nil
}

// runParent starts the children, sums their tallies, and reports once the connections have been held.
func runParent(ctx context.Context, o options, out, stderr io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	_, portText, err := net.SplitHostPort(o.target)
	if err != nil {
		return fmt.Errorf("-target: %w", err)
	}
	edgePort, _ := strconv.Atoi(portText)
	var mu sync.Mutex
	latest := map[int]tally{}
	var wg sync.WaitGroup
	errc := make(chan error, o.procs)
	for i := range o.procs {
		n := o.conns / o.procs
		if i < o.conns%o.procs {
			n++
		}
		cmd := exec.CommandContext(ctx, self, "-child", strconv.Itoa(i+1), "-conns", strconv.Itoa(n), "-target", o.target,
			"-path", o.path, "-every", o.every.String(), "-ramp", o.ramp.String(), "-procs", strconv.Itoa(o.procs))
		cmd.Stderr = stderr
		pipe, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			dec := json.NewDecoder(pipe)
			for {
				var t tally
				if err := dec.Decode(&t); err != nil {
					break
				}
				mu.Lock()
				latest[t.Child] = t
				mu.Unlock()
			}
			if err := cmd.Wait(); err != nil && ctx.Err() == nil {
				errc <- fmt.Errorf("child %d: %w", i+1, err)
			}
		}()
	}
	sum := func() tally {
		mu.Lock()
		defer mu.Unlock()
		var s tally
		s.Status, s.Reasons = map[int]int64{}, map[string]int64{}
		for _, t := range latest {
			for k, v := range t.Reasons {
				s.Reasons[k] += v
			}
			s.Open += t.Open
			s.Answers += t.Answers
			s.Failures += t.Failures
			for k, v := range t.Status {
				s.Status[k] += v
			}
		}
		return s
	}
	rep := Report{Asked: o.conns, Procs: o.procs, InstanceConns: map[int]int{}}
	start := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	// next waits for the next second's tick, and fails when the run ends or a child fails.
	next := func() error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-errc:
			return err
		case <-tick.C:
			return nil
		}
	}
	for rep.OpenedIn == 0 {
		if err := next(); err != nil {
			return err
		}
		s := sum()
		fmt.Fprintf(stderr, "holdconns: %d of %d open, %d failures\n", s.Open, o.conns, s.Failures)
		if s.Open >= int64(o.conns) {
			rep.OpenedIn = seconds(time.Since(start).Round(time.Millisecond))
		} else if time.Since(start) > o.ramp+30*time.Second {
			break
		}
	}
	rep.MinOpenInHold = int64(o.conns)
	holdStart := time.Now()
	for rep.OpenedIn > 0 && time.Since(holdStart) < o.hold {
		if err := next(); err != nil {
			return err
		}
		s := sum()
		rep.MinOpenInHold = min(rep.MinOpenInHold, s.Open)
		if time.Since(holdStart)/time.Second%5 != 0 {
			continue // the kernel's table of 200,000 sockets is read every 5 s, not every second
		}
		counts := established(edgePort, o.appPorts)
		total := 0
		for _, p := range o.appPorts {
			total += counts[p]
		}
		rep.InstanceMaxSum = max(rep.InstanceMaxSum, total)
	}
	rep.Held = seconds(time.Since(holdStart).Round(time.Millisecond))
	s := sum()
	counts := established(edgePort, o.appPorts)
	rep.Open, rep.Failures, rep.Answers, rep.Status, rep.Reasons, rep.EdgeConns = s.Open, s.Failures, s.Answers, s.Status, s.Reasons, counts[edgePort]
	for _, p := range o.appPorts {
		rep.InstanceConns[p] = counts[p]
	}
	cancel()
	wg.Wait()
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		return err
	}
	if o.report != "" {
		if err := os.WriteFile(o.report, []byte(markdown(o, rep)), 0o644); err != nil {
			return err
		}
	}
	if rep.OpenedIn == 0 || rep.MinOpenInHold < int64(o.conns) {
		return fmt.Errorf("held %d of %d connections at the least", rep.MinOpenInHold, o.conns)
	}
	return nil
}

// markdown is the report as docs/performance.md's section conns-held.
func markdown(o options, r Report) string {
	var b strings.Builder
	b.WriteString("<!-- conns-held: written by make bench-cluster (cmd/holdconns); make bench keeps it -->\n")
	b.WriteString("## A hundred thousand open connections at nginx, a few at the instances\n\n")
	fmt.Fprintf(&b, "Written by `cmd/holdconns` on %s: %d client connections to nginx (%s), opened from %d processes of\n",
		time.Now().UTC().Format("2006-01-02"), o.conns, o.target, o.procs)
	b.WriteString("at most 18,000 connections each (a process here cannot open more than 20,000 files), from loopback\n")
	fmt.Fprintf(&b, "addresses of their own; each connection asks `GET %s` (a cached answer) every %v or so, so that\n", o.path, o.every)
	fmt.Fprintf(&b, "nginx's keep-alive timeout keeps it open, and all are held for %v once open. The connections are\n", o.hold)
	b.WriteString("counted from the kernel's table (`/proc/net/tcp`), nginx's side and the instances' side apart.\n\n")
	b.WriteString("| what | measured |\n| --- | --- |\n")
	fmt.Fprintf(&b, "| client connections open and answered at the end of the hold | %d of %d |\n", r.Open, r.Asked)
	fmt.Fprintf(&b, "| the fewest open during the hold | %d |\n", r.MinOpenInHold)
	fmt.Fprintf(&b, "| connections established at nginx's port | %d |\n", r.EdgeConns)
	ports := make([]int, 0, len(r.InstanceConns))
	for p := range r.InstanceConns {
		ports = append(ports, p)
	}
	sort.Ints(ports)
	for _, p := range ports {
		fmt.Fprintf(&b, "| connections nginx kept to the instance on port %d | %d |\n", p, r.InstanceConns[p])
	}
	fmt.Fprintf(&b, "| the most the instances held together during the hold | %d |\n", r.InstanceMaxSum)
	fmt.Fprintf(&b, "| all open after | %.1f s |\n", time.Duration(r.OpenedIn).Seconds())
	fmt.Fprintf(&b, "| answers read, by status | %v |\n", r.Status)
	fmt.Fprintf(&b, "| failed dials or requests | %d %v |\n", r.Failures, r.Reasons)
	b.WriteString("\n<!-- /conns-held -->\n")
	return b.String()
}

// established counts the established TCP connections on this machine whose server side is the edge's
// port (nginx's sockets: the local port) or an instance's port (the connections nginx keeps to it: the
// remote port, counted once from nginx's side).
func established(edge int, apps []int) map[int]int {
	counts := map[int]int{}
	want := map[int]bool{}
	for _, p := range apps {
		want[p] = true
	}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			fields := strings.Fields(line)
			if len(fields) < 4 || fields[3] != "01" { // 01: ESTABLISHED
				continue
			}
			local, remote := portOf(fields[1]), portOf(fields[2])
			switch {
			case local == edge:
				counts[edge]++
			case want[remote]:
				counts[remote]++
			}
		}
	}
	return counts
}

func portOf(addr string) int {
	_, hex, ok := strings.Cut(addr, ":")
	if !ok {
		return -1
	}
	n, err := strconv.ParseInt(hex, 16, 32)
	if err != nil {
		return -1
	}
	return int(n)
}
