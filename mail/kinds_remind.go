package mail

import (
	"bytes"
	"fmt"
	htmltemplate "html/template"
	"strings"
	texttemplate "text/template"
	"time"

	"seckill/i18n"
)

// The kinds of mail of reminders and receipts.
const (
	// KindRemindLineOpen: a queue sale's line opens at Time (Sale, Time, Start, Link, Unsubscribe, Username).
	KindRemindLineOpen = "remind_line_open"
	// KindRemindStart: a sale starts at Time (Sale, Time, Link, Unsubscribe, Username).
	KindRemindStart = "remind_start"
	// KindReceipt: an order was paid (OrderNo, Item, Amount, Time, Link, Username).
	KindReceipt = "receipt"
)

// renderers render the kinds whose words need more than render.go's (their own values and, for
// reminders, the unsubscribe link in the footer); Render asks them first.
var renderers = map[string]func(Message) (Rendered, error){
	KindRemindLineOpen: richRender("remind.mail.open.subject", []string{"remind.mail.open.body", "remind.mail.open.join"}, "remind.mail.action"),
	KindRemindStart:    richRender("remind.mail.start.subject", []string{"remind.mail.start.body"}, "remind.mail.action"),
	KindReceipt:        richRender("receipt.mail.subject", []string{"receipt.mail.body", "receipt.mail.order", "receipt.mail.item", "receipt.mail.amount", "receipt.mail.time"}, "receipt.mail.action"),
}

// richFields are the values a reminder's or a receipt's words take, as {sale}, {time}, ...
var richFields = []string{"Link", "Username", "Sale", "Time", "Start", "OrderNo", "Item", "Amount", "Reason"}

type richPage struct {
	page
	Unsubscribe, UnsubscribeLabel string
}

var richText = texttemplate.Must(texttemplate.New("text").Parse(`{{.Greeting}}

{{range .Paras}}{{.}}

{{end}}{{.Action}}{{.Colon}}
{{.Link}}

-- 
{{.Footer}}
{{if .Unsubscribe}}
{{.UnsubscribeLabel}}{{.Colon}}
{{.Unsubscribe}}
{{end}}`))

var richHTML = htmltemplate.Must(htmltemplate.New("html").Parse(`<!doctype html>
<html lang="{{.Lang}}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"></head>
<body style="font-family:system-ui,-apple-system,'Segoe UI','PingFang SC','Microsoft YaHei',sans-serif;color:#222;max-width:560px;margin:0 auto;padding:16px">
<p>{{.Greeting}}</p>
{{range .Paras}}<p>{{.}}</p>
{{end}}<p><a href="{{.Link}}" style="display:inline-block;background:#d6336c;color:#fff;padding:10px 18px;border-radius:6px;text-decoration:none">{{.Action}}</a></p>
<p style="font-size:13px;color:#666">{{.Link}}</p>
<hr style="border:none;border-top:1px solid #ddd">
<p style="font-size:13px;color:#666">{{.Footer}}</p>
{{if .Unsubscribe}}<p style="font-size:13px;color:#666"><a href="{{.Unsubscribe}}" style="color:#666">{{.UnsubscribeLabel}}</a></p>
{{end}}</body></html>
`))

// richRender renders a kind with a link (always) and, when its Data has one, an unsubscribe link.
func richRender(subject string, paras []string, action string) func(Message) (Rendered, error) {
	return func(m Message) (Rendered, error) {
		tr := i18n.For(m.Lang)
		var pairs []string
		for _, key := range richFields {
			pairs = append(pairs, "{"+strings.ToLower(key)+"}", m.Data[key])
		}
		fill := strings.NewReplacer(pairs...).Replace
		p := richPage{page: page{Lang: tr.HTMLLang(), Greeting: fill(tr.T("mail.greeting")), Footer: fill(tr.T("mail.footer")),
			Colon: tr.T("mail.colon"), Link: m.Data["Link"], Action: tr.T(action)}}
		if p.Link == "" {
			return Rendered{}, fmt.Errorf("mail: a %s mail needs its link", m.Kind)
		}
		for _, key := range paras {
			p.Paras = append(p.Paras, fill(tr.T(key)))
		}
		if u := m.Data["Unsubscribe"]; u != "" {
			p.Unsubscribe, p.UnsubscribeLabel = u, tr.T("remind.mail.unsubscribe")
		}
		var text, html bytes.Buffer
		if err := richText.Execute(&text, p); err != nil {
			return Rendered{}, err
		}
		if err := richHTML.Execute(&html, p); err != nil {
			return Rendered{}, err
		}
		return Rendered{Lang: tr.Lang, Subject: fill(tr.T(subject)), Text: text.String(), HTML: html.String()}, nil
	}
}

// beijing is the shop's time zone, the one its sales are announced in (the shop's sales are in China).
// Pages show times in the browser's own zone; a mail cannot know the reader's, so it says the shop's.
var beijing = time.FixedZone("CST", 8*3600)

// When says t as a reader of lang reads a time in a mail: the shop's time, Beijing time, in either
// language (the same hour and day in both), the English with its UTC offset for a reader abroad.
func When(lang string, t time.Time) string {
	t = t.In(beijing)
	if i18n.For(lang).Lang == "zh" {
		return t.Format("2006年1月2日 15:04") + "（北京时间）"
	}
	return t.Format("15:04") + " Beijing time (UTC" + t.Format("-07:00") + "), " + t.Format("Mon 2 Jan 2006")
}

// Money says an amount of cents as the shop's pages do.
func Money(cents int64) string {
	sign := ""
	if cents < 0 {
		sign, cents = "-", -cents
	}
	return fmt.Sprintf("%s¥%d.%02d", sign, cents/100, cents%100)
}
