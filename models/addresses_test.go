package models

import (
	"strings"
	"testing"

	"seckill/internal/addrkey"
)

// An address line is text a person can read on one line: what shows nothing, breaks the line or turns
// the text around on a label is refused, beside the field it is in.
func TestDeliveryFieldsAreReadableLines(t *testing.T) {
	good := Delivery{Recipient: " 张伟 ", Phone: "+86 (138) 0013-8000", Region: "浙江省", City: "杭州市", Street: "文三路 90 号", Postcode: ""}
	if bad := good.clean(""); len(bad) != 0 || good.Recipient != "张伟" {
		t.Fatalf("a good address: %v (recipient %q)", bad, good.Recipient)
	}
	for _, c := range []struct{ field, value string }{
		{"recipient", "\u200b"},             // a zero-width space only
		{"recipient", "Zhang\u2028Wei"},     // a line separator
		{"street", "90 \u202eroad"},         // a right-to-left override
		{"city", "Hang\tzhou"},              // a control character
		{"phone", "12345"},                  // too few digits for a number of China
		{"phone", "+1 (555) abc"},           // not a number
		{"postcode", "3!0"},                 // not a postcode
		{"region", string(make([]byte, 0))}, // empty
	} {
		d := good
		field := map[string]*string{"recipient": &d.Recipient, "phone": &d.Phone, "region": &d.Region, "city": &d.City,
			"street": &d.Street, "postcode": &d.Postcode}[c.field]
		*field = c.value
		if bad := d.clean(""); len(bad) != 1 || bad[0].Field != c.field {
			t.Errorf("%s %q: %v, want that field alone refused", c.field, c.value, bad)
		}
	}
}

// A phone number is checked by the rules of the country it names, a number without a country code being
// one of the default region's (CN): "12345" is refused, saying why, and the spellings of one number are
// stored as the one E.164 number.
func TestPhoneNumbersByTheirCountrysRules(t *testing.T) {
	for _, c := range []struct {
		region, phone, want, why string
	}{
		{"", "+86 138 0013 8000", "+8613800138000", ""},
		{"", "13800138000", "+8613800138000", ""},
		{"CN", "138-0013-8000", "+8613800138000", ""},
		{"", "+86 (138) 0013-8000", "+8613800138000", ""},
		{"", "０１０ ６２５５ ５５５５", "+861062555555", ""}, // full-width digits: a Beijing line
		{"", "+1 650 253 0000", "+16502530000", ""},
		{"US", "(650) 253-0000", "+16502530000", ""},
		{"", "12345", "", "phone_short"},
		{"", "1380013800012345", "", "phone_long"},
		{"", "+86 100 0000 0000", "", "phone_invalid"},
		{"", "+999 1234 5678", "", "phone_country"},
		{"", "call me", "", "phone_number"},
		{"", "138 0013 8000 ext", "", "phone_number"},
		{"", strings.Repeat("1", 100000), "", "phone_number"},
	} {
		d := Delivery{Recipient: "Zhang Wei", Phone: c.phone, Region: "Zhejiang", City: "Hangzhou", Street: "90 Wensan Road"}
		bad := d.clean(c.region)
		switch {
		case c.why == "" && (len(bad) != 0 || d.Phone != c.want):
			t.Errorf("%q in %q: %v, phone %q; want %q", c.phone, c.region, bad, d.Phone, c.want)
		case c.why != "" && (len(bad) != 1 || bad[0].Field != "phone" || bad[0].Key != c.why):
			t.Errorf("%q in %q: %v; want phone refused for %s", c.phone, c.region, bad, c.why)
		}
	}
}

// The book's phone numbers and the one-entrant-per-address rule's (internal/addrkey) are one reading:
// every spelling the rule takes for one number is stored as the number the rule makes of it.
func TestPhoneNumbersAgreeWithTheAddressRule(t *testing.T) {
	for _, p := range []string{"+86 138 0013 8000", "13800138000", "138-0013-8000", "+86 (138) 0013 8000",
		"８６１３８００１３８０００", "+8613800138000", "0086 138 0013 8000"} {
		got, w := phoneE164(p, "CN")
		if w != nil || got != addrkey.Phone(p, "CN") || addrkey.Phone(got, "CN") != got {
			t.Errorf("%q: stored as %q (%v), the rule reads %q", p, got, w, addrkey.Phone(p, "CN"))
		}
	}
}

// A stored phone is shown grouped as its country writes it; one from before the rules as it was written.
func TestPhoneShown(t *testing.T) {
	for phone, want := range map[string]string{"+8613800138000": "+86 138 0013 8000", "+16502530000": "+1 650-253-0000", "138-0013-8000": "138-0013-8000"} {
		if got := (Delivery{Phone: phone}).PhoneShown(); got != want {
			t.Errorf("%q is shown as %q, want %q", phone, got, want)
		}
	}
}

// The edit field shows a number of the shop's country as its people type it, another country's with its
// code, and each reads back as the number it was.
func TestPhoneToEditReadsBack(t *testing.T) {
	for _, c := range []struct{ phone, region, want string }{
		{"+8613800138000", "", "138 0013 8000"},
		{"+8613800138000", "CN", "138 0013 8000"},
		{"+861058008000", "CN", "010 5800 8000"},
		{"+16502530000", "CN", "+1 650-253-0000"},
		{"+16502530000", "US", "(650) 253-0000"},
		{"+8613800138000", "US", "+86 138 0013 8000"},
		{"138-0013-8000", "CN", "138-0013-8000"}, // stored before the rules: as it was written
	} {
		got := (Delivery{Phone: c.phone}).PhoneToEdit(c.region)
		if got != c.want {
			t.Errorf("%q in %q is edited as %q, want %q", c.phone, c.region, got, c.want)
		}
		if back, bad := phoneE164(got, c.region); c.phone[0] == '+' && (bad != nil || back != c.phone) {
			t.Errorf("%q in %q reads back as %q (%v)", got, c.region, back, bad)
		}
	}
}
