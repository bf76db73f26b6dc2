package app

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLineSeedKey: LINE_SEED_KEY (or its file) is 32 bytes as hex or base64; anything else is refused by
// name; unset, the key is derived from SESSION_SECRET, and another secret derives another key.
func TestLineSeedKey(t *testing.T) {
	key := bytes.Repeat([]byte{0x5e}, 32)
	file := filepath.Join(t.TempDir(), "line_seed_key")
	if err := os.WriteFile(file, []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := map[string]string{"DATABASE_URL": "postgres://db/x", "REDIS_URL": "redis://r:6379/0", "SESSION_SECRET": goodSecret}
	load := func(kv ...string) (Config, error) {
		env := map[string]string{}
		for k, v := range base {
			env[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			env[kv[i]] = kv[i+1]
		}
		return LoadConfig(func(k string) string { return env[k] })
	}
	for _, tc := range []struct {
		name string
		env  []string
	}{
		{"hex", []string{"LINE_SEED_KEY", strings.Repeat("5e", 32)}},
		{"base64", []string{"LINE_SEED_KEY", base64.StdEncoding.EncodeToString(key)}},
		{"base64 without padding", []string{"LINE_SEED_KEY", base64.RawURLEncoding.EncodeToString(key)}},
		{"a file", []string{"LINE_SEED_KEY_FILE", file}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := load(tc.env...)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := c.lineSeedKey(); err != nil || !bytes.Equal(got, key) {
				t.Fatalf("the key is %x, %v; want %x", got, err, key)
			}
		})
	}
	for _, bad := range []string{"short", strings.Repeat("5e", 31), strings.Repeat("5e", 33), base64.StdEncoding.EncodeToString(key[:16])} {
		if _, err := load("LINE_SEED_KEY", bad); err == nil || !strings.Contains(err.Error(), "LINE_SEED_KEY") {
			t.Errorf("LINE_SEED_KEY=%q: %v; want it refused by name", bad, err)
		}
	}

	c, err := load()
	if err != nil {
		t.Fatal(err)
	}
	derived, err := c.lineSeedKey()
	if err != nil || len(derived) != 32 || bytes.Contains([]byte(goodSecret), derived) {
		t.Fatalf("derived key %x, %v: want 32 bytes that are not the secret's", derived, err)
	}
	again, _ := c.lineSeedKey()
	c.SessionSecret = strings.ToUpper(goodSecret) + "!"
	other, _ := c.lineSeedKey()
	if !bytes.Equal(derived, again) || bytes.Equal(derived, other) {
		t.Fatalf("derived twice %x and %x, from another secret %x: want the same twice, another from another", derived, again, other)
	}
}
