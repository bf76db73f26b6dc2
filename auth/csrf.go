package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
)

// CSRF makes and checks anti-forgery tokens: a random value and its signature. A state-changing request
// must send the token in a header and in the cookie GET /api/csrf set (a cross-site page can do neither),
// and the token must carry this server's signature (so a planted cookie does not pass). All in memory.
type CSRF struct {
	mac *macPool
	// signed remembers tokens whose signature was checked (a token never expires: its signature is all
	// there is to it).
	signed *verified[struct{}]
}

const csrfRandLen, csrfMacLen = 16, 16

// NewCSRF returns a token maker keyed by the session secret.
func NewCSRF(secret string) *CSRF {
	return &CSRF{mac: newMacPool(derive(secret, "csrf")), signed: newVerified[struct{}]()}
}

// Token returns a new token.
func (c *CSRF) Token() (string, error) {
	buf := make([]byte, csrfRandLen, csrfRandLen+sha256.Size)
	if _, err := rand.Read(buf); err != nil {
		return "", err
	}
	buf = c.mac.sum(buf, buf)[:csrfRandLen+csrfMacLen]
	return base64.RawURLEncoding.EncodeToString(buf), nil
}

// Valid reports whether the header's token matches the cookie's and carries this server's signature.
func (c *CSRF) Valid(header, cookie string) bool {
	if header == "" || !hmac.Equal([]byte(header), []byte(cookie)) {
		return false
	}
	_, ok := c.signed.check(header, c.signedBy)
	return ok
}

// signedBy reports whether a token carries this server's signature.
func (c *CSRF) signedBy(header string) (struct{}, bool) {
	var raw [csrfRandLen + csrfMacLen]byte
	if base64.RawURLEncoding.DecodedLen(len(header)) != len(raw) {
		return struct{}{}, false
	}
	// One spelling per token: Strict refuses spare bits in the last character, and the length refuses
	// the line breaks a decoder skips.
	if n, err := base64.RawURLEncoding.Strict().Decode(raw[:], []byte(header)); err != nil || n != len(raw) {
		return struct{}{}, false
	}
	var mac [sha256.Size]byte
	return struct{}{}, hmac.Equal(c.mac.sum(mac[:0], raw[:csrfRandLen])[:csrfMacLen], raw[csrfRandLen:])
}
