package auth

import (
	"encoding/base64"
	"testing"
)

// A card carries the keys it was signed with, for its user and address only; a card damaged anywhere,
// of another format, or signed with another secret does not verify.
func TestAddressCards(t *testing.T) {
	cards := NewAddressCards("secret-one")
	place, phone := [16]byte{1, 2, 3}, [16]byte{9, 8, 7}
	card := cards.Sign(42, 7, place, phone)
	if p, ph, ok := cards.Verify(card, 42, 7); !ok || p != place || ph != phone {
		t.Fatalf("the card's own user and address: %v %v %v", p, ph, ok)
	}
	for name, tc := range map[string]struct {
		card       string
		user, addr int64
	}{
		"another user":    {card, 43, 7},
		"another address": {card, 42, 8},
		"another secret":  {NewAddressCards("secret-two").Sign(42, 7, place, phone), 42, 7},
		"empty":           {"", 42, 7},
		"cut short":       {card[:len(card)-1], 42, 7},
		"longer":          {card + "A", 42, 7},
		"not base64url":   {"!" + card[1:], 42, 7},
	} {
		if _, _, ok := cards.Verify(tc.card, tc.user, tc.addr); ok {
			t.Errorf("%s: verified", name)
		}
	}
	raw, _ := base64.RawURLEncoding.DecodeString(card)
	for i := range raw {
		bad := append([]byte(nil), raw...)
		bad[i] ^= 0x10
		if _, _, ok := cards.Verify(base64.RawURLEncoding.EncodeToString(bad), 42, 7); ok {
			t.Errorf("a card with byte %d changed verified", i)
		}
	}
}
