package stock_test

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/auth"
	"seckill/internal/testenv"
	"seckill/jobs"
	"seckill/stock"
)

// infoField reads one field of an INFO section.
func infoField(t testing.TB, rdb *redis.Client, section, field string) string {
	t.Helper()
	info, err := rdb.Info(context.Background(), section).Result()
	if err != nil {
		t.Fatalf("INFO %s: %v", section, err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return ""
}

// waitCalls reads how many WAITs the master has run since its stats were reset.
func waitCalls(t testing.TB, rdb *redis.Client) int64 {
	t.Helper()
	stat := infoField(t, rdb, "commandstats", "cmdstat_wait")
	for _, f := range strings.Split(stat, ",") {
		if v, ok := strings.CutPrefix(f, "calls="); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// newPairRig is newShardRig on the pair's master: a running one-shard sale of stockTotal units,
// preheated, whose ledger waits for 1 replica within timeout.
func newPairRig(t testing.TB, p *testenv.ReplicaPair, stockTotal int64, timeout time.Duration) *shardRig {
	t.Helper()
	r := &shardRig{db: testenv.Postgres(t), rdb: p.Master, clock: &clock{t: time.Now()}}
	r.ledger = testenv.Ledger(r.rdb, r.clock.now)
	r.ledger.WaitReplicas(1, timeout)
	_, r.item = testenv.Sale(t, r.db, stockTotal, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	if left, err := r.ledger.Preheat(context.Background(), jobs.DBBooks{DB: r.db}, r.item.ID); err != nil || left != stockTotal {
		t.Fatalf("preheat: %d left, %v", left, err)
	}
	return r
}

// takeAnswer is what one buyer was told.
type takeAnswer struct {
	user      int64
	orderNo   string
	confirmed bool
	err       error
}

// buyAll has the users buy at once, each with a fresh path, and answers what each was told.
func (r *shardRig) buyAll(t testing.TB, users []int64) []takeAnswer {
	t.Helper()
	ctx := context.Background()
	paths := make([]string, len(users))
	for i, u := range users {
		paths[i], _ = auth.RandomToken(16)
		if err := r.ledger.IssuePath(ctx, r.item.ID, u, paths[i]); err != nil {
			t.Fatalf("path for %d: %v", u, err)
		}
	}
	out := make([]takeAnswer, len(users))
	var wg sync.WaitGroup
	for i, u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := takeAnswer{user: u, orderNo: fmt.Sprintf("SKW%d", u)}
			_, a.confirmed, a.err = r.ledger.TakeConfirmed(ctx, r.item.ID, u, paths[i], a.orderNo)
			out[i] = a
		}()
	}
	wg.Wait()
	return out
}

func usersFrom(first, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(first + i)
	}
	return out
}

// A take is queued only once the replica has it: while the replica is frozen every buyer is told
// unconfirmed, not queued and not failed, and their units are taken and their orders in the stream on
// the master all the same; thawed, the replica catches up and buyers are queued again. One WAIT per
// batch, not per buyer.
func TestTakeIsQueuedOnlyOnceTheReplicaHasIt(t *testing.T) {
	p := testenv.StartReplicaPair(t)
	r := newPairRig(t, p, 100, 150*time.Millisecond)
	ctx := context.Background()
	left := func() int64 {
		n, err := r.rdb.HGet(ctx, stock.KeysOf(r.item.ID).Sale, "left").Int64()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	// The first take loads the script (EVAL, whose body is more to send); the counts start after it.
	if a := r.buyAll(t, usersFrom(1, 1)); a[0].err != nil || !a[0].confirmed {
		t.Fatalf("first buyer: %+v, want confirmed", a[0])
	}
	if err := r.rdb.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	calls0, takes0 := r.ledger.BatchStats()

	for _, a := range r.buyAll(t, usersFrom(100, 40)) {
		if a.err != nil || !a.confirmed {
			t.Errorf("buyer %d with the replica up: confirmed %v, %v; want confirmed", a.user, a.confirmed, a.err)
		}
	}
	calls, takes := r.ledger.BatchStats()
	if got := waitCalls(t, r.rdb); got != calls-calls0 {
		t.Errorf("%d WAITs for %d batches (of %d takes): want one per batch", got, calls-calls0, takes-takes0)
	}
	t.Logf("40 buyers: %d batches, %d WAITs", calls-calls0, waitCalls(t, r.rdb))
	if left() != 59 {
		t.Fatalf("%d left, want 59", left())
	}

	p.Freeze(t)
	frozen := r.buyAll(t, usersFrom(200, 12))
	for _, a := range frozen {
		if a.err != nil || a.confirmed {
			t.Errorf("buyer %d with the replica frozen: confirmed %v, %v; want unconfirmed, no error", a.user, a.confirmed, a.err)
		}
	}
	// Taken on the master all the same, and queued for the order consumer.
	if left() != 47 {
		t.Errorf("%d left on the master, want 47", left())
	}
	queued := r.queued(t, 1)
	for _, a := range frozen {
		if got := queued[strconv.FormatInt(a.user, 10)]; len(got) != 1 || got[0] != a.orderNo {
			t.Errorf("buyer %d's orders in the stream: %v, want [%s]", a.user, got, a.orderNo)
		}
	}
	if res, err := r.ledger.ResultOf(ctx, r.item.ID, frozen[0].user); err != nil || res.Status != stock.ResultQueued {
		t.Errorf("an unconfirmed buyer's result: %+v, %v; want queued (it settles from the stream)", res, err)
	}

	p.Thaw(t)
	testenv.Eventually(t, 10*time.Second, "the replica holds the frozen time's orders", func() bool {
		n, err := p.Replica.XLen(ctx, stock.KeysOf(r.item.ID).Stream).Result()
		return err == nil && n == 1+40+12
	})
	for _, a := range r.buyAll(t, usersFrom(300, 5)) {
		if a.err != nil || !a.confirmed {
			t.Errorf("buyer %d with the replica thawed: confirmed %v, %v; want confirmed", a.user, a.confirmed, a.err)
		}
	}
	if waits, unconfirmed := r.ledger.WaitStats(); unconfirmed == 0 || unconfirmed >= waits {
		t.Errorf("WaitStats: %d WAITs, %d unconfirmed", waits, unconfirmed)
	}
}

// WAIT counts what its own connection saw: a pooled connection last used before a take (Redis 7.0 marks a
// connection with the replication offset after each of its commands) answers, with the replica frozen
// since, at once that the replica has everything, which the take's own connection's WAIT (the ledger's)
// does not. A WAIT on whatever connection the pool hands out would have told the buyer queued.
func TestWaitOnAnotherConnectionWouldProveNothing(t *testing.T) {
	p := testenv.StartReplicaPair(t)
	r := newPairRig(t, p, 10, 100*time.Millisecond)
	ctx := context.Background()
	if a := r.buyAll(t, usersFrom(1, 1)); a[0].err != nil || !a[0].confirmed {
		t.Fatalf("first buyer: %+v, want confirmed", a[0])
	}
	idle := redis.NewClient(&redis.Options{Addr: p.Master.Options().Addr, PoolSize: 1})
	defer idle.Close()
	// Its one connection is used once the replica has acknowledged everything (so that what it saw is on
	// the replica), before the take.
	acked := func() bool {
		info := infoField(t, p.Master, "replication", "slave0")
		return strings.HasSuffix(strings.Split(info, ",lag=")[0], ",offset="+infoField(t, p.Master, "replication", "master_repl_offset"))
	}
	testenv.Eventually(t, 10*time.Second, "the replica acknowledging everything, seen by the idle connection", func() bool {
		return acked() && idle.Ping(ctx).Err() == nil && acked()
	})
	p.Freeze(t)
	a := r.buyAll(t, usersFrom(2, 1))[0]
	if a.err != nil || a.confirmed {
		t.Fatalf("buyer with the replica frozen: confirmed %v, %v; want unconfirmed", a.confirmed, a.err)
	}
	start := time.Now()
	n, err := idle.Wait(ctx, 1, 2*time.Second).Result()
	if err != nil || n != 1 || time.Since(start) > time.Second {
		t.Errorf("WAIT 1 on a connection last used before the take: %d after %v, %v; want 1 at once (it proves nothing)", n, time.Since(start), err)
	}
	p.Thaw(t)
}

// REDIS_WAIT_REPLICAS=auto asks the master how many replicas it has.
func TestReplicasOf(t *testing.T) {
	ctx := context.Background()
	lone, _ := testenv.RedisServer(t, "lone")
	if n, err := stock.ReplicasOf(ctx, lone); err != nil || n != 0 {
		t.Errorf("a master without replicas: %d, %v; want 0", n, err)
	}
	p := testenv.StartReplicaPair(t)
	if n, err := stock.ReplicasOf(ctx, p.Master); err != nil || n != 1 {
		t.Errorf("a master with a replica: %d, %v; want 1", n, err)
	}
}

// On a Redis Cluster the take's pipeline goes to the slot's master, and its WAIT counts that master's
// replica: a one-master cluster with a replica, both started by the test, frozen as above.
func TestTakeOnAClusterWaitsForTheSlotsReplica(t *testing.T) {
	ctx := context.Background()
	node := func(name string) (*redis.Client, *exec.Cmd) {
		return testenv.RedisServer(t, name, "--cluster-enabled", "yes", "--cluster-config-file", "nodes-"+name+".conf",
			"--repl-diskless-sync-delay", "0")
	}
	master, _ := node("master")
	replica, replicaCmd := node("replica")
	if err := master.Do(ctx, "cluster", "addslotsrange", 0, 16383).Err(); err != nil {
		t.Fatal(err)
	}
	masterID, err := master.Do(ctx, "cluster", "myid").Text()
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(master.Options().Addr)
	if err := replica.ClusterMeet(ctx, host, port).Err(); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 20*time.Second, "the replica to know the master", func() bool {
		return strings.Contains(replica.ClusterNodes(ctx).Val(), masterID)
	})
	if err := replica.Do(ctx, "cluster", "replicate", masterID).Err(); err != nil {
		t.Fatal(err)
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{master.Options().Addr}})
	t.Cleanup(func() { cc.Close() })
	testenv.Eventually(t, 30*time.Second, "the cluster up, the replica in sync", func() bool {
		if infoField(t, replica, "replication", "master_link_status") != "up" ||
			!strings.Contains(master.ClusterInfo(ctx).Val(), "cluster_state:ok") {
			return false
		}
		return testenv.ReplicaAcknowledges(ctx, master)
	})
	if n, err := stock.ReplicasOf(ctx, cc); err != nil || n != 1 {
		t.Errorf("ReplicasOf the cluster: %d, %v; want 1", n, err)
	}

	r := &shardRig{db: testenv.Postgres(t), rdb: master, clock: &clock{t: time.Now()}}
	r.ledger = testenv.Ledger(cc, r.clock.now)
	r.ledger.WaitReplicas(1, 150*time.Millisecond)
	_, r.item = testenv.Sale(t, r.db, 20, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	if left, err := r.ledger.Preheat(ctx, jobs.DBBooks{DB: r.db}, r.item.ID); err != nil || left != 20 {
		t.Fatalf("preheat: %d left, %v", left, err)
	}
	for _, a := range r.buyAll(t, usersFrom(1, 6)) {
		if a.err != nil || !a.confirmed {
			t.Errorf("buyer %d with the replica up: confirmed %v, %v; want confirmed", a.user, a.confirmed, a.err)
		}
	}
	if err := syscall.Kill(replicaCmd.Process.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for _, a := range r.buyAll(t, usersFrom(100, 6)) {
		if a.err != nil || a.confirmed {
			t.Errorf("buyer %d with the replica frozen: confirmed %v, %v; want unconfirmed", a.user, a.confirmed, a.err)
		}
	}
	if n := len(r.queued(t, 1)); n != 12 {
		t.Errorf("%d buyers' orders in the stream, want 12", n)
	}
	if err := syscall.Kill(replicaCmd.Process.Pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
}
