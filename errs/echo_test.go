package errs

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEcho(t *testing.T) {
	for in, want := range map[string]string{
		"SK123":                  "SK123",
		strings.Repeat("a", 64):  strings.Repeat("a", 64),
		strings.Repeat("a", 65):  strings.Repeat("a", 64) + "…",
		strings.Repeat("订", 5e5): strings.Repeat("订", 64) + "…",
		"bad \xff byte":          "bad \uFFFD byte",
	} {
		got := Echo(in)
		if got != want {
			t.Errorf("Echo(%.20q…) = %.80q, want %.80q", in, got, want)
		}
		if !utf8.ValidString(got) {
			t.Errorf("Echo(%.20q…) is not UTF-8", in)
		}
	}
}
