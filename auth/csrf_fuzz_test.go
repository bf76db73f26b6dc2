package auth_test

import (
	"strings"
	"testing"

	"seckill/auth"
)

const fzSecret = "0123456789abcdef0123456789abcdef"

// fzMutate returns s with the byte at pos (modulo its length) set to b.
func fzMutate(s string, pos uint16, b byte) string {
	i := int(pos) % len(s)
	return s[:i] + string([]byte{b}) + s[i+1:]
}

// FuzzCSRF: a header and cookie pass only when they are one token this server made; a token with any
// byte changed, cut, lengthened or made with another secret does not.
func FuzzCSRF(f *testing.F) {
	c := auth.NewCSRF(fzSecret)
	token := func(t testing.TB) string {
		t.Helper()
		tok, err := c.Token()
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	first := token(f)
	// The fuzzer only ever sends what it made from the seeds, never a token made at run time: so a fuzzed
	// header and cookie that pass are a forgery. (Seeds are constants for that reason: the fuzzing workers
	// share the secret.) No seed changes the last character (pos 42 of 43), whose two spare bits would make
	// a seed fail by chance rather than every time.
	f.Add("", "", uint16(0), byte('A'))
	f.Add("gw3UT9qquaslgAnAlKK5CO79BgyfY1fPK3GQyQ7mnZ8", "gw3UT9qquaslgAnAlKK5CO79BgyfY1fPK3GQyQ7mnZ8", uint16(0), byte('-'))
	f.Add("gw3UT9qquaslgAnAlKK5CO79BgyfY1fPK3GQyQ7mnZ8", "gw3UT9qquaslgAnAlKK5CO79BgyfY1fPK3GQyQ7mnZ8=", uint16(41), byte('_'))
	f.Add("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", uint16(10), byte('B'))
	f.Add("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", uint16(43), byte('\n'))
	f.Add("a+b/c", "a+b/c", uint16(3), byte(0))
	f.Add(strings.Repeat("é", 22), strings.Repeat("é", 22), uint16(1), byte(0xff))
	other := auth.NewCSRF(fzSecret + "x")
	f.Fuzz(func(t *testing.T, header, cookie string, pos uint16, b byte) {
		if c.Valid(header, cookie) {
			t.Fatalf("Valid(%q, %q) = true for a token this server never made", header, cookie)
		}
		tok := token(t)
		if !c.Valid(tok, tok) {
			t.Fatalf("a fresh token %q is not valid", tok)
		}
		if c.Valid(tok, "") || c.Valid("", tok) || c.Valid(tok, first) || c.Valid(tok, tok+"A") || c.Valid(tok[:len(tok)-1], tok[:len(tok)-1]) {
			t.Fatalf("token %q passes without its exact twin", tok)
		}
		if m := fzMutate(tok, pos, b); m != tok && c.Valid(m, m) {
			t.Fatalf("token %q with byte %d set to %q (%q) is valid", tok, int(pos)%len(tok), b, m)
		}
		if o, err := other.Token(); err != nil || c.Valid(o, o) {
			t.Fatalf("a token made with another secret (%q) is valid (%v)", o, err)
		}
	})
}
