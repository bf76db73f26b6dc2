// Package addrkey gives a delivery address and a phone number one spelling each, so that two entrants who
// give the same place, or the same phone, are seen to: case, spaces, punctuation and full-width forms do
// not count, and a phone is its E.164 number by its country's rules (nyaruka/phonenumbers, a port of
// Google's libphonenumber), so that "+86 138 0013 8000" and "138-0013-8000" are one.
package addrkey

import (
	"strings"
	"unicode"

	"github.com/nyaruka/phonenumbers"
	"golang.org/x/text/unicode/norm"
)

// Place answers the address's one spelling: its parts (the recipient is not one: a place is the same
// whoever receives there), each folded, joined by a separator no part holds.
func Place(region, city, street, postcode string) string {
	parts := []string{fold(region), fold(city), fold(street), fold(postcode)}
	if strings.Join(parts, "") == "" {
		return ""
	}
	return strings.Join(parts, "\x1f")
}

// Phone answers the phone's one spelling: E.164 when the number parses by the rules of its country
// (defaultRegion, an ISO 3166 code such as "CN", for a number written without its country code); else its
// digits, folded, so that a number the library cannot place still compares by its digits.
func Phone(phone, defaultRegion string) string {
	s := norm.NFKC.String(phone)
	if n, err := phonenumbers.Parse(s, defaultRegion); err == nil && phonenumbers.IsValidNumber(n) {
		return phonenumbers.Format(n, phonenumbers.E164)
	}
	var b strings.Builder
	for _, r := range s {
		if r >= '0' && r <= '9' || r == '+' && b.Len() == 0 {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// fold answers s in compatibility form (full-width letters and digits become their plain forms), lower
// case, with every space, punctuation mark and symbol left out.
func fold(s string) string {
	s = strings.ToLower(norm.NFKC.String(s))
	var b strings.Builder
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsPunct(r) || unicode.IsSymbol(r) || unicode.IsControl(r) {
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
