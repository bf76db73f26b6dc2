package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/bsm/redislock"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"seckill/internal/jobreport"
)

const runsKey = "sk:jobs"

// Runs records every job's last round in Redis (so the admin pages see every instance's) and as
// Prometheus metrics, and keeps jobs that must run once at a time to one instance by a Redis lock.
type Runs struct {
	rdb      redis.UniversalClient
	locker   *redislock.Client
	instance string
	now      func() time.Time
	rounds   *prometheus.CounterVec
	duration *prometheus.GaugeVec
	counts   *prometheus.CounterVec
}

// NewRuns registers the jobs' metrics in reg.
func NewRuns(rdb redis.UniversalClient, reg prometheus.Registerer, now func() time.Time) *Runs {
	host, _ := os.Hostname()
	r := &Runs{
		rdb: rdb, locker: redislock.New(rdb), instance: fmt.Sprintf("%s-%d", host, os.Getpid()), now: now,
		rounds:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "seckill_job_rounds_total", Help: "Job rounds by job and result."}, []string{"job", "result"}),
		duration: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "seckill_job_last_duration_seconds", Help: "How long each job's last round took."}, []string{"job"}),
		counts:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "seckill_job_items_total", Help: "What the jobs did, by job and kind."}, []string{"job", "kind"}),
	}
	reg.MustRegister(r.rounds, r.duration, r.counts)
	return r
}

// Once runs one round of job under its lock (when exclusive) and records it. A round another instance
// holds the lock for is skipped, not recorded.
func (r *Runs) Once(ctx context.Context, job string, exclusive bool, ttl time.Duration, fn func(ctx context.Context, counts map[string]int64) error) error {
	if exclusive {
		lock, err := r.locker.Obtain(ctx, "sk:lock:job:"+job, ttl, nil)
		if errors.Is(err, redislock.ErrNotObtained) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("lock for job %s: %w", job, err)
		}
		defer lock.Release(context.WithoutCancel(ctx))
		// The round ends before its lock can expire: two instances never run it at once.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, ttl*9/10)
		defer cancel()
	}
	start := r.now()
	counts := map[string]int64{}
	err := fn(ctx, counts)
	run := jobreport.Run{Job: job, Instance: r.instance, At: start.UTC(), Duration: r.now().Sub(start), Counts: counts}
	result := "ok"
	if err != nil {
		result, run.Error, run.LastError = "error", err.Error(), err.Error()
		at := run.At
		run.ErrorAt = &at
	} else if prev, _ := r.last(ctx, job); prev != nil {
		run.LastError, run.ErrorAt = prev.LastError, prev.ErrorAt
	}
	r.rounds.WithLabelValues(job, result).Inc()
	r.duration.WithLabelValues(job).Set(run.Duration.Seconds())
	for k, n := range counts {
		r.counts.WithLabelValues(job, k).Add(float64(n))
	}
	if b, jerr := json.Marshal(run); jerr == nil {
		r.rdb.HSet(context.WithoutCancel(ctx), runsKey, job, b)
	}
	return err
}

func (r *Runs) last(ctx context.Context, job string) (*jobreport.Run, error) {
	b, err := r.rdb.HGet(ctx, runsKey, job).Bytes()
	if err != nil {
		return nil, err
	}
	var run jobreport.Run
	return &run, json.Unmarshal(b, &run)
}

// All answers every job's last round, by name.
func (r *Runs) All(ctx context.Context) ([]jobreport.Run, error) {
	m, err := r.rdb.HGetAll(ctx, runsKey).Result()
	if err != nil {
		return nil, err
	}
	out := make([]jobreport.Run, 0, len(m))
	for _, v := range m {
		var run jobreport.Run
		if json.Unmarshal([]byte(v), &run) == nil {
			out = append(out, run)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Job < out[j].Job })
	return out, nil
}
