package handlers

import (
	"sort"
	"strings"

	"seckill/i18n"
	"seckill/models"
)

// orderStory is an order's story after it was placed and paid (the page says those from the order's
// columns): the audit log's rows on it, and what the order's own columns say was done to it where no row
// of the log says so: its cancel (when, and why, in the words of the buyer's own page), its shipping and
// its refund. Oldest first.
func orderStory(o orderJSON, buyer string, rows []models.AuditLog, views []auditView, tr i18n.Tr) []auditView {
	has := func(prefixes ...string) bool {
		for _, r := range rows {
			for _, p := range prefixes {
				if strings.HasPrefix(r.Action, p) {
					return true
				}
			}
		}
		return false
	}
	out := append([]auditView{}, views...)
	if o.CancelledAt != nil && !has("order.cancel") {
		v := auditView{At: *o.CancelledAt, Actor: buyer, Action: tr.T("story.cancelled")}
		switch o.CancelReason {
		case models.CancelUnpaid:
			v.Actor = tr.T("aud.system")
			v.Changes = []auditChange{{Field: fieldWords(tr, "reason"), After: tr.T("orders.why.unpaid")}}
		case models.CancelByBuyer:
			v.Changes = []auditChange{{Field: fieldWords(tr, "reason"), After: tr.T("story.why.buyer")}}
		default:
			v.Actor = "" // cancelled before reasons were kept: by whom is not known
		}
		out = append(out, v)
	}
	if o.ShippedAt != nil && !has(models.AuditShip) { // "order.ship" and "order.ship_fix"
		out = append(out, auditView{At: *o.ShippedAt, Action: words(tr, "audit."+models.AuditShip, models.AuditShip), Changes: []auditChange{
			{Field: fieldWords(tr, "carrier"), After: o.Carrier}, {Field: fieldWords(tr, "tracking_no"), After: o.TrackingNo}}})
	}
	if o.RefundedAt != nil && !has("order.refund", "refund.") {
		out = append(out, auditView{At: *o.RefundedAt, Action: words(tr, "audit.order.refund", "order.refund"), Changes: []auditChange{
			{Field: fieldWords(tr, "reason"), After: o.RefundReason}}})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}
