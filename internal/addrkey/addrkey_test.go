package addrkey

import "testing"

func TestPlacesThatAreOne(t *testing.T) {
	same := [][3]string{
		{"Zhejiang", "Hangzhou", "No. 18, Wensan Road, Flat 3-201"},
		{"ZHEJIANG Province", " hangzhou city", "No 18 Wensan Road Flat 3 201"},
		{"Ｚｈｅｊｉａｎｇ", "Ｈａｎｇｚｈｏｕ", "Ｎｏ．１８，Ｗｅｎｓａｎ　Ｒｏａｄ，Ｆｌａｔ　３－２０１"},
		{"Zhejiang", "Hangzhou", "No. 18, Wensan\u200bRoad, Flat\u00ad 3-201\ufeff"}, // invisible characters
	}
	want := Place(same[0][0], same[0][1], same[0][2])
	for _, p := range same[1:] {
		if got := Place(p[0], p[1], p[2]); got != want {
			t.Errorf("Place%q = %q; want %q", p, got, want)
		}
	}
	zh := Place("浙江省", "杭州市", "文三路18号，3幢201室")
	for _, p := range [][3]string{{"浙江省", "杭州市", "文三路 18 号 3 幢 201 室"}, {"浙江", "杭州", "文三路18号3幢201室"}} {
		if got := Place(p[0], p[1], p[2]); got != zh {
			t.Errorf("a Chinese address written otherwise %q: %q; want %q", p, got, zh)
		}
	}
	for _, other := range [][3]string{
		{"Zhejiang", "Hangzhou", "No. 18, Wensan Road, Flat 3-202"}, // another flat
		{"Zhejiang", "Ningbo", "No. 18, Wensan Road, Flat 3-201"},   // another city
		{"Zhejiang", "Hangzhou", "No. 18, Wensan Road, Flat 32-01"}, // digits grouped otherwise
	} {
		if Place(other[0], other[1], other[2]) == want {
			t.Errorf("Place%q is taken for the same place", other)
		}
	}
	if Place("", "", "Flat 12, 3 Main St") == Place("", "", "Flat 1, 23 Main St") || Place("", "", "Room 1-12") == Place("", "", "Room 11-2") {
		t.Error("two flats whose digits run together are one")
	}
	if Place("", " ", "") != "" {
		t.Error("an empty address has a spelling")
	}
}

func TestPhonesThatAreOne(t *testing.T) {
	for _, p := range []string{"+86 138 0013 8000", "13800138000", "138-0013-8000", "+86 (138) 0013 8000", "８６１３８００１３８０００", "+8613800138000", "0086 138 0013 8000"} {
		if got := Phone(p, "CN"); got != "+8613800138000" {
			t.Errorf("Phone(%q, CN) = %q; want +8613800138000", p, got)
		}
	}
	// Numbers the library does not call valid, in ranges it does not know yet, are one with their code too.
	if a, b := Phone("14912345678", "CN"), Phone("+86 149 1234 5678", "CN"); a != b {
		t.Errorf("a possible number with and without its country code: %q, %q", a, b)
	}
	if got := Phone("(415) 555-2671", "US"); got != "+14155552671" {
		t.Errorf("a US number: %q", got)
	}
	if Phone("13800138001", "CN") == Phone("13800138000", "CN") {
		t.Error("two numbers are one")
	}
	if got := Phone("12-34", "CN"); got != "1234" {
		t.Errorf("a number the rules cannot place keeps its digits: %q", got)
	}
}
