package i18n

import (
	"sort"
	"strconv"
	"strings"
)

// The words of the admin page's background jobs (issue 34 row 14): each job's name and what its rounds
// counted, which the table showed as the code's keys (payment_poll, "items 4"). Job and JobCount read
// them; a job or count this file does not know yet shows as its key, to be seen and added.
func init() {
	add(map[string]map[string]string{
		"en": {
			"job.order_consumer":          "Order writer",
			"job.preheat":                 "Preheat",
			"job.payment_poll":            "Payment check",
			"job.unpaid_timeout":          "Unpaid orders closed",
			"job.reconcile":               "Stock check",
			"job.queue":                   "Waiting lines",
			"job.refunds":                 "Refunds",
			"job.reminders":               "Reminders",
			"job.count.items":             "items",
			"job.count.mismatched":        "not adding up",
			"job.count.checked":           "checked",
			"job.count.paid":              "paid",
			"job.count.paid_late":         "paid late",
			"job.count.refused":           "refused",
			"job.count.refused_retrying":  "refused, retrying",
			"job.count.unavailable":       "provider unavailable",
			"job.count.closed_late":       "closed late",
			"job.count.refund_requested":  "refunds asked",
			"job.count.refunded":          "refunded",
			"job.count.cancelled":         "cancelled",
			"job.count.restocked_late":    "restocked late",
			"job.count.provider_failed":   "provider failed",
			"job.count.line_open_sent_at": "line-open mails",
			"job.count.start_sent_at":     "start mails",
			"job.countSep":                " · ",
		},
		"zh": {
			"job.order_consumer":          "订单写入",
			"job.preheat":                 "预热",
			"job.payment_poll":            "支付核对",
			"job.unpaid_timeout":          "关闭未支付订单",
			"job.reconcile":               "库存对账",
			"job.queue":                   "排队",
			"job.refunds":                 "退款",
			"job.reminders":               "提醒邮件",
			"job.count.items":             "商品",
			"job.count.mismatched":        "对不上",
			"job.count.checked":           "已核对",
			"job.count.paid":              "已支付",
			"job.count.paid_late":         "逾期支付",
			"job.count.refused":           "被拒绝",
			"job.count.refused_retrying":  "被拒绝待重试",
			"job.count.unavailable":       "支付方不可用",
			"job.count.closed_late":       "逾期关闭",
			"job.count.refund_requested":  "申请退款",
			"job.count.refunded":          "已退款",
			"job.count.cancelled":         "已取消",
			"job.count.restocked_late":    "逾期回补库存",
			"job.count.provider_failed":   "支付方出错",
			"job.count.line_open_sent_at": "排队开放邮件",
			"job.count.start_sent_at":     "开始提醒邮件",
			"job.countSep":                "，",
		},
	})
}

// Job is a background job's name in t's words (its key when there is none).
func (t Tr) Job(name string) string { return t.known("job."+name, name) }

// JobCount is the label of what a job's round counted (its key when there is none).
func (t Tr) JobCount(key string) string { return t.known("job.count."+key, key) }

func (t Tr) known(key, otherwise string) string {
	if w := t.T(key); w != key {
		return w
	}
	return otherwise
}

// JobCounts says a round's counts in t's words, in the order of their keys: "items 4 · cancelled 0".
func (t Tr) JobCounts(counts map[string]int64) string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = t.JobCount(k) + " " + strconv.FormatInt(counts[k], 10)
	}
	return strings.Join(parts, t.T("job.countSep"))
}
