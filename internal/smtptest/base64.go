package smtptest

import (
	"encoding/base64"
	"io"
	"strings"
)

// newBase64 decodes a base64 body that is broken into lines.
func newBase64(r io.Reader) io.Reader {
	b, _ := io.ReadAll(r)
	return base64.NewDecoder(base64.StdEncoding, strings.NewReader(strings.Join(strings.Fields(string(b)), "")))
}
