package handlers

import "testing"

func TestNormalEmail(t *testing.T) {
	for in, want := range map[string]string{
		" Mei@Example.COM ":         "mei@example.com",
		"a.b+tag@sub.example.cn":    "a.b+tag@sub.example.cn",
		"Mei <mei@example.com>":     "",
		"mei@localhost":             "",
		"mei@example.com.":          "",
		"@example.com":              "",
		"mei example@example.com":   "",
		"mei@example.com\r\nBcc: x": "",
		"":                          "",
	} {
		got, ok := normalEmail(in)
		if got != want || ok != (want != "") {
			t.Errorf("normalEmail(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	if _, ok := normalEmail(string(make([]byte, 250)) + "@x.cn"); ok {
		t.Error("an address over 254 bytes was taken")
	}
}

func TestValidToken(t *testing.T) {
	good := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for tok, want := range map[string]bool{good: true, good[:63]: false, good + "0": false, "": false} {
		if validToken(tok) != want {
			t.Errorf("validToken(%q) = %v", tok, !want)
		}
	}
}
