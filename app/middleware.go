package app

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"seckill/auth"
	"seckill/errs"
	"seckill/handlers"
	"seckill/models"
)

// unmatched labels requests no route took, so that scanners cannot grow the metrics without bound.
const unmatched = "(unmatched)"

// routerMiss reports whether err is the router's own answer for an address or method no route takes
// (handlers answer their own 404s with an *errs.Error).
func routerMiss(err error) bool {
	if fe, ok := err.(*fiber.Error); ok {
		return fe.Code == fiber.StatusNotFound || fe.Code == fiber.StatusMethodNotAllowed
	}
	if _, ok := err.(*errs.Error); ok {
		return false // a handler's answer; errors.As's target would escape for it
	}
	var fe *fiber.Error
	return errors.As(err, &fe) && (fe.Code == fiber.StatusNotFound || fe.Code == fiber.StatusMethodNotAllowed)
}

// httpMetrics are the request counts and latencies by route and status.
type httpMetrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec

	// resolved keeps each (route, method, status)'s series, so that a request costs a map read instead of
	// hashing and checking its label values; bounded, since a handler may set any status.
	resolved sync.Map // routeKey → routeSeries
	count    atomic.Int64
}

type routeKey struct {
	route  *fiber.Route // nil for requests no route took
	method string
	status int
}

type routeSeries struct {
	requests prometheus.Counter
	latency  prometheus.Observer
}

const maxResolvedSeries = 1024

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

// series answers the counter and histogram of a route's requests.
func (m *httpMetrics) series(route *fiber.Route, method string, status int) routeSeries {
	k := routeKey{route, method, status}
	if s, ok := m.resolved.Load(k); ok {
		return s.(routeSeries)
	}
	path := unmatched
	if route != nil {
		path = route.Path
	}
	s := routeSeries{m.requests.WithLabelValues(method, path, strconv.Itoa(status)), m.latency.WithLabelValues(method, path)}
	if m.count.Load() < maxResolvedSeries {
		if _, loaded := m.resolved.LoadOrStore(k, s); !loaded {
			m.count.Add(1)
		}
	}
	return s
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

// contentSecurityPolicy lets pages load scripts, styles and fonts from this site only, images from here,
// data: URLs (captchas and QR codes) and the hosts the operator lets an item's image_url name
// (IMAGE_HOSTS, over https only), and be framed by nobody. An image from anywhere else is not loaded: a
// merchant cannot make every visitor's browser call a site of its own.
func contentSecurityPolicy(imageHosts []string) string {
	img := "'self' data:"
	for _, h := range imageHosts {
		img += " https://" + h
	}
	return "default-src 'self'; script-src 'self'; style-src 'self'; img-src " + img + "; " +
		"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
}

// apiContentSecurityPolicy is a JSON answer's: it loads nothing and is framed by nobody, should a browser
// ever open one as a document.
const apiContentSecurityPolicy = "default-src 'none'; frame-ancestors 'none'"

type header struct{ key, value []byte }

// securityHeaderList is the security headers of pages (page) or of JSON answers: those a browser still
// reads (the ones helmet adds for Internet Explorer and Flash are left out). Each answer costs a few
// header writes: they are most of what a status poll or a sold-out answer sends. A JSON answer is never
// a document a person sees, so it carries only what protects it as data: no sniffing it as a script or a
// page, no reading it from another site's page, and the CSP that loads nothing and lets nobody frame it
// (X-Frame-Options, Referrer-Policy and the opener policy are a page's: a JSON answer has no links, no
// clicks and no window). A JSON answer is also kept by no cache unless its handler says it may be (the
// catalog, the line's document, the edge's answers say public): an order, an address book, a buy's answer
// is no proxy's or browser cache's to keep.
func securityHeaderList(page, hsts bool, imageHosts []string) []header {
	csp := apiContentSecurityPolicy
	if page {
		csp = contentSecurityPolicy(imageHosts)
	}
	list := [][2]string{
		{fiber.HeaderContentSecurityPolicy, csp},
		{fiber.HeaderXContentTypeOptions, "nosniff"},
		{fiber.HeaderCrossOriginResourcePolicy, "same-origin"},
	}
	if page {
		list = append(list, [2]string{fiber.HeaderXFrameOptions, "DENY"}, [2]string{fiber.HeaderReferrerPolicy, "same-origin"},
			[2]string{"Cross-Origin-Opener-Policy", "same-origin"})
	} else {
		list = append(list, [2]string{fiber.HeaderCacheControl, "no-store"})
	}
	if hsts {
		list = append(list, [2]string{fiber.HeaderStrictTransportSecurity, "max-age=31536000; includeSubDomains"})
	}
	out := make([]header, len(list))
	for i, kv := range list {
		out[i] = header{[]byte(kv[0]), []byte(kv[1])}
	}
	return out
}

// isAPI reports whether a path is the JSON API's: /api or under /api/, in any case, as the router matches it.
func isAPI(path string) bool {
	return len(path) >= 4 && strings.EqualFold(path[:4], "/api") && (len(path) == 4 || path[4] == '/')
}

// securityHeaderSets are the security headers of pages and of JSON answers.
type securityHeaderSets struct{ pages, api []header }

func newSecurityHeaderSets(cfg Config) securityHeaderSets {
	return securityHeaderSets{securityHeaderList(true, cfg.SecureCookies(), cfg.imageHostList()), securityHeaderList(false, cfg.SecureCookies(), nil)}
}

// set writes the headers of the request's kind of answer: a JSON answer's under /api, a page's elsewhere.
func (s securityHeaderSets) set(c *fiber.Ctx) {
	list := s.pages
	if isAPI(c.Path()) {
		list = s.api
	}
	for _, kv := range list {
		c.Response().Header.SetCanonical(kv.key, kv.value)
	}
}

// securityHeaders sets the security headers alone (the sandbox's pages have no front of their own).
func securityHeaders(cfg Config) fiber.Handler {
	sets := newSecurityHeaderSets(cfg)
	return func(c *fiber.Ctx) error {
		sets.set(c)
		return c.Next()
	}
}

// uploadLimit lets the upload routes (a merchant's item image, its shipments' CSV) have bodies up to
// handlers.MaxUploadBody when the request carries a merchant's session, and every other request up to
// limit. It decides from the request line and the session cookie (checked in memory), before the body
// is read: a stranger cannot make the server set aside an upload's room by announcing one.
func uploadLimit(limit int, sessions *auth.Sessions) func(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
	return func(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
		if string(h.Method()) != fiber.MethodPost || !handlers.IsUpload(string(h.RequestURI())) {
			return fasthttp.RequestConfig{}
		}
		if s, ok := sessions.Check(string(h.Cookie(handlers.SessionCookie))); ok && s.Role == models.RoleMerchant {
			return fasthttp.RequestConfig{MaxRequestBodySize: max(limit, handlers.MaxUploadBody)}
		}
		return fasthttp.RequestConfig{}
	}
}
