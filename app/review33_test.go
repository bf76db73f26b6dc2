package app

import (
	"regexp"
	"strings"
	"testing"
)

// headingOrLabel finds the texts of a page's h1, h2 and labels, in order.
var headingOrLabel = regexp.MustCompile(`<(h1|h2|label)\b[^>]*>([^<]+)<`)

// /account/email says each of its titles once: the page's, the current address's section and the form's,
// and the field's label (the review found 邮箱地址 three times), with and without an address, in both
// languages.
func TestEmailPageSaysEachTitleOnce(t *testing.T) {
	s := startLive(t, liveOpts{noBackground: true})
	b := newBrowser(t, s.URL)
	b.register("titled_once", passwordOf("titled_once"))
	for _, step := range []struct {
		name  string
		setup func()
		want  map[string][]string
	}{
		{"no address", func() {}, map[string][]string{
			"en": {"Your e-mail address", "Current address", "Add an address", "E-mail address"},
			"zh": {"您的邮箱地址", "当前邮箱", "添加邮箱地址", "邮箱地址"}}},
		{"an address", func() {
			expect(t, "add an address", b.call("POST", "/api/me/email", map[string]string{"email": "titled@example.com"}), 202, "")
		}, map[string][]string{
			"en": {"Your e-mail address", "Current address", "Change the address", "E-mail address"},
			"zh": {"您的邮箱地址", "当前邮箱", "更换邮箱地址", "邮箱地址"}}},
	} {
		step.setup()
		for _, lang := range []string{"en", "zh"} {
			b.setCookie("lang", lang)
			r := b.call("GET", "/account/email", nil)
			if r.Status != 200 {
				t.Fatalf("%s, %s: /account/email answers %d", step.name, lang, r.Status)
			}
			main := string(r.Body)
			if i := strings.Index(main, "<main"); i >= 0 {
				main = main[i:]
			}
			var got []string
			seen := map[string]bool{}
			for _, m := range headingOrLabel.FindAllStringSubmatch(main, -1) {
				text := strings.TrimSpace(m[2])
				if seen[text] {
					t.Errorf("%s, %s: the page says %q twice", step.name, lang, text)
				}
				seen[text] = true
				got = append(got, text)
			}
			if strings.Join(got, " | ") != strings.Join(step.want[lang], " | ") {
				t.Errorf("%s, %s: the titles and labels are %q, want %q", step.name, lang, got, step.want[lang])
			}
		}
	}
}
