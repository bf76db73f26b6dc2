package app

import (
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"

	"seckill/stock"
)

// parseSeedKey reads LINE_SEED_KEY: 32 bytes as 64 hex digits or as base64 (standard or URL alphabet,
// padded or not).
func parseSeedKey(v string) ([]byte, error) {
	v = strings.TrimSpace(v)
	if b, err := hex.DecodeString(v); err == nil && len(b) == stock.SeedKeyLen {
		return b, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(v); err == nil && len(b) == stock.SeedKeyLen {
			return b, nil
		}
	}
	return nil, fmt.Errorf("must be %d bytes as %d hex digits or base64 (for example: openssl rand -hex 32)", stock.SeedKeyLen, 2*stock.SeedKeyLen)
}

// lineSeedKey is the key that seals the waiting rooms' seeds: LINE_SEED_KEY, else one derived from
// SESSION_SECRET with HKDF (asked for here, after demo mode has made its secret). Derived, it changes
// with SESSION_SECRET: a seed kept under the old one no longer opens, so a shop that rotates its
// session secret sets LINE_SEED_KEY.
func (c Config) lineSeedKey() ([]byte, error) {
	if c.LineSeedKey != "" {
		return parseSeedKey(c.LineSeedKey)
	}
	key, err := hkdf.Key(sha256.New, []byte(c.SessionSecret), nil, "seckill waiting room draw seeds", stock.SeedKeyLen)
	if err != nil {
		return nil, fmt.Errorf("LINE_SEED_KEY from SESSION_SECRET: %w", err)
	}
	return key, nil
}
