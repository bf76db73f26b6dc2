package stock_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/auth"
	"seckill/internal/testenv"
	"seckill/jobs"
	"seckill/stock"
)

// Review of issue 36 (rev36). REDIS_URL may carry read_timeout (go-redis ParseURL); nothing checks it
// against REDIS_WAIT_TIMEOUT. A read timeout shorter than the WAIT's: with the replica slow, the
// pipeline's WAIT reply times out, go-redis retries the pipeline (shouldRetry(timeout, true)) and
// finally fails it, and the buyer is told an error, though the script ran and took the unit and
// queued the order on the master. The buyer should be told unconfirmed (taken), never an error.
func TestAReadTimeoutBelowTheWaitsLeavesATakenBuyUnconfirmed(t *testing.T) {
	p := testenv.StartReplicaPair(t)
	ctx := context.Background()
	short := redis.NewClient(&redis.Options{Addr: p.Master.Options().Addr, ReadTimeout: 50 * time.Millisecond})
	t.Cleanup(func() { short.Close() })
	r := &shardRig{db: testenv.Postgres(t), rdb: p.Master, clock: &clock{t: time.Now()}}
	r.ledger = testenv.Ledger(short, r.clock.now)
	r.ledger.WaitReplicas(1, 300*time.Millisecond)
	_, r.item = testenv.Sale(t, r.db, 10, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	if left, err := r.ledger.Preheat(ctx, jobs.DBBooks{DB: r.db}, r.item.ID); err != nil || left != 10 {
		t.Fatalf("preheat: %d left, %v", left, err)
	}
	if a := r.buyAll(t, usersFrom(1, 1)); a[0].err != nil || !a[0].confirmed {
		t.Fatalf("first buyer, replica up: %+v", a[0])
	}
	p.Freeze(t)
	defer p.Thaw(t)
	tok, _ := auth.RandomToken(16)
	if err := r.ledger.IssuePath(ctx, r.item.ID, 2, tok); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, confirmed, err := r.ledger.TakeConfirmed(ctx, r.item.ID, 2, tok, "SKW2")
	took := time.Since(start)
	left, _ := p.Master.HGet(ctx, stock.KeysOf(r.item.ID).Sale, "left").Int64()
	inStream := r.queued(t, 1)["2"]
	t.Logf("take with the replica frozen: confirmed %v, err %v, after %v; %d left on the master, buyer 2's orders in the stream %v",
		confirmed, err, took, left, inStream)
	if err != nil && left == 8 && len(inStream) == 1 {
		t.Errorf("the buyer was told an error (%v) though the unit is taken (%d left) and the order queued (%v): want unconfirmed", err, left, inStream)
	}
	if took > time.Second {
		t.Errorf("the take took %v for a WAIT of 300ms", took)
	}
}

// rev36Cluster starts a Redis Cluster of two masters, each with a replica: master a holds every slot
// but slot, which master b holds. It answers the four nodes' clients and the replicas' processes.
func rev36Cluster(t *testing.T, probeA, probeB string) (a, b, aRep, bRep *redis.Client, aRepCmd, bRepCmd *exec.Cmd) {
	ctx := context.Background()
	node := func(name string) (*redis.Client, *exec.Cmd) {
		return testenv.RedisServer(t, name, "--cluster-enabled", "yes", "--cluster-config-file", "nodes-"+name+".conf",
			"--repl-diskless-sync-delay", "0", "--cluster-node-timeout", "5000")
	}
	a, _ = node("a")
	b, _ = node("b")
	aRep, aRepCmd = node("arep")
	bRep, bRepCmd = node("brep")
	slot := int(a.ClusterKeySlot(ctx, probeB).Val())
	if int(a.ClusterKeySlot(ctx, probeA).Val()) == slot {
		t.Fatal("both probes in one slot")
	}
	var ranges []any
	if slot > 0 {
		ranges = append(ranges, 0, slot-1)
	}
	if slot < 16383 {
		ranges = append(ranges, slot+1, 16383)
	}
	if err := a.Do(ctx, append([]any{"cluster", "addslotsrange"}, ranges...)...).Err(); err != nil {
		t.Fatal(err)
	}
	if err := b.Do(ctx, "cluster", "addslots", slot).Err(); err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(a.Options().Addr)
	for _, c := range []*redis.Client{b, aRep, bRep} {
		if err := c.ClusterMeet(ctx, host, port).Err(); err != nil {
			t.Fatal(err)
		}
	}
	id := func(c *redis.Client) string { return c.Do(ctx, "cluster", "myid").Val().(string) }
	for _, pr := range [][2]*redis.Client{{aRep, a}, {bRep, b}} {
		master := id(pr[1])
		testenv.Eventually(t, 20*time.Second, "a replica knows its master", func() bool {
			return strings.Contains(pr[0].ClusterNodes(ctx).Val(), master)
		})
		if err := pr[0].Do(ctx, "cluster", "replicate", master).Err(); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, 40*time.Second, "the cluster up, both replicas in sync", func() bool {
		for _, c := range []*redis.Client{a, b, aRep, bRep} {
			if !strings.Contains(c.ClusterInfo(ctx).Val(), "cluster_state:ok") {
				return false
			}
		}
		for i, m := range []*redis.Client{a, b} {
			var wait *redis.IntCmd
			_, err := m.Pipelined(ctx, func(p redis.Pipeliner) error {
				p.Incr(ctx, []string{probeA, probeB}[i])
				wait = p.(*redis.Pipeline).Wait(ctx, 1, 200*time.Millisecond)
				return nil
			})
			if err != nil || wait.Val() != 1 {
				return false
			}
		}
		return true
	})
	return a, b, aRep, bRep, aRepCmd, bRepCmd
}

// A buy that borrows a unit from a shard on another cluster master writes the loan there (lend.lua),
// and only the home shard's master is WAITed for: the buyer is told queued while the lending master's
// replica does not have the loan. Promoted (a failover), it sells the unit again: one unit beyond stock
// and no WAIT ever said so. The buyer should be answered unconfirmed (or the lend WAITed for as well).
func TestALoanFromAnotherMasterIsWaitedFor(t *testing.T) {
	ctx := context.Background()
	db := testenv.Postgres(t)
	_, item := testenv.Sale(t, db, 2, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	if err := db.Model(&item).Update("stock_shards", 2).Error; err != nil {
		t.Fatal(err)
	}
	a, b, _, bRep, _, bRepCmd := rev36Cluster(t,
		stock.ShardKeys(item.ID, 0).Sale+":probe", stock.ShardKeys(item.ID, 1).Sale+":probe")
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{a.Options().Addr}})
	t.Cleanup(func() { cc.Close() })
	r := &shardRig{db: db, rdb: a, clock: &clock{t: time.Now()}, item: item}
	r.ledger = testenv.Ledger(cc, r.clock.now)
	r.ledger.WaitReplicas(1, 150*time.Millisecond)
	if left, err := r.ledger.Preheat(ctx, jobs.DBBooks{DB: db}, item.ID); err != nil || left != 2 {
		t.Fatalf("preheat: %d left, %v", left, err)
	}
	// Buyer 2 (home shard 0, on a) takes shard 0's unit, its replica up.
	if got := r.buyAll(t, []int64{2}); got[0].err != nil || !got[0].confirmed {
		t.Fatalf("buyer 2: %+v, want confirmed", got[0])
	}
	sale1 := stock.ShardKeys(item.ID, 1).Sale
	testenv.Eventually(t, 10*time.Second, "b's replica has shard 1's unit", func() bool {
		cn := bRep.Conn()
		defer cn.Close()
		var get *redis.StringCmd
		_, err := cn.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.ReadOnly(ctx)
			get = p.HGet(ctx, sale1, "left")
			return nil
		})
		n, _ := get.Int64()
		return err == nil && n == 1
	})
	// b's replica stops (SIGSTOP), buyer 4 (home shard 0, empty) borrows shard 1's unit from b.
	if err := syscall.Kill(bRepCmd.Process.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(bRepCmd.Process.Pid, syscall.SIGCONT)
	// And its link is cut (a partition), so that what b writes next is not waiting in the stopped
	// replica's socket: a SIGSTOP alone loses nothing once the replica runs again.
	if err := b.ClientKillByFilter(ctx, "TYPE", "replica").Err(); err != nil {
		t.Fatal(err)
	}
	got := r.buyAll(t, []int64{4})[0]
	onB, _ := cc.HGet(ctx, sale1, "left").Int64()
	t.Logf("buyer 4: confirmed %v, err %v; shard 1 on master b: %d left", got.confirmed, got.err, onB)
	if got.err != nil {
		t.Fatalf("buyer 4: %v", got.err)
	}
	if got.confirmed && onB == 0 {
		t.Errorf("buyer 4 was told queued (confirmed) while the loan it took from shard 1 is only on master b (its replica is stopped and cut off): a failover of b sells that unit again")
	}
}

