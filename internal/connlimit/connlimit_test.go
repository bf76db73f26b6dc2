package connlimit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// serve accepts on a Limiter's listener in the background and hands over what it admits.
func serve(t *testing.T, opts Options) (*Limiter, string, <-chan net.Conn) {
	t.Helper()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := New(opts)
	ln := l.Listen(raw)
	t.Cleanup(func() { _ = ln.Close() })
	admitted := make(chan net.Conn, 100)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = c.Close() })
			admitted <- c
		}
	}()
	return l, raw.Addr().String(), admitted
}

// dialFrom connects from the loopback address from (Linux routes all of 127/8 to lo).
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

// refusedWith reads what the server said to a connection it turned away (0 when it said nothing in time).
func refusedWith(t *testing.T, c net.Conn) int {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	if resp.Header.Get("Retry-After") != "1" || !resp.Close {
		t.Errorf("refusal %d has Retry-After %q, close %v; want 1, true", resp.StatusCode, resp.Header.Get("Retry-After"), resp.Close)
	}
	return resp.StatusCode
}

func admittedWithin(t *testing.T, admitted <-chan net.Conn) net.Conn {
	t.Helper()
	select {
	case c := <-admitted:
		return c
	case <-time.After(2 * time.Second):
		t.Fatal("the connection was not admitted")
		return nil
	}
}

func TestPerAddressCap(t *testing.T) {
	l, addr, admitted := serve(t, Options{PerAddr: 3, Exempt: []netip.Prefix{netip.MustParsePrefix("127.0.0.9/32")}})
	for range 3 {
		dialFrom(t, "127.0.0.5", addr)
		admittedWithin(t, admitted)
	}
	if got := refusedWith(t, dialFrom(t, "127.0.0.5", addr)); got != http.StatusTooManyRequests {
		t.Errorf("the 4th connection from 127.0.0.5 got %d, want 429", got)
	}
	dialFrom(t, "127.0.0.6", addr)
	admittedWithin(t, admitted)
	for range 5 { // a trusted proxy carries everyone's connections
		dialFrom(t, "127.0.0.9", addr)
		admittedWithin(t, admitted)
	}
	if s := l.Stats(); s.Open != 9 || s.RefusedAddr != 1 {
		t.Errorf("stats %+v, want 9 open, 1 refused for its address", s)
	}
}

func TestAnAddressGetsItsShareBackWhenItsConnectionsClose(t *testing.T) {
	l, addr, admitted := serve(t, Options{PerAddr: 1})
	dialFrom(t, "127.0.0.7", addr)
	c := admittedWithin(t, admitted)
	_ = c.Close()
	_ = c.Close() // twice counts once
	dialFrom(t, "127.0.0.7", addr)
	admittedWithin(t, admitted)
	if s := l.Stats(); s.Open != 1 {
		t.Errorf("%d open, want 1", s.Open)
	}
}

func TestBeyondTheTotalAnIdleConnectionIsShedThenNewOnesAreRefused(t *testing.T) {
	l, addr, admitted := serve(t, Options{Total: 2})
	first := dialFrom(t, "127.0.0.2", addr)
	idle := admittedWithin(t, admitted)
	dialFrom(t, "127.0.0.3", addr)
	busy := admittedWithin(t, admitted)
	l.Idle(idle)
	l.Idle(busy)
	l.Active(busy) // a request came on it

	dialFrom(t, "127.0.0.4", addr)
	admittedWithin(t, admitted)
	_ = first.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := first.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("the idle connection read %v, want it closed (EOF) to make room", err)
	}

	if got := refusedWith(t, dialFrom(t, "127.0.0.5", addr)); got != http.StatusServiceUnavailable {
		t.Errorf("a connection beyond the total with none idle got %d, want 503", got)
	}
	if s := l.Stats(); s.Open != 2 || s.Shed != 1 || s.RefusedTotal != 1 || s.Idle != 0 {
		t.Errorf("stats %+v, want 2 open, 1 shed, 1 refused, 0 idle", s)
	}
}

// failing is a listener whose first accepts fail as a full descriptor table makes them.
type failing struct {
	net.Listener
	errs []error
}

func (f *failing) Accept() (net.Conn, error) {
	if len(f.errs) > 0 {
		err := f.errs[0]
		f.errs = f.errs[1:]
		return nil, err
	}
	return f.Listener.Accept()
}

