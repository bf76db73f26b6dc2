package models_test

import (
	"testing"

	"seckill/models"
)

// TestValidImageURL: an item's image is a path on this site or an https:// address on a host the
// operator lists; nothing a browser would fetch from elsewhere passes as a path.
func TestValidImageURL(t *testing.T) {
	hosts := []string{"img.example.com", "cdn.example.net:8443"}
	for _, tt := range []struct {
		url  string
		want bool
	}{
		{"", true},
		{"/images/0123456789abcdef0123456789abcdef-960.jpg", true},
		{"/assets/img/demo-1.svg", true},
		{"https://img.example.com/x.png", true},
		{"https://IMG.example.com/x.png?size=2", true},
		{"https://cdn.example.net:8443/a/b.jpg", true},
		{"//evil.example/x.png", false},  // scheme-relative: another site
		{"/\\evil.example/x.png", false}, // a browser reads /\ as //
		{"\\\\evil.example/x.png", false},
		{"/images/a\\b.jpg", false},
		{"https://evil.example/x.png", false},
		{"http://img.example.com/x.png", false}, // https only
		{"https://img.example.com@evil.example/x.png", false},
		{"https://evil.example@img.example.com/x.png", false},
		{"https://img.example.com.evil.example/x.png", false},
		{"https://cdn.example.net/a.jpg", false}, // another port
		{"javascript:alert(1)", false},
		{"data:image/png;base64,AAAA", false},
		{"images/x.png", false},
		{"/images/x y.png", false},
		{"/images/\x01.png", false},
	} {
		if got := models.ValidImageURL(tt.url, hosts); got != tt.want {
			t.Errorf("ValidImageURL(%q) = %v, want %v", tt.url, got, tt.want)
		}
	}
	if models.ValidImageURL("https://img.example.com/x.png", nil) {
		t.Error("with no IMAGE_HOSTS, an https:// address was taken")
	}
}
