package app

import (
	"github.com/prometheus/client_golang/prometheus"

	"seckill/stock"
)

// unconfirmedMetrics show the buys answered unconfirmed (issue 36): taken on the Redis master, not known
// to be on a replica, so not a promise; how many are not settled yet, and how many a failover lost (their
// buyers were told so). A steady count of unconfirmed buys is a replica that lags or is gone.
func unconfirmedMetrics(l *stock.Ledger) []prometheus.Collector {
	told := func() float64 { n, _, _ := l.UnconfirmedStats(); return float64(n) }
	open := func() float64 { _, n, _ := l.UnconfirmedStats(); return float64(n) }
	lost := func() float64 { _, _, n := l.UnconfirmedStats(); return float64(n) }
	return []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "seckill_buys_unconfirmed_total",
			Help: "Buys answered 202 unconfirmed: taken on the Redis master, the replicas had not acknowledged them in time."}, told),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "seckill_buys_unconfirmed_open",
			Help: "Buys answered unconfirmed by this instance whose results have not settled yet."}, open),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "seckill_buys_unconfirmed_lost_total",
			Help: "Buys answered unconfirmed that a Redis failover lost: their buyers were told they did not go through."}, lost),
	}
}
