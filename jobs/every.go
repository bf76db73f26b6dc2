// Package jobs holds the background work: each job is Run(ctx) error, runs on its own ticker and stops
// when its context ends.
package jobs

import (
	"context"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// Each job's one name: its worker in the server's Start, its rounds in Runs (the admin page, the metrics)
// and its lock.
const (
	OrderConsumerJob = "order_consumer"
	PreheatJob       = "preheat"
	PaymentPollJob   = "payment_poll"
	UnpaidTimeoutJob = "unpaid_timeout"
	ReconcileJob     = "reconcile"
	QueueJob         = "queue"
	RefundsJob       = "refunds"
)

// Every calls fn at once and then every interval, until ctx ends; it then returns ctx's error. An error
// from fn goes to onErr (which may be nil) and the loop carries on: one failed round must not stop a job.
func Every(ctx context.Context, interval time.Duration, fn func(context.Context) error, onErr func(error)) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := fn(ctx); err != nil && onErr != nil && ctx.Err() == nil {
			onErr(err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// retryWait is how a job waits between tries of something that failed: doubling from first up to most,
// each wait up to a fifth shorter or longer at random, so that instances that failed together do not
// retry together. Reset it after a success.
func retryWait(first, most time.Duration) *backoff.ExponentialBackOff {
	b := &backoff.ExponentialBackOff{InitialInterval: min(first, most), RandomizationFactor: 0.2, Multiplier: 2, MaxInterval: most}
	b.Reset()
	return b
}
