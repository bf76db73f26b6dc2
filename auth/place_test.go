package auth

import (
	"strings"
	"testing"
)

// A place's token verifies for its user and item only, carries its ticket and place, is the same every
// time, and any change to it is refused.
func TestPlaceTokens(t *testing.T) {
	p := NewPlaces("a session secret of some length, for tests")
	const ticket = "0123456789abcdef0123456789abcdef"
	tok := p.Sign(7, 42, ticket, 1234)
	if tok == "" || tok != p.Sign(7, 42, ticket, 1234) {
		t.Fatalf("sign: %q, then %q: want one token for one place", tok, p.Sign(7, 42, ticket, 1234))
	}
	if tk, place, ok := p.Verify(tok, 7, 42); !ok || tk != ticket || place != 1234 {
		t.Fatalf("verify: %q %d %v", tk, place, ok)
	}
	for name, bad := range map[string]struct {
		tok        string
		item, user int64
	}{
		"another user":  {tok, 7, 43},
		"another item":  {tok, 8, 42},
		"another key":   {NewPlaces("another secret").Sign(7, 42, ticket, 1234), 7, 42},
		"a place moved": {p.Sign(7, 42, ticket, 1), 7, 42},
		"empty":         {"", 7, 42},
		"cut":           {tok[:len(tok)-1], 7, 42},
		"longer":        {tok + "A", 7, 42},
		"not base64":    {strings.Repeat("*", len(tok)), 7, 42},
	} {
		if name == "a place moved" {
			// the MAC of place 1 on a token that says 1234
			good := []byte(tok)
			copy(good[len(good)-22:], bad.tok[len(bad.tok)-22:])
			bad.tok = string(good)
		}
		if _, _, ok := p.Verify(bad.tok, bad.item, bad.user); ok {
			t.Errorf("%s: verified", name)
		}
	}
	// Every single character changed is refused.
	for i := range tok {
		for _, c := range []byte("AQgw_-") {
			if tok[i] == c {
				continue
			}
			forged := tok[:i] + string(c) + tok[i+1:]
			if _, _, ok := p.Verify(forged, 7, 42); ok {
				t.Fatalf("a token changed at %d verified: %s", i, forged)
			}
		}
	}
	if p.Sign(7, 42, "not hex", 1) != "" || p.Sign(7, 42, ticket, 0) != "" {
		t.Error("a bad ticket or place was signed")
	}
}
