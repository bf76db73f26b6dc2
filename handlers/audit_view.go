package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"seckill/i18n"
	"seckill/models"
)

// auditView is an audit row as a person reads it: who did what, when, on what (by its name, with the
// console's page of it), and what changed, field by field, in words.
type auditView struct {
	At        time.Time
	Actor     string
	Action    string // in words
	Target    string // what it was made on, by its name
	TargetURL string // the console's page of it, "" when there is none
	On        string // the target as the log names it: the audit search's ?on=
	Changes   []auditChange
}

// auditChange is one field an action changed (or set, or took away).
type auditChange struct {
	Field, Before, After string
	Times                bool // Before and After are times (RFC 3339): the page shows them in local time
}

// auditViews turns audit rows into what the audit page and the API show, in tr's words: the names of
// the sales, users and items they were made on are read for the whole page at once.
func auditViews(ctx context.Context, db *gorm.DB, rows []models.AuditLog, tr i18n.Tr) ([]auditView, error) {
	var acts, users, items []int64
	for _, r := range rows {
		kind, id := targetOf(r.Target)
		switch kind {
		case "activity":
			acts = append(acts, id)
		case "user":
			users = append(users, id)
		case "item":
			items = append(items, id)
		}
	}
	actNames, err := models.ActivityNames(ctx, db, acts)
	if err != nil {
		return nil, err
	}
	userNames, err := models.Usernames(ctx, db, users)
	if err != nil {
		return nil, err
	}
	itemNames, err := models.ItemNames(ctx, db, items)
	if err != nil {
		return nil, err
	}
	out := make([]auditView, len(rows))
	for i, r := range rows {
		v := auditView{At: r.CreatedAt, Actor: r.Actor, Action: actionWords(r, tr), On: r.Target,
			Changes: changes(r.Before, r.After, tr)}
		if r.ActorID == models.System.ID {
			v.Actor = tr.T("aud.system")
		}
		kind, id := targetOf(r.Target)
		name := ""
		switch kind {
		case "activity":
			name, v.TargetURL = actNames[id], fmt.Sprintf("/admin/activities/%d/live", id)
		case "user":
			name = userNames[id]
			v.TargetURL = "/admin/users?q=" + url.QueryEscape(name)
		case "item":
			name, v.TargetURL = itemNames[id], fmt.Sprintf("/items/%d", id)
		case "order":
			name, v.TargetURL = r.Target[len("order:"):], "/admin/orders?no="+url.QueryEscape(r.Target[len("order:"):])
		case "appeal":
			name, v.TargetURL = "#"+strconv.FormatInt(id, 10), "/admin/appeals"
		}
		switch {
		case kind == "":
			v.Target = r.Target
		case name == "":
			v.Target = fmt.Sprintf("%s #%d", words(tr, "aud.on."+kind, kind), id) // gone since
		default:
			v.Target = words(tr, "aud.on."+kind, kind) + tr.T("aud.colon") + name
		}
		out[i] = v
	}
	return out, nil
}

// targetOf splits a target ("activity:2", "order:SK1") into its kind and, where it is one, its id.
func targetOf(target string) (string, int64) {
	kind, rest, ok := strings.Cut(target, ":")
	if !ok {
		return "", 0
	}
	if kind == "order" {
		return kind, 0
	}
	id, err := strconv.ParseInt(rest, 10, 64)
	if err != nil {
		return "", 0
	}
	return kind, id
}

// actionWords says what a row did. A sale's "edit" of one of its items says which item, and whether it
// was added, changed or removed.
func actionWords(r models.AuditLog, tr i18n.Tr) string {
	if r.Action == "activity."+models.ActEdit {
		var b, a map[string]any
		_ = json.Unmarshal([]byte(r.Before), &b)
		_ = json.Unmarshal([]byte(r.After), &a)
		_, itemBefore := b["stock_shards"]
		_, itemAfter := a["stock_shards"]
		if itemBefore || itemAfter {
			key, name := "aud.item.edit", a["name"]
			switch {
			case !itemBefore:
				key = "aud.item.add"
			case !itemAfter:
				key, name = "aud.item.delete", b["name"]
			}
			return strings.ReplaceAll(tr.T(key), "{item}", fmt.Sprint(name))
		}
		return tr.T("aud.sale.edit")
	}
	return words(tr, "audit."+r.Action, r.Action)
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
		out = append(out, auditChange{Field: fieldWords(tr, k), Before: bs, After: as,
			Times: (bt || !bok || bv == nil) && (at || !aok || av == nil) && (isTime(bs) || isTime(as))})
	}
	return out
}

// fieldWords names a field of the log: its own words where a form's label would mislead ("status" is
// "Which orders" on a filter), else the form's.
func fieldWords(tr i18n.Tr, k string) string {
	if w := tr.T("aud.field." + k); w != "aud.field."+k {
		return w
	}
	return words(tr, "field."+k, k)
}

func isTime(s string) bool {
	_, err := time.Parse(time.RFC3339, s)
	return err == nil
}

// valueWords are where the words of a field's values are, tried in order: a value stays as stored only
// when none has it.
var valueWords = map[string][]string{
	"state":     {"con.state.", "aud.val.state."},
	"status":    {"orders.", "adm.refund."},
	"kind":      {"adm.refund."},
	"sale_mode": {"aud.val.mode."},
	"role":      {"aud.val.role."},
	"decision":  {"aud.val.decision."},
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
		for _, prefix := range valueWords[key] {
			if w := tr.T(prefix + x); w != prefix+x {
				return w
			}
		}
		return x
	}
	b, _ := json.Marshal(v)
	return string(b)
}
