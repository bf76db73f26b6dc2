package mail

import (
	"bytes"
	"fmt"
	htmltemplate "html/template"
	"strings"
	texttemplate "text/template"

	"seckill/i18n"
)

// The kinds of mail.
const (
	KindVerifyEmail     = "verify_email"     // a link to verify a new address (Link, Username)
	KindEmailChanged    = "email_changed"    // to the old address: the account's address changed (Username, Email)
	KindPasswordReset   = "password_reset"   // a link to choose a new password (Link, Username)
	KindPasswordChanged = "password_changed" // the password was changed (Username)
)

// kinds says each kind's words: its subject, its paragraphs and, when it carries a link, the link's label.
// The words are i18n's (i18n/words_mail.go), with {username}, {email} and {link} in them.
var kinds = map[string]struct {
	subject string
	paras   []string
	action  string
}{
	KindVerifyEmail:     {"mail.verify.subject", []string{"mail.verify.body", "mail.verify.expiry", "mail.notYou"}, "mail.verify.action"},
	KindEmailChanged:    {"mail.changed.subject", []string{"mail.changed.body", "mail.changed.notYou"}, ""},
	KindPasswordReset:   {"mail.reset.subject", []string{"mail.reset.body", "mail.reset.expiry", "mail.notYou"}, "mail.reset.action"},
	KindPasswordChanged: {"mail.pwchanged.subject", []string{"mail.pwchanged.body", "mail.changed.notYou"}, ""},
}

// Rendered is a mail's words in its language: subject, plain text and HTML.
type Rendered struct {
	Lang, Subject, Text, HTML string
}

type page struct {
	Lang, Greeting, Footer, Link, Action string
	Colon                                string // after a label: full-width in Chinese
	Paras                                []string
}

var textBody = texttemplate.Must(texttemplate.New("text").Parse(`{{.Greeting}}

{{range .Paras}}{{.}}

{{end}}{{if .Link}}{{.Action}}{{.Colon}}
{{.Link}}

{{end}}-- 
{{.Footer}}
`))

var htmlBody = htmltemplate.Must(htmltemplate.New("html").Parse(`<!doctype html>
<html lang="{{.Lang}}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"></head>
<body style="font-family:system-ui,-apple-system,'Segoe UI','PingFang SC','Microsoft YaHei',sans-serif;color:#222;max-width:560px;margin:0 auto;padding:16px">
<p>{{.Greeting}}</p>
{{range .Paras}}<p>{{.}}</p>
{{end}}{{if .Link}}<p><a href="{{.Link}}" style="display:inline-block;background:#d6336c;color:#fff;padding:10px 18px;border-radius:6px;text-decoration:none">{{.Action}}</a></p>
<p style="font-size:13px;color:#666">{{.Link}}</p>
{{end}}<hr style="border:none;border-top:1px solid #ddd">
<p style="font-size:13px;color:#666">{{.Footer}}</p>
</body></html>
`))

// Render makes m's subject and bodies in its language (English when it has none the shop speaks).
func Render(m Message) (Rendered, error) {
	if r, ok := renderers[m.Kind]; ok {
		return r(m)
	}
	k, ok := kinds[m.Kind]
	if !ok {
		return Rendered{}, fmt.Errorf("mail: no kind %q", m.Kind)
	}
	tr := i18n.For(m.Lang)
	var pairs []string
	for _, key := range []string{"Link", "Username", "Email"} {
		pairs = append(pairs, "{"+strings.ToLower(key)+"}", m.Data[key])
	}
	fill := strings.NewReplacer(pairs...).Replace
	p := page{Lang: tr.HTMLLang(), Greeting: fill(tr.T("mail.greeting")), Footer: fill(tr.T("mail.footer")), Colon: tr.T("mail.colon")}
	for _, key := range k.paras {
		p.Paras = append(p.Paras, fill(tr.T(key)))
	}
	if k.action != "" {
		p.Link, p.Action = m.Data["Link"], tr.T(k.action)
		if p.Link == "" {
			return Rendered{}, fmt.Errorf("mail: a %s mail needs its link", m.Kind)
		}
	}
	var text, html bytes.Buffer
	if err := textBody.Execute(&text, p); err != nil {
		return Rendered{}, err
	}
	if err := htmlBody.Execute(&html, p); err != nil {
		return Rendered{}, err
	}
	return Rendered{Lang: tr.Lang, Subject: fill(tr.T(k.subject)), Text: text.String(), HTML: html.String()}, nil
}
