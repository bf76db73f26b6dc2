// Package loadtest is the load tool's engine: it sets up a sale through the API as a merchant and an
// admin would, registers shoppers, has each pass the captcha and get a path, fires the buys, waits for the
// queue to drain and audits the outcome. It talks to the server only over HTTP (and reads captcha answers
// from Redis, as the contract allows).
package loadtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Client is an HTTP client for one server, shared by every simulated user.
type Client struct {
	base string
	tr   *http.Transport
	http *http.Client
	csrf string // one CSRF token for everyone: it is bound to no session

	// With OwnConnections, each user's requests go over a keep-alive connection of the user's own and a
	// connection turned away is tried again, as a browser does.
	own     bool
	conns   sync.Map // *User → *http.Client
	reloads struct{ refused, lost atomic.Int64 }

	docs    sync.Map // path → *publicDoc: the public documents the client's shoppers share
	fetched atomic.Int64

	pow        powCounts     // the proofs of work solved for registrations and joins
	solveSlots chan struct{} // with SolveOn, the proofs of work solved at once, each on a thread of its own

	froms sync.Map // netip.Addr → *http.Client: the connections of users who come from an address of their own
}

// OwnConnections makes each logged-in user's requests go over one keep-alive connection of their own,
// as a page in a browser holds one, rather than the client's shared pool; and a request whose
// connection was turned away (the server's 503 or 429 written at accept, with Retry-After and
// Connection: close) or lost before an answer (a GET; or any request whose connection failed to open)
// is sent again after Retry-After or a short backoff, as a page reloads. A POST lost after it was sent
// comes back as the error: it may have been done, and the caller decides, as a page's script does.
func (c *Client) OwnConnections() { c.own = true }

// Reloads counts the requests sent again by OwnConnections' pages: turned away by the server at
// accept (Refused), or their connection lost before an answer (Lost).
type Reloads struct{ Refused, Lost int64 }

// Reloads answers how many requests the client's pages have sent again.
func (c *Client) Reloads() Reloads {
	return Reloads{Refused: c.reloads.refused.Load(), Lost: c.reloads.lost.Load()}
}

// connOf answers u's own connection: a transport that keeps one, dialling as the shared one does.
func (c *Client) connOf(u *User) *http.Client {
	if v, ok := c.conns.Load(u); ok {
		return v.(*http.Client)
	}
	tr := &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1, MaxIdleConns: 1, IdleConnTimeout: 2 * time.Minute,
		DialContext: c.tr.DialContext}
	v, _ := c.conns.LoadOrStore(u, &http.Client{Transport: tr, Timeout: c.http.Timeout})
	return v.(*http.Client)
}

// NewClient returns a client that keeps up to conns connections open to base.
func NewClient(base string, conns int) *Client {
	tr := &http.Transport{MaxConnsPerHost: conns, MaxIdleConnsPerHost: conns, MaxIdleConns: conns, IdleConnTimeout: time.Minute}
	return &Client{base: strings.TrimRight(base, "/"), tr: tr, http: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

// Sources makes the client's connections come from n loopback addresses in turn (127.0.1.1,
// 127.0.1.2, ...), so that a proxy in front of the server that limits each address, as nginx's limit_req
// does, sees a crowd of n rather than one client. The server must be on a loopback address.
func (c *Client) Sources(n int) {
	if n <= 1 {
		return
	}
	var next atomic.Uint32
	c.tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		i := int(next.Add(1)) % n
		d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, byte(1+i/250), byte(1+i%250))}}
		return d.DialContext(ctx, network, addr)
	}
}

// User is a logged-in user: the session cookie.
type User struct {
	ID       int64
	Name     string
	Password string
	session  string
	csrf     string     // the CSRF token the user's page was given (GET /api/me); "" for the client's own
	from     netip.Addr // the loopback address the user's requests come from (FromAddress); zero: the client's
	device   *Device    // the browser the user's requests come from: its device id cookie; nil: none
}

// FromAddress makes u's requests come from a loopback address of its own (127.A.B.C), over connections
// of that address's own, so that the server sees the address as the client's, as it would a person's.
func (u *User) FromAddress(a netip.Addr) { u.from = a }

// Device is a browser's device id, the sk_dev cookie, kept as the server set it (GET /api/altcha sets
// one where a request carries none or an invalid one) and sent back with every request of the accounts
// that share the browser.
type Device struct {
	mu sync.Mutex
	id string
}

// ID answers the device id the browser holds ("" before the server set one).
func (d *Device) ID() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.id
}

func (d *Device) set(id string) {
	d.mu.Lock()
	d.id = id
	d.mu.Unlock()
}

