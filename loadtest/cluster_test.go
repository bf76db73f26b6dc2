package loadtest_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"seckill/internal/testenv"
	"seckill/loadtest"
	"seckill/stock"
)

// The layout of `make cluster` on ports of the test's own: three Redis masters, two instances (the web
// tier), two workers (the order writes: one is killed mid-rush, the other claims its orders), nginx.
var (
	clusterRedis   = []string{"127.0.0.1:17101", "127.0.0.1:17102", "127.0.0.1:17103"}
	clusterApps    = []string{"127.0.0.1:17181", "127.0.0.1:17182"}
	clusterNginx   = "http://127.0.0.1:17180"
	clusterWorkers = "18183 18184" // their operators' ports
)

type cluster struct {
	dir  string
	rdb  *redis.ClusterClient
	pool *pgxpool.Pool // the cluster's database: the rushes' accounts are seeded in it
}

// startCluster runs scripts/cluster.sh start, as `make cluster` does, and stops it when the test ends.
// Where the script cannot run here (no Redis or nginx, and no way to install them), the test is skipped,
// unless REQUIRE_SERVICES=1 (CI) makes that a failure.
func startCluster(t *testing.T) *cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("the cluster test starts Redis, nginx and two servers: not with -short")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	// A fixed place, so that a run that died before its cleanup (a test timeout) is stopped by the next;
	// a run beside it (another checkout's make test) waits for it, on a lock the kernel drops with its process.
	dir := filepath.Join(os.TempDir(), "seckill-cluster-test")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatalf("lock %s: %v", lock.Name(), err)
	}
	t.Cleanup(func() { lock.Close() }) // after the cluster's stop: cleanups run last first
	bin := filepath.Join(dir, "seckill")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	db, err := url.Parse(testenv.PostgresURL())
	if err != nil {
		t.Fatal(err)
	}
	db.Path = "/seckill_cluster_test"
	ports := func(addrs []string) string {
		var p []string
		for _, a := range addrs {
			p = append(p, a[strings.LastIndexByte(a, ':')+1:])
		}
		return strings.Join(p, " ")
	}
	script := func(args ...string) *exec.Cmd {
		cmd := exec.Command("bash", append([]string{filepath.Join(root, "scripts", "cluster.sh")}, args...)...)
		cmd.Env = append(os.Environ(), "CLUSTER_DIR="+filepath.Join(dir, "run"), "CLUSTER_REDIS_PORTS="+ports(clusterRedis),
			"CLUSTER_APP_PORTS="+ports(clusterApps), "CLUSTER_PORT="+clusterNginx[strings.LastIndexByte(clusterNginx, ':')+1:],
			"CLUSTER_DATABASE_URL="+db.String(), "CLUSTER_FRESH=1", "CLUSTER_WORKER_PORTS="+clusterWorkers, "CLUSTER_RATE=100", "CLUSTER_BURST=200",
			"SECKILL_BIN="+bin, "BCRYPT_COST=4", "RATE_LIMIT_IP=off", "LOG_LEVEL=warn", "ORDER_CLAIM_IDLE=5s", "SESSION_SECRET=cluster-test-secret-cluster-test-secret")
		return cmd
	}
	if out, err := script("stop").CombinedOutput(); err != nil {
		t.Fatalf("cluster.sh stop, before starting: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if out, err := script("stop").CombinedOutput(); err != nil {
			t.Errorf("cluster.sh stop: %v\n%s", err, out)
		}
	})
	if out, err := script("start").CombinedOutput(); err != nil {
		msg := fmt.Sprintf("cluster.sh start: %v\n%s", err, out)
		if os.Getenv("REQUIRE_SERVICES") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	c := &cluster{dir: filepath.Join(dir, "run"), rdb: redis.NewClusterClient(&redis.ClusterOptions{Addrs: clusterRedis})}
	t.Cleanup(func() { c.rdb.Close() })
	if c.pool, err = pgxpool.New(context.Background(), db.String()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.pool.Close)
	return c
}

