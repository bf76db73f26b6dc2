package stock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
	replicas    int           // 0: no WAIT
	timeout     time.Duration // WAIT's bound
	waits       atomic.Int64  // WAITs sent
	unconfirmed atomic.Int64  // batches whose WAIT answered fewer replicas than asked
}

// MaxWaitTimeout bounds a take's WAIT: the script call and its WAIT are read within go-redis's read
// timeout (3 s by default), and a buyer waits for it.
const MaxWaitTimeout = time.Second

// WaitReplicas makes every take batch wait, on the script call's connection, until n replicas have its
// writes or timeout passes; a batch they did not acknowledge in time is answered unconfirmed (its units
// are taken all the same). n = 0 turns it off, the default.
func (l *Ledger) WaitReplicas(n int, timeout time.Duration) {
	l.wait.replicas = max(n, 0)
	l.wait.timeout = min(max(timeout, time.Millisecond), MaxWaitTimeout)
}

// WaitStats answers how many WAITs the ledger sent, and how many of them answered fewer replicas than it
// asked for (their buyers were answered unconfirmed).
func (l *Ledger) WaitStats() (waits, unconfirmed int64) {
	return l.wait.waits.Load(), l.wait.unconfirmed.Load()
}

// runTake runs the take script on keys and, when the ledger waits for replicas, WAIT on the same
// connection. confirmed is false when the script ran but the replicas did not acknowledge it in time (or
// the WAIT failed): its writes are on the master, not known to be on a replica.
func (l *Ledger) runTake(ctx context.Context, keys []string, args []any) (res []string, confirmed bool, err error) {
	if l.wait.replicas <= 0 {
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

// runWaited runs script with EVALSHA and WAIT in one pipeline on the master of keys[0]; on NOSCRIPT (the
// master does not know the script: restarted, failed over, flushed) the pair again with EVAL. It answers
// the script's command, whether the replicas acknowledged it in time, and an error when the master could
// not be reached. The WAIT runs after the script even when the script fails; it is then not counted.
func (l *Ledger) runWaited(ctx context.Context, script *redis.Script, keys []string, args []any) (*redis.Cmd, bool, error) {
	c, err := l.masterOf(ctx, keys[0])
	if err != nil {
		return nil, false, err
	}
	ms := l.wait.timeout.Milliseconds()
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
			wait = p.Do(ctx, "wait", l.wait.replicas, ms)
			return nil
		})
		return cmd, wait
	}
	cmd, wait := run(false)
	if e := cmd.Err(); e != nil && redis.HasErrorPrefix(e, "NOSCRIPT") {
		cmd, wait = run(true)
	}
	if e := cmd.Err(); e != nil && isTimeout(e) {
		// The pair's answer was not read in time (a read timeout shorter than the WAIT): the script may
		// have run, and its buyers must not be told an error for units taken. The same call again, without
		// a WAIT: the take and lend scripts answer a request they have seen as before and write nothing
		// new. Its answer is the truth, not known to be on a replica.
		l.wait.unconfirmed.Add(1)
		return script.Run(ctx, c, keys, args...), false, nil
	}
	if e := cmd.Err(); e != nil {
		if cc, ok := l.rdb.(*redis.ClusterClient); ok && (redis.HasErrorPrefix(e, "MOVED") || redis.HasErrorPrefix(e, "ASK")) {
			cc.ReloadState(ctx) // the slot moved (a failover, a reshard): the next batch asks the new master
		}
		return cmd, false, nil
	}
	l.wait.waits.Add(1)
	n, err := wait.Int64()
	acked := err == nil && n >= int64(l.wait.replicas)
	if !acked {
		l.wait.unconfirmed.Add(1)
	}
	return cmd, acked, nil
}

// isTimeout reports whether err is a network timeout (the answer may have been lost after the command ran).
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// masterOf answers a client whose pipeline runs on one connection to the master of key: the ledger's own
// client for a single Redis (or a failover client), the slot's master's for a cluster.
func (l *Ledger) masterOf(ctx context.Context, key string) (redis.Cmdable, error) {
	if cc, ok := l.rdb.(*redis.ClusterClient); ok {
		c, err := cc.MasterForKey(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("the master of %s: %w", key, err)
		}
		return c, nil
	}
	return l.rdb, nil
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
