package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"

	"seckill/internal/testenv"
	"seckill/jobs"
	"seckill/models"
)

// Every worker Start knows (the edge log's too, when configured) belongs to the web tier or to the
// worker, and all runs exactly web and worker together: a worker added to Start and to no role would
// run in no split deployment.
func TestRoleTableCoversEveryWorker(t *testing.T) {
	s := startLive(t, liveOpts{noBackground: true, tune: func(c *Config) { c.NginxEdgeLog = filepath.Join(t.TempDir(), "edge.log") }})
	known := s.Srv.workers()
	var union []string
	for role, names := range roleTable {
		if role != RoleWeb && role != RoleWorker {
			t.Errorf("the role table has a role %q: only web and worker are listed (all is every worker)", role)
		}
		for _, name := range names {
			if _, ok := known[name]; !ok {
				t.Errorf("role %s lists %q, which Start does not know", role, name)
			}
			if slices.Contains(union, name) {
				t.Errorf("%q is in both roles: split, it would run twice", name)
			}
			union = append(union, name)
		}
	}
	for name := range known {
		if !slices.Contains(union, name) {
			t.Errorf("worker %q belongs to no role: add it to web or worker in roleTable", name)
		}
	}
	slices.Sort(union)
	if all := s.Srv.roleWorkers(RoleAll); !slices.Equal(all, union) {
		t.Errorf("all runs %v, want web and worker together, %v", all, union)
	}
	// Without NGINX_EDGE_LOG the web tier does not ask Start for the edge log, which it would refuse.
	plain := startLive(t, liveOpts{noBackground: true})
	if slices.Contains(plain.Srv.roleWorkers(RoleWeb), workerEdgeLog) {
		t.Errorf("the web tier names %s without NGINX_EDGE_LOG", workerEdgeLog)
	}
}

