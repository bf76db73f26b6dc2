package handlers

import (
	"bufio"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// requestCookie reads a cookie as fasthttp's own parse of every cookie does, for the spellings a browser,
// a proxy or an attacker may send.
func FuzzRequestCookieAgreesWithFasthttp(f *testing.F) {
	for _, h := range []string{
		"sk_session=abc.def", "a=1; sk_session=v1; sk_session=v2", " sk_session = spaced ; b=2",
		`sk_session="quoted"`, `sk_session="`, "sk_session", "sk_session=", "=sk_session; sk_session=x",
		"xsk_session=no; sk_session=yes", "sk_session=a=b=c;;", "SK_SESSION=upper", "a=1;sk_session=tight",
	} {
		f.Add(h, "")
		f.Add(h, "sk_session=second")
	}
	app := fiber.New()
	f.Fuzz(func(t *testing.T, h1, h2 string) {
		if strings.ContainsAny(h1+h2, "\r\n") {
			t.Skip("a header line holds no line break")
		}
		// The request as a server reads it off the wire: its Cookie headers raw, collected only when asked
		// (Header.Set would parse them at once, and Peek would then answer them written out again).
		raw := "GET / HTTP/1.1\r\nHost: shop\r\nCookie: " + h1 + "\r\n"
		if h2 != "" {
			raw += "Cookie: " + h2 + "\r\n"
		}
		var rc fasthttp.RequestCtx
		if err := rc.Request.Read(bufio.NewReader(strings.NewReader(raw + "\r\n"))); err != nil {
			t.Skip("not a request fasthttp reads")
		}
		c := app.AcquireCtx(&rc)
		defer app.ReleaseCtx(c)
		got := requestCookie(c, "sk_session")
		want := string(rc.Request.Header.Cookie("sk_session")) // collects them all: after ours
		if got != want {
			t.Fatalf("Cookie %q, %q: requestCookie %q, fasthttp %q", h1, h2, got, want)
		}
	})
}
