package app

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"seckill/internal/testenv"
)

// These tests hold issue 28: connections are a bounded resource. They run the server as `seckill serve`
// runs it (Run with an environment), so that what they check is what an operator starts.

// served is a `seckill serve` running on the real services until the test ends.
type served struct {
	addr    string // the public port, host:port
	metrics string // the operators' listener, host:port
	logs    *safeWriter
}

func serveWith(t *testing.T, extra map[string]string) *served {
	t.Helper()
	rdb := testenv.Redis(t)
	port, mport := freePort(t), freePort(t)
	env := map[string]string{
		"DATABASE_URL":               testenv.PostgresSchema(t),
		"REDIS_URL":                  testenv.RedisURLFor(rdb),
		"SESSION_SECRET":             goodSecret,
		"PAY_SANDBOX":                "on",
		"PAY_SANDBOX_ANYONE_CAN_PAY": "yes",
		"BCRYPT_COST":                "4",
		"CAPTCHA_POOL":               "0",
		"LISTEN_HOST":                "127.0.0.1",
		"PORT":                       port,
		"METRICS_LISTEN":             "127.0.0.1:" + mport,
	}
	for k, v := range extra {
		env[k] = v
	}
	if _, _, err := runCLI(t, env, "migrate"); err != nil {
		t.Fatal(err)
	}
	s := &served{addr: "127.0.0.1:" + port, metrics: "127.0.0.1:" + mport, logs: &safeWriter{w: &bytes.Buffer{}}}
	ctx, cancel := context.WithCancel(context.Background())
	done, finished := make(chan error, 1), make(chan struct{})
	go func() {
		done <- Run(ctx, []string{"serve"}, Env{Getenv: envOf(env), Stdout: io.Discard, Stderr: s.logs})
		close(finished) // a serve that ended at start has had its error read below: the cleanup waits on this
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-finished:
		case <-time.After(15 * time.Second):
			t.Error("the server did not stop")
		}
	})
	testenv.EventuallySaw(t, 10*time.Second, "the server to answer /healthz", func() (bool, string) {
		if code, _ := healthz(s.addr, "127.0.0.1", time.Second); code == http.StatusOK {
			return true, ""
		}
		select {
		case err := <-done:
			t.Fatalf("serve ended at start: %v\n%s", err, s.logs)
		default:
		}
		return false, "its log:\n" + s.logs.String()
	})
	return s
}

// dialFrom connects to addr from the loopback address from (Linux routes all of 127/8 to lo).
func dialFrom(t *testing.T, from, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 2 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// healthz asks GET /healthz on a connection of its own from the loopback address from, and says the
// status (0 when none came in time) and how long the answer took.
func healthz(addr, from string, timeout time.Duration) (int, time.Duration) {
	start := time.Now()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: timeout}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return 0, time.Since(start)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	code, err := ask(c, "/healthz")
	if err != nil {
		return 0, time.Since(start)
	}
	return code, time.Since(start)
}

// ask sends one keep-alive GET on c and reads its answer's status.
func ask(c net.Conn, path string) (int, error) {
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: shop\r\n\r\n", path); err != nil {
		return 0, err
	}
	return readStatus(c)
}

