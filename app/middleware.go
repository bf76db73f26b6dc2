package app

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/helmet"
	"github.com/gofiber/fiber/v2/middleware/requestid"
	"github.com/prometheus/client_golang/prometheus"
)

// unmatched labels requests no route took, so that scanners cannot grow the metrics without bound.
const unmatched = "(unmatched)"

// routerMiss reports whether err is the router's own answer for an address or method no route takes
// (handlers answer their own 404s with an *errs.Error).
func routerMiss(err error) bool {
	var fe *fiber.Error
	return errors.As(err, &fe) && (fe.Code == fiber.StatusNotFound || fe.Code == fiber.StatusMethodNotAllowed)
}

func requestID(c *fiber.Ctx) string {
	id, _ := c.Locals(requestid.ConfigDefault.ContextKey).(string)
	return id
}

// httpMetrics are the request counts and latencies by route and status.
type httpMetrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_http_requests_total",
			Help: "HTTP requests by method, route and status.",
		}, []string{"method", "route", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "seckill_http_request_duration_seconds",
			Help:    "HTTP request latency by method and route.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"method", "route"}),
	}
	reg.MustRegister(m.requests, m.latency)
	return m
}

// methodLabel names a request's method with a string of its own: Fiber's lives in a buffer the next
// request reuses, and a metric keeps its label values for ever (a GET counted as "POS" otherwise).
func methodLabel(m string) string {
	for _, known := range []string{fiber.MethodGet, fiber.MethodPost, fiber.MethodPut, fiber.MethodDelete,
		fiber.MethodHead, fiber.MethodPatch, fiber.MethodOptions} {
		if m == known {
			return known
		}
	}
	return "OTHER"
}

// observe runs the rest of the chain, settles the status (running the error handler itself, so that the
// status it sets is the one counted and logged), then counts, times and logs the request.
func observe(m *httpMetrics, log *slog.Logger) fiber.Handler {
	return func(c *fiber.Ctx) error {
		start := time.Now() // latency, by the wall clock
		route := ""
		if err := c.Next(); err != nil {
			if routerMiss(err) {
				route = unmatched
			}
			if herr := c.App().ErrorHandler(c, err); herr != nil {
				_ = c.SendStatus(fiber.StatusInternalServerError)
			}
		}
		elapsed := time.Since(start)
		status := c.Response().StatusCode()
		if route == "" {
			route = c.Route().Path
		}
		method := methodLabel(c.Method())
		m.requests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
		m.latency.WithLabelValues(method, route).Observe(elapsed.Seconds())
		if log.Enabled(c.UserContext(), slog.LevelInfo) {
			log.LogAttrs(c.UserContext(), slog.LevelInfo, "request",
				slog.String("method", method), slog.String("path", c.Path()), slog.Int("status", status),
				slog.Duration("latency", elapsed), slog.String("ip", c.IP()), slog.String("request_id", requestID(c)))
		}
		return nil
	}
}

// contentSecurityPolicy lets pages load scripts, styles and fonts from this site only, images from here,
// data: URLs (captchas and QR codes) and sites a merchant's image_url names, and be framed by nobody.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: https: http:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// securityHeaders sets the headers a browser needs to keep pages from being framed, sniffed or leaking
// their addresses (Fiber's helmet), and HSTS when the site is served over TLS (BASE_URL https://, even
// behind a proxy that ends TLS, where helmet would not see it).
func securityHeaders(cfg Config) fiber.Handler {
	h := helmet.New(helmet.Config{
		ContentSecurityPolicy:     contentSecurityPolicy,
		XFrameOptions:             "DENY",
		ReferrerPolicy:            "same-origin",
		CrossOriginEmbedderPolicy: "unsafe-none", // item images may be hosted elsewhere
		CrossOriginResourcePolicy: "same-origin",
	})
	if !cfg.SecureCookies() {
		return h
	}
	return func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderStrictTransportSecurity, "max-age=31536000; includeSubDomains")
		return h(c)
	}
}

// requestDeadline bounds every request's database queries and Redis calls: none can hang past it.
const requestDeadline = 15 * time.Second

// deadline gives every request's context a deadline, so that no query or call made with
// c.UserContext() waits forever on a server that stopped answering.
func deadline(d time.Duration) fiber.Handler {
	return func(c *fiber.Ctx) error {
		ctx, cancel := context.WithTimeout(c.UserContext(), d)
		defer cancel()
		c.SetUserContext(ctx)
		return c.Next()
	}
}