var errNotYet = fmt.Errorf("not yet")

// Review of issue 36 (rev36). On a cluster the WAITed take goes to MasterForKey's node client, which
// does not follow MOVED: once the item's slot has moved (a reshard; a failed-over master back as a
// replica), the batch in flight failed and its buyers were told an error, where the ledger without
// WAIT (the cluster client) follows the redirection. Now the ledger asks the cluster again and takes
// on the slot's new master, WAITing there.
func TestAWaitedTakeFollowsAMovedSlot(t *testing.T) {
	ctx := context.Background()
	db := testenv.Postgres(t)
	_, item := testenv.Sale(t, db, 10, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	sale := stock.ShardKeys(item.ID, 0).Sale
	a, b, aRep, bRep, _, _ := rev36Cluster(t, "sk:{rev36-elsewhere}:probe", sale+":probe")
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{a.Options().Addr}})
	t.Cleanup(func() { cc.Close() })
	r := &shardRig{db: db, rdb: b, clock: &clock{t: time.Now()}, item: item}
	r.ledger = testenv.Ledger(cc, r.clock.now)
	r.ledger.WaitReplicas(1, 150*time.Millisecond)
	if left, err := r.ledger.Preheat(ctx, jobs.DBBooks{DB: db}, item.ID); err != nil || left != 10 {
		t.Fatalf("preheat: %d left, %v", left, err)
	}
	if got := r.buyAll(t, []int64{1})[0]; got.err != nil || !got.confirmed {
		t.Fatalf("buyer 1: %+v", got)
	}
	// Buyer 2 has a path; then the slot moves from b to a (CLUSTER SETSLOT, MIGRATE), behind the cluster
	// client's back.
	tok, _ := auth.RandomToken(16)
	if err := r.ledger.IssuePath(ctx, item.ID, 2, tok); err != nil {
		t.Fatal(err)
	}
	slot := a.ClusterKeySlot(ctx, sale).Val()
	id := func(c *redis.Client) string { return c.Do(ctx, "cluster", "myid").Val().(string) }
	aID, bID := id(a), id(b)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(a.Do(ctx, "cluster", "setslot", slot, "importing", bID).Err())
	must(b.Do(ctx, "cluster", "setslot", slot, "migrating", aID).Err())
	keys, err := b.Do(ctx, "cluster", "getkeysinslot", slot, 1000).StringSlice()
	must(err)
	host, port, _ := net.SplitHostPort(a.Options().Addr)
	for _, k := range keys {
		must(b.Migrate(ctx, host, port, k, 0, 5*time.Second).Err())
	}
	must(a.Do(ctx, "cluster", "setslot", slot, "node", aID).Err())
	// b, left with no slot, may already have turned a replica of a (cluster-allow-replica-migration).
	_ = b.Do(ctx, "cluster", "setslot", slot, "node", aID).Err()
	if err := b.Set(ctx, sale+":x", "1", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "MOVED") {
		t.Fatalf("b still holds the slot: %v", err)
	}

	got := takeAnswer{user: 2}
	_, got.confirmed, got.err = r.ledger.TakeConfirmed(ctx, item.ID, 2, tok, "SKW2")
	t.Logf("buyer 2 after the slot moved: confirmed %v, err %v", got.confirmed, got.err)
	if got.err != nil {
		t.Errorf("buyer 2 was told an error (%v) after the item's slot moved: the WAITed take does not follow MOVED, as the cluster client does", got.err)
	}
	// b, left with no slot, turns a's replica (and its own replica follows): a forks for their full syncs.
	// Those end before the servers are killed, or a's child logs into a's emptied directory.
	testenv.RedisSettled(t, 20*time.Second, a, b, aRep, bRep)
}

