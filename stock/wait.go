package stock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// No 202 before a replica has it (issue 36). Redis replicates asynchronously: a master lost right after a
// take loses the buyers its replicas had not received yet. After each take batch's script call the ledger
// sends WAIT numreplicas timeout, which blocks until the replicas acknowledged the writes sent on *that
// connection* before it, and answers how many did (https://redis.io/docs/latest/commands/wait/; Redis 7.0
// marks a connection with the replication offset after each of its commands, so it is the offset as of
// the connection's last command). A WAIT on another pooled connection, last used before the take, answers
// at once and proves nothing, so the script call and its WAIT go in one pipeline, which go-redis writes
// and reads on one connection (go-redis v9.23 redis.go: generalProcessPipelineFrom runs each attempt in
// one withPipelineConn, and pipelineProcessCmds writes every command to that cn and reads their replies
// from it; a retried attempt sends both again, on one new connection). It is a plain pipeline, not MULTI:
// inside MULTI, WAIT does not block. On a cluster the pipeline goes to the slot's master client
// (osscluster.go: MasterForKey answers the slot master node's *Client): the cluster's own pipeline would
// send the keyless WAIT to a node of its choosing.

// waitState is the ledger's WAIT settings and counts.
type waitState struct {
	replicas    atomic.Int64  // 0: no WAIT
	timeout     time.Duration // WAIT's bound
	waits       atomic.Int64  // WAITs sent
	unconfirmed atomic.Int64  // batches whose WAIT answered fewer replicas than asked
	failed      atomic.Int64  // WAITs that answered an error (counted in unconfirmed too)

	// REDIS_WAIT_REPLICAS=auto (WaitReplicasAuto): until a replica has been seen, the batches ask Redis
	// again now and then whether one came.
	auto     atomic.Bool
	asked    atomic.Int64 // when Redis was last asked (Unix ns, wall time)
	asking   atomic.Bool  // a batch is asking now: the others go on as they are
	log      atomic.Pointer[slog.Logger]
	logged   atomic.Int64 // when a WAIT's failure was last logged (Unix ns)
	loaded   sync.Map     // "master address\x00script hash": the master has run the script (EVAL done)
	unlogged atomic.Int64 // failures since the last line logged
}

// MaxWaitTimeout bounds a take's WAIT: the script call and its WAIT are read within go-redis's read
// timeout (3 s by default), and a buyer waits for it.
const MaxWaitTimeout = time.Second

// WaitReplicas makes every take batch wait, on the script call's connection, until n replicas have its
// writes or timeout passes; a batch they did not acknowledge in time is answered unconfirmed (its units
// are taken all the same). n = 0 turns it off, the default.
func (l *Ledger) WaitReplicas(n int, timeout time.Duration) {
	l.wait.auto.Store(false)
	l.wait.replicas.Store(int64(max(n, 0)))
	l.wait.timeout = min(max(timeout, time.Millisecond), MaxWaitTimeout)
}

// autoAskEvery is how often, at most, a ledger on REDIS_WAIT_REPLICAS=auto that has not seen a replica
// yet asks Redis again (INFO replication, one round trip to each master, made by one batch).
const autoAskEvery = 50 * time.Millisecond

// WaitReplicasAuto is REDIS_WAIT_REPLICAS=auto: the batches wait for one replica once a replica of
// every master has been seen, asked now (ReplicasOf) and, until then, again every autoAskEvery by the
// batch that finds the answer old; a replica added while the shop runs is waited for from the next
// batch. Once seen, the ledger waits for it for good: a replica lost later leaves its master's buyers
// unconfirmed (logged), which is the truth for them (a failover now would lose their buys), where not
// waiting would tell them queued on the master alone. REDIS_WAIT_REPLICAS=0 is the way to say a shop
// has no replicas on purpose.
func (l *Ledger) WaitReplicasAuto(ctx context.Context, timeout time.Duration) (int, error) {
	l.WaitReplicas(0, timeout)
	l.wait.auto.Store(true)
	return l.askReplicas(ctx)
}

// askReplicas asks Redis how many replicas every master has and, on auto, waits for one from now on
// when each has one.
func (l *Ledger) askReplicas(ctx context.Context) (int, error) {
	l.wait.asked.Store(time.Now().UnixNano())
	have, err := ReplicasOf(ctx, l.rdb)
	if err != nil || have < 1 || !l.wait.auto.Load() {
		return have, err
	}
	if l.wait.replicas.CompareAndSwap(0, 1) {
		l.wait.auto.Store(false) // decided for good
		if log := l.wait.log.Load(); log != nil {
			log.Info("REDIS_WAIT_REPLICAS=auto: every Redis master has a replica, buys wait for one", "timeout", l.wait.timeout)
		}
	}
	return have, nil
}

