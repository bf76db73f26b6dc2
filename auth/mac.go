package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"hash"
	"sync"
)

// macPool reuses keyed HMAC-SHA256 states: the session and CSRF checks run on every request of the buy
// path, and a fresh HMAC per check costs more than the check itself.
type macPool struct{ p sync.Pool }

func newMacPool(key []byte) *macPool {
	return &macPool{p: sync.Pool{New: func() any { return hmac.New(sha256.New, key) }}}
}

// sum appends the MAC of msg to dst.
func (m *macPool) sum(dst, msg []byte) []byte {
	h := m.p.Get().(hash.Hash)
	h.Reset()
	h.Write(msg)
	dst = h.Sum(dst)
	m.p.Put(h)
	return dst
}