// UseDevice makes u's requests carry d's device id, and keep what the server sets.
func (u *User) UseDevice(d *Device) { u.device = d }

// fromClient answers the connections of the address a: a few kept alive a short while, as a person's
// browser keeps them.
func (c *Client) fromClient(a netip.Addr) *http.Client {
	if v, ok := c.froms.Load(a); ok {
		return v.(*http.Client)
	}
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: a.AsSlice()}}
	tr := &http.Transport{MaxIdleConnsPerHost: 4, MaxIdleConns: 4, IdleConnTimeout: 5 * time.Second, DialContext: d.DialContext}
	v, _ := c.froms.LoadOrStore(a, &http.Client{Transport: tr, Timeout: c.http.Timeout})
	return v.(*http.Client)
}

// Answer is what a request got.
type Answer struct {
	Status int
	Code   string // the contract's error code; "" on success
	Body   []byte
}

// Unconfirmed reports whether the answer is a buy's 202 unconfirmed (issue 36): the unit is taken on the
// Redis master, but its replicas had not acknowledged it: not a promise, unlike 202 queued. It ends as an
// order or as the buyer's result "failed", reason "lost".
func (a Answer) Unconfirmed() bool {
	return a.Status == http.StatusAccepted && bytes.Contains(a.Body, []byte(`"status":"unconfirmed"`))
}

// Kind names an answer for the report: "202", "202 unconfirmed", "409 sold_out", ...
func (a Answer) Kind() string {
	if a.Unconfirmed() {
		return "202 unconfirmed"
	}
	if a.Code == "" {
		return fmt.Sprint(a.Status)
	}
	return fmt.Sprintf("%d %s", a.Status, a.Code)
}

// Do sends a request as u (nil: anonymous) and reads the answer.
func (c *Client) Do(ctx context.Context, method, path string, body any, u *User) (Answer, error) {
	return c.DoHeader(ctx, method, path, body, u, nil)
}

// DoHeader is Do with headers of the request's own (X-Line-Place, say).
func (c *Client) DoHeader(ctx context.Context, method, path string, body any, u *User, header map[string]string) (Answer, error) {
	if u != nil && u.from.IsValid() {
		a, _, err := c.send(ctx, c.fromClient(u.from), method, path, body, u, header)
		return a, err
	}
	if !c.own || u == nil {
		a, _, err := c.send(ctx, c.http, method, path, body, u, header)
		return a, err
	}
	hc := c.connOf(u)
	for try := 0; ; try++ {
		a, retryAfter, err := c.send(ctx, hc, method, path, body, u, header)
		var wait time.Duration
		switch {
		case err == nil && retryAfter > 0:
			c.reloads.refused.Add(1)
			wait = retryAfter
		case err != nil && ctx.Err() == nil && answeredFirst(err):
			c.reloads.refused.Add(1)
			wait = time.Second
		case err != nil && ctx.Err() == nil && (method == http.MethodGet || unsent(err)):
			c.reloads.lost.Add(1)
			wait = min(500*time.Millisecond<<min(try, 3), 4*time.Second)
		default:
			return a, err
		}
		// Spread as people's reloads are, from half to one and a half times the wait.
		if !sleep(ctx, wait/2+rand.N(wait)) {
			return Answer{}, ctx.Err()
		}
	}
}

// unsent reports whether err says the request was not read: its connection could not be opened, or
// the server closed it while idle (the server's limiter sheds only idle connections, and a connection
// with a request arriving stays idle until the server reads it).
func unsent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial" || strings.Contains(err.Error(), "server closed idle connection")
}

// answeredFirst reports whether err is Go's transport closing a new connection the server answered
// before the request was sent: the limiter's 503 or 429 at accept, which a browser, having sent its
// request at once, would read as the answer. Go says so only in the error's text.
func answeredFirst(err error) bool {
	return strings.Contains(err.Error(), "readLoopPeekFailLocked")
}

