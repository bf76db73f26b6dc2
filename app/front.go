package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"golang.org/x/time/rate"
)

// front is the first link of every request's chain: it gives the request its id, its deadline and the
// security headers, catches a handler's panic, settles the status (running the error handler itself, so
// that the status it sets is the one counted and logged), then counts, times and logs the request. It
// does in one handler what five of them did (Fiber's requestid and recover, and ours), each with its own
// hop through the chain and its own allocations: the profiles in docs/performance.md.
type front struct {
	metrics  *httpMetrics
	access   *accessLog
	ids      requestIDs
	headers  securityHeaderSets
	deadline deadlineClock
}

func newFront(m *httpMetrics, access *accessLog, cfg Config) *front {
	return &front{
		metrics: m, access: access, ids: newRequestIDs(), headers: newSecurityHeaderSets(cfg),
		deadline: deadlineClock{d: requestDeadline},
	}
}

// headerRequestID is spelled as fasthttp normalizes it (Fiber's constant, X-Request-ID, is not): Peek finds it.
var headerRequestID = []byte("X-Request-Id")

func (f *front) handle(c *fiber.Ctx) error {
	// Latency, by the wall clock, from the moment fasthttp handed the request over (it reads the clock
	// for that already: one read fewer a request); a request handed over without a server, by a test,
	// has none.
	start := c.Context().Time()
	if start.IsZero() {
		start = time.Now()
	}
	var idBuf [64]byte
	id := f.ids.of(c, idBuf[:0])
	c.Response().Header.SetCanonical(headerRequestID, id)
	f.headers.set(c)
	c.SetUserContext(f.deadline.at(start))

	matched := true
	if err := next(c); err != nil {
		matched = !routerMiss(err)
		if herr := c.App().ErrorHandler(c, err); herr != nil {
			_ = c.SendStatus(fiber.StatusInternalServerError)
		}
	}
	elapsed := time.Since(start)
	status := c.Response().StatusCode()
	var route *fiber.Route
	if matched {
		route = c.Route()
	}
	s := f.metrics.series(route, methodLabel(c.Method()), status)
	s.requests.Inc()
	s.latency.Observe(elapsed.Seconds())
	f.access.request(c, status, start.Add(elapsed), elapsed, id)
	return nil
}

// next runs the rest of the chain; a panic in it is the request's error (500), not the process's end.
func next(c *fiber.Ctx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			var ok bool
			if err, ok = r.(error); !ok {
				err = fmt.Errorf("%v", r)
			}
		}
	}()
	return c.Next()
}

// requestIDs makes request ids: a random prefix per process and a counter, sixteen characters or so
// (UUIDs are twice as long and cost more to make), unique across instances. An id the request brings
// (nginx's $request_id, say) is kept when it is a plain token of at most 64 characters.
type requestIDs struct {
	prefix []byte
	n      atomic.Uint64
}

func newRequestIDs() requestIDs {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return requestIDs{prefix: []byte(hex.EncodeToString(b[:]) + "-")}
}

func (r *requestIDs) of(c *fiber.Ctx, buf []byte) []byte {
	if in := c.Request().Header.PeekBytes(headerRequestID); len(in) > 0 && plainToken(in) {
		return append(buf, in...)
	}
	return strconv.AppendUint(append(buf, r.prefix...), r.n.Add(1), 36)
}

// plainToken reports whether b is at most 64 letters, digits, '-', '_' or '.': safe to echo and to log.
func plainToken(b []byte) bool {
	if len(b) > 64 {
		return false
	}
	for _, ch := range b {
		if !('a' <= ch && ch <= 'z' || 'A' <= ch && ch <= 'Z' || '0' <= ch && ch <= '9' || ch == '-' || ch == '_' || ch == '.') {
			return false
		}
	}
	return true
}

// requestID is the request's id, as front set it on the answer.
func requestID(c *fiber.Ctx) string {
	return string(c.Response().Header.PeekBytes(headerRequestID))
}

