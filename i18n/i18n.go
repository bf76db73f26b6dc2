// Package i18n holds the pages' words in English and Simplified Chinese and picks a language for a
// request: the visitor's own choice (a cookie set by the switch on every page), else Accept-Language.
package i18n

import (
	"strconv"
	"strings"
)

// Languages the pages speak; the first is the default.
var Languages = []string{"en", "zh"}

// Tr is one language's words. Templates call {{$.Tr.T "key"}}.
type Tr struct {
	Lang  string
	words map[string]string
}

// T returns the word for key; a missing key shows as itself, so that it is seen and fixed.
func (t Tr) T(key string) string {
	if w, ok := t.words[key]; ok {
		return w
	}
	if w, ok := catalog["en"][key]; ok {
		return w
	}
	return key
}

// add puts a feature's words into the catalog, from an init in a file of the feature's own
// (words_<feature>.go): features built side by side then never edit the same lines. A key said twice is
// a mistake, found at start.
func add(words map[string]map[string]string) {
	for lang, w := range words {
		if catalog[lang] == nil {
			panic("i18n: words for an unknown language " + strconv.Quote(lang))
		}
		for k, v := range w {
			if _, dup := catalog[lang][k]; dup {
				panic("i18n: the key " + strconv.Quote(k) + " is said twice in " + lang)
			}
			catalog[lang][k] = v
		}
	}
}

// HTMLLang is the value of <html lang>.
func (t Tr) HTMLLang() string {
	if t.Lang == "zh" {
		return "zh-CN"
	}
	return "en"
}

// For returns the words of lang (en when unknown).
func For(lang string) Tr {
	if l, ok := known(lang); ok {
		return Tr{Lang: l, words: catalog[l]}
	}
	return Tr{Lang: "en", words: catalog["en"]}
}

// known answers the language named s as Languages has it: never s itself, whose bytes may be a request
// buffer's that the server reuses for the next request (fasthttp's: a cookie's value, a header's), while
// the language is kept (a cache's key, a Tr) long after.
func known(s string) (string, bool) {
	for _, l := range Languages {
		if s == l {
			return l, true
		}
	}
	return "", false
}

// Words returns the words of lang whose keys start with one of prefixes, for the pages' scripts.
func Words(lang string, prefixes ...string) map[string]string {
	out := map[string]string{}
	for k := range catalog["en"] {
		for _, p := range prefixes {
			if strings.HasPrefix(k, p) {
				out[k] = For(lang).T(k)
			}
		}
	}
	return out
}

// Pick chooses the language from the visitor's choice (cookie) or the Accept-Language header. The
// answer is one of Languages' own strings, never a piece of its arguments.
func Pick(choice, acceptLanguage string) string {
	if l, ok := known(choice); ok {
		return l
	}
	if acceptLanguage == "" {
		return "en" // a script's request, a load tool's: asked on every answer, so no work for it
	}
	best, bestQ := "en", -1.0
	for _, part := range strings.Split(acceptLanguage, ",") {
		tag, q := strings.TrimSpace(part), 1.0
		if i := strings.Index(tag, ";"); i >= 0 {
			if v, ok := strings.CutPrefix(strings.TrimSpace(tag[i+1:]), "q="); ok {
				// A weight is at most 1 (RFC 9110): a larger one, or none that is a number, counts as 1, so
				// that the first preferred tag wins as it does at nginx's cache, which decides the usual
				// headers before they reach an instance (deploy/nginx).
				if f, err := strconv.ParseFloat(v, 64); err == nil && f <= 1 {
					q = f
				}
			}
			tag = tag[:i]
		}
		base := strings.ToLower(strings.SplitN(tag, "-", 2)[0])
		if q <= 0 {
			continue // q=0: not acceptable
		}
		if l, ok := known(base); ok && q > bestQ {
			best, bestQ = l, q
		}
	}
	return best
}
