package handlers

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"seckill/i18n"
	"seckill/models"
)

// auditView is an audit row as a person reads it: who did what, when, and what changed, field by field,
// in words.
type auditView struct {
	At      time.Time
	Actor   string
	Action  string // in words
	Target  string
	Changes []auditChange
}

// auditChange is one field an action changed (or set, or took away).
type auditChange struct {
	Field, Before, After string
	Times                bool // Before and After are times (RFC 3339): the page shows them in local time
}

// auditViews turns audit rows into what the audit page shows, in tr's words.
func auditViews(rows []models.AuditLog, tr i18n.Tr) []auditView {
	out := make([]auditView, len(rows))
	for i, r := range rows {
		out[i] = auditView{At: r.CreatedAt, Actor: r.Actor, Action: words(tr, "audit."+r.Action, r.Action), Target: r.Target,
			Changes: changes(r.Before, r.After, tr)}
	}
	return out
}

// words answers tr's words for key, or fallback when it has none.
func words(tr i18n.Tr, key, fallback string) string {
	if w := tr.T(key); w != key {
		return w
	}
	return fallback
}

// changes compares two JSON objects field by field: the fields whose value differs, in a stable order.
func changes(before, after string, tr i18n.Tr) []auditChange {
	var b, a map[string]any
	_ = json.Unmarshal([]byte(before), &b)
	_ = json.Unmarshal([]byte(after), &a)
	keys := map[string]bool{}
	for k := range b {
		keys[k] = true
	}
	for k := range a {
		keys[k] = true
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	var out []auditChange
	for _, k := range names {
		bv, bok := b[k]
		av, aok := a[k]
		bs, as := auditValue(k, bv, bok, tr), auditValue(k, av, aok, tr)
		if bs == as {
			continue
		}
		_, bt := bv.(string)
		_, at := av.(string)
		out = append(out, auditChange{Field: words(tr, "field."+k, k), Before: bs, After: as,
			Times: (bt || !bok || bv == nil) && (at || !aok || av == nil) && (isTime(bs) || isTime(as))})
	}
	return out
}

func isTime(s string) bool {
	_, err := time.Parse(time.RFC3339, s)
	return err == nil
}

// auditValue writes one value as a person reads it: money as money, a state in words, nothing as "".
func auditValue(key string, v any, present bool, tr i18n.Tr) string {
	if !present || v == nil {
		return ""
	}
	switch x := v.(type) {
	case float64:
		if strings.HasSuffix(key, "_cents") {
			c := int64(x)
			return fmt.Sprintf("¥%d.%02d", c/100, c%100)
		}
		return fmt.Sprint(int64(x))
	case bool:
		if x {
			return tr.T("audit.yes")
		}
		return tr.T("audit.no")
	case string:
		if key == "state" {
			return words(tr, "con.state."+x, x)
		}
		return x
	}
	b, _ := json.Marshal(v)
	return string(b)
}
