package i18n

// Punctuation the templates put around words (issue 34 row 14): a Chinese page writes （）and 。, not
// the ASCII ones. punct.colon and punct.semicolon are in words.go.
func init() {
	add(map[string]map[string]string{
		"en": {
			"punct.open":  " (",
			"punct.close": ")",
			"punct.stop":  ".",
		},
		"zh": {
			"punct.open":  "（",
			"punct.close": "）",
			"punct.stop":  "。",
		},
	})
}
