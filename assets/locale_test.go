package assets

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"
)

// A time a script writes is in the page's language: toLocale…String() without one gave the browser's
// ("排队将于 7:37:18 PM 开始。", issue 34 row 14). Every such call of a time names a language: the
// page's (document.documentElement.lang, or a variable lang holding it).
func TestScriptsSayTimesInThePagesLanguage(t *testing.T) {
	call := regexp.MustCompile(`\)\.toLocale(Time|Date)?String\(([^)]*)`)
	scripts, err := fs.Glob(files, "js/*.js")
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	seen := 0
	for _, name := range scripts {
		src, err := fs.ReadFile(files, name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range call.FindAllStringSubmatch(string(src), -1) {
			seen++
			if !strings.Contains(m[2], "document.documentElement.lang") && !strings.HasPrefix(m[2], "lang") {
				t.Errorf("%s: %s) is not in the page's language", name, m[0])
			}
		}
	}
	if seen == 0 {
		t.Fatal("no toLocale…String call found: the test reads nothing")
	}
}
