// Package loadtest is the load tool's engine: it sets up a sale through the API as a merchant and an
// admin would, registers shoppers, has each pass the captcha and get a path, fires the buys, waits for the
// queue to drain and audits the outcome. It talks to the server only over HTTP (and reads captcha answers
// from Redis, as the contract allows).
package loadtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
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
}

// Answer is what a request got.
type Answer struct {
	Status int
	Code   string // the contract's error code; "" on success
	Body   []byte
}

// Kind names an answer for the report: "202", "409 sold_out", ...
func (a Answer) Kind() string {
	if a.Code == "" {
		return fmt.Sprint(a.Status)
	}
	return fmt.Sprintf("%d %s", a.Status, a.Code)
}

// Do sends a request as u (nil: anonymous) and reads the answer.
func (c *Client) Do(ctx context.Context, method, path string, body any, u *User) (Answer, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return Answer{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	cookie := ""
	if c.csrf != "" {
		cookie = "sk_csrf=" + c.csrf
		if method != http.MethodGet {
			req.Header.Set("X-CSRF-Token", c.csrf)
		}
	}
	if u != nil && u.session != "" {
		cookie += "; sk_session=" + u.session
	}
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return Answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return Answer{}, err
	}
	a := Answer{Status: resp.StatusCode, Body: b}
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
		}
	}
	return a, nil
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

// Register makes u a shopper, passing the captcha registration asks for, and logs it in.
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
		body["username"], body["password"] = u.Name, u.Password
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
func (c *Client) Close() { c.http.CloseIdleConnections() }
