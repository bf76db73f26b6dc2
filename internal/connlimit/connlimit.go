// Package connlimit keeps a server's open connections a bounded resource: a listener that waits out a
// full descriptor table instead of failing, caps in total and per client address, idle keep-alive
// connections shed first when the total is reached, and quick refusals beyond it.
package connlimit

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Options are a Limiter's caps. A cap of 0 is no cap.
type Options struct {
	Total   int            // the most connections open at once
	PerAddr int            // the most from one client address: an IPv4 address, or an IPv6 /64
	Exempt  []netip.Prefix // trusted proxies: the per-address cap does not apply to them, and an eighth of
	// the total is kept for them (a connection of theirs carries many clients' requests in turn)
	Log *slog.Logger // where refusals and accept errors are said, at most once in LogEvery
	// CoarseDeadlines: a deadline takes effect when the connection next reads or writes, and one that
	// moves later by less than deadlineGrain keeps the one in force (a deadline may end up to that much
	// early). For a server that sets deadlines only from the goroutine that reads and writes, as fasthttp
	// does: it moves the read deadline three times a request (idle, headers, body) and the write deadline
	// once, each a runtime timer moved, while a small request is read whole at the first of them. Not
	// for net/http, which ends a blocked read from another goroutine by moving its deadline.
	CoarseDeadlines bool
}

// deadlineGrain is how much earlier than asked a coarse deadline may be in force.
const deadlineGrain = 250 * time.Millisecond

// logEvery is how often at most the limiter says that it refuses connections or that accept fails.
const logEvery = 10 * time.Second

// Stats are what a Limiter has counted since it was made, for the metrics.
type Stats struct {
	Open          int    // connections open now
	Idle          int    // of them, keep-alive connections waiting for their next request
	Shed          uint64 // idle connections closed to admit a new one beyond the total
	RefusedTotal  uint64 // new connections turned away because the total was reached and none was idle
	RefusedAddr   uint64 // new connections turned away because their address had its share
	AcceptRetries uint64 // accepts that failed for a passing reason (no descriptor left, ...) and were tried again
}

// Limiter counts the open connections of one server, in total and by address, and knows which are idle.
// Its connections tell it when they close; the server tells it when one goes idle or active (Idle,
// Active), from its connection-state hook.
type Limiter struct {
	opts Options

	mu     sync.Mutex
	open   int
	byAddr map[netip.Addr]int
	idle   [2]idleList // the longest idle first: [0] others', [1] the exempt addresses'
	room   int         // of the total, kept for the exempt addresses

	shed, refusedTotal, refusedAddr, acceptRetries atomic.Uint64
	lastLog                                        atomic.Int64 // unix nanoseconds of the last log line
}

// New returns a Limiter with the caps of opts.
func New(opts Options) *Limiter {
	l := &Limiter{opts: opts, byAddr: make(map[netip.Addr]int)}
	if len(opts.Exempt) > 0 {
		l.room = opts.Total / 8
	}
	return l
}

// Stats reports the counts now.
func (l *Limiter) Stats() Stats {
	l.mu.Lock()
	open, idle := l.open, l.idle[0].n+l.idle[1].n
	l.mu.Unlock()
	return Stats{Open: open, Idle: idle, Shed: l.shed.Load(), RefusedTotal: l.refusedTotal.Load(),
		RefusedAddr: l.refusedAddr.Load(), AcceptRetries: l.acceptRetries.Load()}
}

// Idle marks c, a connection of this limiter's listener, as waiting for its next request: the first to
// be closed when the total is reached. Other connections are ignored.
func (l *Limiter) Idle(c net.Conn) {
	lc, ok := c.(*Conn)
	if !ok || lc.l != l {
		return
	}
	l.mu.Lock()
	if !lc.closed {
		l.idle[lc.exemptIdx()].remove(lc)
		l.idle[lc.exemptIdx()].pushBack(lc)
	}
	l.mu.Unlock()
}

// Active marks c as reading or answering a request: it is not shed.
func (l *Limiter) Active(c net.Conn) {
	lc, ok := c.(*Conn)
	if !ok || lc.l != l {
		return
	}
	l.mu.Lock()
	l.idle[lc.exemptIdx()].remove(lc)
	l.mu.Unlock()
}

