package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"

	"seckill/loadtest"
	"time"
)

// A fault strikes and heals; it answers when it healed (the last step of its own before the system
// recovers by itself).
type fault struct {
	what      string // in the report's words
	strike    func(ctx context.Context, w *world, c *config, rng *rand.Rand) (time.Time, error)
	lossy     bool // a loss the product is not built to survive: the round reports what it did, and fails only if PostgreSQL sold beyond the stock
	sentinels bool // strikes a world of a Redis master, replicas and sentinels (sentinel.go)
}

var faultOrder = []string{"instance-kill", "redis-kill", "postgres-stop", "postgres-cut", "redis-cut", "both-kill", "conn-flood",
	"redis-failover", "redis-partition"}

// lossyFaults run only when named.
var lossyFaults = []string{"redis-lose-second"}

var faultsByName = map[string]fault{
	"instance-kill": {what: "one instance killed with SIGKILL and started again", strike: func(ctx context.Context, w *world, _ *config, rng *rand.Rand) (time.Time, error) {
		in := w.instances[rng.IntN(len(w.instances))]
		in.kill()
		return time.Now(), in.start(ctx)
	}},
	"both-kill": {what: "both instances killed with SIGKILL at once and started again", strike: func(ctx context.Context, w *world, _ *config, _ *rand.Rand) (time.Time, error) {
		for _, in := range w.instances {
			in.kill()
		}
		healed := time.Now()
		var errs []error
		for _, in := range w.instances {
			errs = append(errs, in.start(ctx))
		}
		return healed, errors.Join(errs...)
	}},
	"redis-kill": {what: "Redis killed with SIGKILL and started again from its append-only file", strike: func(ctx context.Context, w *world, _ *config, _ *rand.Rand) (time.Time, error) {
		w.redis.kill()
		return time.Now(), w.redis.start(ctx)
	}},
	"postgres-stop": {what: "PostgreSQL stopped in immediate mode (no checkpoint, as a crash) and started again", strike: func(ctx context.Context, w *world, _ *config, _ *rand.Rand) (time.Time, error) {
		if err := w.pg.stop(ctx, "immediate"); err != nil {
			return time.Now(), err
		}
		time.Sleep(time.Second)
		return time.Now(), w.pg.start(ctx)
	}},
	"postgres-cut": {what: "the network to PostgreSQL cut (silent: bytes and new connections wait)", strike: func(ctx context.Context, w *world, c *config, _ *rand.Rand) (time.Time, error) {
		w.pgLink.Cut(false)
		sleep(ctx, c.cut)
		w.pgLink.Heal()
		return time.Now(), nil
	}},
	"redis-lose-second": {what: "the machine under Redis dying with appendfsync everysec, simulated: Redis killed and started again from an " +
		"append-only file cut back to its size a second before (the writes of that second lost, after their answers were sent)",
		lossy: true, strike: func(ctx context.Context, w *world, _ *config, _ *rand.Rand) (time.Time, error) {
			then, ok := w.redis.sizeAt(time.Now().Add(-time.Second))
			w.redis.kill()
			if !ok {
				return time.Now(), errors.Join(errors.New("no size of the append-only file a second ago"), w.redis.start(ctx))
			}
			// The file Redis appended to a second ago must still be the one it appends to: an append-only
			// file rewritten meanwhile started another, and cutting the old one would lose nothing.
			cur, err := w.redis.incrFile()
			if err == nil && cur != then.file {
				err = fmt.Errorf("Redis switched append-only files within the second (%s, then %s): nothing cut", then.file, cur)
			}
			var fi os.FileInfo
			if err == nil {
				fi, err = os.Stat(then.file)
			}
			if err == nil {
				w.lost = fi.Size() - then.size
				err = os.Truncate(then.file, then.size)
			}
			healed := time.Now()
			if err := errors.Join(err, w.redis.start(ctx)); err != nil {
				return healed, err
			}
			w.over, err = w.overPromised(ctx)
			return healed, err
		}},
	"conn-flood": {what: fmt.Sprintf("%d connections from %d loopback addresses straight to one instance (open-file limit %d), each half a request "+
		"trickling a header line every %v and opened again when closed", floodConns, floodSources, instanceNoFile, floodTrickle),
		strike: func(ctx context.Context, w *world, c *config, rng *rand.Rand) (time.Time, error) {
			in := w.instances[rng.IntN(len(w.instances))]
			w.flood = loadtest.Flood(ctx, loadtest.FloodOptions{Target: fmt.Sprintf("127.0.0.1:%d", in.port), Conns: floodConns,
				Sources: floodSources, Trickle: floodTrickle, For: max(c.cut, 8*time.Second),
				Health: []string{"http://" + in.metrics + "/healthz", in.base() + "/healthz"}})
			healed := time.Now()
			select {
			case <-in.done:
				return healed, fmt.Errorf("%s exited under the flood (%s)", in.name, w.flood)
			default:
			}
			if ops := w.flood.Health[0]; ops.OK < ops.Asked {
				return healed, fmt.Errorf("the operators' /healthz of %s answered %d of %d asks during the flood", in.name, ops.OK, ops.Asked)
			}
			return healed, nil
		}},
	"redis-failover": {what: "the Redis master killed with SIGKILL; Sentinel promotes a replica; the old master started again as a replica of the new one",
		sentinels: true, strike: func(ctx context.Context, w *world, _ *config, _ *rand.Rand) (time.Time, error) {
			fo := &failover{}
			w.failover = fo
			old, err := w.set.master(ctx)
			if err != nil {
				return time.Now(), err
			}
			struck := time.Now()
			w.struckAt.Store(struck.UnixNano())
			w.set.nodes[old].kill()
			m, err := w.set.waitSwitch(ctx, old, time.Minute)
			fo.promoted = time.Since(struck)
			if err != nil {
				return time.Now(), err
			}
			healed := time.Now()
			if err := w.set.rejoin(ctx, old, m); err != nil {
				return healed, err
			}
			err = w.set.waitReplicas(ctx, m)
			fo.whole = time.Since(struck)
			return healed, err
		}},
	"redis-partition": {what: fmt.Sprintf("the Redis master cut from its replicas and the sentinels, not from the shop (silent: bytes and new connections wait) "+
		"until Sentinel promotes a replica; then the link back, and Sentinel makes the old master a replica (min-replicas-to-write 1, min-replicas-max-lag %d s)", minReplicasMaxLag),
		sentinels: true, strike: func(ctx context.Context, w *world, _ *config, _ *rand.Rand) (time.Time, error) {
			fo := &failover{}
			w.failover = fo
			old, err := w.set.master(ctx)
			if err != nil {
				return time.Now(), err
			}
			struck := time.Now()
			w.struckAt.Store(struck.UnixNano())
			w.set.links[old].CutExcept(false, shopIP)
			// The minority master is read straight (as the shop reaches it) until it counts no good replica:
			// from then on it refuses writes.
			alone := make(chan time.Duration, 1)
			watch, stopWatch := context.WithCancel(ctx)
			go func() {
				err := waitFor(watch, time.Minute, "the cut master to refuse writes", func() bool {
					return w.set.info(watch, old)["min_slaves_good_slaves"] == "0"
				})
				if err != nil {
					alone <- -1
					return
				}
				alone <- time.Since(struck)
			}()
			m, err := w.set.waitSwitch(ctx, old, time.Minute)
			fo.promoted = time.Since(struck)
			stopWatch()
			fo.alone = <-alone
			w.set.links[old].Heal()
			healed := time.Now()
			if err != nil {
				return healed, err
			}
			err = w.set.waitReplicas(ctx, m)
			fo.whole = time.Since(struck)
			return healed, err
		}},
	"redis-cut": {what: "the network to Redis cut (silent: bytes and new connections wait)", strike: func(ctx context.Context, w *world, c *config, _ *rand.Rand) (time.Time, error) {
		w.redisLink.Cut(false)
		sleep(ctx, c.cut)
		w.redisLink.Heal()
		return time.Now(), nil
	}},
}

// The conn-flood: past the instance's open-file limit (instanceNoFile), from more addresses than its cap
// per address (512) would stop alone, trickling as issue 28's attacker did.
const (
	floodConns   = 6000
	floodSources = 30
	floodTrickle = 2 * time.Second
)

func faultNames() []string { return faultOrder }

// failover is what a failover fault saw, from its strike: when Sentinel named a new master, when the cut
// master stopped taking writes (redis-partition; -1: not seen), when the set had a master and two
// replicas in step again.
type failover struct {
	promoted, alone, whole time.Duration
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func describe(name string, c *config) string {
	f := faultsByName[name]
	if name == "postgres-cut" || name == "redis-cut" {
		return fmt.Sprintf("%s for %v", f.what, c.cut)
	}
	return f.what
}