func TestServeRoleIsChecked(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		says string
	}{
		{"an unknown role", map[string]string{"SERVE_ROLE": "both"}, `SERVE_ROLE must be one of all, web, worker, got "both"`},
		{"a split demo", map[string]string{"SERVE_ROLE": "web"}, "SERVE_ROLE must be all in demo mode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := runCLI(t, tc.env, "serve")
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("serve with %v = %v; want it refused, saying %s", tc.env, err, tc.says)
			}
		})
	}
	for _, role := range []string{"", "all", "web", "worker", "Worker"} {
		cfg, err := LoadConfig(envOf(map[string]string{"SERVE_ROLE": role, "DATABASE_URL": "postgres://x/y", "REDIS_URL": "redis://x:6379/0", "SESSION_SECRET": goodSecret}))
		if want := strings.ToLower(cmpOr(role, "all")); err != nil || cfg.role() != want {
			t.Errorf("SERVE_ROLE=%q: %q, %v; want %q", role, cfg.role(), err, want)
		}
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// role is a seckill serve running in the test with its own environment, until end or the test's end.
type role struct {
	logs     *safeWriter
	stop     context.CancelFunc
	finished chan struct{} // closed once serve has returned err
	err      error
}

func runRole(t *testing.T, env map[string]string) *role {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &role{logs: &safeWriter{w: &bytes.Buffer{}}, stop: cancel, finished: make(chan struct{})}
	go func() {
		defer close(r.finished)
		r.err = Run(ctx, []string{"serve"}, Env{Getenv: envOf(env), Stdout: io.Discard, Stderr: r.logs})
	}()
	t.Cleanup(func() { r.end() })
	return r
}

// end stops the role and answers what serve returned.
func (r *role) end() error {
	r.stop()
	<-r.finished
	return r.err
}

// A web instance answers a buy 202 and writes no order: the order waits in Redis until a worker, with
// no public port of its own and its probes on the operators' listener, writes it.
func TestWebTierQueuesAndTheWorkerWrites(t *testing.T) {
	ctx := context.Background()
	dbURL := testenv.PostgresSchema(t)
	db, err := gorm.Open(postgres.Open(dbURL), testenv.GormConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if d, err := db.DB(); err == nil {
			d.Close()
		}
	})
	if err := models.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	rdb := testenv.Redis(t)
	// A server of the test's own, on the same services, issues the shopper's cookie and path; it runs
	// no worker.
	kit := startLive(t, liveOpts{db: db, rdb: rdb, noBackground: true})

	webPort, workerPort := freePort(t), freePort(t)
	webURL := "http://127.0.0.1:" + webPort
	env := func(role, port string) map[string]string {
		return map[string]string{"SERVE_ROLE": role, "PORT": port, "LISTEN_HOST": "127.0.0.1", "BASE_URL": webURL,
			"METRICS_LISTEN": "127.0.0.1:" + freePort(t), "DATABASE_URL": dbURL, "REDIS_URL": testenv.RedisURLFor(rdb),
			"SESSION_SECRET": goodSecret, "PAY_SANDBOX": "on", "PAY_SANDBOX_ANYONE_CAN_PAY": "yes",
			"BCRYPT_COST": "4", "CAPTCHA_POOL": "0"}
	}
	web := runRole(t, env(RoleWeb, webPort))
	testenv.EventuallySaw(t, 30*time.Second, "the web instance to answer", func() (bool, string) {
		resp, err := http.Get(webURL + "/readyz")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == 200, resp.Status
	})
	testenv.EventuallySaw(t, 5*time.Second, "the web instance to warn that a worker must run somewhere", func() (bool, string) {
		logs := web.logs.String()
		return strings.Contains(logs, "SERVE_ROLE=web writes no orders"), logs
	})

	now := time.Now()
	_, item := testenv.Sale(t, db, 5, now.Add(-time.Minute), now.Add(time.Hour))
	// Loaded as an approval loads it (the preheat job is the worker's).
	if _, err := kit.Srv.Ledger.Preheat(ctx, jobs.DBBooks{DB: db}, item.ID); err != nil {
		t.Fatal(err)
	}
	buyer := makeShoppers(t, kit, "split", 1)[0]
	client := &http.Client{Timeout: 10 * time.Second}
	if a := buyer.post(t, client, webURL, fmt.Sprintf("/api/items/%d/buy/%s", item.ID, issuePath(t, kit, item.ID, buyer.id))); a.status != 202 {
		t.Fatalf("the buy on the web instance: %+v, want 202", a)
	}
	orders := func() int64 {
		var n int64
		if err := db.Model(&models.Order{}).Count(&n).Error; err != nil {
			t.Fatal(err)
		}
		return n
	}
	time.Sleep(2 * time.Second) // a consumer would have written it by now (it looks for streams every second)
	if n := orders(); n != 0 {
		t.Fatalf("%d orders written with no worker running, want 0", n)
	}
	if n, err := kit.Srv.Ledger.Backlog(ctx, item.ID); err != nil || n != 1 {
		t.Errorf("the queue holds %d (%v), want the one order", n, err)
	}
	// The web instance's look at the queue says, once, that nobody writes it.
	var seen bytes.Buffer
	wctx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		watchQueue(wctx, kit.Srv.Ledger, rdb, slog.New(slog.NewTextHandler(&safeWriter{w: &seen}, nil)), 20*time.Millisecond, time.Second)
	}()
	time.Sleep(200 * time.Millisecond)
	stopWatch()
	<-watched
	if got := strings.Count(seen.String(), "no worker is writing them"); got != 1 {
		t.Errorf("the queue's watch warned %d times, want once:\n%s", got, seen.String())
	}

	workerEnv := env(RoleWorker, workerPort)
	worker := runRole(t, workerEnv)
	testenv.EventuallySaw(t, 30*time.Second, "the worker to write the order", func() (bool, string) {
		n := orders()
		return n == 1, fmt.Sprintf("%d orders", n)
	})
	if c, err := net.DialTimeout("tcp", "127.0.0.1:"+workerPort, time.Second); err == nil {
		c.Close()
		t.Errorf("the worker listens on its PORT %s; want no public port", workerPort)
	}
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		resp, err := http.Get("http://" + workerEnv["METRICS_LISTEN"] + path)
		if err != nil {
			t.Errorf("the worker's %s: %v", path, err)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("the worker's %s: %s, want 200", path, resp.Status)
		}
	}
	// The containers' health check, with no curl in the image: seckill probe.
	if _, _, err := runCLI(t, nil, "probe", "http://"+workerEnv["METRICS_LISTEN"]+"/readyz"); err != nil {
		t.Errorf("seckill probe of the worker's /readyz: %v", err)
	}
	if _, _, err := runCLI(t, nil, "probe", "http://127.0.0.1:"+workerPort+"/readyz"); err == nil {
		t.Error("seckill probe of a port nobody listens on succeeded")
	}
	if _, _, err := runCLI(t, nil, "probe", webURL+"/orders"); err == nil {
		t.Error("seckill probe of an address that redirects (to a page that answers 200) succeeded")
	}
	// A second worker whose operators' listener is taken (by the first) refuses to start: its probe
	// would ask the first.
	second := map[string]string{}
	for k, v := range workerEnv {
		second[k] = v
	}
	second["PORT"] = freePort(t)
	twin := runRole(t, second)
	select {
	case <-twin.finished:
		if twin.err == nil || !strings.Contains(twin.err.Error(), "SERVE_ROLE=worker needs its operators' listener") {
			t.Errorf("a worker without its listener: %v", twin.err)
		}
	case <-time.After(30 * time.Second):
		t.Error("a worker whose METRICS_LISTEN is taken kept running")
	}
	if _, _, err := runCLI(t, nil, "probe"); !errors.Is(err, ErrUsage) {
		t.Errorf("seckill probe with no URL = %v, want the usage", err)
	}
	testenv.EventuallySaw(t, 5*time.Second, "the worker's log to say it runs the order consumer and no web tier worker, without a public port", func() (bool, string) {
		logs := worker.logs.String()
		return strings.Contains(logs, "without a public port") && strings.Contains(logs, "order_consumer") && !strings.Contains(logs, "captcha_pool"), logs
	})
	if err := worker.end(); err != nil {
		t.Errorf("the worker ended with %v", err)
	}
	if err := web.end(); err != nil {
		t.Errorf("the web instance ended with %v", err)
	}
}