// reaskReplicas is askReplicas from a batch, when the ledger is on auto, has not seen a replica yet,
// and nobody asked within autoAskEvery: the batch asks, within its own deadline, before its take.
func (l *Ledger) reaskReplicas(ctx context.Context) {
	if !l.wait.auto.Load() || time.Now().UnixNano()-l.wait.asked.Load() < int64(autoAskEvery) || !l.wait.asking.CompareAndSwap(false, true) {
		return
	}
	defer l.wait.asking.Store(false)
	actx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if _, err := l.askReplicas(actx); err != nil {
		l.waitFailed(fmt.Errorf("REDIS_WAIT_REPLICAS=auto: %w", err))
	}
}

// LogWaits logs, at most once every waitLogEvery, why WAITs failed or were not acknowledged.
func (l *Ledger) LogWaits(log *slog.Logger) { l.wait.log.Store(log) }

// waitLogEvery spaces the log lines of WAIT failures: under a crowd every batch fails alike.
const waitLogEvery = 10 * time.Second

// waitFailed counts and logs (rate-limited) a batch whose replicas are not known to have it.
func (l *Ledger) waitFailed(err error) {
	n := l.wait.unlogged.Add(1)
	log := l.wait.log.Load()
	last := l.wait.logged.Load()
	now := time.Now().UnixNano()
	if log == nil || now-last < int64(waitLogEvery) || !l.wait.logged.CompareAndSwap(last, now) {
		return
	}
	l.wait.unlogged.Add(-n)
	log.Warn("Redis replicas did not acknowledge a take batch: its buyers are answered unconfirmed", "err", err, "batches", n)
}

// WaitStats answers how many WAITs the ledger sent, and how many of them answered fewer replicas than it
// asked for (their buyers were answered unconfirmed).
func (l *Ledger) WaitStats() (waits, unconfirmed int64) {
	return l.wait.waits.Load(), l.wait.unconfirmed.Load()
}

// WaitErrors answers how many WAITs answered an error rather than a count (each also in WaitStats'
// unconfirmed): a master that refuses WAIT, a connection lost between the script's answer and WAIT's.
func (l *Ledger) WaitErrors() int64 { return l.wait.failed.Load() }

// waitsFor answers how many replicas the batches wait for now.
func (l *Ledger) waitsFor() int { return int(l.wait.replicas.Load()) }

// runTake runs the take script on keys and, when the ledger waits for replicas, WAIT on the same
// connection. confirmed is false when the script ran but the replicas did not acknowledge it in time (or
// the WAIT failed): its writes are on the master, not known to be on a replica.
//
// A take that fails while a connection of the ledger's client broke may have run: its error is then
// unknownOutcome (breaks.go), which the buy answers unconfirmed.
func (l *Ledger) runTake(ctx context.Context, keys []string, args []any) (res []string, confirmed bool, err error) {
	before := l.breaks.Load()
	defer func() {
		if err != nil && l.breaks.Load() != before && !errors.As(err, new(unknownOutcome)) {
			err = unknownOutcome{err}
		}
	}()
	l.reaskReplicas(ctx)
	if l.waitsFor() <= 0 {
		res, err = takeScript.Run(ctx, l.rdb, keys, args...).StringSlice()
		return res, true, err
	}
	cmd, acked, err := l.runWaited(ctx, takeScript, keys, args)
	if err != nil {
		return nil, false, err
	}
	res, err = cmd.StringSlice()
	return res, acked, err
}

// ClusterReloadEvery is how often a cluster client is to reload its slot map (go-redis's
// ClusterStateReloadInterval, 60 s by default). go-redis reloads it on MOVED and ASK, not when a master
// is unreachable: every command of a slot whose master died (a path, a result) goes on failing after its
// replica was promoted, until the next reload. One CLUSTER SLOTS a second (a client's, to one node)
// keeps a failover's outage within the cluster's own time to promote (cluster-node-timeout and a
// second or two) and a second.
const ClusterReloadEvery = time.Second

// movedWithin bounds how long a batch whose slot moved (MOVED, or its master unreachable) waits for the
// cluster client to learn the slot's new master before it gives up on WAITing there.
const movedWithin = time.Second