// served counts the buys an instance answered with 202, from its own /metrics (on the operators'
// listener, which cluster.sh puts at the instance's port + 1000).
func served(t *testing.T, app string) int {
	t.Helper()
	host, port, _ := net.SplitHostPort(app)
	p, _ := strconv.Atoi(port)
	resp, err := http.Get("http://" + net.JoinHostPort(host, strconv.Itoa(p+1000)) + "/metrics")
	if err != nil {
		t.Fatalf("metrics of %s: %v", app, err)
	}
	defer resp.Body.Close()
	n := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "seckill_http_requests_total{") && strings.Contains(line, `/buy/`) && strings.Contains(line, `status="202"`) {
			v, _ := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			n += int(v)
		}
	}
	return n
}

// rush runs the load tool's rush scenario through nginx, from fifty client addresses: a thousand
// shoppers, requests/1000 buys each, for stock units.
func (c *cluster) rush(t *testing.T, requests int, stock int64, shards int, mid func()) *loadtest.Report {
	t.Helper()
	o := loadtest.Options{Admin: loadtest.User{Name: "admin", Password: "cluster-boss-pass"},
		Merchant: loadtest.User{Name: "merchant", Password: "cluster-seller-pass"},
		Users:    1000, Requests: requests, Conns: 200, Stock: stock, Shards: shards, MidRush: mid,
		// The accounts exist before the sale, made in bulk: registering them (a captcha and a proof of work
		// each) is not what a rush measures.
		Seed: func(ctx context.Context, prefix string, n int) ([]*loadtest.User, error) {
			return loadtest.SeedUsers(ctx, c.pool, prefix, n)
		}}
	client := loadtest.NewClient(clusterNginx, o.Conns)
	client.Sources(50)
	defer client.Close()
	rep, err := client.Buying(context.Background(), c.rdb, "rush", o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d shards: %.0f req/s, answers %v, audit:\n  %s", shards, rep.Result.Throughput(), rep.Result.Kinds, strings.Join(rep.Audit.Checks, "\n  "))
	if !rep.Audit.OK() {
		t.Errorf("the audit failed: %v", rep.Audit.Failures)
	}
	return rep
}

// Two instances behind nginx on a three-master Redis Cluster: the rush's audit passes with the item in
// one shard and in four, both instances take buys, nginx limits each address, and when a worker is
// killed in the middle of a rush the other finishes its queue.
func TestRushThroughNginxOnARedisCluster(t *testing.T) {
	c := startCluster(t)

	t.Run("one shard", func(t *testing.T) {
		before := []int{served(t, clusterApps[0]), served(t, clusterApps[1])}
		rep := c.rush(t, 5000, 100, 1, nil)
		if rep.Result.Kinds["202"] != 100 {
			t.Errorf("%d answers 202, want all 100 units sold", rep.Result.Kinds["202"])
		}
		for i, app := range clusterApps {
			if n := served(t, app) - before[i]; n == 0 {
				t.Errorf("instance %d took none of the buys", i+1)
			}
		}
	})

	t.Run("four shards", func(t *testing.T) {
		rep := c.rush(t, 5000, 100, 4, nil)
		if rep.Result.Kinds["202"] != 100 {
			t.Errorf("%d answers 202, want all 100 units sold", rep.Result.Kinds["202"])
		}
		// The item's four shards are on more than one master: its sale is not bound to one Redis core.
		masters := map[string]bool{}
		slots, err := c.rdb.ClusterSlots(context.Background()).Result()
		if err != nil {
			t.Fatal(err)
		}
		item, err := lastItem(c)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			k := stock.ShardKeys(item, i).Sale
			slot := stock.Slot(k[strings.Index(k, "{")+1 : strings.Index(k, "}")])
			for _, s := range slots {
				if slot >= int(s.Start) && slot <= int(s.End) {
					masters[s.Nodes[0].Addr] = true
				}
			}
			if n, err := c.rdb.Exists(context.Background(), k).Result(); err != nil || n != 1 {
				t.Errorf("shard %d's sale hash is not in the cluster: %v", i, err)
			}
		}
		if len(masters) < 2 {
			t.Errorf("the four shards of item %d are on %d master(s)", item, len(masters))
		}
	})

	t.Run("nginx limits each address", func(t *testing.T) {
		// 600 requests from 50 connections at once: well over the 100/s and burst of 200 however slow
		// this machine is today.
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 50}}
		var limited atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 50 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for range 12 {
					resp, err := client.Get(clusterNginx + "/api/csrf")
					if err != nil {
						t.Error(err)
						return
					}
					var body [200]byte
					n, _ := resp.Body.Read(body[:])
					resp.Body.Close()
					if resp.StatusCode == http.StatusTooManyRequests {
						limited.Add(1)
						if !strings.Contains(string(body[:n]), `"error":"rate_limited"`) || resp.Header.Get("Retry-After") == "" {
							t.Errorf("nginx's 429 is not the contract's: %s %q", resp.Header, body[:n])
							return
						}
					}
				}
			}()
		}
		close(start)
		wg.Wait()
		if limited.Load() == 0 {
			t.Error("600 requests from one address at once, none limited by nginx")
		}
	})

	t.Run("a worker killed mid-rush", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join(c.dir, "worker-1.pid"))
		if err != nil {
			t.Fatal(err)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		var item int64
		var atKill int
		// A unit for every shopper and one buy each, so that orders flow until the end: instance 1 is
		// frozen until its consumer holds orders it read and did not acknowledge, then killed outright.
		// (Worker 1: the instances are the web tier, and write no orders.)
		rep := c.rush(t, 1000, 1000, 4, func() {
			if item, err = lastItem(c); err != nil {
				t.Error(err)
				return
			}
			for try := 0; try < 500 && atKill == 0; try++ {
				_ = syscall.Kill(pid, syscall.SIGSTOP)
				if atKill = pendingOf(c, item, pid); atKill == 0 {
					_ = syscall.Kill(pid, syscall.SIGCONT)
					time.Sleep(10 * time.Millisecond)
				}
			}
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Errorf("kill worker 1: %v", err)
			}
		})
		t.Logf("worker 1 died holding %d orders it had read and not acknowledged", atKill)
		if atKill == 0 {
			t.Error("worker 1 never held an unacknowledged order to be claimed: the test proved nothing")
		}
		if n := pendingOf(c, item, pid); n != 0 {
			t.Errorf("%d of the dead worker's orders were never claimed", n)
		}
		if err := syscall.Kill(pid, 0); err == nil && !zombie(pid) {
			t.Error("worker 1 still runs")
		}
		if rep.Result.Kinds["202"] < 500 {
			t.Errorf("too few buys were queued to tell: %v", rep.Result.Kinds)
		}
	})
}