// Review of issue 36 (rev36): the first take on a master went EVALSHA and WAIT, NOSCRIPT, then EVAL and
// WAIT again, two WAITs for one batch (the first one blocking its full timeout on a master with no
// replica in sync, as a newly promoted one). The first call on a master now goes as EVAL: one WAIT a
// batch from the first (EVALSHA after it).
func TestOneWaitForTheFirstTakeOnAMaster(t *testing.T) {
	p := testenv.StartReplicaPair(t)
	r := newPairRig(t, p, 10, 150*time.Millisecond)
	ctx := context.Background()
	if err := p.Master.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := p.Master.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	waits := func() string {
		v, _, _ := strings.Cut(infoField(t, p.Master, "commandstats", "cmdstat_wait"), ",")
		return v
	}
	for i, want := range []string{"calls=1", "calls=2"} {
		if a := r.buyAll(t, usersFrom(1+i, 1)); a[0].err != nil || !a[0].confirmed {
			t.Fatalf("buyer %d: %+v, want confirmed", 1+i, a[0])
		}
		if got := waits(); got != want {
			t.Errorf("after take %d: WAIT %s, want %s", 1+i, got, want)
		}
	}
}

// Review of issue 36 (rev36): a WAIT that answered an error left its buyers unconfirmed and said so
// nowhere. Here the ledger's Redis user may not WAIT (an ACL): the buyer is told unconfirmed (the unit is
// taken), the failure is counted, and logged once for many.
func TestAFailedWaitIsCountedAndLogged(t *testing.T) {
	p := testenv.StartReplicaPair(t)
	ctx := context.Background()
	if err := p.Master.Do(ctx, "acl", "setuser", "nowait", "on", ">nowait-pass", "~*", "&*", "+@all", "-wait").Err(); err != nil {
		t.Fatal(err)
	}
	nowait := redis.NewClient(&redis.Options{Addr: p.Master.Options().Addr, Username: "nowait", Password: "nowait-pass"})
	t.Cleanup(func() { nowait.Close() })
	r := &shardRig{db: testenv.Postgres(t), rdb: p.Master, clock: &clock{t: time.Now()}}
	r.ledger = testenv.Ledger(nowait, r.clock.now)
	r.ledger.WaitReplicas(1, 150*time.Millisecond)
	var logged strings.Builder
	r.ledger.LogWaits(slog.New(slog.NewTextHandler(&logged, nil)))
	_, r.item = testenv.Sale(t, r.db, 10, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
	if left, err := r.ledger.Preheat(ctx, jobs.DBBooks{DB: r.db}, r.item.ID); err != nil || left != 10 {
		t.Fatalf("preheat: %d left, %v", left, err)
	}
	for _, a := range r.buyAll(t, usersFrom(1, 3)) {
		if a.err != nil || a.confirmed {
			t.Errorf("buyer %d, WAIT refused: confirmed %v, %v; want unconfirmed", a.user, a.confirmed, a.err)
		}
	}
	if n := len(r.queued(t, 1)); n != 3 {
		t.Errorf("%d buyers' orders in the stream, want 3", n)
	}
	if n := r.ledger.WaitErrors(); n < 1 {
		t.Errorf("%d WAIT errors counted, want the batches' (1 or more)", n)
	}
	if lines := strings.Count(logged.String(), "NOPERM"); lines != 1 {
		t.Errorf("%d log lines naming the WAIT's error, want 1 (one for many); log:\n%s", lines, logged.String())
	}
}
