package addrkey

import "testing"

func TestPlacesThatAreOne(t *testing.T) {
	same := [][4]string{
		{"Zhejiang", "Hangzhou", "No. 18, Wensan Road, Flat 3-201", "310012"},
		{"ZHEJIANG", " hangzhou ", "No 18 Wensan Road Flat 3201", "310012"},
		{"Ｚｈｅｊｉａｎｇ", "Ｈａｎｇｚｈｏｕ", "Ｎｏ．１８，Ｗｅｎｓａｎ　Ｒｏａｄ，Ｆｌａｔ　３－２０１", "３１００１２"},
	}
	want := Place(same[0][0], same[0][1], same[0][2], same[0][3])
	for _, p := range same[1:] {
		if got := Place(p[0], p[1], p[2], p[3]); got != want {
			t.Errorf("Place%q = %q; want %q", p, got, want)
		}
	}
	zh := Place("浙江省", "杭州市", "文三路18号，3幢201室", "310012")
	if got := Place("浙江省", "杭州市", "文三路 18 号 3 幢 201 室", "310012"); got != zh {
		t.Errorf("a Chinese address with spaces and a comma: %q; want %q", got, zh)
	}
	for _, other := range [][4]string{
		{"Zhejiang", "Hangzhou", "No. 18, Wensan Road, Flat 3-202", "310012"}, // another flat
		{"Zhejiang", "Ningbo", "No. 18, Wensan Road, Flat 3-201", "310012"},   // another city
	} {
		if Place(other[0], other[1], other[2], other[3]) == want {
			t.Errorf("Place%q is taken for the same place", other)
		}
	}
	if Place("", " ", "", "") != "" {
		t.Error("an empty address has a spelling")
	}
}

func TestPhonesThatAreOne(t *testing.T) {
	for _, p := range []string{"+86 138 0013 8000", "13800138000", "138-0013-8000", "+86 (138) 0013 8000", "８６１３８００１３８０００", "+8613800138000"} {
		region := "CN"
		if got := Phone(p, region); got != "+8613800138000" {
			t.Errorf("Phone(%q, CN) = %q; want +8613800138000", p, got)
		}
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
