package models

import "testing"

// An address line is text a person can read on one line: what shows nothing, breaks the line or turns
// the text around on a label is refused, beside the field it is in.
func TestDeliveryFieldsAreReadableLines(t *testing.T) {
	good := Delivery{Recipient: " 张伟 ", Phone: "+86 (138) 0013-8000", Region: "浙江省", City: "杭州市", Street: "文三路 90 号", Postcode: ""}
	if bad := good.clean(); len(bad) != 0 || good.Recipient != "张伟" {
		t.Fatalf("a good address: %v (recipient %q)", bad, good.Recipient)
	}
	for _, c := range []struct{ field, value string }{
		{"recipient", "\u200b"},             // a zero-width space only
		{"recipient", "Zhang\u2028Wei"},     // a line separator
		{"street", "90 \u202eroad"},         // a right-to-left override
		{"city", "Hang\tzhou"},              // a control character
		{"phone", "1234"},                   // too few digits
		{"phone", "+1 (555) abc"},           // not a number
		{"postcode", "3!0"},                 // not a postcode
		{"region", string(make([]byte, 0))}, // empty
	} {
		d := good
		field := map[string]*string{"recipient": &d.Recipient, "phone": &d.Phone, "region": &d.Region, "city": &d.City,
			"street": &d.Street, "postcode": &d.Postcode}[c.field]
		*field = c.value
		if bad := d.clean(); len(bad) != 1 || bad[0].Field != c.field {
			t.Errorf("%s %q: %v, want that field alone refused", c.field, c.value, bad)
		}
	}
}
