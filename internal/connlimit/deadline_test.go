package connlimit

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

// deadlineCounter is a connection that counts the deadlines put in force on it and keeps the last read one.
type deadlineCounter struct {
	net.Conn
	reads, writes int
	read          time.Time
}

func (d *deadlineCounter) SetReadDeadline(t time.Time) error  { d.reads++; d.read = t; return nil }
func (d *deadlineCounter) SetWriteDeadline(t time.Time) error { d.writes++; return nil }
func (d *deadlineCounter) Read(b []byte) (int, error)         { return copy(b, "GET / HTTP/1.1\r\n\r\n"), nil }
func (d *deadlineCounter) Write(b []byte) (int, error)        { return len(b), nil }

// A keep-alive connection's requests, as fasthttp serves them: the idle deadline, then (the request read
// whole) the headers' and the body's, then the write deadline; a thousand of them a second move the
// runtime's timers a few times, not four thousand.
func TestCoarseDeadlinesMoveTheTimersOncePerGrain(t *testing.T) {
	under := &deadlineCounter{}
	c := &Conn{Conn: under, coarse: true}
	buf := make([]byte, 64)
	start := time.Now()
	for i := range 1000 {
		now := start.Add(time.Duration(i) * time.Millisecond)
		_ = c.SetReadDeadline(now.Add(60 * time.Second)) // idle
		_, _ = c.Read(buf)
		_ = c.SetReadDeadline(now.Add(5 * time.Second))  // headers: already read
		_ = c.SetReadDeadline(now.Add(30 * time.Second)) // body: none
		_ = c.SetWriteDeadline(now.Add(30 * time.Second))
		_, _ = c.Write(buf)
	}
	if under.reads > 5 || under.writes > 5 {
		t.Fatalf("a second of requests moved the read deadline %d times and the write deadline %d times; want a few (one a grain)",
			under.reads, under.writes)
	}
	if under.reads == 0 || under.writes == 0 {
		t.Fatalf("no deadline was put in force: %d reads, %d writes", under.reads, under.writes)
	}
}

// A deadline earlier than the one in force is put in force before the next read: a client trickling its
// headers is still cut off at the header timeout, not at the idle one.
func TestCoarseDeadlinesPutAnEarlierOneInForceBeforeReading(t *testing.T) {
	under := &deadlineCounter{}
	c := &Conn{Conn: under, coarse: true}
	now := time.Now()
	_ = c.SetReadDeadline(now.Add(60 * time.Second))
	_, _ = c.Read(make([]byte, 8))
	header := now.Add(5 * time.Second)
	_ = c.SetReadDeadline(header)
	if !under.read.Equal(now.Add(60 * time.Second)) {
		t.Fatalf("the deadline moved before a read: %v", under.read)
	}
	_, _ = c.Read(make([]byte, 8))
	if !under.read.Equal(header) {
		t.Fatalf("reading with the idle deadline %v in force; want the header's %v", under.read, header)
	}
	_ = c.SetReadDeadline(time.Time{})
	_, _ = c.Read(make([]byte, 8))
	if !under.read.IsZero() {
		t.Fatalf("no deadline asked, %v in force", under.read)
	}
}

// Over a real connection: a read with a short coarse deadline times out when it should.
func TestCoarseDeadlinesTimeOutARealRead(t *testing.T) {
	_, addr, admitted := serve(t, Options{CoarseDeadlines: true})
	client := dialFrom(t, "127.0.0.1", addr)
	_, _ = client.Write([]byte("G"))
	c := admittedWithin(t, admitted)
	_ = c.SetReadDeadline(time.Now().Add(time.Hour))
	if _, err := c.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	start := time.Now()
	_, err := c.Read(make([]byte, 1))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read: %v; want the deadline exceeded", err)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Fatalf("the read waited %v for a 100 ms deadline", waited)
	}
}

// The idle list keeps the longest idle first whichever connection leaves it, and a connection leaves it once.
func TestIdleListKeepsTheLongestIdleFirst(t *testing.T) {
	var q idleList
	a, b, c, d := &Conn{}, &Conn{}, &Conn{}, &Conn{}
	for _, x := range []*Conn{a, b, c, d} {
		q.pushBack(x)
	}
	q.remove(b) // the middle
	q.remove(b) // again: nothing
	q.remove(d) // the tail
	q.pushBack(b)
	var got []*Conn
	for x := q.head; x != nil; x = x.next {
		got = append(got, x)
	}
	if len(got) != 3 || got[0] != a || got[1] != c || got[2] != b || q.n != 3 || q.tail != b {
		t.Fatalf("the list is %v (n %d); want a, c, b", got, q.n)
	}
	q.remove(a) // the head
	if q.head != c || q.n != 2 {
		t.Fatalf("after the head left, the head is %p (n %d); want c", q.head, q.n)
	}
}
