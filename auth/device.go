package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"encoding/base64"
	"strings"
)

// Devices signs the long-lived device id each browser carries (a cookie), so that the joins of a line
// can tell when many accounts come from one browser: a scalper may drop the cookie, but may not make up
// one that passes. Keyed by a key derived from the session secret, so every instance signs alike.
type Devices struct{ mac *macPool }

// NewDevices returns a signer keyed by the session secret.
func NewDevices(secret string) *Devices { return &Devices{mac: newMacPool(derive(secret, "device"))} }

// A device cookie is the id (16 random bytes) and the first 12 bytes of its MAC, each base64url without
// padding, joined by a dot.
const (
	deviceIDLen  = 16
	deviceMacLen = 12
)

// New answers a fresh device cookie's value.
func (d *Devices) New() (string, error) {
	raw := make([]byte, deviceIDLen)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	id := base64.RawURLEncoding.EncodeToString(raw)
	return id + "." + base64.RawURLEncoding.EncodeToString(d.mac.sum(nil, []byte(id))[:deviceMacLen]), nil
}

// Verify answers the device id a cookie's value carries; ok is false for a value that is forged, damaged
// or empty.
func (d *Devices) Verify(v string) (id string, ok bool) {
	id, sig, found := strings.Cut(v, ".")
	if !found || len(id) != base64.RawURLEncoding.EncodedLen(deviceIDLen) || len(sig) != base64.RawURLEncoding.EncodedLen(deviceMacLen) {
		return "", false
	}
	got, err := base64.RawURLEncoding.Strict().DecodeString(sig)
	if err != nil {
		return "", false
	}
	if _, err := base64.RawURLEncoding.Strict().DecodeString(id); err != nil {
		return "", false
	}
	if !hmac.Equal(got, d.mac.sum(nil, []byte(id))[:deviceMacLen]) {
		return "", false
	}
	return id, true
}
