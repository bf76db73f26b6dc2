package payment

import "testing"

func TestYuanAtTheEdges(t *testing.T) {
	for cents, want := range map[int64]string{0: "0.00", 1: "0.01", 9: "0.09", 10: "0.10", 99: "0.99", 100: "1.00", 101: "1.01",
		12345: "123.45", MaxCents: "100000000.00", -5: "-0.05"} {
		if got := Yuan(cents); got != want {
			t.Errorf("Yuan(%d) = %q, want %q", cents, got, want)
		}
		if cents < 0 {
			continue
		}
		if back, err := ParseYuan(want); err != nil || back != cents {
			t.Errorf("ParseYuan(%q) = %d, %v; want %d", want, back, err, cents)
		}
	}
	for s, want := range map[string]int64{"1": 100, "1.5": 150, "0.1": 10, "007.00": 700} {
		if got, err := ParseYuan(s); err != nil || got != want {
			t.Errorf("ParseYuan(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", ".5", "1.", "1.005", "-1.00", "+1", "1e2", "1,00", " 1.00", "100000000.01", "1000000000", "０.01", "0x10"} {
		if got, err := ParseYuan(s); err == nil {
			t.Errorf("ParseYuan(%q) = %d, want an error", s, got)
		}
	}
}

func TestValidPaymentNo(t *testing.T) {
	for no, want := range map[string]bool{"SK1234567890123456789P1": true, "abc_12": true, "abc12": false,
		"A23456789012345678901234567890123": false, "A2345678901234567890123456789012": true, "SK-1234": false, "SK 1234": false, "订单123456": false} {
		if got := ValidPaymentNo(no); got != want {
			t.Errorf("ValidPaymentNo(%q) = %v, want %v", no, got, want)
		}
	}
}
