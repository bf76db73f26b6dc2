package handlers_test

import (
	"net/url"
	"strings"
	"testing"

	"seckill/handlers"
)

// FuzzLocalPath: whatever a request names as a redirect target, LocalPath answers either "/" or the
// target itself, and only a target that no browser can read as another site: one leading "/", printable
// ASCII without "\", and a URL that resolves on this host.
func FuzzLocalPath(f *testing.F) {
	for _, s := range []string{
		"", "/", "/orders", "/items/42?tab=info#top", "//evil.example", "/\\evil.example", "\\\\evil.example",
		"/\t/evil.example", "/ /evil.example", "/%0d%0aSet-Cookie:%20x=y", "/\r\nSet-Cookie: x=y", "/a\nb",
		"https://evil.example/", "http:/evil.example", "/http://evil.example", "javascript:alert(1)",
		"/./", "/../..//evil.example", "/%2F%2Fevil.example", "/%5Cevil.example", "/é", "/\u2028", "/\x7f",
		"/a?next=//evil.example", "/login?next=%2Fm%2Fqr%2Fabc", "/" + strings.Repeat("a", 2047), "/" + strings.Repeat("a", 2048),
	} {
		f.Add(s)
	}
	base, err := url.Parse("https://shop.example/")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, target string) {
		got := handlers.LocalPath(target)
		if got != "/" && got != target {
			t.Fatalf("LocalPath(%q) = %q: neither the target nor /", target, got)
		}
		if len(got) > 2048 {
			t.Fatalf("LocalPath(%q) is %d bytes long", target, len(got))
		}
		if got[0] != '/' {
			t.Fatalf("LocalPath(%q) = %q does not start with /", target, got)
		}
		if len(got) > 1 && (got[1] == '/' || got[1] == '\\') {
			t.Fatalf("LocalPath(%q) = %q names another host", target, got)
		}
		for i := 0; i < len(got); i++ {
			if b := got[i]; b < 0x21 || b > 0x7e || b == '\\' {
				t.Fatalf("LocalPath(%q) = %q holds byte %#x at %d", target, got, b, i)
			}
		}
		u, err := url.Parse(got)
		if err != nil {
			// A target that is not a URL at all (a bad %-escape) must not get through either.
			t.Fatalf("LocalPath(%q) = %q, which does not parse: %v", target, got, err)
		}
		if u.Scheme != "" || u.Host != "" || u.User != nil {
			t.Fatalf("LocalPath(%q) = %q has scheme %q, host %q", target, got, u.Scheme, u.Host)
		}
		if r := base.ResolveReference(u); r.Host != "shop.example" || r.Scheme != "https" {
			t.Fatalf("LocalPath(%q) = %q resolves to %s, off the site", target, got, r)
		}
	})
}