// runWaited runs script and WAIT in one pipeline on the master of keys[0]. Only the script's first call
// on a master goes as EVAL (with its body): after that, EVALSHA, which a master that lost its scripts
// (restarted at the same address, SCRIPT FLUSH) answers NOSCRIPT; then the pair goes again with EVAL.
// So a batch sends one WAIT, but after such a NOSCRIPT two (the first answers at once unless replicas
// lag: its connection wrote nothing new).
//
// On a cluster, a batch whose slot moved (MOVED: a failover, a reshard) or whose master is unreachable
// (dead, not failed over yet) has the cluster client reload its slots and goes again once to the slot's
// new master, when the client learns of one within movedWithin; a batch answered ASK (the slot half
// moved) goes through the cluster client, which follows it, without a WAIT: unconfirmed. The take and
// lend scripts answer a request they have seen as before and write nothing new, so a second call is safe.
//
// It answers the script's command, whether the replicas acknowledged it in time, and an error when the
// master could not be reached. The WAIT runs after the script even when the script fails; it is then
// not counted.
func (l *Ledger) runWaited(ctx context.Context, script *redis.Script, keys []string, args []any) (*redis.Cmd, bool, error) {
	cc, _ := l.rdb.(*redis.ClusterClient)
	for try := 0; ; try++ {
		c, addr, err := l.masterOf(ctx, keys[0])
		if err != nil {
			return nil, false, err
		}
		cmd, wait := l.pair(ctx, c, addr, script, keys, args)
		e := cmd.Err()
		switch {
		case e == nil:
			return cmd, l.acked(wait), nil
		case isTimeout(e) && !dialFailed(e):
			// The pair's answer was not read in time (a read timeout shorter than the WAIT): the script
			// may have run, and its buyers must not be told an error for units taken. The same call
			// again, without a WAIT: its answer is the truth, not known to be on a replica; if it fails
			// too, the outcome is unknown.
			l.wait.unconfirmed.Add(1)
			return again(script.Run(ctx, c, keys, args...), true), false, nil
		case cc == nil && unreachable(e):
			// The connection broke under the pair (the master killed, a failover closing it): the script
			// may have run, and a replica may have it. The same call again, on a connection the client
			// dials anew (to the master Sentinel names now): a script that ran answers what it answered
			// then (the path keeps the answer for its order number), not known to be on a replica. If
			// that fails too, the outcome is unknown when the first call may have run (a refused dial
			// sent nothing; runTake also sees a break go-redis retried past).
			l.wait.unconfirmed.Add(1)
			return again(script.Run(ctx, l.rdb, keys, args...), outcomeUnknown(e)), false, nil
		case cc == nil:
			return cmd, false, nil
		case redis.HasErrorPrefix(e, "ASK"):
			l.wait.unconfirmed.Add(1)
			return script.Run(ctx, cc, keys, args...), false, nil
		case try == 0 && (redis.HasErrorPrefix(e, "MOVED") || unreachable(e)):
			if !l.slotMoved(ctx, cc, keys[0], addr) {
				if redis.HasErrorPrefix(e, "MOVED") {
					// The cluster client follows MOVED itself; the slot's new master is not known to the
					// ledger in time, so not WAITed for.
					l.wait.unconfirmed.Add(1)
					return script.Run(ctx, cc, keys, args...), false, nil
				}
				return cmd, false, nil
			}
		default:
			return cmd, false, nil
		}
	}
}

// pair sends script (EVAL on a master not known to have it, else EVALSHA; EVAL again on NOSCRIPT) and
// WAIT in one pipeline on c, the master at addr.
func (l *Ledger) pair(ctx context.Context, c redis.Cmdable, addr string, script *redis.Script, keys []string, args []any) (cmd, wait *redis.Cmd) {
	ms := l.wait.timeout.Milliseconds()
	n := l.waitsFor()
	known := addr + "\x00" + script.Hash()
	run := func(eval bool) (cmd, wait *redis.Cmd) {
		// The pipeline's error is each command's: read from them below.
		_, _ = c.Pipelined(ctx, func(p redis.Pipeliner) error {
			if eval {
				cmd = script.Eval(ctx, p, keys, args...)
			} else {
				cmd = script.EvalSha(ctx, p, keys, args...)
			}
			// Pipeliner has no Wait of its own (cmdable.Wait is on the concrete types): the command as is.
			// A pipeline is read within the client's ReadTimeout, whatever its commands block for.
			wait = p.Do(ctx, "wait", n, ms)
			return nil
		})
		return cmd, wait
	}
	_, loaded := l.wait.loaded.Load(known)
	cmd, wait = run(!loaded)
	if e := cmd.Err(); loaded && e != nil && redis.HasErrorPrefix(e, "NOSCRIPT") {
		l.wait.loaded.Delete(known)
		cmd, wait = run(true)
	}
	if cmd.Err() == nil {
		l.wait.loaded.Store(known, struct{}{})
	}
	return cmd, wait
}