// send sends one request over hc; retryAfter is set when the server turned the connection away at
// accept (connlimit's plain-text 503 or 429, closing): the request was never read.
func (c *Client) send(ctx context.Context, hc *http.Client, method, path string, body any, u *User, header map[string]string) (a Answer, retryAfter time.Duration, err error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return Answer{}, 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	var cookies []string
	csrf := c.csrf
	if u != nil && u.csrf != "" {
		csrf = u.csrf
	}
	if csrf != "" {
		cookies = append(cookies, "sk_csrf="+csrf)
		if method != http.MethodGet {
			req.Header.Set("X-CSRF-Token", csrf)
		}
	}
	if u != nil && u.session != "" {
		cookies = append(cookies, "sk_session="+u.session)
	}
	if u != nil && u.device != nil {
		if id := u.device.ID(); id != "" {
			cookies = append(cookies, "sk_dev="+id)
		}
	}
	if len(cookies) > 0 {
		req.Header.Set("Cookie", strings.Join(cookies, "; "))
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Answer{}, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return Answer{}, 0, err
	}
	a = Answer{Status: resp.StatusCode, Body: b}
	// Turned away at accept: the limiter's 503 or 429, the only ones that close the connection.
	if (a.Status == http.StatusServiceUnavailable || a.Status == http.StatusTooManyRequests) && resp.Close {
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
			retryAfter = time.Duration(s) * time.Second
		}
	}
	if resp.StatusCode >= 400 {
		var e struct{ Error string }
		_ = json.Unmarshal(b, &e)
		a.Code = e.Error
	}
	if u != nil {
		for _, ck := range resp.Cookies() {
			if ck.Name == "sk_session" && ck.Value != "" {
				u.session = ck.Value
			}
			if ck.Name == "sk_dev" && ck.Value != "" && u.device != nil {
				u.device.set(ck.Value)
			}
		}
	}
	return a, retryAfter, nil
}

// Patient sends a request as Do does, and again while a rate limit (the app's, or a proxy's in front of
// it) answers 429: the tool's own setup and audit requests must get through, as a person's would.
func (c *Client) Patient(ctx context.Context, method, path string, body any, u *User) (Answer, error) {
	for try := 0; ; try++ {
		a, err := c.Do(ctx, method, path, body, u)
		if err != nil || a.Status != http.StatusTooManyRequests || try == 100 {
			return a, err
		}
		select {
		case <-ctx.Done():
			return a, ctx.Err()
		case <-time.After(time.Duration(50+try*10) * time.Millisecond):
		}
	}
}

// JSON sends a request (patiently) and decodes a successful answer into out.
func (c *Client) JSON(ctx context.Context, method, path string, body any, u *User, out any) error {
	a, err := c.Patient(ctx, method, path, body, u)
	if err != nil {
		return err
	}
	if a.Status >= 300 {
		return fmt.Errorf("%s %s: %d %s", method, path, a.Status, a.Body)
	}
	if out != nil {
		return json.Unmarshal(a.Body, out)
	}
	return nil
}

// Start fetches the CSRF token every user will send.
func (c *Client) Start(ctx context.Context) error {
	var t struct{ Token string }
	if err := c.JSON(ctx, http.MethodGet, "/api/csrf", nil, nil, &t); err != nil {
		return err
	}
	c.csrf = t.Token
	return nil
}

// Login logs u in.
func (c *Client) Login(ctx context.Context, u *User) error {
	var me struct{ ID int64 }
	if err := c.JSON(ctx, http.MethodPost, "/api/auth/login", map[string]string{"username": u.Name, "password": u.Password}, u, &me); err != nil {
		return err
	}
	u.ID = me.ID
	return nil
}

// Register makes u a shopper, passing the captcha and the proof of work registration asks for, and logs
// it in.
func (c *Client) Register(ctx context.Context, rdb redis.UniversalClient, u *User) error {
	for try := 0; ; try++ {
		body, retry, err := c.SolveCaptcha(ctx, rdb, u)
		if err != nil {
			return err
		}
		if retry && try < 200 {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		if body == nil {
			return fmt.Errorf("register %s: the captcha stayed too busy", u.Name)
		}
		proof, retry, err := c.SolvePow(ctx, u, "purpose=register")
		if err != nil {
			return err
		}
		if retry && try < 200 {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		body["username"], body["password"], body["altcha"] = u.Name, u.Password, proof
		a, err := c.Do(ctx, http.MethodPost, "/api/auth/register", body, u)
		if err != nil {
			return err
		}
		if a.Status == http.StatusTooManyRequests && try < 200 {
			// Too many at once (hashing turns, or the address's limit): again, with a new captcha, since
			// a refused registration may have used this one.
			time.Sleep(time.Duration(50+min(try, 20)*10) * time.Millisecond)
			continue
		}
		if a.Status != http.StatusCreated {
			return fmt.Errorf("register %s: %d %s", u.Name, a.Status, a.Body)
		}
		var me struct{ ID int64 }
		if err := json.Unmarshal(a.Body, &me); err != nil {
			return err
		}
		u.ID = me.ID
		return nil
	}
}

// Close closes the idle connections, so that a finished run leaves none for the server to time out.
func (c *Client) Close() {
	c.http.CloseIdleConnections()
	c.conns.Range(func(_, v any) bool { v.(*http.Client).CloseIdleConnections(); return true })
	c.froms.Range(func(_, v any) bool { v.(*http.Client).CloseIdleConnections(); return true })
}
