// Package hexid checks the ids this product makes of 16 random bytes written as 32 hex digits (purchase
// paths, captcha and QR login codes, the sums that name uploaded images), so that junk never reaches
// Redis or the disk. Either case is taken, as encoding/hex takes it.
package hexid

// Len is an id's length: 32 hex digits.
const Len = 32

// Valid reports whether s is an id: exactly Len hex digits. It allocates nothing (the buy checks it).
func Valid(s string) bool {
	if len(s) != Len {
		return false
	}
	for i := 0; i < len(s); i++ {
		if _, ok := digit(s[i]); !ok {
			return false
		}
	}
	return true
}

// Prefix reads the id s starts with (its first Len characters) as its 16 bytes.
func Prefix(s string) ([Len / 2]byte, bool) {
	var b [Len / 2]byte
	if len(s) < Len {
		return b, false
	}
	for i := range b {
		hi, ok1 := digit(s[2*i])
		lo, ok2 := digit(s[2*i+1])
		if !ok1 || !ok2 {
			return b, false
		}
		b[i] = hi<<4 | lo
	}
	return b, true
}

func digit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
