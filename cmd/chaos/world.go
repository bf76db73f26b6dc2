package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"seckill/internal/faultnet"
	"seckill/loadtest"
	"seckill/stock"
)

// world is what a run started: the servers, the links to them that can be cut, the instances and the
// balancer in front of them.
type world struct {
	dir       string
	keep      bool
	log       io.Writer
	pg        *postgres
	redis     *redisServer
	pgLink    *faultnet.Proxy // the instances reach PostgreSQL through it
	redisLink *faultnet.Proxy // and Redis
	set       *sentinelSet    // instead of redis and redisLink, in a world for the failover faults
	bin       string          // the seckill binary
	instances []*instance
	front     *http.Server
	bal       *balancer
	frontURL  string
	rdb       *redis.Client // the load tool's own, straight to Redis (captcha answers); through the sentinels with a set
	adminPass string
	merchPass string
	flood     *loadtest.FloodReport // what the last conn-flood saw
	failover  *failover             // what the last failover fault saw
	// The probe's client and the admin's and merchant's sessions in it (probe.go), made once.
	probeClient               *loadtest.Client
	probeAdmin, probeMerchant *loadtest.User
	struckAt                  atomic.Int64 // when the last failover fault killed or cut the master (Unix ns; 0: not yet)
	lost                      int64        // bytes of the append-only file cut by the last redis-lose-second
	over                      int64        // units Redis would sell that PostgreSQL cannot back, just after it

	stopWatching context.CancelFunc
}

const (
	adminName    = "chaos_admin"
	merchantName = "chaos_merchant"
)

// setUp starts a world: with sentinels, one whose Redis is a master, two replicas and three sentinels
// (the failover faults'), else one Redis.
func setUp(ctx context.Context, c *config, log io.Writer, sentinels bool) (*world, error) {
	dir, err := os.MkdirTemp("", "seckill-chaos-")
	if err != nil {
		return nil, err
	}
	w := &world{dir: dir, keep: c.keep, log: log, adminPass: "chaos-admin-pass", merchPass: "chaos-merchant-pass"}
	fmt.Fprintln(log, "chaos: servers in", dir)
	bin := c.bin
	if bin == "" {
		bin = filepath.Join(dir, "seckill")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
		build.Stdout, build.Stderr = log, log
		if err := build.Run(); err != nil {
			return w, fmt.Errorf("build the server: %w", err)
		}
	}
	if w.pg, err = newPostgres(ctx, dir); err != nil {
		return w, err
	}
	w.bin = bin
	if w.pgLink, err = faultnet.Listen("127.0.0.1:0", fmt.Sprintf("127.0.0.1:%d", w.pg.port)); err != nil {
		return w, err
	}
	var redisURL string
	waitReplicas := "0"
	if sentinels {
		if w.set, err = newSentinelSet(ctx, dir, c.fsync); err != nil {
			return w, err
		}
		redisURL, waitReplicas = w.set.url(), strconv.Itoa(c.waitReplicas)
		w.rdb = redis.NewFailoverClient(&redis.FailoverOptions{MasterName: masterName, SentinelAddrs: w.set.sentinelAddrs()})
	} else {
		if w.redis, err = newRedis(ctx, dir, c.fsync); err != nil {
			return w, err
		}
		if w.redisLink, err = faultnet.Listen("127.0.0.1:0", w.redis.addr()); err != nil {
			return w, err
		}
		redisURL = "redis://" + w.redisLink.Addr() + "/0"
		w.rdb = redis.NewClient(&redis.Options{Addr: w.redis.addr()})
		watching, stopWatching := context.WithCancel(context.Background())
		w.stopWatching = stopWatching
		go w.redis.watch(watching)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return w, err
	}
	w.frontURL = "http://" + ln.Addr().String()
	env := func(port, metrics int) []string {
		var out []string
		for _, kv := range os.Environ() {
			k, _, _ := strings.Cut(kv, "=")
			switch k {
			case "DATABASE_URL", "REDIS_URL", "REDIS_WAIT_REPLICAS", "PORT", "BASE_URL", "METRICS_LISTEN", "NODE_ID", "PAY_PROVIDER_URL", "PAY_SECRET":
				continue
			}
			out = append(out, kv)
		}
		return append(out, "DATABASE_URL=postgres://postgres@"+w.pgLink.Addr()+"/postgres?sslmode=disable",
			"REDIS_URL="+redisURL, "REDIS_WAIT_REPLICAS="+waitReplicas, fmt.Sprintf("PORT=%d", port), "LISTEN_HOST=127.0.0.1",
			"BASE_URL="+w.frontURL, fmt.Sprintf("METRICS_LISTEN=127.0.0.1:%d", metrics), "SESSION_SECRET=chaos-only-secret-chaos-only-secret",
			"BCRYPT_COST=4", "RATE_LIMIT_IP=off", "TRUSTED_PROXIES=127.0.0.1", "PAY_SANDBOX=on", "PAY_SANDBOX_ANYONE_CAN_PAY=yes", "ORDER_CLAIM_IDLE=3s", "LOG_LEVEL=warn", "CAPTCHA_POOL=200",
			"PAY_TIMEOUT="+c.payTimeout.String(), "SALE_KEEP="+c.saleKeep.String())
	}
	for i := range 2 {
		port, err := loadtest.FreePort()
		if err != nil {
			return w, err
		}
		metrics, err := loadtest.FreePort()
		if err != nil {
			return w, err
		}
		w.instances = append(w.instances, &instance{name: fmt.Sprintf("instance %d", i+1), bin: bin, port: port, env: env(port, metrics),
			metrics: fmt.Sprintf("127.0.0.1:%d", metrics),
			logPath: filepath.Join(dir, fmt.Sprintf("instance-%d.log", i+1))})
	}
	admin := w.instances[0]
	for _, argv := range [][]string{{"migrate"}, {"user", "create", "--username", adminName, "--password", w.adminPass, "--role", "admin"},
		{"user", "create", "--username", merchantName, "--password", w.merchPass, "--role", "merchant"}} {
		cmd := exec.CommandContext(ctx, bin, argv...)
		cmd.Env = admin.env
		if out, err := cmd.CombinedOutput(); err != nil {
			return w, fmt.Errorf("seckill %s: %v\n%s", strings.Join(argv, " "), err, out)
		}
	}
	for _, in := range w.instances {
		if err := in.start(ctx); err != nil {
			return w, err
		}
	}
	w.bal = newBalancer(w.instances)
	w.front = &http.Server{Handler: w.bal, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = w.front.Serve(ln) }()
	return w, nil
}

