package stock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// A take sent on a connection that then broke may have run (the master killed after it ran it) or not.
// go-redis hides the break when it retries by itself: the take goes again on a new connection, and if
// that dial is refused (the master dead, not replaced yet) the error the ledger sees is the refused
// dial, which sent nothing. Told so, the buyer would be answered 503 "nothing was taken, try again"
// while holding an order (the outside review's H1). So the ledger counts the broken connections of its
// client (ConnHook), and a take that fails while one broke is answered as one whose outcome is unknown:
// 202 unconfirmed, journalled, settled later (unconfirmed.go), never an error to try again. A buyer
// whose take failed while another's connection broke is told unconfirmed too: the truth is "not known",
// and the settle or the replay after the failover says which.

// unknownOutcome is the error of a take that may have run: its connection broke after it was sent, and
// whatever was tried after failed.
type unknownOutcome struct{ err error }

func (u unknownOutcome) Error() string { return fmt.Sprintf("the take may have run: %v", u.err) }

// ConnHook is a go-redis hook for the ledger's client (a single Redis, or Sentinel's failover client):
// it counts the connections that broke under a read or write, which tells a take that failed after it
// may have run from one that never left.
func (l *Ledger) ConnHook() redis.Hook { return connWatch{&l.breaks} }

type connWatch struct{ n *atomic.Int64 }

var _ redis.Hook = connWatch{}

func (w connWatch) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		cn, err := next(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &watchedConn{Conn: cn, n: w.n}, nil
	}
}

func (connWatch) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (connWatch) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// watchedConn counts itself broken once, at its first read or write that fails other than by a timeout
// (a deadline passed is go-redis's own bound, not a break). A read of a connection closed under it
// counts: go-redis's failover client closes the connections to the old master in use when Sentinel
// names a new one, and a take waiting there for its answer may have run. A write on a closed connection
// sent nothing and does not count.
type watchedConn struct {
	net.Conn
	n     *atomic.Int64
	broke atomic.Bool
}

func (c *watchedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.failed(err, true)
	return n, err
}

// SetReadDeadline comes before go-redis reads a reply: on a connection closed since its command was
// written it fails, and go-redis answers that without a read, so it counts as the read would.
func (c *watchedConn) SetReadDeadline(t time.Time) error {
	err := c.Conn.SetReadDeadline(t)
	c.failed(err, true)
	return err
}

func (c *watchedConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.failed(err, false)
	return n, err
}

func (c *watchedConn) failed(err error, reading bool) {
	if err == nil || isTimeout(err) || (!reading && errors.Is(err, net.ErrClosed)) {
		return
	}
	if c.broke.CompareAndSwap(false, true) {
		c.n.Add(1)
	}
}

// SyscallConn lets go-redis's pool check an idle connection's health as it checks an unwrapped one.
func (c *watchedConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errors.ErrUnsupported
}