// pendingOf counts the orders of the item that the instance with this pid read and has not acknowledged
// (its consumer is named host-PID-nodeN).
func pendingOf(c *cluster, item int64, pid int) int {
	n := 0
	for i := range 4 {
		consumers, _ := c.rdb.XInfoConsumers(context.Background(), stock.ShardKeys(item, i).Stream, stock.Group).Result()
		for _, cons := range consumers {
			if strings.Contains(cons.Name, fmt.Sprintf("-%d-node", pid)) {
				n += int(cons.Pending)
			}
		}
	}
	return n
}

// lastItem answers the newest item's id among the sales loaded in the cluster (the load tool made it).
func lastItem(c *cluster) (int64, error) {
	ids, err := c.rdb.SMembers(context.Background(), "sk:streams").Result()
	if err != nil || len(ids) == 0 {
		return 0, fmt.Errorf("no sales in the cluster: %v", err)
	}
	var newest int64
	for _, s := range ids {
		if id, _ := strconv.ParseInt(s, 10, 64); id > newest {
			newest = id
		}
	}
	return newest, nil
}

// zombie reports whether pid has exited and waits to be reaped.
func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	return strings.HasPrefix(strings.TrimSpace(s[strings.LastIndexByte(s, ')')+1:]), "Z")
}
