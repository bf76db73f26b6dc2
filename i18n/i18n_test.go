package i18n

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"
	"unsafe"

	"seckill/views"
)

func TestPick(t *testing.T) {
	tests := []struct{ choice, accept, want string }{
		{"", "", "en"},
		{"", "zh-CN,zh;q=0.9,en;q=0.8", "zh"},
		{"", "en-US,en;q=0.9,zh-CN;q=0.8", "en"},
		{"", "fr-FR,fr;q=0.9", "en"},
		{"", "fr;q=1, zh-TW;q=0.5", "zh"},
		{"en", "zh-CN", "en"},
		{"zh", "en", "zh"},
		{"xx", "zh", "zh"},
		{"", "fr, zh;q=0", "en"}, // q=0: not acceptable (found by fuzzing)
		// A weight above 1 counts as 1: the first tag wins, as nginx decides it (found by a review: one
		// visitor's "zh, en;q=2" stored an English page under the Chinese key)
		{"", "zh, en;q=2", "zh"},
		{"", "zh, en;q=Inf", "zh"},
		{"", "zh, en;q=NaN", "zh"},
	}
	for _, tt := range tests {
		if got := Pick(tt.choice, tt.accept); got != tt.want {
			t.Errorf("Pick(%q, %q) = %q, want %q", tt.choice, tt.accept, got, tt.want)
		}
	}
}

func TestEveryWordInBothLanguages(t *testing.T) {
	for key := range catalog["en"] {
		if _, ok := catalog["zh"][key]; !ok {
			t.Errorf("%q has no Chinese", key)
		}
	}
	for key := range catalog["zh"] {
		if _, ok := catalog["en"][key]; !ok {
			t.Errorf("%q has no English", key)
		}
	}
}

func TestTemplatesUseKnownWords(t *testing.T) {
	// Every key a template asks for has words in both languages: a missing one would show as the key.
	re := regexp.MustCompile(`\.T "([^"]+)"`)
	err := fs.WalkDir(views.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(views.FS, path)
		if err != nil {
			return err
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			for _, lang := range Languages {
				if _, ok := catalog[lang][m[1]]; !ok {
					t.Errorf("%s asks for %q, which has no %s words", path, m[1], lang)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The shop speaks to people in Chinese with the polite 您, on every page and in every mail, never 你; and
// it types the full-width colon after Chinese text, never the ASCII one.
func TestChineseWordsSayNinAndFullWidthColons(t *testing.T) {
	colon := regexp.MustCompile(`[\p{Han}\x{3000}-\x{303F}\x{FF00}-\x{FFEF}“”]:`)
	for key, w := range catalog["zh"] {
		if strings.Contains(w, "你") {
			t.Errorf("%q says 你: %s", key, w)
		}
		if colon.MatchString(w) {
			t.Errorf("%q has an ASCII colon after Chinese: %s", key, w)
		}
	}
}

// The language picked is kept long after the request (a page cache's key, an error's body by language),
// while the server reuses the request's buffer for the next one: Pick's answer must not share its bytes
// with the cookie or the header it read (an instance crashed in a sync.Map whose key changed under it).
func TestPickKeepsNoBytesOfTheRequest(t *testing.T) {
	for _, tc := range []struct{ cookie, header string }{
		{"zh", ""},
		{"", "zh-CN,en;q=0.5"},
		{"", "zh"},
		{"en", ""},
		{"", "fr;q=0.9, en;q=0.8"},
	} {
		cookie, header := []byte(tc.cookie), []byte(tc.header)
		got := Pick(unsafe.String(unsafe.SliceData(cookie), len(cookie)), unsafe.String(unsafe.SliceData(header), len(header)))
		want := strings.Clone(got)
		for i := range cookie {
			cookie[i] = 'x'
		}
		for i := range header {
			header[i] = 'x'
		}
		if got != want {
			t.Errorf("Pick(%q, %q) answered %q, which read %q once the request's bytes were reused", tc.cookie, tc.header, want, got)
		}
		if tr := For(unsafe.String(unsafe.SliceData([]byte(want)), len(want))); tr.Lang != want {
			t.Errorf("For(%q).Lang = %q", want, tr.Lang)
		}
	}
}
