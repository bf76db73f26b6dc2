package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"gorm.io/gorm"

	"seckill/errs"
	"seckill/internal/jobreport"
	"seckill/models"
	"seckill/stock"
)

// Reconcile checks every loaded sale's books: Redis stock left + orders queued in the streams + units
// lent between stock shards and not yet received + orders in PostgreSQL that are not cancelled must
// equal stock_total. A difference is logged, counted in a
// metric and shown to admins once it lasts two rounds in a row (between an order's commit and its
// acknowledgement, or a cancellation's commit and its unit's return to Redis, the books are a unit off
// for a moment).
type Reconcile struct {
	DB       *gorm.DB
	Ledger   *stock.Ledger
	Runs     *Runs
	Interval time.Duration
	Now      func() time.Time
	Log      *slog.Logger
	Gauge    *prometheus.GaugeVec // seckill_stock_mismatch{item}

	mu    sync.Mutex
	found []jobreport.Mismatch
	prev  map[int64]int64 // last round's differences: a mismatch counts once it lasts two rounds
}

// NewReconcileGauge makes and registers the mismatch gauge.
func NewReconcileGauge(reg prometheus.Registerer) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "seckill_stock_mismatch",
		Help: "stock_total minus (Redis stock left + queued + live orders), per item; 0 when the books agree."}, []string{"item"})
	reg.MustRegister(g)
	return g
}

// Run reconciles until ctx ends.
func (r *Reconcile) Run(ctx context.Context) error {
	return Every(ctx, r.Interval, func(ctx context.Context) error {
		return r.Runs.Once(ctx, ReconcileJob, false, 0, r.round)
	}, func(err error) { r.Log.Warn("reconciliation failed", "err", err) })
}

// Mismatches answers what the last round found.
func (r *Reconcile) Mismatches() []jobreport.Mismatch {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]jobreport.Mismatch(nil), r.found...)
}

func (r *Reconcile) round(ctx context.Context, counts map[string]int64) error {
	// The buyers this instance told unconfirmed, settled first: a take lost with a Redis master shows here
	// as nothing at all in Redis, and its buyer is owed a final answer (stock/unconfirmed.go).
	lost, settled, uerr := r.Ledger.SettleUnconfirmed(ctx, func(ctx context.Context, orderNo string) (bool, error) {
		_, err := models.OrderByNo(ctx, r.DB, orderNo)
		if errs.Code(err) == errs.NotFound {
			return false, nil
		}
		return err == nil, err
	})
	counts["unconfirmed_lost"] += int64(lost)
	counts["unconfirmed_settled"] += int64(settled)
	if lost > 0 {
		r.Log.Warn("buys told unconfirmed were lost with a Redis master: their buyers are told so and may buy again", "lost", lost)
	}
	ids, err := r.Ledger.Streams(ctx)
	if err != nil {
		return errors.Join(uerr, err)
	}
	var found []jobreport.Mismatch
	var failed []error
	diffs := map[int64]int64{}
	for _, id := range ids {
		m, ok, err := r.check(ctx, id)
		if err != nil { // one item's master away does not hide the others' books
			failed = append(failed, fmt.Errorf("item %d: %w", id, err))
			continue
		}
		if !ok {
			continue
		}
		counts["items"]++
		diffs[id] = m.Difference
		if m.Difference != 0 && r.prev[id] != m.Difference {
			continue // maybe a moment between two writes: look again next round
		}
		if r.Gauge != nil {
			r.Gauge.WithLabelValues(strconv.FormatInt(id, 10)).Set(float64(m.Difference))
		}
		if m.Difference != 0 {
			counts["mismatched"]++
			found = append(found, m)
			r.Log.Warn("stock books do not add up", "item_id", id, "stock_total", m.StockTotal, "redis_left", m.RedisLeft,
				"queued", m.Queued, "in_transit", m.InTransit, "live_orders", m.LiveOrders, "difference", m.Difference)
		}
	}
	r.mu.Lock()
	r.found, r.prev = found, diffs
	r.mu.Unlock()
	return errors.Join(append(failed, uerr)...)
}

// check reads one item's books, and false when there is nothing to compare: a shard is not loaded (a
// rebuild is due), or the item is gone from the database (the consumer refuses its orders).
func (r *Reconcile) check(ctx context.Context, id int64) (jobreport.Mismatch, bool, error) {
	left, complete, err := r.Ledger.Left(ctx, id)
	if err != nil || !complete {
		return jobreport.Mismatch{}, false, err
	}
	it, _, err := models.ItemInAnyState(ctx, r.DB, id)
	if err != nil {
		return jobreport.Mismatch{}, false, nil
	}
	queued, err := r.Ledger.Backlog(ctx, id)
	if err != nil {
		return jobreport.Mismatch{}, false, err
	}
	transit, err := r.Ledger.InTransit(ctx, id)
	if err != nil {
		return jobreport.Mismatch{}, false, err
	}
	live, err := models.LiveOrders(ctx, r.DB, id)
	if err != nil {
		return jobreport.Mismatch{}, false, err
	}
	m := jobreport.Mismatch{ItemID: id, StockTotal: it.StockTotal, RedisLeft: left, Queued: queued, InTransit: transit, LiveOrders: live}
	m.Difference = m.StockTotal - (left + queued + transit + live)
	return m, true, nil
}
