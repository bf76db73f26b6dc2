package handlers

import (
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
		var rc fasthttp.RequestCtx
		rc.Request.Header.Set("Cookie", h1)
		if h2 != "" {
			rc.Request.Header.Add("Cookie", h2)
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
