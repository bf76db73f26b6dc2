// Package addrkey gives a delivery address and a phone number one spelling each, so that two entrants who
// give the same place, or the same phone, are seen to: case, spaces, punctuation, invisible characters
// and full-width forms do not count, nor a province's or a city's "省", "市" or "Province", and a phone is
// its E.164 number by its country's rules (nyaruka/phonenumbers, a port of Google's libphonenumber), so
// that "+86 138 0013 8000" and "138-0013-8000" are one. Runs of digits stay apart ("Flat 12, 3 Main St"
// is not "Flat 1, 23 Main St"). The postcode is not part of a place: it is optional, and leaving it out
// or writing a neighbour's must not make a new place.
package addrkey

import (
	"strings"
	"unicode"

	"github.com/nyaruka/phonenumbers"
	"golang.org/x/text/unicode/norm"
)

// Place answers the address's one spelling: its region, city and street (the recipient is not part of it:
// a place is the same whoever receives there), each folded, joined by a separator no part holds.
func Place(region, city, street string) string {
	parts := []string{area(region), area(city), fold(street)}
	if strings.Join(parts, "") == "" {
		return ""
	}
	return strings.Join(parts, "\x1f")
}

// areaSuffixes are the words a province's or a city's name may carry or leave out, folded.
var areaSuffixes = []string{"特别行政区", "自治区", "自治州", "province", "city", "sheng", "shi", "省", "市", "区", "县"}

// area folds a region's or a city's name and drops the word for what it is.
func area(s string) string {
	s = fold(s)
	for _, suffix := range areaSuffixes {
		if t, ok := strings.CutSuffix(s, suffix); ok && t != "" {
			return t
		}
	}
	return s
}

// Phone answers the phone's one spelling: E.164 when the number parses by the rules of its country
// (defaultRegion, an ISO 3166 code such as "CN", for a number written without its country code) and is of
// a length a number of its country may have; else its digits, so that a number the library cannot place
// still compares by its digits.
func Phone(phone, defaultRegion string) string {
	s := norm.NFKC.String(phone)
	if n, err := phonenumbers.Parse(s, defaultRegion); err == nil && phonenumbers.IsPossibleNumber(n) {
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
// case, with every space, punctuation mark, symbol, control and invisible (format) character left out,
// but for one "-" where such characters stood between two digits.
func fold(s string) string {
	s = strings.ToLower(norm.NFKC.String(s))
	var b strings.Builder
	gap, lastDigit := false, false
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsPunct(r) || unicode.IsSymbol(r) || unicode.In(r, unicode.Cc, unicode.Cf, unicode.Mn) {
			gap = true
			continue
		}
		digit := unicode.IsDigit(r)
		if gap && digit && lastDigit {
			b.WriteByte('-')
		}
		b.WriteRune(r)
		gap, lastDigit = false, digit
	}
	return b.String()
}
