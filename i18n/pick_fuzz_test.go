package i18n

import (
	"slices"
	"strings"
	"testing"
)

// FuzzPick: whatever the cookie and Accept-Language say, the answer is a language the pages speak; the
// visitor's own choice wins when it is one; a language the pages do not speak, added at the header's
// end, changes nothing; and a language refused with q=0, and named nowhere else, is never picked.
func FuzzPick(f *testing.F) {
	for _, s := range [][2]string{
		{"", ""}, {"", "zh-CN,zh;q=0.9,en;q=0.8"}, {"", "en-US,en;q=0.9,zh-CN;q=0.8"}, {"", "fr-FR,fr;q=0.9"},
		{"", "fr;q=1, zh-TW;q=0.5"}, {"en", "zh-CN"}, {"zh", "en"}, {"xx", "zh"}, {"ZH", "ZH-hant;q=0.7"},
		{"", "*"}, {"", "zh;q=NaN"}, {"", "zh;q=1e309"}, {"", "zh;q=-0.5"}, {"", "zh;q=0.5;level=1"},
		{"", "zh; q=0.5 , en ; q=0.4"}, {"", ",,,;;;==="}, {"", "zh-\r\nSet-Cookie: x"}, {"\x00", "é"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, choice, accept string) {
		got := Pick(choice, accept)
		if !slices.Contains(Languages, got) {
			t.Fatalf("Pick(%q, %q) = %q, not one of %v", choice, accept, got, Languages)
		}
		if slices.Contains(Languages, choice) && got != choice {
			t.Fatalf("Pick(%q, %q) = %q: the visitor's choice lost", choice, accept, got)
		}
		if !slices.Contains(Languages, choice) && Pick(choice, "zh;q=0,"+strings.ReplaceAll(strings.ToLower(accept), "zh", "xx")) == "zh" {
			t.Fatalf("Pick(%q, %q) picks zh, which the header refuses with q=0 and names nowhere else", choice, accept)
		}
		for _, extra := range []string{"xx-YY;q=0.9", "tlh", "*", "english;q=1", "zhx"} {
			if again := Pick(choice, accept+","+extra); again != got {
				t.Fatalf("Pick(%q, %q) = %q, but with %q added it is %q", choice, accept, got, extra, again)
			}
		}
	})
}