// Key is the address a connection counts against: the IPv4 address, or the /64 network of an IPv6 one
// (a subscriber is usually given a whole /64). ok is false for an address that is not IP.
func Key(a net.Addr) (netip.Addr, bool) {
	ip, ok := addrOf(a)
	if !ok {
		return netip.Addr{}, false
	}
	return keyOf(ip), true
}

func addrOf(a net.Addr) (netip.Addr, bool) {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.Addr{}, false
	}
	ip, ok := netip.AddrFromSlice(ta.IP)
	return ip.Unmap(), ok
}

func keyOf(ip netip.Addr) netip.Addr {
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.Addr()
	}
	return ip
}

// refusal is why a connection is turned away.
type refusal int

const (
	admitted refusal = iota
	fullTotal
	fullAddr
)

// admit counts a new connection, shedding the longest idle one when the total is reached (another
// client's before a trusted proxy's); it refuses when none is idle or when the address has its share.
func (l *Limiter) admit(c *Conn) refusal {
	ip, keyed := addrOf(c.RemoteAddr())
	if keyed {
		for _, p := range l.opts.Exempt {
			if p.Contains(ip) {
				keyed, c.exempt = false, true
				break
			}
		}
	}
	key := keyOf(ip)
	total := l.opts.Total
	if !c.exempt {
		total -= l.room
	}
	for {
		l.mu.Lock()
		if keyed && l.opts.PerAddr > 0 && l.byAddr[key] >= l.opts.PerAddr {
			l.mu.Unlock()
			l.refusedAddr.Add(1)
			return fullAddr
		}
		if l.opts.Total <= 0 || l.open < total {
			l.open++
			c.counted = true
			if keyed {
				l.byAddr[key]++
				c.key, c.keyed = key, true
			}
			l.mu.Unlock()
			return admitted
		}
		// A trusted proxy's idle connection goes only for another of a trusted proxy's.
		from := &l.idle[0]
		if from.n == 0 && c.exempt {
			from = &l.idle[1]
		}
		victim := from.head
		if victim == nil {
			l.mu.Unlock()
			l.refusedTotal.Add(1)
			return fullTotal
		}
		from.remove(victim)
		l.mu.Unlock()
		// Closing counts it out; the server's read of its next request ends with an error and the server
		// forgets it. Another may have taken the room meanwhile: look again.
		_ = victim.Close()
		l.shed.Add(1)
	}
}

// release counts c out, once.
func (l *Limiter) release(c *Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	l.idle[c.exemptIdx()].remove(c)
	if !c.counted {
		return
	}
	l.open--
	if c.keyed {
		if n := l.byAddr[c.key] - 1; n > 0 {
			l.byAddr[c.key] = n
		} else {
			delete(l.byAddr, c.key)
		}
	}
}

// logf says something at most once in LogEvery, with how many times it happened meanwhile.
func (l *Limiter) logf(msg string, args ...any) {
	if l.opts.Log == nil {
		return
	}
	now := time.Now().UnixNano()
	last := l.lastLog.Load()
	if now-last < int64(logEvery) || !l.lastLog.CompareAndSwap(last, now) {
		return
	}
	l.opts.Log.Warn(msg, args...)
}

// Conn is a connection the Limiter counts until it is closed.
type Conn struct {
	net.Conn
	l *Limiter

	// guarded by l.mu
	key     netip.Addr
	keyed   bool
	exempt  bool // from a trusted proxy (set before the connection is shared, then only read)
	counted bool
	closed  bool
	idle    bool  // in its idle list
	prev    *Conn // its neighbours there
	next    *Conn

	// with CoarseDeadlines, only the connection's own goroutine touches these
	coarse bool
	rd, wd deadline
}

// deadline is a coarse deadline: the one last asked for, and the one in force.
type deadline struct{ want, set time.Time }

// due reports whether the deadline asked for must be put in force: it is none where one is in force, or
// earlier than the one in force, or later by a grain or more.
func (d *deadline) due() bool {
	if d.want.Equal(d.set) {
		return false
	}
	if d.want.IsZero() || d.set.IsZero() || d.want.Before(d.set) {
		return true
	}
	return d.want.Sub(d.set) >= deadlineGrain
}

// Read reads, with the read deadline last asked for (coarse deadlines) in force.
func (c *Conn) Read(b []byte) (int, error) {
	if c.coarse && c.rd.due() {
		if err := c.Conn.SetReadDeadline(c.rd.want); err != nil {
			return 0, err
		}
		c.rd.set = c.rd.want
	}
	return c.Conn.Read(b)
}

