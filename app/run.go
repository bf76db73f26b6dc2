package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"
	"golang.org/x/time/rate"
	"gorm.io/gorm"

	"seckill/auth"
	"seckill/internal/connlimit"
	"seckill/models"
)

// Env is what the program takes from its surroundings, so that tests can run it with their own.
type Env struct {
	Getenv func(string) string
	Stdout io.Writer
	Stderr io.Writer
}

// ErrUsage is returned for a command line that names no known command; main exits with 2 for it.
var ErrUsage = errors.New("usage")

const usage = `usage:
  seckill [serve]      run the web server and its background jobs (the default); SERVE_ROLE=web runs the
                       web tier alone, SERVE_ROLE=worker the order writes and the jobs without a public port
  seckill migrate [status|down [--drop-everything]]
                       bring the database schema up to date (run every migration not yet run); status
                       lists each migration and whether it ran; down undoes the newest that ran (version
                       1 is the whole schema: undoing it drops every table, and is refused without
                       --drop-everything)
  seckill user create --username NAME --password PASS --role shopper|merchant|admin
  seckill probe URL    GET URL and succeed on a 200 (a container's health check: the image has no curl),
                       such as a worker's http://127.0.0.1:9090/readyz
  seckill sandbox-pay  run the payment sandbox alone, as a separate provider (needs REDIS_URL; the shop
                       then sets PAY_PROVIDER_URL to its address + /sandbox and both share PAY_SECRET)
`

// Run runs the command named by args (without the program name) until it ends or ctx is cancelled.
func Run(ctx context.Context, args []string, env Env) error {
	cmd := "serve"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return runServe(ctx, env)
	case "migrate":
		return runMigrate(ctx, args, env)
	case "user":
		if len(args) == 0 || args[0] != "create" {
			fmt.Fprint(env.Stderr, usage)
			return ErrUsage
		}
		return runUserCreate(ctx, args[1:], env)
	case "sandbox-pay":
		return runSandbox(ctx, env)
	case "probe":
		if len(args) != 1 {
			fmt.Fprint(env.Stderr, usage)
			return ErrUsage
		}
		return probe(ctx, args[0])
	case "help", "-h", "--help":
		fmt.Fprint(env.Stdout, usage)
		return nil
	default:
		fmt.Fprintf(env.Stderr, "unknown command %q\n%s", cmd, usage)
		return ErrUsage
	}
}

func newLogger(cfg Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	return slog.New(newLogHandler(w, cfg.LogFormat == "json", &slog.HandlerOptions{Level: level}))
}

// openDB opens the configured database: PostgreSQL, or the demo SQLite file.
func openDB(ctx context.Context, cfg Config) (*gorm.DB, func(), error) {
	var db *gorm.DB
	var err error
	if cfg.DatabaseURL != "" {
		db, err = openPostgres(ctx, cfg.DatabaseURL)
	} else {
		if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
			return nil, nil, fmt.Errorf("DATA_DIR: %w", err)
		}
		db, err = openSQLite(cfg.DataDir + "/seckill.db")
	}
	if err != nil {
		return nil, nil, err
	}
	return db, func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	}, nil
}

func runMigrate(ctx context.Context, args []string, env Env) error {
	step, dropEverything := "up", false
	if len(args) > 0 {
		step, args = args[0], args[1:]
	}
	switch {
	case step == "-h" || step == "--help" || step == "help":
		fmt.Fprint(env.Stdout, usage)
		return nil
	case step != "up" && step != "status" && step != "down":
		fmt.Fprintf(env.Stderr, "unknown migrate step %q: up (the default), status or down\n%s", step, usage)
		return ErrUsage
	case step == "down" && len(args) == 1 && args[0] == "--drop-everything":
		dropEverything, args = true, nil
	}
	if len(args) > 0 {
		fmt.Fprintf(env.Stderr, "migrate %s takes no %q\n%s", step, strings.Join(args, " "), usage)
		return ErrUsage
	}
	cfg, err := LoadConfig(env.Getenv)
	if err != nil {
		return err
	}
	ctx = models.WithLogger(ctx, newLogger(cfg, env.Stderr)) // the migrations' lines read as the server's
	db, closeDB, err := openDB(ctx, cfg)
	if err != nil {
		return err
	}
	defer closeDB()
	switch step {
	case "status":
		ms, err := models.Migrations(ctx, db)
		if err != nil {
			return err
		}
		for _, m := range ms {
			state := "pending"
			switch {
			case m.Unrecorded:
				state = "applied (made before versioned migrations; `seckill migrate` records it)"
			case m.Applied:
				state = "applied"
				if !m.AppliedAt.IsZero() {
					state += " " + m.AppliedAt.UTC().Format(time.RFC3339)
				}
			}
			fmt.Fprintf(env.Stdout, "%-24s %s\n", m.Name, state)
		}
		return nil
	case "down":
		m, err := models.MigrateDown(ctx, db, dropEverything)
		if err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "undid %05d %s\n", m.Version, m.Name)
		return nil
	}
	if err := models.Migrate(ctx, db); err != nil {
		return err
	}
	ms, err := models.Migrations(ctx, db)
	if err != nil {
		return err
	}
	newest := "no migration"
	for _, m := range ms {
		if m.Applied {
			newest = fmt.Sprintf("version %d (%s)", m.Version, m.Name)
		}
	}
	fmt.Fprintf(env.Stdout, "database schema is up to date: %s\n", newest)
	return nil
}