func readStatus(c net.Conn) (int, error) {
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// closedWithin reports whether the server closes c within d (reading whatever it sends meanwhile).
func closedWithin(c net.Conn, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

func TestServeLogsItsDescriptorLimitAndConnectionCaps(t *testing.T) {
	testenv.Long(t)
	s := serveWith(t, map[string]string{"MAX_CONNS_PER_ADDR": "300"})
	// The log is buffered and flushed every 100 ms: the line may reach it a little after /healthz answers.
	wants := []string{"open_file_limit=", "max_conns=", "max_conns_per_addr=300"}
	testenv.EventuallySaw(t, 5*time.Second, fmt.Sprintf("the start's log to say %q", wants), func() (bool, string) {
		logs := s.logs.String()
		var missing []string
		for _, want := range wants {
			if !strings.Contains(logs, want) {
				missing = append(missing, want)
			}
		}
		return len(missing) == 0, fmt.Sprintf("no %q in\n%s", missing, logs)
	})
}

func TestAConnectionCapPerAddress(t *testing.T) {
	s := serveWith(t, map[string]string{"MAX_CONNS_PER_ADDR": "3"})
	for i := range 3 {
		if code, err := ask(dialFrom(t, "127.0.0.5", s.addr), "/healthz"); code != http.StatusOK {
			t.Fatalf("connection %d from 127.0.0.5: %d, %v; want 200", i+1, code, err)
		}
	}
	c := dialFrom(t, "127.0.0.5", s.addr)
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if code, err := readStatus(c); code != http.StatusTooManyRequests {
		t.Errorf("the 4th connection from 127.0.0.5 got %d, %v; want a 429 at once", code, err)
	}
	if code, err := ask(dialFrom(t, "127.0.0.6", s.addr), "/healthz"); code != http.StatusOK {
		t.Errorf("a connection from another address: %d, %v; want 200", code, err)
	}
}

func TestTrustedProxiesAreNotCappedPerAddress(t *testing.T) {
	s := serveWith(t, map[string]string{"MAX_CONNS_PER_ADDR": "2", "TRUSTED_PROXIES": "127.0.0.7"})
	for i := range 5 {
		if code, err := ask(dialFrom(t, "127.0.0.7", s.addr), "/healthz"); code != http.StatusOK {
			t.Fatalf("connection %d from the proxy: %d, %v; want 200", i+1, code, err)
		}
	}
}

func TestASlowHeaderIsClosedAfterHeaderTimeout(t *testing.T) {
	testenv.Long(t)
	s := serveWith(t, map[string]string{"HEADER_TIMEOUT": "1s", "BODY_TIMEOUT": "5s"})
	c := dialFrom(t, "127.0.0.8", s.addr)
	stop := make(chan struct{})
	defer close(stop)
	go trickle(c, "GET /healthz HTTP/1.1\r\nHost: shop\r\n", stop)
	start := time.Now()
	if !closedWithin(c, 4*time.Second) {
		t.Fatalf("a connection trickling its header was still open after %v; want it closed after HEADER_TIMEOUT=1s", time.Since(start))
	}
	if took := time.Since(start); took < 800*time.Millisecond {
		t.Errorf("closed after %v, before HEADER_TIMEOUT", took)
	}

	// A body slower than HEADER_TIMEOUT still arrives: it has BODY_TIMEOUT once the headers are in.
	body := `{"username":"x","password":"y"}`
	u := dialFrom(t, "127.0.0.8", s.addr)
	fmt.Fprintf(u, "POST /api/auth/login HTTP/1.1\r\nHost: shop\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))
	time.Sleep(1500 * time.Millisecond)
	_, _ = io.WriteString(u, body)
	_ = u.SetReadDeadline(time.Now().Add(5 * time.Second))
	if code, err := readStatus(u); code == 0 {
		t.Errorf("a body sent 1.5 s after its headers got no answer (%v); want one (BODY_TIMEOUT=5s)", err)
	}
}

func TestBeyondTheTotalIdleConnectionsAreShedAndNewOnesRefusedQuickly(t *testing.T) {
	testenv.Long(t)
	s := serveWith(t, map[string]string{"MAX_CONNS": "2"})
	idle := dialFrom(t, "127.0.0.2", s.addr)
	if code, err := ask(idle, "/healthz"); code != http.StatusOK {
		t.Fatalf("first: %d, %v", code, err)
	}
	// Two connections in the middle of a request: neither is idle.
	busy := dialFrom(t, "127.0.0.3", s.addr)
	_, _ = io.WriteString(busy, "GET /healthz HTTP/1.1\r\n")
	time.Sleep(100 * time.Millisecond)
	second := dialFrom(t, "127.0.0.4", s.addr)
	_, _ = io.WriteString(second, "GET /healthz HTTP/1.1\r\n")
	if !closedWithin(idle, 2*time.Second) {
		t.Fatal("the idle keep-alive connection was not closed to admit a new one beyond MAX_CONNS=2")
	}
	_, _ = io.WriteString(second, "Host: shop\r\n\r\n")
	_ = second.SetReadDeadline(time.Now().Add(2 * time.Second))
	if code, err := readStatus(second); code != http.StatusOK {
		t.Errorf("the connection admitted by shedding got %d, %v; want 200", code, err)
	}

	// Now busy is mid-request and second is idle: second goes for the next. Make it busy again.
	_, _ = io.WriteString(second, "GET /healthz HTTP/1.1\r\n")
	time.Sleep(100 * time.Millisecond)
	c := dialFrom(t, "127.0.0.5", s.addr)
	start := time.Now()
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	code, err := readStatus(c)
	if code != http.StatusServiceUnavailable {
		t.Fatalf("a connection beyond the total with none idle got %d, %v; want 503", code, err)
	}
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Errorf("the 503 took %v; want it at once", took)
	}
}

func TestHealthzAnswersDuringAConnectionFlood(t *testing.T) {
	testenv.Long(t)
	s := serveWith(t, map[string]string{"MAX_CONNS": "200", "MAX_CONNS_PER_ADDR": "50", "HEADER_TIMEOUT": "1s"})
	// 300 half-requests from 10 addresses, each trickling a header line every 300 ms, held 3 s.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for i := range 300 {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 1, byte(i%10+1))}, Timeout: time.Second}
		c, err := d.Dial("tcp", s.addr)
		if err != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			trickle(c, "GET /healthz HTTP/1.1\r\n", stop)
		}()
	}
	defer func() { close(stop); wg.Wait() }()

	// The operators' listener answers throughout; the public one within a few seconds.
	var public time.Duration
	end := time.Now().Add(3 * time.Second)
	for time.Now().Before(end) {
		resp, err := (&http.Client{Timeout: time.Second}).Get("http://" + s.metrics + "/healthz")
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("the operators' /healthz during the flood: %v %v", resp, err)
		}
		resp.Body.Close()
		if public == 0 {
			if code, took := healthz(s.addr, "127.0.0.99", time.Second); code == http.StatusOK {
				public = took
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if public == 0 {
		t.Error("the public /healthz did not answer within 3 s of the flood (HEADER_TIMEOUT=1s)")
	}
}

// emfileListener fails every other accept as a full descriptor table does, for its first n accepts.
type emfileListener struct {
	net.Listener
	mu sync.Mutex
	n  int
}

func (l *emfileListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	fail := l.n > 0 && l.n%2 == 0
	if l.n > 0 {
		l.n--
	}
	l.mu.Unlock()
	if fail {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

func TestServeWaitsOutTooManyOpenFiles(t *testing.T) {
	f, _ := newTestApp(t)
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- serve(ctx, f, &emfileListener{Listener: raw, n: 20}, 5*time.Second) }()
	for i := range 10 {
		select {
		case err := <-served:
			t.Fatalf("Serve returned %v at request %d; want it to wait out EMFILE and serve on", err, i)
		default:
		}
		if code, _ := healthz(raw.Addr().String(), "127.0.0.1", 3*time.Second); code != http.StatusOK {
			t.Fatalf("request %d through EMFILE got %d; want 200", i, code)
		}
	}
	cancel()
	if err := <-served; err != nil {
		t.Errorf("Serve returned %v at the stop", err)
	}
}

func TestConnCapLeavesDescriptorsForTheServices(t *testing.T) {
	tests := []struct {
		nofile   uint64
		maxConns int
		want     int
	}{
		{20000, 0, 18000}, // a tenth kept back
		{4096, 0, 3584},   // at least 512
		{1024, 0, 512},    // at most half
		{1 << 20, 0, 943719},
		{20000, 5000, 5000}, // MAX_CONNS wins
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.nofile, "/", tt.maxConns), func(t *testing.T) {
			if got := (Config{MaxConns: tt.maxConns}).connCap(tt.nofile); got != tt.want {
				t.Errorf("connCap(%d) with MAX_CONNS=%d = %d, want %d", tt.nofile, tt.maxConns, got, tt.want)
			}
		})
	}
	if _, err := LoadConfig(envOf(map[string]string{"HEADER_TIMEOUT": "40s"})); err == nil || !strings.Contains(err.Error(), "HEADER_TIMEOUT") {
		t.Errorf("a header timeout past the body's was taken: %v", err)
	}
}

func TestTheOperatorsListenerIsCapped(t *testing.T) {
	testenv.Long(t)
	s := serveWith(t, nil)
	// Half-sent requests, more than the cap: those beyond it are answered and closed at once, instead of
	// each holding a descriptor until the header timeout.
	const extra = 20
	var conns []net.Conn
	for range metricsMaxConns + extra {
		c := dialFrom(t, "127.0.0.1", s.metrics)
		_, _ = io.WriteString(c, "GET /metrics HTTP/1.1\r\n")
		conns = append(conns, c)
	}
	time.Sleep(300 * time.Millisecond)
	closed := 0
	for _, c := range conns {
		if closedWithin(c, 20*time.Millisecond) {
			closed++
		}
	}
	if closed < extra {
		t.Errorf("%d of %d half-sent connections to the operators' listener were closed at once; want at least the %d beyond its cap of %d",
			closed, len(conns), extra, metricsMaxConns)
	}
	if code, _ := healthz(s.addr, "127.0.0.99", 2*time.Second); code != http.StatusOK {
		t.Errorf("the public /healthz during the operators' flood: %d; want 200", code)
	}
}

func TestATimedOutRequestIsAnsweredWithTheContractsJSON(t *testing.T) {
	testenv.Long(t)
	s := serveWith(t, map[string]string{"HEADER_TIMEOUT": "1s", "BODY_TIMEOUT": "2s"})
	tests := []struct {
		name, sent string
		want       []string // what the message says
	}{
		{"headers not all in: both languages", "GET /healthz HTTP/1.1\r\nHost: shop\r\nAccept-Language: zh\r\n",
			[]string{"The request did not arrive in time.", "请求未能及时到达。"}},
		// fasthttp forgets the headers of a request whose body is late: its language is not known either.
		{"the body late", "POST /api/auth/login HTTP/1.1\r\nHost: shop\r\nAccept-Language: zh-CN\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n{",
			[]string{"The request did not arrive in time.", "请求未能及时到达。"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dialFrom(t, "127.0.0.1", s.addr)
			_, _ = io.WriteString(c, tt.sent)
			_ = c.SetReadDeadline(time.Now().Add(6 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			var body struct{ Error, Message string }
			if err := json.Unmarshal(raw, &body); err != nil || resp.StatusCode != http.StatusRequestTimeout || body.Error != "timeout" {
				t.Fatalf("got %d %q (%v); want 408 with the contract's JSON, error timeout", resp.StatusCode, raw, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(body.Message, w) {
					t.Errorf("message %q does not say %q", body.Message, w)
				}
			}
		})
	}
}

// trickle is a slowloris: it sends first (half a request), then a header line every 300 ms until stop
// closes or the server closes the connection.
func trickle(c net.Conn, first string, stop <-chan struct{}) {
	_, _ = io.WriteString(c, first)
	tick := time.NewTicker(300 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			if _, err := io.WriteString(c, "X-Trickle: 1\r\n"); err != nil {
				return
			}
		}
	}
}
