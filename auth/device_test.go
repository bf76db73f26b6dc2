package auth

import "testing"

func TestDeviceCookiesPassOnlyAsSigned(t *testing.T) {
	d, other := NewDevices("a secret of thirty-two bytes or more!"), NewDevices("another secret of thirty-two bytes!!")
	v, err := d.New()
	if err != nil {
		t.Fatal(err)
	}
	id, ok := d.Verify(v)
	if !ok || len(id) != 22 || v[:22] != id {
		t.Fatalf("Verify(%q) = %q, %v; want its id", v, id, ok)
	}
	if again, _ := d.New(); again == v {
		t.Fatal("two new device cookies are the same")
	}
	flip := []byte(v)
	flip[3] ^= 1
	for _, bad := range []string{"", v + "x", v[:len(v)-1], string(flip), v[:22], "." + v[23:]} {
		if _, ok := d.Verify(bad); ok {
			t.Errorf("Verify(%q) passed", bad)
		}
	}
	if _, ok := other.Verify(v); ok {
		t.Error("a cookie signed with another secret passed")
	}
}
