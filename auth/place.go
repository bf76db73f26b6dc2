package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
)

// Places signs a shopper's place in a waiting room, so that a page can prove its place on any instance
// (which then answers it from memory, without Redis) and cannot claim another. A token binds the item,
// the user, the ticket and the place; it carries the ticket and the place, and is the same every time for
// the same place. Keyed by a key derived from the session secret, so every instance signs alike.
type Places struct {
	mac  *macPool
	seen *verified[placeSeen] // tokens that passed, with what they carry: a page proves its place every poll
}

type placeSeen struct {
	item, user int64
	ticket     string
	place      int64
}

// NewPlaces returns a signer keyed by the session secret.
func NewPlaces(secret string) *Places {
	return &Places{mac: newMacPool(derive(secret, "place")), seen: newVerified[placeSeen]()}
}

// A token is base64url (no padding) of: format, the ticket (16 bytes), the place (8 bytes, big-endian)
// and the first 16 bytes of the MAC of the item, the user and all of that.
const (
	placeFormat = 1
	placeTicket = 16
	placeBody   = 1 + placeTicket + 8
	placeMacLen = 16
	placeLen    = placeBody + placeMacLen
)

// Sign answers the token of the user's place in the item's line: ticket is its 32 hex digits. It answers
// "" for a ticket that is not 32 hex digits or a place that is not positive.
func (p *Places) Sign(itemID, userID int64, ticket string, place int64) string {
	var raw [placeLen]byte
	raw[0] = placeFormat
	if place <= 0 || len(ticket) != 2*placeTicket {
		return ""
	}
	if _, err := hex.Decode(raw[1:1+placeTicket], []byte(ticket)); err != nil {
		return ""
	}
	binary.BigEndian.PutUint64(raw[1+placeTicket:placeBody], uint64(place))
	copy(raw[placeBody:], p.sum(itemID, userID, raw[:placeBody]))
	return base64.RawURLEncoding.EncodeToString(raw[:])
}

// Verify answers the ticket and place a token signed for the user's place in the item's line carries;
// ok is false for a token that is forged, damaged, or signed for another user or another item.
func (p *Places) Verify(token string, itemID, userID int64) (ticket string, place int64, ok bool) {
	if s, ok := p.seen.get(token); ok {
		// The MAC bound the token to the item and the user it passed for; for others it does not pass.
		if s.item != itemID || s.user != userID {
			return "", 0, false
		}
		return s.ticket, s.place, true
	}
	ticket, place, ok = p.verify(token, itemID, userID)
	if ok {
		p.seen.put(token, placeSeen{itemID, userID, ticket, place})
	}
	return ticket, place, ok
}

func (p *Places) verify(token string, itemID, userID int64) (ticket string, place int64, ok bool) {
	var raw [placeLen]byte
	if len(token) != base64.RawURLEncoding.EncodedLen(placeLen) {
		return "", 0, false
	}
	// One spelling per token: Strict refuses spare bits in the last character.
	if n, err := base64.RawURLEncoding.Strict().Decode(raw[:], []byte(token)); err != nil || n != placeLen || raw[0] != placeFormat {
		return "", 0, false
	}
	if !hmac.Equal(p.sum(itemID, userID, raw[:placeBody]), raw[placeBody:]) {
		return "", 0, false
	}
	place = int64(binary.BigEndian.Uint64(raw[1+placeTicket : placeBody]))
	if place <= 0 {
		return "", 0, false
	}
	return hex.EncodeToString(raw[1 : 1+placeTicket]), place, true
}

// sum is the token's MAC: of the item and the user (which the token does not carry: the request names
// them) and the token's body.
func (p *Places) sum(itemID, userID int64, body []byte) []byte {
	var msg [16 + placeBody]byte
	binary.BigEndian.PutUint64(msg[:8], uint64(itemID))
	binary.BigEndian.PutUint64(msg[8:16], uint64(userID))
	copy(msg[16:], body)
	var mac [sha256.Size]byte
	return p.mac.sum(mac[:0], msg[:])[:placeMacLen]
}
