package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
)

// AddressCards sign what a join of a sale with one entrant per address needs of a shopper's delivery
// address: its id and its claim keys (the hashes of its place's and phone's one spelling, stock.ClaimKeys).
// The address book hands each address's card to the page, and the page hands it back with the join, which
// then claims the keys without reading the address from the database: a crowd's joins cost PostgreSQL
// nothing. A card is bound to its user (the MAC covers the user id, which the card does not carry).
//
// A card is what the address said when the book was read: edited or deleted since, the card still
// claims the old keys, which were the shopper's own; the order's address must then still match them
// (stock.Claims.Owned), so nothing is gained by keeping an old card.
type AddressCards struct{ mac *macPool }

// NewAddressCards returns a signer keyed by a key derived from the session secret.
func NewAddressCards(secret string) *AddressCards {
	return &AddressCards{mac: newMacPool(derive(secret, "address-card"))}
}

// A card is base64url (no padding) of: format, the address id (8 bytes, big-endian), the place key (16),
// the phone key (16) and the first 16 bytes of the MAC of the user and all of that.
const (
	cardFormat = 1
	cardBody   = 1 + 8 + 16 + 16
	cardMacLen = 16
	cardLen    = cardBody + cardMacLen
)

// Sign answers the card of the user's address with the claim keys given.
func (a *AddressCards) Sign(userID, addressID int64, place, phone [16]byte) string {
	var raw [cardLen]byte
	raw[0] = cardFormat
	binary.BigEndian.PutUint64(raw[1:9], uint64(addressID))
	copy(raw[9:25], place[:])
	copy(raw[25:41], phone[:])
	copy(raw[cardBody:], a.sum(userID, raw[:cardBody]))
	return base64.RawURLEncoding.EncodeToString(raw[:])
}

// Verify answers the claim keys a card signed for the user's address carries; ok is false for a card
// that is forged, damaged, or signed for another user or another address.
func (a *AddressCards) Verify(card string, userID, addressID int64) (place, phone [16]byte, ok bool) {
	var raw [cardLen]byte
	if len(card) != base64.RawURLEncoding.EncodedLen(cardLen) {
		return place, phone, false
	}
	if n, err := base64.RawURLEncoding.Strict().Decode(raw[:], []byte(card)); err != nil || n != cardLen || raw[0] != cardFormat {
		return place, phone, false
	}
	if !hmac.Equal(a.sum(userID, raw[:cardBody]), raw[cardBody:]) || int64(binary.BigEndian.Uint64(raw[1:9])) != addressID {
		return place, phone, false
	}
	return [16]byte(raw[9:25]), [16]byte(raw[25:41]), true
}

func (a *AddressCards) sum(userID int64, body []byte) []byte {
	var msg [8 + cardBody]byte
	binary.BigEndian.PutUint64(msg[:8], uint64(userID))
	copy(msg[8:], body)
	var mac [sha256.Size]byte
	return a.mac.sum(mac[:0], msg[:])[:cardMacLen]
}
