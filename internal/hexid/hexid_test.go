package hexid

import (
	"encoding/hex"
	"strings"
	"testing"
)

// FuzzValid: an id is taken exactly when it is 32 hex digits, either case; everything else never reaches
// Redis. Prefix reads the same bytes encoding/hex does.
func FuzzValid(f *testing.F) {
	for _, s := range []string{
		"", "0123456789abcdef0123456789abcdef", "0123456789ABCDEF0123456789abcdef", "0123456789abcdef0123456789abcde",
		"0123456789abcdef0123456789abcdef0", "0123456789abcdef0123456789abcdeg", "0123456789abcdef0123456789abcd\r\n",
		strings.Repeat("z", 32), strings.Repeat("é", 16), "../../../../../../../../../../..",
		"0123456789abcdef0123456789abcdef.webp",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		want := len(p) == 32
		for i := 0; i < len(p) && want; i++ {
			b := p[i]
			want = '0' <= b && b <= '9' || 'a' <= b && b <= 'f' || 'A' <= b && b <= 'F'
		}
		if got := Valid(p); got != want {
			t.Fatalf("Valid(%q) = %v, want %v", p, got, want)
		}
		got, ok := Prefix(p)
		var std [16]byte
		_, err := hex.Decode(std[:], []byte(p[:min(len(p), 32)]))
		stdOK := len(p) >= 32 && err == nil
		if ok != stdOK || ok && got != std {
			t.Fatalf("Prefix(%q) = %x %v, encoding/hex reads %x %v", p, got, ok, std, stdOK)
		}
	})
}

func TestValidAllocatesNothing(t *testing.T) {
	id := "0123456789abcdef0123456789ABCDEF"
	if n := testing.AllocsPerRun(100, func() { Valid(id) }); n != 0 {
		t.Errorf("Valid allocates %v times", n)
	}
}
