package errs

import (
	"fmt"
	"strings"

	"seckill/i18n"
)

// Why is why one field of a form is wrong, in words a person reads in their language: the key of a
// sentence (the words "why.<Key>" in package i18n) and the values it names ({0}, {1}, ...).
type Why struct {
	Field string
	Key   string
	Args  []any
}

// W says field is wrong for the reason key (with its values).
func W(field, key string, args ...any) Why { return Why{Field: field, Key: key, Args: args} }

// Words translates keys: i18n.For(lang).T.
type Words func(key string) string

// Bad is the 400 of a form with bad fields: every one of them at once, each with its reason. Its
// message and fields are in English; Localize says them in another language.
func Bad(whys ...Why) *Error {
	e := &Error{Code: BadRequest, Whys: whys}
	e.Message, e.Fields = e.say(i18n.For("en").T)
	return e
}

// say writes the message and the fields' reasons with the words of one language.
func (e *Error) say(tr Words) (string, map[string]string) {
	fields := make(map[string]string, len(e.Whys))
	parts := make([]string, 0, len(e.Whys))
	for _, w := range e.Whys {
		text := tr("why." + w.Key)
		for i, a := range w.Args {
			text = strings.ReplaceAll(text, fmt.Sprintf("{%d}", i), fmt.Sprint(a))
		}
		if _, dup := fields[w.Field]; dup {
			continue // one reason a field, the first
		}
		fields[w.Field] = text
		parts = append(parts, tr("field."+w.Field)+tr("punct.colon")+text)
	}
	return strings.Join(parts, tr("punct.semicolon")), fields
}

// Say is an error of code whose message is the sentence "msg.<key>" of the words: said in the reader's
// language (Localize), where a code's general sentence would not say enough.
func Say(code, key string) *Error {
	return &Error{Code: code, Key: key, Message: i18n.For("en").T("msg." + key)}
}

// SayWith is Say of a sentence with verbs (fmt's), filled with args in every language.
func SayWith(code, key string, args ...any) *Error {
	return &Error{Code: code, Key: key, Args: args, Message: fmt.Sprintf(i18n.For("en").T("msg."+key), inLang("en", args)...)}
}

// ByLang is an argument of SayWith said in each reader's language (a moment, in their words and zone).
type ByLang func(lang string) string

// inLang answers args with each ByLang said in lang.
func inLang(lang string, args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		if f, ok := a.(ByLang); ok {
			a = f(lang)
		}
		out[i] = a
	}
	return out
}

// Localize answers the error as a person reading lang's words (tr) sees it: a form's fields each with
// its reason and the message summing them up, in their words; any other error the sentence its code has
// in them (its English message says more, for the English reader and the logs). English answers it as
// it is.
func (e *Error) Localize(lang string, tr Words) *Error {
	if lang == "en" || tr == nil {
		return e
	}
	out := *e
	out.body, out.bodies = nil, nil
	if len(e.Whys) > 0 {
		out.Message, out.Fields = e.say(tr)
		return &out
	}
	if e.Key != "" {
		out.Message = tr("msg." + e.Key)
		if len(e.Args) > 0 {
			out.Message = fmt.Sprintf(out.Message, inLang(lang, e.Args)...)
		}
		return &out
	}
	if text := tr("code." + e.Code); text != "code."+e.Code {
		out.Message = text
	}
	return &out
}