func runUserCreate(ctx context.Context, args []string, env Env) error {
	fs := flag.NewFlagSet("user create", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	username := fs.String("username", "", "the new user's name (3-32 of A-Z a-z 0-9 _)")
	password := fs.String("password", "", "the new user's password (8-72 bytes)")
	role := fs.String("role", models.RoleShopper, "shopper, merchant or admin")
	if err := fs.Parse(args); err != nil {
		return ErrUsage
	}
	if !models.ValidRole(*role) {
		return fmt.Errorf("role %q is not one of shopper, merchant, admin", *role)
	}
	if err := auth.ValidateCredentials(*username, *password); err != nil {
		return err
	}
	cfg, err := LoadConfig(env.Getenv)
	if err != nil {
		return err
	}
	db, closeDB, err := openDB(ctx, cfg)
	if err != nil {
		return err
	}
	defer closeDB()
	if err := models.Migrate(ctx, db); err != nil {
		return err
	}
	hash, err := auth.HashPassword(*password, cfg.BcryptCost)
	if err != nil {
		return err
	}
	u, err := models.CreateUser(ctx, db, *username, hash, *role)
	if err != nil {
		return err
	}
	fmt.Fprintln(env.Stdout, u.ID)
	return nil
}

func runServe(ctx context.Context, env Env) error {
	cfg, err := LoadConfig(env.Getenv)
	if err != nil {
		return err
	}
	if err := cfg.checkPayment(); err != nil {
		return err
	}
	logs := newLogBuffer(env.Stderr)
	defer logs.Close()
	log := newLogger(cfg, logs)
	redis.SetLogger(&redisLog{log: log, every: rate.NewLimiter(rate.Every(time.Second), 5)})
	d := Deps{Log: log, Now: time.Now}
	if cfg.Demo {
		demo, err := openDemo(ctx, &cfg, log)
		if err != nil {
			return err
		}
		defer demo.Close()
		d.DB, d.Redis = demo.db, demo.redis
		if err := models.Migrate(models.WithLogger(ctx, log), d.DB); err != nil {
			return err
		}
		seeded, err := seedDemo(ctx, d.DB, d.Now(), cfg.BcryptCost)
		if err != nil {
			return err
		}
		var accounts []string
		for _, a := range demoAccounts {
			accounts = append(accounts, a.Username+" / "+a.Password)
		}
		log.Warn("demo accounts (username / password)", "accounts", strings.Join(accounts, ", "), "first_start", seeded)
		log.Info("demo mode sends no e-mail: every mail (a verification or password reset link) is shown at the outbox", "url", cfg.BaseURL+"/outbox")
	} else {
		if d.DB, err = openPostgres(ctx, cfg.DatabaseURL); err != nil {
			return err
		}
		defer func() {
			if sqlDB, err := d.DB.DB(); err == nil {
				_ = sqlDB.Close()
			}
		}()
		if d.Redis, d.RedisFailover, err = openRedis(ctx, cfg); err != nil {
			return err
		}
		defer d.Redis.Close()
	}

	srv, err := NewServer(ctx, cfg, d)
	if err != nil {
		return err
	}
	defer srv.Close()
	// SERVE_ROLE decides which of the workers run here (roleTable) and whether the public port opens.
	role := cfg.role()
	bgCtx, stopBackground := context.WithCancel(ctx)
	background, err := srv.Start(bgCtx, srv.roleWorkers(role)...)
	if err != nil {
		stopBackground()
		return err
	}
	watched := make(chan struct{})
	defer func() {
		stopBackground()
		<-background
		<-watched
	}()
	log.Info("serving", "role", role, "workers", strings.Join(srv.roleWorkers(role), ","))
	if role == RoleWeb {
		// A web instance queues the orders it wins in Redis and writes none: without a worker anywhere
		// they wait there, and the shoppers' results stay "queued".
		log.Warn("SERVE_ROLE=web writes no orders: a worker (SERVE_ROLE=worker, or all) must run somewhere on the same PostgreSQL and Redis, or the orders this instance queues wait in Redis")
		go func() {
			defer close(watched)
			watchQueue(bgCtx, srv.Ledger, d.Redis, log, 15*time.Second, staleQueue(cfg.ClaimIdle))
		}()
	} else {
		close(watched)
	}
	if cfg.MetricsListen != "" {
		// Metrics are for operators: a port taken (a second instance, a Prometheus on 9090) is said
		// loudly, and the shop serves on without them.
		if _, stopMetrics, err := serveOperators(cfg.MetricsListen, srv.Metrics, readiness(d.DB, d.Redis), log); err != nil {
			if role == RoleWorker {
				// A worker's only listener is this one: without it nothing can tell it is alive, and a
				// probe of the address would ask whichever process holds it (a web instance, say).
				return fmt.Errorf("SERVE_ROLE=worker needs its operators' listener (/healthz, /readyz, /metrics): METRICS_LISTEN %s: %w", cfg.MetricsListen, err)
			}
			log.Error("serving without /metrics", "err", err)
		} else {
			defer stopMetrics()
		}
	}
	if role == RoleWorker {
		// No public port: the worker's only listener is the operators' (/metrics, /healthz, /readyz).
		log.Info("working without a public port (SERVE_ROLE=worker)")
		<-ctx.Done()
		log.Info("stopped")
		return nil
	}
	if cfg.PaySandbox && !cfg.Demo {
		log.Warn("the payment sandbox is mounted (PAY_PROVIDERS=sandbox): anyone can pay any order by pressing Pay; for trying the product only")
	}
	raw, err := net.Listen("tcp", cfg.listenAddr())
	if err != nil {
		return fmt.Errorf("LISTEN_HOST and PORT %s: %w", cfg.listenAddr(), err)
	}
	ln := srv.Conns.Listen(raw)
	logConnCaps(log, cfg, srv.NoFile)
	if cfg.Demo && cfg.ListenHost == "127.0.0.1" {
		log.Info("listening on this machine only (demo mode; LISTEN_HOST=0.0.0.0 to answer the network)", "addr", ln.Addr().String(), "base_url", cfg.BaseURL)
		if ip := lanAddress(); ip != "" {
			// A QR code holds BASE_URL: a phone can open it only when it names this machine on the network.
			log.Info("to try QR login and payment from a phone on this network, run the demo as",
				"command", fmt.Sprintf("LISTEN_HOST=0.0.0.0 BASE_URL=http://%s:%d make run", ip, cfg.Port))
		}
	} else {
		log.Info("listening", "addr", ln.Addr().String(), "base_url", cfg.BaseURL)
	}
	err = serve(ctx, srv.Fiber, ln, cfg.ShutdownTimeout)
	log.Info("stopped", "err", err)
	return err
}

// metricsMaxConns caps the operators' listener's connections: a Prometheus and a probe or two need few.
const metricsMaxConns = 64

// serveMetrics serves /metrics on the operators' listener, apart from the public port; stop closes it.
func serveMetrics(addr string, metrics http.Handler, log *slog.Logger) (net.Addr, func(), error) {
	return serveOperators(addr, metrics, nil, log)
}

// serveOperators serves the operators' listener: /metrics, /healthz and, when ready is given, /readyz
// (a worker has no public port to answer the probes on). Stop closes it.
func serveOperators(addr string, metrics, ready http.Handler, log *slog.Logger) (net.Addr, func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("METRICS_LISTEN %s: %w", addr, err)
	}
	// Capped and waiting out a full descriptor table: a flood of half-sent requests here must not take
	// the descriptors the public port and the services need (5,000 of them once did). Beyond the cap a
	// connection is answered at once and closed; an idle keep-alive one goes first.
	conns := connlimit.New(connlimit.Options{Total: metricsMaxConns, Log: log})
	cln := conns.Listen(ln)
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics)
	// Liveness apart from the public port: it answers while a flood holds every public connection.
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	if ready != nil {
		mux.Handle("GET /readyz", ready)
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute,
		ConnState: func(c net.Conn, st http.ConnState) {
			switch st {
			case http.StateIdle:
				conns.Idle(c)
			case http.StateActive:
				conns.Active(c)
			}
		}}
	go func() {
		if err := hs.Serve(cln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics listener stopped", "err", err)
		}
	}()
	log.Info("metrics for operators", "addr", "http://"+ln.Addr().String()+"/metrics")
	return ln.Addr(), func() { _ = hs.Close() }, nil
}

