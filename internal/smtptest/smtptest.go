// Package smtptest is a real SMTP server for tests (emersion/go-smtp): STARTTLS with a certificate made
// for the test, AUTH PLAIN required before a mail is taken, and what arrived kept to be read.
package smtptest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// The credentials the server takes.
const (
	Username = "shop"
	Password = "relay-secret"
)

// Server is a running SMTP server.
type Server struct {
	Host string
	Port int
	// Roots trusts the server's certificate (ServerName "localhost").
	Roots *x509.CertPool

	mu       sync.Mutex
	received []Received
	refuse   func(to string) error
	arrived  chan struct{}
}

// Received is one mail the server took.
type Received struct {
	From     string
	To       []string
	Raw      []byte
	TLS      bool   // it came over TLS (after STARTTLS)
	AuthUser string // who logged in
}

// Start serves on a free port of 127.0.0.1 until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	cert, roots := selfSigned(t)
	s := &Server{Host: "localhost", Roots: roots, arrived: make(chan struct{}, 1)}
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) { return &session{s: s, c: c}, nil }))
	srv.Domain = "localhost"
	srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
	srv.MaxMessageBytes = 1 << 20
	srv.ErrorLog = discard{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Port = ln.Addr().(*net.TCPAddr).Port
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

type discard struct{}

func (discard) Printf(string, ...any) {}
func (discard) Println(...any)        {}

// TLSConfig is a client's configuration that trusts the server.
func (s *Server) TLSConfig() *tls.Config {
	return &tls.Config{RootCAs: s.Roots, ServerName: "localhost", MinVersion: tls.VersionTLS12}
}

// Refuse makes the server answer each RCPT TO with f's error (nil: take it); nil f takes every one.
func (s *Server) Refuse(f func(to string) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse = f
}

// Received is every mail taken so far.
func (s *Server) Received() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.received...)
}

// Wait waits until at least n mails have arrived, and returns them.
func (s *Server) Wait(t testing.TB, n int, within time.Duration) []Received {
	t.Helper()
	deadline := time.After(within)
	for {
		if got := s.Received(); len(got) >= n {
			return got
		}
		select {
		case <-s.arrived:
		case <-deadline:
			t.Fatalf("the SMTP server took %d mails within %v, want %d", len(s.Received()), within, n)
		}
	}
}

type session struct {
	s    *Server
	c    *smtp.Conn
	user string
	from string
	to   []string
}

func (x *session) AuthMechanisms() []string { return []string{sasl.Plain} }

func (x *session) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(identity, username, password string) error {
		if username != Username || password != Password {
			return errors.New("invalid credentials")
		}
		x.user = username
		return nil
	}), nil
}

func (x *session) Mail(from string, _ *smtp.MailOptions) error {
	if x.user == "" {
		return smtp.ErrAuthRequired
	}
	x.from = from
	return nil
}

func (x *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	x.s.mu.Lock()
	f := x.s.refuse
	x.s.mu.Unlock()
	if f != nil {
		if err := f(to); err != nil {
			return err
		}
	}
	x.to = append(x.to, to)
	return nil
}

func (x *session) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	_, isTLS := x.c.TLSConnectionState()
	x.s.mu.Lock()
	x.s.received = append(x.s.received, Received{From: x.from, To: x.to, Raw: raw, TLS: isTLS, AuthUser: x.user})
	x.s.mu.Unlock()
	select {
	case x.s.arrived <- struct{}{}:
	default:
	}
	return nil
}

func (x *session) Reset()        { x.from, x.to = "", nil }
func (x *session) Logout() error { return nil }

// Header is a header of the mail, decoded (a subject in Chinese reads as such).
func (r Received) Header(name string) string {
	m, err := mail.ReadMessage(bytes.NewReader(r.Raw))
	if err != nil {
		return ""
	}
	v := m.Header.Get(name)
	if d, err := new(mime.WordDecoder).DecodeHeader(v); err == nil {
		return d
	}
	return v
}

// Part is the decoded body of the mail's part of contentType (text/plain, text/html), "" when none.
func (r Received) Part(contentType string) string {
	m, err := mail.ReadMessage(bytes.NewReader(r.Raw))
	if err != nil {
		return ""
	}
	return part(m.Header.Get("Content-Type"), m.Header.Get("Content-Transfer-Encoding"), m.Body, contentType)
}

func part(ct, cte string, body io.Reader, want string) string {
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return ""
	}
	if strings.HasPrefix(mt, "multipart/") {
		mr := multipart.NewReader(body, params["boundary"])
		for {
			p, err := mr.NextRawPart()
			if err != nil {
				return ""
			}
			if s := part(p.Header.Get("Content-Type"), p.Header.Get("Content-Transfer-Encoding"), p, want); s != "" {
				return s
			}
		}
	}
	if mt != want {
		return ""
	}
	var rd io.Reader = body
	switch strings.ToLower(cte) {
	case "quoted-printable":
		rd = quotedprintable.NewReader(body)
	case "base64":
		rd = newBase64(body)
	}
	b, _ := io.ReadAll(rd)
	return string(b)
}

func selfSigned(t testing.TB) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, roots
}