// Write writes, with the write deadline last asked for (coarse deadlines) in force.
func (c *Conn) Write(b []byte) (int, error) {
	if c.coarse && c.wd.due() {
		if err := c.Conn.SetWriteDeadline(c.wd.want); err != nil {
			return 0, err
		}
		c.wd.set = c.wd.want
	}
	return c.Conn.Write(b)
}

func (c *Conn) exemptIdx() int {
	if c.exempt {
		return 1
	}
	return 0
}

// Close closes the connection and counts it out; closing again is harmless.
func (c *Conn) Close() error {
	c.l.release(c)
	return c.Conn.Close()
}

// The deadlines of a closed connection are set without an error. The limiter sheds a connection it
// holds idle from the accept loop, and fasthttp marks a keep-alive connection active only after the
// first byte of its next request has arrived: one shed in between is closed under the request, and
// fasthttp panics, ending the process, when setting a deadline fails ("BUG: error in
// SetWriteDeadline"). Its next read or write reports the closed connection instead, which it handles.

// SetDeadline sets both deadlines; on a closed connection it does nothing.
func (c *Conn) SetDeadline(t time.Time) error {
	if c.coarse {
		c.rd.want, c.wd.want = t, t
		return nil
	}
	return closedIsNil(c.Conn.SetDeadline(t))
}

// SetReadDeadline sets the read deadline; on a closed connection it does nothing.
func (c *Conn) SetReadDeadline(t time.Time) error {
	if c.coarse {
		c.rd.want = t
		return nil
	}
	return closedIsNil(c.Conn.SetReadDeadline(t))
}

// SetWriteDeadline sets the write deadline; on a closed connection it does nothing.
func (c *Conn) SetWriteDeadline(t time.Time) error {
	if c.coarse {
		c.wd.want = t
		return nil
	}
	return closedIsNil(c.Conn.SetWriteDeadline(t))
}

func closedIsNil(err error) error {
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// Listener accepts connections within a Limiter's caps. An accept that fails for want of a descriptor
// (EMFILE, ENFILE) or for a connection that went away before it was taken is waited out and tried
// again, as net/http does, instead of ending the server.
type Listener struct {
	net.Listener
	l *Limiter

	closeOnce sync.Once
	closed    chan struct{}

	spareMu   sync.Mutex
	spare     *os.File // a descriptor held back, closed to accept and refuse one connection when none is left
	lingering atomic.Int32
}

var _ net.Listener = (*Listener)(nil)

// Listen wraps ln so that its connections count against l.
func (l *Limiter) Listen(ln net.Listener) *Listener {
	spare, _ := os.Open(os.DevNull) // best effort: without it, a full table is only waited out
	return &Listener{Listener: ln, l: l, closed: make(chan struct{}), spare: spare}
}

// Backoff between accepts that failed, as net/http's: 5 ms doubling to 1 s.
const (
	firstBackoff = 5 * time.Millisecond
	maxBackoff   = time.Second
)

// Accept returns the next connection within the caps. Connections beyond them are answered at once
// (503 not_ready beyond the total, 429 rate_limited beyond an address's share, each with Retry-After: 1) and closed, so that a
// browser retries and a flood costs the accept loop a write each.
func (ln *Listener) Accept() (net.Conn, error) {
	var backoff time.Duration
	for {
		c, err := ln.Listener.Accept()
		if err != nil {
			if !passing(err) {
				return nil, err
			}
			n := ln.l.acceptRetries.Add(1)
			if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				ln.refuseWithSpare()
			}
			backoff = min(max(2*backoff, firstBackoff), maxBackoff)
			ln.l.logf("accepting connections failed; waiting and trying again", "err", err, "retries", n, "wait", backoff)
			select {
			case <-time.After(backoff):
				continue
			case <-ln.closed:
				return nil, net.ErrClosed
			}
		}
		backoff = 0
		lc := &Conn{Conn: c, l: ln.l, coarse: ln.l.opts.CoarseDeadlines}
		switch ln.l.admit(lc) {
		case admitted:
			return lc, nil
		case fullTotal:
			ln.l.logf("connections refused: the total cap is reached and none is idle", "cap", ln.l.opts.Total,
				"refused", ln.l.refusedTotal.Load())
			ln.refuse(c, tooBusy)
		case fullAddr:
			ln.l.logf("connections refused: an address has its share", "addr", c.RemoteAddr().String(),
				"cap_per_addr", ln.l.opts.PerAddr, "refused", ln.l.refusedAddr.Load())
			ln.refuse(c, tooMany)
		}
	}
}