// requestDeadline bounds every request's database queries and Redis calls: none can hang past it.
const requestDeadline = 15 * time.Second

// deadlineTick is how long requests share one deadline context.
const deadlineTick = 100 * time.Millisecond

// deadlineClock gives every request's context a deadline, so that no query or call made with
// c.UserContext() waits forever on a server that stopped answering. The requests that start within the
// same tenth of a second share one context, which ends d after the first of them started (its own timer
// cancels it): a request costs an atomic read, not a context and a timer of its own.
type deadlineClock struct {
	d   time.Duration
	cur atomic.Pointer[deadlineCtx]
}

type deadlineCtx struct {
	ctx    context.Context
	cancel context.CancelFunc // called by nobody: the deadline's own timer ends the context
	start  time.Time
}

func (k *deadlineClock) at(now time.Time) context.Context {
	cur := k.cur.Load()
	if cur == nil || now.Sub(cur.start) >= deadlineTick || now.Before(cur.start) {
		ctx, cancel := context.WithDeadline(context.Background(), now.Add(k.d))
		cur = &deadlineCtx{ctx: ctx, cancel: cancel, start: now}
		k.cur.Store(cur)
	}
	return cur.ctx
}

// refusalLines is how many access log lines of refused requests (4xx: sold out, rate limited, ...) are
// written a second at most; the rest are counted, and the next line written says how many were left out.
// Every request is counted in the metrics whatever the log says. A crowd that is refused a hundred
// thousand times a second must not spend its server on writing that down.
const refusalLines = 100

// accessLog writes one line a request, as the server's logger would (text or JSON, the same keys), but
// formatted straight into a buffer of its own: slog's records, attributes and handler cost a status poll
// a tenth of its CPU (the profile in docs/performance.md). A logger that newLogger did not make (a
// test's) gets its lines through slog.
type accessLog struct {
	on       bool
	out      *logHandler // nil: through slow
	slow     *slog.Logger
	proxied  bool // the client's address is in a trusted proxy's header, not the connection's
	refusals *rate.Limiter
	unlogged atomic.Int64
}

func newAccessLog(log *slog.Logger, proxied bool) *accessLog {
	a := &accessLog{on: log.Enabled(context.Background(), slog.LevelInfo), slow: log, proxied: proxied,
		refusals: rate.NewLimiter(refusalLines, refusalLines)}
	a.out, _ = log.Handler().(*logHandler)
	return a
}

func (a *accessLog) request(c *fiber.Ctx, status int, end time.Time, elapsed time.Duration, id []byte) {
	if !a.on {
		return
	}
	if status >= 400 && status < 500 && !a.refusals.Allow() {
		a.unlogged.Add(1)
		return
	}
	unlogged := a.unlogged.Swap(0)
	if a.out == nil {
		attrs := []slog.Attr{slog.String("method", c.Method()), slog.String("path", c.Path()), slog.Int("status", status),
			slog.Duration("latency", elapsed), slog.String("ip", c.IP()), slog.String("request_id", string(id))}
		if unlogged > 0 {
			attrs = append(attrs, slog.Int64("refusals_not_logged", unlogged))
		}
		a.slow.LogAttrs(c.UserContext(), slog.LevelInfo, "request", attrs...)
		return
	}
	l := a.out.line()
	defer a.out.doneFrom(l, c.Context().ConnID()) // a connection's lines keep their order
	l.start(end, "INFO", "request")
	l.str("method", c.Method())
	l.str("path", c.Path())
	l.int("status", int64(status))
	l.duration("latency", elapsed)
	if a.proxied {
		l.str("ip", c.IP())
	} else {
		l.ip("ip", c.Context().RemoteIP())
	}
	l.bytes("request_id", id)
	if unlogged > 0 {
		l.int("refusals_not_logged", unlogged)
	}
	l.end()
}