// logConnCaps says at start how many descriptors the process may hold and how many connections it
// takes, warning when the limit leaves less than the caps need.
func logConnCaps(log *slog.Logger, cfg Config, nofile uint64) {
	total := cfg.connCap(nofile)
	args := []any{"open_file_limit", nofile, "max_conns", total, "max_conns_per_addr", cfg.MaxConnsPerAddr,
		"header_timeout", cfg.HeaderTimeout, "idle_timeout", cfg.IdleTimeout}
	if len(cfg.proxies()) > 0 {
		args = append(args, "per_addr_exempt", cfg.TrustedProxies)
	}
	switch need := uint64(total) + uint64(connReserve(nofile)); {
	case need > nofile:
		log.Warn("the open-file limit is below what the connection caps need: accepts will fail and be waited out, and PostgreSQL or Redis may find no descriptor (raise ulimit -n / LimitNOFILE, or lower MAX_CONNS)",
			append(args, "needs", need)...)
	case nofile < 4096:
		log.Warn("the open-file limit is low for a sale's crowd: raise ulimit -n / LimitNOFILE (docs/reliability.md)", args...)
	default:
		log.Info("connections", args...)
	}
}

// openFileLimit is the process's limit of open descriptors (Go raises the soft limit to the hard one at
// start), or a common default when it cannot be read.
func openFileLimit() uint64 {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Cur == 0 {
		return 1024
	}
	return r.Cur
}

