package connlimit

import (
	"bufio"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// A connection shed while fasthttp serves a request (the limiter held it idle: fasthttp marks a
// keep-alive connection active only after the first byte of its next request has arrived) must not end
// the process: fasthttp panics ("BUG: error in SetWriteDeadline") when setting a deadline fails. Found
// by a 20,000-page crowd against a cap of 18,000, after 56,310 sheds; here the handler closes its own
// connection, as a shed in that window does.
func TestAConnectionShedUnderARequestDoesNotPanic(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := New(Options{})
	srv := &fasthttp.Server{
		Handler:      func(ctx *fasthttp.RequestCtx) { _ = ctx.Conn().Close(); ctx.SetBodyString("late") },
		ReadTimeout:  5 * time.Second,
		WriteTimeout: 30 * time.Second,
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l.Listen(ln)) }()
	defer func() {
		_ = srv.Shutdown()
		<-done
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
		resp.Body.Close()
		t.Errorf("an answer on a connection closed under its request: %d", resp.StatusCode)
	}
	// The server is still serving.
	c2, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("the server stopped accepting: %v", err)
	}
	c2.Close()
	if l.Stats().Open > 1 {
		t.Errorf("open %d after the shed", l.Stats().Open)
	}
}