func TestAcceptWaitsOutAFullDescriptorTable(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	emfile := &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	enfile := &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.ENFILE)}
	aborted := &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.ECONNABORTED)}
	l := New(Options{})
	ln := l.Listen(&failing{Listener: raw, errs: []error{emfile, enfile, aborted, emfile}})
	defer ln.Close()
	dialFrom(t, "127.0.0.1", raw.Addr().String())
	start := time.Now()
	c, err := ln.Accept()
	if err != nil {
		t.Fatalf("Accept returned %v; want the errors waited out", err)
	}
	_ = c.Close()
	if s := l.Stats(); s.AcceptRetries != 4 {
		t.Errorf("%d retries, want 4", s.AcceptRetries)
	}
	if waited := time.Since(start); waited < 5*time.Millisecond+10*time.Millisecond+20*time.Millisecond+40*time.Millisecond {
		t.Errorf("waited %v in all, want the backoff 5+10+20+40 ms", waited)
	}

	// A closed listener ends Accept, even while it waits.
	ln2 := New(Options{}).Listen(&failing{Listener: raw, errs: []error{emfile, emfile, emfile, emfile, emfile, emfile, emfile, emfile}})
	go func() { time.Sleep(50 * time.Millisecond); _ = ln2.Close() }()
	if _, err := ln2.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept on a closed listener returned %v, want net.ErrClosed", err)
	}
}

func TestKey(t *testing.T) {
	tests := []struct {
		addr string
		want string
	}{
		{"192.0.2.7", "192.0.2.7"},
		{"::ffff:192.0.2.7", "192.0.2.7"},
		{"2001:db8:1:2:3:4:5:6", "2001:db8:1:2::"},
		{"2001:db8:1:2:ffff::1", "2001:db8:1:2::"},
		{"2001:db8:1:3::1", "2001:db8:1:3::"},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			got, ok := Key(&net.TCPAddr{IP: net.ParseIP(tt.addr), Port: 1})
			if !ok || got.String() != tt.want {
				t.Errorf("Key(%s) = %v, %v; want %s", tt.addr, got, ok, tt.want)
			}
		})
	}
}

func TestTrustedProxiesKeepAShareOfTheTotalAndTheirIdleConnections(t *testing.T) {
	// Total 16: others get 14, the proxy (127.0.0.9) the last 2; a flood cannot shed the proxy's idle ones.
	l, addr, admitted := serve(t, Options{Total: 16, Exempt: []netip.Prefix{netip.MustParsePrefix("127.0.0.9/32")}})
	dialFrom(t, "127.0.0.9", addr)
	proxyIdle := admittedWithin(t, admitted)
	l.Idle(proxyIdle)
	for range 13 {
		dialFrom(t, "127.0.0.5", addr)
		admittedWithin(t, admitted)
	}
	if got := refusedWith(t, dialFrom(t, "127.0.0.5", addr)); got != http.StatusServiceUnavailable {
		t.Errorf("a flood's connection beyond its share got %d, want 503 (the proxy's idle one kept)", got)
	}
	for range 2 { // the proxy's room
		dialFrom(t, "127.0.0.9", addr)
		admittedWithin(t, admitted)
	}
	dialFrom(t, "127.0.0.9", addr) // beyond the total: the proxy's own idle connection makes way
	admittedWithin(t, admitted)
	if s := l.Stats(); s.Open != 16 || s.Shed != 1 || s.RefusedTotal != 1 {
		t.Errorf("stats %+v, want 16 open, 1 shed, 1 refused", s)
	}
}

func TestRefusalsAreTheContractsJSON(t *testing.T) {
	_, addr, admitted := serve(t, Options{Total: 2, PerAddr: 1})
	dialFrom(t, "127.0.0.2", addr)
	admittedWithin(t, admitted)
	dialFrom(t, "127.0.0.3", addr)
	admittedWithin(t, admitted)
	tests := []struct {
		name   string
		from   string
		status int
		code   string
	}{
		{"an address beyond its share", "127.0.0.2", http.StatusTooManyRequests, "rate_limited"},
		{"beyond the total", "127.0.0.4", http.StatusServiceUnavailable, "not_ready"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dialFrom(t, tt.from, addr)
			_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
			raw, err := io.ReadAll(c)
			if err != nil {
				t.Fatalf("reading the refusal: %v", err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), nil)
			if err != nil {
				t.Fatalf("the refusal is not HTTP: %v\n%q", err, raw)
			}
			defer resp.Body.Close()
			var body struct{ Error, Message string }
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatalf("the refusal's body is not JSON: %v\n%q", err, raw)
			}
			if resp.StatusCode != tt.status || resp.Header.Get("Content-Type") != "application/json" ||
				resp.Header.Get("Retry-After") != "1" || body.Error != tt.code ||
				!strings.Contains(body.Message, "retry") || !strings.Contains(body.Message, "重试") {
				t.Errorf("got %q; want %d application/json with Retry-After: 1, error %q and a message in English and Chinese",
					raw, tt.status, tt.code)
			}
		})
	}
}