// acked counts the batch's WAIT and answers whether its replicas acknowledged the batch.
func (l *Ledger) acked(wait *redis.Cmd) bool {
	l.wait.waits.Add(1)
	n, err := wait.Int64()
	want := int64(l.waitsFor())
	if err == nil && n >= want {
		return true
	}
	l.wait.unconfirmed.Add(1)
	if err != nil {
		l.wait.failed.Add(1)
		l.waitFailed(fmt.Errorf("WAIT: %w", err))
	} else {
		l.waitFailed(fmt.Errorf("WAIT %d answered %d within %v", want, n, l.wait.timeout))
	}
	return false
}

// slotMoved has the cluster client reload its slots and answers whether, within movedWithin (and ctx),
// the master of key is another than the one at from.
func (l *Ledger) slotMoved(ctx context.Context, cc *redis.ClusterClient, key, from string) bool {
	deadline := time.Now().Add(movedWithin)
	for {
		cc.ReloadState(ctx)
		if _, addr, err := l.masterOf(ctx, key); err == nil && addr != from {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// again is the answer of a call made again after one that failed: its error, when the first call may
// have run, says the outcome is unknown.
func again(cmd *redis.Cmd, firstMayHaveRun bool) *redis.Cmd {
	if err := cmd.Err(); err != nil && firstMayHaveRun {
		cmd.SetErr(unknownOutcome{err})
	}
	return cmd
}

// dialFailed reports whether err is a dial's: nothing was sent.
func dialFailed(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// unreachable reports whether err says the master could not be talked to (refused, reset, closed).
func unreachable(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)
}

// outcomeUnknown reports whether err leaves unknown whether a command ran: the connection broke after it
// was sent (the master killed under it). A dial that failed (refused, or held after a failover) sent
// nothing; a timeout is left an error too, since a buyer whose deadline passed while waiting for a
// batch sent nothing either (a read timeout under a waited take is asked again in runWaited).
func outcomeUnknown(err error) bool {
	if errors.As(err, new(unknownOutcome)) {
		return true
	}
	if dialFailed(err) {
		return false
	}
	// net.ErrClosed: the connection closed under the command's read (go-redis's failover client closes
	// its connections to the old master when Sentinel names a new one).
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed)
}

// isTimeout reports whether err is a network timeout (the answer may have been lost after the command ran).
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// masterOf answers a client whose pipeline runs on one connection to the master of key: the ledger's own
// client for a single Redis (or a failover client), the slot's master's for a cluster.
// It also answers the master's address, which names it in the ledger's memory of loaded scripts.
func (l *Ledger) masterOf(ctx context.Context, key string) (redis.Cmdable, string, error) {
	if cc, ok := l.rdb.(*redis.ClusterClient); ok {
		c, err := cc.MasterForKey(ctx, key)
		if err != nil {
			return nil, "", fmt.Errorf("the master of %s: %w", key, err)
		}
		return c, c.Options().Addr, nil
	}
	if c, ok := l.rdb.(*redis.Client); ok {
		return c, c.Options().Addr, nil
	}
	return l.rdb, fmt.Sprintf("%p", l.rdb), nil
}

// ReplicasOf answers the fewest replicas connected to a master of rdb (every master of a cluster), from
// INFO replication's connected_slaves: what REDIS_WAIT_REPLICAS=auto waits for.
func ReplicasOf(ctx context.Context, rdb redis.UniversalClient) (int, error) {
	count := func(ctx context.Context, c redis.Cmdable) (int, error) {
		info, err := c.Info(ctx, "replication").Result()
		if err != nil {
			return 0, fmt.Errorf("INFO replication: %w", err)
		}
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "connected_slaves:"); ok {
				return strconv.Atoi(v)
			}
		}
		return 0, fmt.Errorf("INFO replication has no connected_slaves")
	}
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		return count(ctx, rdb)
	}
	var mu sync.Mutex
	fewest := -1
	err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		n, err := count(ctx, c)
		if err != nil {
			return err
		}
		mu.Lock()
		if fewest < 0 || n < fewest {
			fewest = n
		}
		mu.Unlock()
		return nil
	})
	if err != nil {
		return 0, err
	}
	return max(fewest, 0), nil
}