// close stops everything the run started, by pid, and removes its directory unless asked to keep it.
func (w *world) close() {
	if w.stopWatching != nil {
		w.stopWatching()
	}
	if w.front != nil {
		_ = w.front.Close()
	}
	for _, in := range w.instances {
		in.kill()
	}
	for _, p := range []*faultnet.Proxy{w.pgLink, w.redisLink} {
		if p != nil {
			_ = p.Close()
		}
	}
	if w.probeClient != nil {
		w.probeClient.Close()
	}
	if w.rdb != nil {
		_ = w.rdb.Close()
	}
	if w.redis != nil {
		w.redis.kill()
	}
	if w.set != nil {
		w.set.close()
	}
	if w.pg != nil {
		w.pg.close()
	}
	if w.keep {
		fmt.Fprintln(w.log, "chaos: kept", w.dir)
		return
	}
	_ = os.RemoveAll(w.dir)
}

// seed makes n shoppers' accounts named prefix0.. straight in PostgreSQL (not through the balancer's
// faults), as a sale's shoppers' accounts exist before it: the rounds do not measure registrations, and
// each would pay a proof of work.
func (w *world) seed(ctx context.Context, prefix string, n int) ([]*loadtest.User, error) {
	pool, err := pgxpool.New(ctx, w.pg.url())
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	return loadtest.SeedUsers(ctx, pool, prefix, n)
}

// overPromised answers how many units Redis would still sell that PostgreSQL cannot back, over every
// item: each one a buyer answered 202 whose order the database will refuse.
func (w *world) overPromised(ctx context.Context) (int64, error) {
	conn, err := pgx.Connect(ctx, w.pg.url())
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT id, stock_total - stock_sold FROM items")
	if err != nil {
		return 0, err
	}
	type item struct{ id, backed int64 }
	var items []item
	for rows.Next() {
		var it item
		if err := rows.Scan(&it.id, &it.backed); err != nil {
			return 0, err
		}
		items = append(items, it)
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	ledger := stock.NewLedger(w.rdb, time.Now)
	var over int64
	for _, it := range items {
		left, loaded, err := ledger.Left(ctx, it.id)
		if err != nil {
			return 0, err
		}
		if loaded && left > it.backed {
			over += left - it.backed
		}
	}
	return over, nil
}

// backlog answers the orders queued in Redis and not yet written, over every item.
func (w *world) backlog(ctx context.Context) (int64, error) {
	ledger := stock.NewLedger(w.rdb, time.Now)
	items, err := ledger.Streams(ctx)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, id := range items {
		k, err := ledger.Backlog(ctx, id)
		if err != nil {
			return 0, err
		}
		n += k
	}
	return n, nil
}

// books reads a sale's books straight from Redis and PostgreSQL, not through the app (whose figures fall
// back on the database when Redis does not answer): nothing queued, and the stock left in Redis plus the
// orders not cancelled make the stock.
func (w *world) books(ctx context.Context, itemID int64) (string, bool) {
	ledger := stock.NewLedger(w.rdb, time.Now)
	left, loaded, err := ledger.Left(ctx, itemID)
	if err != nil || !loaded {
		return fmt.Sprintf("Redis's count of item %d: loaded %v, %v", itemID, loaded, err), false
	}
	queued, err := ledger.Backlog(ctx, itemID)
	if err != nil {
		return fmt.Sprintf("Redis's queue of item %d: %v", itemID, err), false
	}
	conn, err := pgx.Connect(ctx, w.pg.url())
	if err != nil {
		return err.Error(), false
	}
	defer conn.Close(ctx)
	var total, sold, live int64
	if err := conn.QueryRow(ctx, "SELECT i.stock_total, i.stock_sold, (SELECT count(*) FROM orders o WHERE o.item_id = i.id AND o.status <> 'cancelled') "+
		"FROM items i WHERE i.id = $1", itemID).Scan(&total, &sold, &live); err != nil {
		return err.Error(), false
	}
	line := fmt.Sprintf("read directly: Redis has %d left and %d queued, PostgreSQL %d orders not cancelled (stock_sold %d) of %d", left, queued, live, sold, total)
	return line, queued == 0 && left+live == total && sold == live
}

// allReady reports whether every instance answers its readiness probe.
func (w *world) allReady() bool {
	for _, in := range w.instances {
		if !in.ready() {
			return false
		}
	}
	return true
}

// panics counts the lines of the instances' logs that tell of a panic.
func (w *world) panics() int { return w.logLines("panic") }

// logLines counts the lines of the instances' logs that hold s.
func (w *world) logLines(s string) int {
	n := 0
	for _, in := range w.instances {
		f, err := os.Open(in.logPath)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if strings.Contains(sc.Text(), s) {
				n++
			}
		}
		f.Close()
	}
	return n
}

// strikeMoment answers when the last failover fault killed or cut the master (zero: not yet).
func (w *world) strikeMoment() time.Time {
	if ns := w.struckAt.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}
