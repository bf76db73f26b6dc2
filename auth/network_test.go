package auth

import "testing"

func TestSameNetwork(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"203.0.113.7", "203.0.113.7", true},
		{"203.0.113.7", "203.0.113.200", true}, // one /24: a site's NAT pool
		{"203.0.113.7", "203.0.114.7", false},
		{"203.0.113.7", "198.51.100.7", false},
		{"::ffff:203.0.113.7", "203.0.113.9", true},        // an IPv4 address written as IPv6
		{"2001:db8:1:2::10", "2001:db8:1:2:a:b:c:d", true}, // one /64: two devices' own addresses
		{"2001:db8:1:2::10", "2001:db8:1:3::10", false},
		{"fe80::1%eth0", "fe80::2", true},
		{"2001:db8::1", "203.0.113.7", false}, // one of each family: cannot tell, so not the same
		{"", "203.0.113.7", false},
		{"not an address", "not an address", false},
	}
	for _, tt := range tests {
		if got := SameNetwork(tt.a, tt.b); got != tt.want {
			t.Errorf("SameNetwork(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
		if got := SameNetwork(tt.b, tt.a); got != tt.want {
			t.Errorf("SameNetwork(%q, %q) = %v, want %v", tt.b, tt.a, got, tt.want)
		}
	}
}
