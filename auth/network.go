package auth

import "net/netip"

// SameNetwork reports whether two client addresses look like one network: IPv4 addresses in one /24 (a
// home or office behind one NAT shows one address, a larger site or a carrier's NAT a few neighbours),
// IPv6 addresses in one /64 (the prefix a network hands its devices, each of which picks its own,
// changing, interface half). An IPv4 and an IPv6 address, or anything that is not an address, are not
// the same network: the phone then warns, which is the side to err on.
func SameNetwork(a, b string) bool {
	x, err := netip.ParseAddr(a)
	if err != nil {
		return false
	}
	y, err := netip.ParseAddr(b)
	if err != nil {
		return false
	}
	x, y = x.Unmap().WithZone(""), y.Unmap().WithZone("")
	if x.Is4() != y.Is4() {
		return false
	}
	bits := 64
	if x.Is4() {
		bits = 24
	}
	px, _ := x.Prefix(bits)
	py, _ := y.Prefix(bits)
	return px == py
}
