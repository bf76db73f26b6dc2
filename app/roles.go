package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"seckill/jobs"
	"seckill/stock"
)

// The roles of seckill serve (SERVE_ROLE): the web tier, the worker, or both in one process.
const (
	RoleAll    = "all"    // the public port and every worker: one process is a whole shop (the default)
	RoleWeb    = "web"    // the public port and what answering from memory needs; writes no orders
	RoleWorker = "worker" // no public port: the order consumer and the jobs that write the database
)

// roleTable says which of Start's workers each role runs; all runs every one Start knows, and a test
// checks that this is web and worker together. The line is drawn at the order writes: the web tier
// answers the buy from memory and Redis, the worker turns what the buy queued into rows, so that the
// buy's cost can be measured, and the web tier scaled, without the writes in the same process.
var roleTable = map[string][]string{
	RoleWeb: {
		// Session cookies are checked against this map: a logout everywhere or a role change must
		// reach every process that answers requests.
		workerSessions,
		// The buy and the path answer sold_out from this memory before any other check.
		workerSoldOutFlags,
		// The buy's per-shopper limiter lives in this process; this worker forgets its idle keys.
		workerBuyLimiter,
		// The buy's answers are counted here and flushed to Redis each second for the live chart.
		workerBuyAnswers,
		// Captchas are handed out from a pool in this process's memory: drawn where they are served.
		workerCaptchaPool,
		// The buy, the path and the line refuse a paused or ended sale from this memory.
		workerStops,
		// The uploads' names known in memory spare the database the requests for names it lacks.
		workerImages,
		// nginx's edge log is counted into this process's /metrics and the admins' live page
		// (only when NGINX_EDGE_LOG is set: Start knows it then).
		workerEdgeLog,
		// The waiting rooms' stepper lets the line in at the pace the shoppers' pages read, skips a
		// paused sale by the stops in memory and flags a sold-out item in memory: it belongs beside
		// them. It writes Redis only.
		jobs.QueueJob,
		// The reconciler keeps what it found in memory, and the admins' page that shows it is served
		// by the web tier; it only reads (Redis's books and a count of the orders), every 10 s.
		jobs.ReconcileJob,
		// /api/me answers the account's e-mail from this memory; a change anywhere reaches it here.
		workerEmails,
		// The buy is held here after a Redis failover until this process has checked the books.
		workerFailover,
	},
	RoleWorker: {
		// The order consumer writes the queued orders into PostgreSQL. It needs none of the
		// followers: it tells the others of stock come back by publishing (stock.Flags.Restocked),
		// which wants no follower running, and it reads the shard counts from Redis or the database.
		jobs.OrderConsumerJob,
		// Preheating keeps the sales starting soon loaded in Redis and rebuilds one Redis lost, from
		// the database. The web tier needs no copy of it: an approval loads a sale at once, and the
		// buy's loader loads one Redis does not hold (catalog.Loader).
		jobs.PreheatJob,
		// The payment jobs ask the provider and write orders (paid, cancelled, refunded); a
		// cancellation puts the unit back in Redis and publishes it, as the consumer does.
		jobs.PaymentPollJob,
		jobs.UnpaidTimeoutJob,
		jobs.RefundsJob,
		// The mail queue's sender: off the request path, one or more workers claiming under leases.
		workerMail,
		// The reminders of sales: queued into the mail queue at the relay's rate, one worker at a time.
		jobs.RemindersJob,
	},
}

// roleWorkers names the workers role runs on this server, in a steady order: those of the role's
// table that Start knows (the edge log only when configured), or every one for all.
func (s *Server) roleWorkers(role string) []string {
	known := s.workers()
	var out []string
	if role == RoleAll {
		for name := range known {
			out = append(out, name)
		}
	} else {
		for _, name := range roleTable[role] {
			if _, ok := known[name]; ok {
				out = append(out, name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// readiness answers the operators' /readyz: 200 when PostgreSQL and Redis answer, else 503 naming
// those that did not. It is the worker's health gate, having no public port to answer the public one.
func readiness(db *gorm.DB, rdb redis.UniversalClient) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		var failed []string
		if sqlDB, err := db.DB(); err != nil || sqlDB.PingContext(ctx) != nil {
			failed = append(failed, "database")
		}
		if rdb.Ping(ctx).Err() != nil {
			failed = append(failed, "redis")
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if len(failed) > 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "%s did not answer\n", strings.Join(failed, " and "))
			return
		}
		fmt.Fprintln(w, "ok")
	}
}

// staleQueue is how old the oldest queued order may grow before a web instance says no worker takes
// the orders: beyond the time a dead consumer's orders wait to be claimed by another (ORDER_CLAIM_IDLE),
// with a margin for a batch's write.
func staleQueue(claimIdle time.Duration) time.Duration { return claimIdle + time.Minute }

// watchQueue is a web instance's look at the orders it queues: every interval it finds the oldest
// order waiting in the items' streams (settled orders leave them, and an entry's id is the time it was
// queued), and warns once, until the queue moves again, when it is older than stale: no worker is
// running, or the database refuses the writes. It returns when ctx ends.
func watchQueue(ctx context.Context, ledger *stock.Ledger, rdb redis.UniversalClient, log *slog.Logger, interval, stale time.Duration) {
	warned := false
	_ = jobs.Every(ctx, interval, func(ctx context.Context) error {
		age, queued, err := oldestQueued(ctx, ledger, rdb, time.Now())
		if err != nil {
			return err
		}
		switch {
		case age > stale && !warned:
			warned = true
			log.Warn("orders are waiting in Redis's streams and no worker is writing them: run a worker (SERVE_ROLE=worker, or all) on the same PostgreSQL and Redis, or see why the database refuses them",
				"oldest_waiting", age.Round(time.Second), "queued", queued)
		case age <= stale && warned:
			warned = false
			log.Info("the orders waiting in Redis's streams are being written again", "queued", queued)
		}
		return nil
	}, func(err error) { log.Debug("the order queue could not be read", "err", err) })
}

// oldestQueued answers how long the oldest order queued in any item's stream has waited, by now, and
// how many wait; 0 and 0 for none.
func oldestQueued(ctx context.Context, ledger *stock.Ledger, rdb redis.UniversalClient, now time.Time) (time.Duration, int64, error) {
	items, err := ledger.Streams(ctx)
	if err != nil {
		return 0, 0, err
	}
	var oldest time.Duration
	var queued int64
	for _, id := range items {
		streams, err := ledger.StreamsOf(ctx, id)
		if err != nil {
			return 0, 0, err
		}
		for _, st := range streams {
			key := stock.ShardKeys(st.ItemID, st.Shard).Stream
			first, err := rdb.XRangeN(ctx, key, "-", "+", 1).Result()
			if err != nil || len(first) == 0 {
				continue
			}
			n, _ := rdb.XLen(ctx, key).Result()
			queued += n
			ms, err := strconv.ParseInt(strings.SplitN(first[0].ID, "-", 2)[0], 10, 64)
			if err == nil {
				oldest = max(oldest, now.Sub(time.UnixMilli(ms)))
			}
		}
	}
	return oldest, queued, nil
}