// Close stops accepting; Accept waiting out an error returns at once.
func (ln *Listener) Close() error {
	ln.closeOnce.Do(func() {
		close(ln.closed)
		ln.spareMu.Lock()
		if ln.spare != nil {
			_ = ln.spare.Close()
			ln.spare = nil
		}
		ln.spareMu.Unlock()
	})
	return ln.Listener.Close()
}

// passing reports whether an accept error will likely pass: no descriptor or memory left for now, or
// a connection reset or aborted before it was taken.
func passing(err error) bool {
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM,
		syscall.ECONNABORTED, syscall.ECONNRESET, syscall.EPROTO, syscall.EPERM, syscall.EINTR, syscall.EAGAIN} {
		if errors.Is(err, e) {
			return true
		}
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// The answers to connections turned away: complete, small, and closing. They are the API's error
// contract ({"error":"<code>","message":"..."}); written before any request is read, they cannot know its
// language, so each message is said in English and in Chinese together.
var (
	tooBusy = answer("503 Service Unavailable", "not_ready",
		"The server is busy: please retry in a second. 服务器繁忙，请一秒后重试。")
	tooMany = answer("429 Too Many Requests", "rate_limited",
		"Too many connections from your address: please retry in a second. 来自您地址的连接过多，请一秒后重试。")
)

func answer(status, code, message string) []byte {
	body, _ := json.Marshal(struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	}{code, message})
	return []byte("HTTP/1.1 " + status + "\r\nRetry-After: 1\r\nConnection: close\r\n" +
		"Content-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + string(body))
}

// refuseWrite bounds how long a refusal may take to write: the accept loop never waits on a slow client.
const refuseWrite = 20 * time.Millisecond

// maxLingering bounds the refused connections kept open a moment to read what their client sent (so
// that closing sends FIN rather than a reset, which can destroy the answer before it is read).
const maxLingering = 64

// refuse answers c with msg and closes it.
func (ln *Listener) refuse(c net.Conn, msg []byte) {
	_ = c.SetWriteDeadline(time.Now().Add(refuseWrite))
	_, err := c.Write(msg)
	if err != nil || ln.lingering.Load() >= maxLingering {
		_ = c.Close()
		return
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
	ln.lingering.Add(1)
	go func() {
		defer ln.lingering.Add(-1)
		_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		var buf [512]byte
		for {
			if _, err := c.Read(buf[:]); err != nil {
				break
			}
		}
		_ = c.Close()
	}()
}

// refuseWithSpare frees the spare descriptor, takes one waiting connection with it, refuses it and takes
// the spare back: with no descriptor left, the connections queued in the kernel are told to come back
// instead of waiting for nothing.
func (ln *Listener) refuseWithSpare() {
	ln.spareMu.Lock()
	defer ln.spareMu.Unlock()
	if ln.spare == nil {
		return
	}
	_ = ln.spare.Close()
	ln.spare = nil
	if tl, ok := ln.Listener.(*net.TCPListener); ok {
		_ = tl.SetDeadline(time.Now().Add(time.Millisecond))
		if c, err := tl.Accept(); err == nil {
			ln.l.refusedTotal.Add(1)
			_ = c.SetWriteDeadline(time.Now().Add(refuseWrite))
			_, _ = c.Write(tooBusy)
			_ = c.Close()
		}
		_ = tl.SetDeadline(time.Time{})
	}
	select {
	case <-ln.closed:
	default:
		ln.spare, _ = os.Open(os.DevNull)
	}
}

// idleList is the limiter's idle connections, the longest idle first, linked through the connections
// themselves: a request's going idle and active again allocates nothing (container/list made an element
// a request). Guarded by the limiter's mu.
type idleList struct {
	head, tail *Conn
	n          int
}

func (q *idleList) pushBack(c *Conn) {
	c.idle, c.prev, c.next = true, q.tail, nil
	if q.tail != nil {
		q.tail.next = c
	} else {
		q.head = c
	}
	q.tail = c
	q.n++
}

// remove takes c out of the list if it is in it.
func (q *idleList) remove(c *Conn) {
	if !c.idle {
		return
	}
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		q.head = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else {
		q.tail = c.prev
	}
	c.idle, c.prev, c.next = false, nil, nil
	q.n--
}
