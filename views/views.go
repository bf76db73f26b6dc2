// Package views embeds the HTML templates, so that the binary carries its pages and a broken template
// fails at start rather than at the first visit.
package views

import "embed"

// FS holds every template; layouts live under layouts/.
//
//go:embed *.html layouts/*.html
var FS embed.FS