// serve answers on ln until ctx ends, then stops taking connections and gives the requests in flight up
// to timeout to finish. A listener that is not a connlimit one is wrapped in one without caps, so that
// a full descriptor table is waited out (fasthttp's own accept loop would return, ending the server).
func serve(ctx context.Context, f *fiber.App, ln net.Listener, timeout time.Duration) error {
	if _, ok := ln.(*connlimit.Listener); !ok {
		ln = connlimit.New(connlimit.Options{}).Listen(ln)
	}
	errc := make(chan error, 1)
	go func() { errc <- f.Listener(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("server: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := f.ShutdownWithContext(sctx); err != nil {
		return fmt.Errorf("graceful stop: %w", err)
	}
	// A stop that comes before the server has begun to serve finds nothing to shut down, and the
	// server would then serve on: closing the listener ends it either way.
	_ = ln.Close()
	if err := <-errc; err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

// probe asks url once and answers nil when it says 200: a health check for an image with no shell nor
// curl (the worker's /readyz on its operators' listener, or the public port's).
func probe(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	// The address itself must answer 200: a redirect to a page that does is not health.
	noRedirects := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirects.Do(req)
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("probe: %s answered %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

func runSandbox(ctx context.Context, env Env) error {
	cfg, err := LoadConfig(env.Getenv)
	if err != nil {
		return err
	}
	if cfg.RedisURL == "" {
		return fmt.Errorf("REDIS_URL is required: the sandbox keeps its payments in Redis")
	}
	if cfg.PaySecret == "" {
		return fmt.Errorf("PAY_SECRET is required: the sandbox signs its callbacks with it, and the shop checks them with the same")
	}
	log := newLogger(cfg, env.Stderr)
	rdb, _, err := openRedis(ctx, cfg)
	if err != nil {
		return err
	}
	defer rdb.Close()
	if cfg.PayProviderURL == "" {
		cfg.PayProviderURL = cfg.BaseURL + "/sandbox"
	}
	cfg.PaySandbox = false // alone, the sandbox signs with PAY_SECRET, which the shop shares
	f, err := newSandboxApp(cfg, rdb, log, time.Now)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.listenAddr())
	if err != nil {
		return fmt.Errorf("LISTEN_HOST and PORT %s: %w", cfg.listenAddr(), err)
	}
	log.Info("payment sandbox listening", "addr", ln.Addr().String(), "pay_urls", cfg.providerURL()+"/pay/{id}")
	return serve(ctx, f, ln, cfg.ShutdownTimeout)
}

// lanAddress is this machine's first private IPv4 address on a network ("" when it has none).
func lanAddress() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsPrivate() {
			return n.IP.String()
		}
	}
	return ""
}

// redisLog is go-redis's own log (a dial that failed, a Sentinel that named a new master) in the app's,
// at most a line a second past a burst of five: while a master is away it fails a dial per command, and
// the lines would grow with the crowd.
type redisLog struct {
	log     *slog.Logger
	every   *rate.Limiter
	dropped atomic.Int64
}

func (r *redisLog) Printf(ctx context.Context, format string, v ...any) {
	if !r.every.Allow() {
		r.dropped.Add(1)
		return
	}
	r.log.WarnContext(ctx, "redis: "+fmt.Sprintf(format, v...), "lines_dropped_since", r.dropped.Swap(0))
}
