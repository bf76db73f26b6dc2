// Package app is the composition root: configuration, wiring, the Fiber application with its middleware
// and its one route table, and the start and graceful stop of the server and its jobs.
package app

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/bwmarrin/snowflake"
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/recover"
	"github.com/gofiber/template/html/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
	"github.com/valyala/fasthttp"
	"gorm.io/gorm"

	"seckill/assets"
	"seckill/auth"
	"seckill/captcha"
	"seckill/catalog"
	"seckill/handlers"
	"seckill/internal/connlimit"
	"seckill/internal/gate"
	"seckill/internal/geo"
	"seckill/jobs"
	"seckill/mail"
	"seckill/models"
	"seckill/orders"
	"seckill/payment"
	"seckill/payment/alipay"
	"seckill/payment/wechatpay"
	"seckill/pow"
	"seckill/ratelimit"
	"seckill/stock"
	"seckill/views"
)

// Deps are what the application runs on. Tests build them from the real services; serve opens them
// from the configuration.
type Deps struct {
	DB    *gorm.DB
	Redis redis.UniversalClient
	Log   *slog.Logger
	Now   func() time.Time // the clock; tests inject their own
	// PayClients are the HTTP clients of the named providers' SDKs (WeChat Pay, Alipay), by name; nil
	// for their own, with timeouts. Tests send the providers' hosts to their fakes.
	PayClients map[string]*http.Client
	// RedisFailover is Redis's options when Redis is reached through Sentinel (REDIS_URL with
	// master_name): the app's second client is a failover client of its own, made from them.
	RedisFailover *redis.FailoverOptions
}

// Server is the application and the background work it needs while it serves.
type Server struct {
	Fiber     *fiber.App
	Sessions  *auth.Sessions
	Ledger    *stock.Ledger
	Failover  *stock.Failover // holds the ledger's buys after a Redis failover until the books are checked
	Line      *stock.Line     // the waiting rooms, beside the ledger's stock
	Flags     *stock.Flags
	Answers   *stock.Answers
	Runs      *jobs.Runs
	Provider  *payment.Client    // the http protocol's client (the sandbox's, or PAY_PROVIDER_URL's)
	Providers *payment.Providers // the providers shoppers pay with (PAY_PROVIDERS), and their payments are at
	Hashing   *gate.Gate         // the turns of password hashing (a quarter of the cores)
	Drawing   *gate.Gate         // the turns of captcha drawing (half of the cores)
	Captchas  *captcha.Captchas
	Stops     *catalog.Stops     // the sales an admin has paused, in memory
	Metrics   http.Handler       // /metrics, for the operators' listener (METRICS_LISTEN), never the public one
	Conns     *connlimit.Limiter // the public port's connections: the caps, which are idle, the counts
	NoFile    uint64             // the open-file limit the caps were derived from

	// Orders makes every change of an order's life after the win, for the handlers and the jobs.
	Orders *orders.Service
	// Claims keeps which entrant gave each delivery address and phone, in sales of one entrant per address.
	Claims *stock.Claims
	// Refusals counts what each rule of who may take part refused, per item, for the fairness report.
	Refusals *stock.Refusals
	// Sifter keeps the joins' traces and finds the clusters of one person's many accounts (the shadow line).
	Sifter *stock.Sifter
	// Mail is the e-mail queue (sent by the worker role's mail worker); Emails the accounts' addresses
	// each instance keeps in memory for /api/me.
	Mail   *mail.Queue
	Emails *auth.Emails

	// The background jobs, each known by one name (jobs.OrderConsumerJob, ...) in Start, its rounds and
	// its lock.
	OrderConsumer *jobs.OrderConsumer
	Preheat       *jobs.Preheat
	PaymentPoll   *jobs.PaymentPoll
	UnpaidTimeout *jobs.UnpaidTimeout
	Refunds       *jobs.Refunds
	Reconcile     *jobs.Reconcile
	Queue         *jobs.Rooms
	Reminders     *jobs.Reminders

	edge     *edgeLog // nginx's edge log, counted (NGINX_EDGE_LOG); nil without one
	site     site     // the handlers the route table maps
	buyLimit *ratelimit.Local
	log      *slog.Logger
	closers  []func() error
}

// site is every handler of the route table.
type site struct {
	health   *handlers.Health
	static   *handlers.Static
	pages    *handlers.Pages
	accounts *handlers.Accounts
	qr       *handlers.QRLoginAPI
	catalog  *handlers.CatalogAPI
	buy      *handlers.Buy
	queue    *handlers.Queue
	report   *handlers.Report
	calendar *handlers.Calendar
	orders   *handlers.Orders
	book     *handlers.Addresses
	ship     *handlers.Fulfilment
	refunds  *handlers.AdminOrders
	images   *handlers.Images
	pay      *handlers.Payments
	merchant *handlers.Merchant
	admin    *handlers.Admin
	consoles *handlers.Consoles
	sandbox  *handlers.SandboxAPI // nil unless the sandbox is mounted (demo mode, PAY_SANDBOX=on)
	edge     *handlers.Edge       // nginx's figures for the admins (empty without nginx)
	altcha   *handlers.Altcha     // the proofs of work of registrations and joins
	shadow   *handlers.Shadow     // the admins' view of the flagged clusters, and their decisions
	appeals  *handlers.Appeals    // a shopper in a line asks a person to look; the admins answer
	clusters *handlers.ClustersPage
	email    *handlers.Email     // an account's e-mail address, its pages, and the demo's outbox
	reset    *handlers.Reset     // password reset by mail
	remind   *handlers.Reminders // "remind me" of an upcoming sale, and the reminders' unsubscribe page
}

// The workers Start runs beside the jobs, by name.
const (
	workerSessions     = "sessions"
	workerSoldOutFlags = "sold_out_flags"
	workerBuyLimiter   = "buy_limiter"
	workerBuyAnswers   = "buy_answers"
	workerCaptchaPool  = "captcha_pool"
	workerStops        = "stops"
	workerImages       = "images" // the stored images' names
	workerEdgeLog      = "nginx_edge_log"
	workerMail         = "mail"           // the mail queue's sender
	workerEmails       = "emails"         // the accounts' addresses in memory, following changes
	workerFailover     = "redis_failover" // holds the buys after a Redis failover until the books are checked
)

// workers is every worker Start knows, by name: the followers and caches beside the jobs. Which role
// runs which is roleWorkers' table (roles.go).
func (s *Server) workers() map[string]func(context.Context) error {
	workers := map[string]func(context.Context) error{
		workerSessions:        s.Sessions.Run,
		workerSoldOutFlags:    s.Flags.Run,
		workerBuyLimiter:      s.buyLimit.Run,
		workerBuyAnswers:      s.Answers.Run,
		workerCaptchaPool:     s.Captchas.Fill,
		workerStops:           s.Stops.Run,
		workerImages:          s.site.images.Run,
		jobs.OrderConsumerJob: s.OrderConsumer.Run,
		jobs.PreheatJob:       s.Preheat.Run,
		jobs.PaymentPollJob:   s.PaymentPoll.Run,
		jobs.UnpaidTimeoutJob: s.UnpaidTimeout.Run,
		jobs.RefundsJob:       s.Refunds.Run,
		jobs.ReconcileJob:     s.Reconcile.Run,
		jobs.QueueJob:         s.Queue.Run,
		workerMail:            s.Mail.Run,
		jobs.RemindersJob:     s.Reminders.Run,
		workerEmails:          s.Emails.Run,
		workerFailover:        s.Failover.Run,
	}
	if s.edge != nil {
		workers[workerEdgeLog] = s.edge.Run
	}
	return workers
}

// Close releases what NewServer opened (not the Deps, which belong to the caller).
func (s *Server) Close() error {
	var errs []error
	for _, c := range s.closers {
		errs = append(errs, c())
	}
	return errors.Join(errs...)
}

// nodeSeq hands out snowflake nodes to instances that were given none.
const nodeSeq = "sk:node-seq"

// mailPaceKey is the Redis key of the relay's rate, which every mail worker shares (MAIL_RATE).
const mailPaceKey = "sk:mail:pace"

// leaseNode returns cfg's NODE_ID, or the next node from a counter in Redis, so that instances started
// without one still make order numbers no other instance makes.
func leaseNode(ctx context.Context, cfg Config, rdb redis.UniversalClient) (int64, error) {
	if cfg.NodeID >= 0 {
		return cfg.NodeID, nil
	}
	n, err := rdb.Incr(ctx, nodeSeq).Result()
	if err != nil {
		return 0, fmt.Errorf("lease a NODE_ID from Redis: %w", err)
	}
	return (n - 1) % 1024, nil
}

// dedicatedClient is a second client on the same Redis, for the order consumer: its workers wait on
// blocking reads, and the buy endpoint must never queue behind them for a connection. Through Sentinel
// (failover not nil) it is a failover client of its own: a copy of the first's Options would share the
// first's dialer, which asks the first client's Sentinel watch for the master, and on a failover only
// the first's pool is cleared of connections to the old master (go-redis v9.23 sentinel.go:
// NewFailoverClient sets Options.Dialer to masterReplicaDialer(failover) and onFailover filters that
// client's pools only).
func dedicatedClient(rdb redis.UniversalClient, failover *redis.FailoverOptions) redis.UniversalClient {
	if failover != nil {
		o := *failover
		o.PoolSize = 256
		o.PushNotificationProcessor = nil // as below: each client registers its own
		return redis.NewFailoverClient(&o)
	}
	switch c := rdb.(type) {
	case *redis.Client:
		o := *c.Options()
		o.PoolSize = 256
		// The first client wrote its push processor into the options; shared, the second client's
		// handlers clash with the first's ("cannot overwrite existing handler" on every start).
		o.PushNotificationProcessor = nil
		return redis.NewClient(&o)
	case *redis.ClusterClient:
		o := *c.Options()
		o.PoolSize = 256
		return redis.NewClusterClient(&o)
	}
	return rdb
}

// New builds the Fiber application; tests that need no background work use it with app.Test.
func New(ctx context.Context, cfg Config, d Deps) (*fiber.App, error) {
	s, err := NewServer(ctx, cfg, d)
	if err != nil {
		return nil, err
	}
	return s.Fiber, nil
}

// Start loads what must be in memory before the first request and starts the background work: session
// changes, sold-out flags, the order consumer, preheating, the payment jobs. It all stops when ctx ends;
// the returned channel closes once it has. A caller may name the only workers it wants (a role's, see
// roleWorkers; tests name a few); a name that is none of them is an error.
func (s *Server) Start(ctx context.Context, only ...string) (<-chan struct{}, error) {
	workers := s.workers()
	if len(only) > 0 {
		chosen := map[string]func(context.Context) error{}
		for _, name := range only {
			run, ok := workers[name]
			if !ok {
				return nil, fmt.Errorf("start: no worker is named %q", name)
			}
			chosen[name] = run
		}
		workers = chosen
	}
	if err := s.Sessions.Load(ctx); err != nil {
		return nil, err
	}
	// The sales an admin has paused or ended are known before the first buy is answered.
	if err := s.Stops.Load(ctx); err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	for name, run := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := run(ctx); err != nil && ctx.Err() == nil {
				s.log.Error("background work stopped", "worker", name, "err", err)
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	return done, nil
}

// readBufferSize bounds a request's line and headers, which fasthttp reads into a buffer of this size
// (a connection's): nginx's large_client_header_buffers allows a line or a header of 8 KB. More answers
// 431 header_too_large.
const readBufferSize = 8 << 10

// NewServer builds the whole application: its domain parts, the jobs, the handlers, and the Fiber app with
// its middleware, templates and route table. A broken template fails here. ctx bounds its start-up I/O.
func NewServer(ctx context.Context, cfg Config, d Deps) (*Server, error) {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	// One clock: the timestamps GORM writes (created_at, updated_at) follow the injected clock, like every
	// other business time.
	now := d.Now
	d.DB = d.DB.Session(&gorm.Session{NowFunc: func() time.Time { return now().UTC() }})
	// Every statement the server sends is counted, by table and kind, and every transaction.
	reg := prometheus.NewRegistry()
	counted, err := countStatements(d.DB, newDBMetrics(reg))
	if err != nil {
		return nil, err
	}
	d.DB = counted
	if cfg.SessionSecret == "" {
		return nil, fmt.Errorf("SESSION_SECRET is empty")
	}
	files, engine, err := loadViews()
	if err != nil {
		return nil, err
	}
	nodeID, err := leaseNode(ctx, cfg, d.Redis)
	if err != nil {
		return nil, err
	}
	node, err := snowflake.NewNode(nodeID)
	if err != nil {
		return nil, fmt.Errorf("NODE_ID: %w", err)
	}

	ledger := stock.NewLedger(d.Redis, d.Now)
	ledger.GroupCommit(cfg.GroupCommit)
	waitForReplicas(ctx, cfg, d.Redis, ledger, d.Log)
	flags := stock.NewFlags(ledger, d.Redis, d.Log)
	consumerRedis := dedicatedClient(d.Redis, d.RedisFailover)
	consumerLedger := stock.NewLedger(consumerRedis, d.Now)
	sessions := auth.NewSessions(cfg.SessionSecret, cfg.SessionTTL, d.DB, d.Redis, d.Now, d.Log)
	sessions.LimitSessions(cfg.SessionMax)
	s := &Server{
		Sessions: sessions,
		Ledger:   ledger,
		Line:     stock.NewLine(ledger),
		Flags:    flags,
		OrderConsumer: &jobs.OrderConsumer{DB: d.DB, Ledger: consumerLedger, Flags: flags,
			Name: consumerName(nodeID), Log: d.Log, Now: d.Now, PayTimeout: cfg.PayTimeout, ClaimIdle: cfg.ClaimIdle, Keep: cfg.SaleKeep},
		Preheat:  &jobs.Preheat{DB: d.DB, Ledger: ledger, Window: cfg.PreheatWindow, Interval: 5 * time.Second, Now: d.Now, Log: d.Log},
		Answers:  stock.NewAnswers(d.Redis),
		buyLimit: ratelimit.NewLocal(20, 40),
		log:      d.Log,
	}
	if consumerRedis != d.Redis {
		s.closers = append(s.closers, consumerRedis.Close)
	}
	// After a failover the buys wait until the new master's books are checked (stock/failover.go): the
	// watch reads the masters and the books on the consumer's client, which its hold does not refuse.
	s.Failover = stock.NewFailover(ledger, consumerLedger, jobs.DBBooks{DB: d.DB}, d.Log)
	if c, ok := d.Redis.(*redis.Client); ok {
		// A take that fails while a connection broke may have run: answered unconfirmed (stock/breaks.go).
		c.AddHook(ledger.ConnHook())
		if d.RedisFailover != nil {
			c.AddHook(s.Failover.DialHook())
		}
	}

	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(failoverMetrics(s.Failover)...)
	s.Runs = jobs.NewRuns(d.Redis, reg, d.Now)
	s.Preheat.Runs = s.Runs
	s.Metrics = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	s.Provider = payment.NewClient(cfg.providerURL(), payment.APIKey(cfg.callbackSecret()), 3*time.Second)
	s.Claims = stock.NewClaims(d.Redis, cfg.PhoneRegion)
	s.Refusals = stock.NewRefusals(d.Redis)
	s.Sifter = stock.NewSifter(d.Redis, func(ctx context.Context, ids []int64) (map[int64]time.Time, error) {
		return models.UsersMadeAt(ctx, d.DB, ids)
	}, cfg.Shadow, cfg.ShadowLine)
	s.Line.Sift(s.Sifter)
	// The rooms' draw seeds are kept in the database, sealed, so that a Redis that lost a room reopens it
	// with the seed whose hash it published (stock/seeds.go).
	seedKey, err := cfg.lineSeedKey()
	if err != nil {
		return nil, err
	}
	seeds, err := stock.NewSeeds(models.DrawSeeds{DB: d.DB}, seedKey, d.Now, d.Log)
	if err != nil {
		return nil, fmt.Errorf("LINE_SEED_KEY: %w", err)
	}
	s.Line.KeepSeeds(seeds)
	s.Providers = payment.NewProviders()
	for _, name := range cfg.payProviderNames() {
		switch name {
		case payment.NameSandbox, payment.NameHTTP:
			s.Providers.Add(name, s.Provider)
		case payment.NameWeChat:
			wp, err := wechatpay.New(cfg.WeChatPay, d.PayClients[name])
			if err != nil {
				return nil, fmt.Errorf("WeChat Pay: %w", err)
			}
			s.closers = append(s.closers, func() error { wp.Stop(); return nil })
			s.Providers.Add(name, wp)
		case payment.NameAlipay:
			ap, err := alipay.New(cfg.Alipay, d.PayClients[name])
			if err != nil {
				return nil, fmt.Errorf("Alipay: %w", err)
			}
			s.Providers.Add(name, ap)
		}
	}
	s.Orders = &orders.Service{DB: d.DB, Providers: s.Providers, Ledger: ledger, Flags: flags, Claims: s.Claims,
		NotifyURL: cfg.BaseURL + handlers.NotifyPath, Now: d.Now, Log: d.Log}
	s.PaymentPoll = &jobs.PaymentPoll{DB: d.DB, Orders: s.Orders, Providers: s.Providers, Runs: s.Runs, Interval: cfg.PayPollInterval, Now: d.Now, Log: d.Log}
	s.Refunds = &jobs.Refunds{DB: d.DB, Providers: s.Providers, Runs: s.Runs, Interval: cfg.PayPollInterval, Now: d.Now, Log: d.Log}
	s.UnpaidTimeout = &jobs.UnpaidTimeout{DB: d.DB, Orders: s.Orders, Runs: s.Runs, Interval: 2 * time.Second, Now: d.Now, Log: d.Log}
	s.Reconcile = &jobs.Reconcile{DB: d.DB, Ledger: ledger, Runs: s.Runs, Interval: 10 * time.Second, Now: d.Now, Log: d.Log, Gauge: jobs.NewReconcileGauge(reg)}

	// Password hashes (a quarter of a core-second each) and captchas (about 1.5 ms) cost a core while
	// they run: each kind has turns of its own, a quarter and a half of the cores (at least one each), so
	// that a flood of either leaves buying cores, and a flood of logins cannot stop captchas (the way to
	// a purchase path) by holding every turn. A caller waits up to 3 s for a hash, 200 ms for a captcha,
	// then gets 429.
	s.Hashing = gate.New(max(runtime.NumCPU()/4, 1), 3*time.Second)
	s.Drawing = gate.New(max(runtime.NumCPU()/2, 1), 200*time.Millisecond)
	if err := s.buildSite(cfg, d, files, engine, node); err != nil {
		return nil, err
	}
	warnAtStart(ctx, cfg, d)
	reg.MustRegister(captchaMetrics(s.Captchas)...)
	reg.MustRegister(unconfirmedMetrics(ledger)...)
	var status *nginxStatus
	if cfg.NginxStatusURL != "" {
		status = newNginxStatus(cfg.NginxStatusURL)
		reg.MustRegister(status)
	}
	if cfg.NginxEdgeLog != "" {
		s.edge = newEdgeLog(cfg.NginxEdgeLog, d.Log)
		reg.MustRegister(s.edge)
	}
	s.site.edge = &handlers.Edge{Figures: edgeFigures(status, s.edge)}

	fcfg := fiber.Config{
		AppName:               "seckill",
		BodyLimit:             cfg.BodyLimit,
		ErrorHandler:          errorHandler(d.Log, d.Now),
		Views:                 engine,
		DisableStartupMessage: true,
		ReadBufferSize:        readBufferSize,
		WriteTimeout:          30 * time.Second,
	}
	connTimeouts(&fcfg, cfg)
	trustProxies(&fcfg, cfg.proxies())
	s.Fiber = fiber.New(fcfg)
	s.Fiber.Server().HeaderReceived = bodyTimeout(cfg.BodyTimeout, uploadLimit(cfg.BodyLimit, s.Sessions))
	s.NoFile = openFileLimit()
	s.Conns = connlimit.New(connlimit.Options{Total: cfg.connCap(s.NoFile), PerAddr: cfg.MaxConnsPerAddr,
		Exempt: cfg.proxyPrefixes(), Log: d.Log, CoarseDeadlines: true})
	s.Fiber.Server().ConnState = connStates(s.Conns)
	reg.MustRegister(connMetrics(s.Conns)...)
	s.Fiber.Use(newFront(newHTTPMetrics(reg), newAccessLog(d.Log, len(cfg.proxies()) > 0), cfg).handle)
	s.Fiber.Use(s.site.accounts.LoadSession)
	// Whatever no route takes ends in the router's 404, which the error handler answers as the contract
	// says: JSON under /api, a page elsewhere.
	routes(s.Fiber, &s.site)
	return s, nil
}

// openPlaces opens the location database GEOIP_DB names, closed with the server; nil without one.
func (s *Server) openPlaces(cfg Config) (handlers.Places, error) {
	if cfg.GeoIPDB == "" {
		return nil, nil
	}
	cities, err := geo.Open(cfg.GeoIPDB)
	if err != nil {
		return nil, fmt.Errorf("GEOIP_DB: %w", err)
	}
	s.closers = append(s.closers, cities.Close)
	return cities, nil
}

// emailsKept bounds the accounts' addresses each instance keeps for /api/me (about 100 bytes each).
const emailsKept = 100_000

// buildSite makes every handler of the route table from the server's parts.
func (s *Server) buildSite(cfg Config, d Deps, files *assets.Set, views fiber.Views, node *snowflake.Node) error {
	passwords, err := auth.NewPasswords(cfg.BcryptCost, s.Hashing)
	if err != nil {
		return err
	}
	shop := catalog.New(d.DB, d.Now, time.Second, d.Log)
	s.Stops = catalog.NewStops(shop, d.Redis, d.Log)
	s.Captchas = captcha.New(d.Redis, s.Drawing, 200*time.Millisecond, cfg.CaptchaPool)
	s.Queue = &jobs.Rooms{Catalog: shop, Line: s.Line, Ledger: s.Ledger, Flags: s.Flags, Stops: s.Stops, Interval: 200 * time.Millisecond, Now: d.Now, Log: d.Log,
		Admission: stock.Admission{Overbook: cfg.QueueOverbook, Rate: cfg.QueueRate, Turn: cfg.QueueTurn, SeenWithin: cfg.QueueTurnSeen}}
	s.Captchas.Expected = expectedShoppers(shop, s.Flags.SoldOut, d.Now, cfg.PreheatWindow)
	places, err := s.openPlaces(cfg)
	if err != nil {
		return err
	}
	work := pow.New(cfg.SessionSecret, cfg.PowMaxNumber, d.Redis, d.Now)
	s.Mail = &mail.Queue{DB: d.DB, Sender: cfg.mailSender(), Domain: mail.DomainOf(cfg.Mail.From), Rate: cfg.Mail.Rate, Now: d.Now, Log: d.Log}
	if cfg.Mail.Rate > 0 {
		// MAIL_RATE is the relay's, shared by every worker through Redis (in demo mode, the in-process one).
		s.Mail.Pace = ratelimit.NewPace(d.Redis, mailPaceKey, cfg.Mail.Rate, s.Mail.PaceBurst(), d.Log)
	}
	s.Mail.Prepare()
	s.Emails = auth.NewEmails(d.DB, d.Redis, emailsKept, d.Log)
	devices := auth.NewDevices(cfg.SessionSecret)
	accounts := &handlers.Accounts{
		DB: d.DB, Sessions: s.Sessions, CSRF: auth.NewCSRF(cfg.SessionSecret), Limits: ratelimit.NewShared(d.Redis),
		Passwords: passwords, Captchas: s.Captchas, Work: work, Emails: s.Emails, Mail: s.Mail,
		SecureCookies: cfg.SecureCookies(), RateLimitIP: cfg.RateLimitIP, SessionTTL: cfg.SessionTTL, ShopContact: cfg.ShopContact, Now: d.Now,
	}
	left := stock.NewLeftCache(s.Ledger, time.Second)
	books := jobs.DBBooks{DB: d.DB}
	cards := auth.NewAddressCards(cfg.SessionSecret)
	stats := &handlers.Live{DB: d.DB, Ledger: s.Ledger, Line: s.Line, Answers: s.Answers, Now: d.Now}
	saleStop := &handlers.SaleStop{Stops: s.Stops, DB: d.DB, Ledger: s.Ledger, Line: s.Line, Books: books, Now: d.Now}
	s.site = site{
		health:   &handlers.Health{DB: d.DB, Redis: d.Redis},
		static:   &handlers.Static{Files: files},
		pages:    &handlers.Pages{DB: d.DB, Catalog: shop, Left: left, Now: d.Now, Views: views, PhoneRegion: cfg.PhoneRegion, PayWith: cfg.payProviderNames()},
		accounts: accounts,
		qr:       &handlers.QRLoginAPI{Accounts: accounts, QR: auth.NewQRLogin(d.Redis, cfg.QRTTL, d.Now), BaseURL: cfg.BaseURL, Now: d.Now, Places: places},
		catalog:  &handlers.CatalogAPI{Catalog: shop, Left: left, Now: d.Now},
		buy: &handlers.Buy{
			Catalog: shop, Ledger: s.Ledger, Flags: s.Flags, Stops: s.Stops, Captchas: accounts.Captchas,
			Loader: &catalog.Loader{Catalog: shop, Stops: s.Stops, Ledger: s.Ledger, Books: books, Now: d.Now},
			Limits: accounts.Limits, BuyLimit: s.buyLimit, Answers: s.Answers, Orders: node, RateLimitIP: cfg.RateLimitIP, Now: d.Now,
			Refusals: s.Refusals,
		},
		report:   &handlers.Report{DB: d.DB, Line: s.Line, Refusals: s.Refusals, Now: d.Now},
		calendar: &handlers.Calendar{Catalog: shop, BaseURL: cfg.BaseURL},
		queue: &handlers.Queue{
			Catalog: shop, Ledger: s.Ledger, Line: s.Line, Watch: stock.NewWatch(s.Line, s.Flags, cfg.QueueRate), Stops: s.Stops, Left: left,
			Captchas: s.Captchas, Work: work, Limits: accounts.Limits, RateLimitIP: cfg.RateLimitIP, Now: d.Now,
			Places: auth.NewPlaces(cfg.SessionSecret), Turn: cfg.QueueTurn, Claims: s.Claims, Refusals: s.Refusals, DB: d.DB,
			Sifter: s.Sifter, Devices: devices, Cards: cards,
		},
		orders:   &handlers.Orders{DB: d.DB, Orders: s.Orders, Log: d.Log},
		book:     &handlers.Addresses{DB: d.DB, Orders: s.Orders, Limits: accounts.Limits, Claims: s.Claims, Cards: cards, PhoneRegion: cfg.PhoneRegion},
		ship:     &handlers.Fulfilment{DB: d.DB, Orders: s.Orders, Now: d.Now},
		refunds:  &handlers.AdminOrders{DB: d.DB, Orders: s.Orders, Refunds: s.Refunds, Now: d.Now},
		images:   handlers.NewImages(d.DB, d.Redis, d.Now, d.Log),
		pay:      &handlers.Payments{DB: d.DB, Orders: s.Orders, Providers: s.Providers, Secret: cfg.callbackSecret(), Now: d.Now, Log: d.Log},
		merchant: &handlers.Merchant{DB: d.DB, Stats: stats, ImageHosts: cfg.imageHostList(), Stop: saleStop, Now: d.Now},
		admin: &handlers.Admin{Catalog: shop, Stops: s.Stops, QueueOpens: cfg.QueueOpens, DB: d.DB, Ledger: s.Ledger, Stop: saleStop, Books: books, Stats: stats,
			PreheatWindow: cfg.PreheatWindow, Now: d.Now, Decided: (&mail.Decisions{Queue: s.Mail, BaseURL: cfg.BaseURL}).Decided},
		consoles: &handlers.Consoles{DB: d.DB, Stats: stats, Jobs: s.Runs, Books: s.Reconcile, Now: d.Now},
		altcha: &handlers.Altcha{Work: work, Catalog: shop, DB: d.DB, Devices: devices, SecureCookies: cfg.SecureCookies(), Limits: accounts.Limits,
			RateLimitIP: cfg.RateLimitIP, Now: d.Now},
		shadow:   &handlers.Shadow{Catalog: shop, Sifter: s.Sifter, Line: s.Line, DB: d.DB, Now: d.Now},
		appeals:  &handlers.Appeals{DB: d.DB, Catalog: shop, Line: s.Line, Limits: accounts.Limits, RateLimitIP: cfg.RateLimitIP, Now: d.Now},
		clusters: &handlers.ClustersPage{DB: d.DB, Now: d.Now},
	}
	s.site.email = &handlers.Email{DB: d.DB, Mail: s.Mail, Emails: s.Emails, Limits: accounts.Limits, Passwords: accounts.Passwords, BaseURL: cfg.BaseURL,
		RateLimitIP: cfg.RateLimitIP, Outbox: cfg.Demo, Now: d.Now}
	s.site.reset = &handlers.Reset{DB: d.DB, Mail: s.Mail, Sessions: s.Sessions, Passwords: passwords, Limits: accounts.Limits,
		BaseURL: cfg.BaseURL, RateLimitIP: cfg.RateLimitIP, Log: d.Log, ShopContact: cfg.ShopContact, Now: d.Now}
	s.site.reset.Prepare()
	links := mail.NewUnsubscribes(cfg.SessionSecret)
	s.Reminders = &jobs.Reminders{DB: d.DB, Mail: s.Mail, Links: links, Runs: s.Runs, BaseURL: cfg.BaseURL, Before: cfg.RemindBefore,
		Rate: cfg.Mail.Rate, Now: d.Now, Log: d.Log}
	s.site.remind = &handlers.Reminders{DB: d.DB, Emails: s.Emails, Links: links, Limits: accounts.Limits, Now: d.Now}
	s.Orders.Receipt = (&mail.Receipts{Queue: s.Mail, BaseURL: cfg.BaseURL}).Paid
	if cfg.PaySandbox {
		s.site.sandbox = newSandbox(cfg, d.Redis, accounts.Limits, cfg.BaseURL+"/sandbox", cfg.BaseURL+handlers.NotifyPath, d.Now)
	}
	return nil
}

// connTimeouts bounds how long a connection may hold its descriptor without sending: fasthttp sets
// ReadTimeout as the read deadline before each request's headers (HEADER_TIMEOUT: a client trickling a
// header a few seconds apart is closed), bodyTimeout gives the body its own once the headers are in, and
// IdleTimeout bounds a keep-alive connection waiting for its next request.
func connTimeouts(fc *fiber.Config, cfg Config) {
	fc.ReadTimeout = cfg.HeaderTimeout
	fc.IdleTimeout = cfg.IdleTimeout
}

// bodyTimeout gives a request's body d to arrive from the moment its headers have (an image upload
// from a phone may need it), keeping what next decides for the request.
func bodyTimeout(d time.Duration, next func(*fasthttp.RequestHeader) fasthttp.RequestConfig) func(*fasthttp.RequestHeader) fasthttp.RequestConfig {
	return func(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
		var rc fasthttp.RequestConfig
		if next != nil {
			rc = next(h)
		}
		if rc.ReadTimeout == 0 {
			rc.ReadTimeout = d
		}
		return rc
	}
}

// connStates tells the connection limiter which connections wait idle between requests: those are
// the first closed when the total cap is reached.
func connStates(l *connlimit.Limiter) func(net.Conn, fasthttp.ConnState) {
	return func(c net.Conn, st fasthttp.ConnState) {
		switch st {
		case fasthttp.StateIdle:
			l.Idle(c)
		case fasthttp.StateActive:
			l.Active(c)
		}
	}
}

// connMetrics show the public port's connections: open, idle, shed and refused, and accepts retried.
func connMetrics(l *connlimit.Limiter) []prometheus.Collector {
	gauge := func(name, help string, f func(connlimit.Stats) int) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return float64(f(l.Stats())) })
	}
	counter := func(name, help string, labels prometheus.Labels, f func(connlimit.Stats) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels},
			func() float64 { return float64(f(l.Stats())) })
	}
	const refused = "Connections turned away at once: beyond the total cap with none idle (503), or beyond an address's share (429)."
	return []prometheus.Collector{
		gauge("seckill_connections_open", "Connections open on the public port.", func(s connlimit.Stats) int { return s.Open }),
		gauge("seckill_connections_idle", "Keep-alive connections waiting for their next request.", func(s connlimit.Stats) int { return s.Idle }),
		counter("seckill_connections_shed_total", "Idle keep-alive connections closed to admit a new one beyond the total cap.", nil,
			func(s connlimit.Stats) uint64 { return s.Shed }),
		counter("seckill_connections_refused_total", refused, prometheus.Labels{"cap": "total"}, func(s connlimit.Stats) uint64 { return s.RefusedTotal }),
		counter("seckill_connections_refused_total", refused, prometheus.Labels{"cap": "address"}, func(s connlimit.Stats) uint64 { return s.RefusedAddr }),
		counter("seckill_accept_retries_total", "Accepts that failed for a passing reason (no descriptor left, a connection aborted) and were tried again.", nil,
			func(s connlimit.Stats) uint64 { return s.AcceptRetries }),
	}
}

// trustProxies makes c.IP() (the per-address limits, the access log) the client's address that a trusted
// proxy sets in X-Real-IP. The header of a request that does not come from one of proxies is ignored, and
// so is one that holds no valid address: the connection's own address counts then.
func trustProxies(fc *fiber.Config, proxies []string) {
	if len(proxies) == 0 {
		return
	}
	fc.EnableTrustedProxyCheck = true
	fc.TrustedProxies = proxies
	fc.ProxyHeader = "X-Real-IP"
	fc.EnableIPValidation = true
}

// consumerName names this instance in the order streams' consumer group.
func consumerName(node int64) string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s-%d-node%d", host, os.Getpid(), node)
}

// routes is the one route table: it reads as a map of the site.
func routes(f *fiber.App, h *site) {
	health, static, pages, accounts, qr, catalog := h.health, h.static, h.pages, h.accounts, h.qr, h.catalog
	buy, queue, orders, pay, merchant, admin, consoles := h.buy, h.queue, h.orders, h.pay, h.merchant, h.admin, h.consoles
	user := handlers.RequireUser
	merchantOnly := handlers.RequireRole(models.RoleMerchant)
	adminOnly := handlers.RequireRole(models.RoleAdmin)

	f.Get("/healthz", health.Live)
	f.Get("/readyz", health.Ready)
	f.Get("/assets/*", static.Serve)
	f.Get("/images/:name", h.images.Serve)
	f.Get("/favicon.ico", static.Favicon)

	f.Get("/", pages.Home)
	f.Get("/items/:id", pages.Item)
	f.Get("/orders", pages.Orders)
	f.Get("/orders/:order_no", pages.Order)
	f.Get("/account", pages.Account)
	f.Get("/account/addresses", pages.Addresses)
	f.Get("/lang/:lang", pages.SetLang)
	f.Get("/merchant", consoles.MerchantHome)
	f.Get("/merchant/activities/:id", consoles.MerchantActivity)
	f.Get("/merchant/activities/:id/live", consoles.MerchantLive)
	f.Get("/merchant/activities/:id/orders", h.ship.Page)
	f.Get("/merchant/activities/:id/chart.svg", consoles.MerchantChart)
	f.Get("/admin", consoles.AdminHome)
	f.Get("/admin/activities/:id/live", consoles.AdminLive)
	f.Get("/admin/activities/:id/chart.svg", consoles.AdminChart)
	f.Get("/admin/users", consoles.AdminUsers)
	f.Get("/admin/audit", consoles.AdminAudit)
	f.Get("/admin/orders", h.refunds.Page)
	f.Get("/login", pages.Login)
	f.Get("/register", pages.Register)
	f.Get("/account/email", h.email.AccountEmail)
	f.Get("/verify-email", h.email.VerifyPage)
	f.Get("/forgot", h.reset.ForgotPage)
	f.Get("/reset", h.reset.ResetPage)
	f.Get("/outbox", h.email.OutboxPage) // demo mode only: 404 elsewhere
	f.Get("/m/qr/:id", pages.QRPhone)
	f.Get("/activities/:id/report", h.report.Page)

	// A sold-out item's buys and paths are answered before the session, CSRF and limit checks (the
	// contract lets them); OnSale publishes the decision for nginx.
	f.Post("/api/items/:id/path", buy.SoldOutFirst)
	f.Post("/api/items/:id/buy/:path", buy.SoldOutFirst)
	f.Get("/api/items/:id/on-sale", buy.OnSale)

	api := f.Group("/api", accounts.RequireCSRF)
	// The crowd's routes first: Fiber tries a request's routes in the order they were added (each a
	// pattern match), and these are most of what a sale's crowd asks.
	api.Get("/items/:id/queue", user, queue.Status)
	api.Get("/items/:id/line", queue.PublicLine) // public and cacheable: no session needed, no cookie set
	api.Post("/items/:id/buy/:path", user, buy.Take)
	api.Post("/items/:id/path", user, buy.Path)
	api.Get("/items/:id/result", user, buy.Result)
	api.Get("/items/:id", catalog.Item)
	api.Get("/me", user, accounts.Me)
	api.Get("/me/sessions", user, accounts.ListSessions)
	api.Delete("/me/sessions/:id", user, accounts.EndSession)
	api.Post("/me/sessions/end-others", user, accounts.EndOtherSessions)
	api.Post("/me/password", user, accounts.ChangePassword)
	api.Get("/csrf", accounts.CSRFToken)
	api.Post("/auth/register", accounts.Register)
	api.Post("/auth/login", accounts.Login)
	api.Post("/auth/logout", accounts.Logout)
	api.Post("/me/email", user, h.email.SetEmail)
	api.Post("/auth/verify-email", h.email.VerifyEmail)
	api.Post("/auth/password-reset", h.reset.Ask)
	api.Post("/auth/password-reset/confirm", h.reset.Confirm)

	api.Post("/qr/login", qr.Create)
	api.Get("/qr/login/:id", qr.State)
	api.Post("/qr/login/:id/scan", user, qr.Scan)
	api.Post("/qr/login/:id/confirm", user, qr.Confirm)
	api.Post("/qr/login/:id/cancel", user, qr.Cancel)

	api.Get("/activities", catalog.Activities)
	api.Get("/activities/:id", catalog.Activity)
	api.Get("/activities/:id/report", h.report.Activity)
	api.Get("/activities/:id/calendar.ics", h.calendar.Activity)
	api.Post("/activities/:id/reminder", user, h.remind.Add)
	api.Delete("/activities/:id/reminder", user, h.remind.Delete)
	api.Get("/me/reminders", user, h.remind.Mine)
	f.Get("/unsubscribe", h.remind.UnsubscribePage)
	f.Post("/unsubscribe", h.remind.Unsubscribe) // the token is the authority: the page's button and a mail client's one-click

	api.Get("/captcha", buy.Captcha)
	api.Get("/altcha", h.altcha.Challenge)
	api.Get("/captcha/:id/audio", buy.CaptchaAudio)
	api.Post("/items/:id/queue", user, queue.Join)
	api.Get("/items/:id/draw", queue.Draw)

	api.Get("/orders", user, orders.List)
	api.Get("/orders/:order_no", user, orders.Get)
	api.Post("/orders/:order_no/address", user, h.book.Choose)
	api.Post("/orders/:order_no/cancel", user, orders.Cancel)
	api.Post("/orders/:order_no/pay", user, pay.Pay)
	api.Get("/addresses", user, h.book.List)
	api.Post("/addresses", user, h.book.Add)
	api.Put("/addresses/:id", user, h.book.Update)
	api.Delete("/addresses/:id", user, h.book.Delete)
	api.Post("/payments/notify", pay.Notify)
	api.Post("/payments/notify/:provider", pay.NotifyFrom)

	// The built-in payment provider, as another site would serve it (seckill sandbox-pay serves it alone):
	// in demo mode or with PAY_SANDBOX=on only, never beside a real provider.
	if h.sandbox != nil {
		sandboxRoutes(f.Group("/sandbox"), h.sandbox)
	}

	m := api.Group("/merchant", merchantOnly)
	m.Get("/activities", merchant.Activities)
	m.Post("/activities", merchant.Create)
	m.Get("/activities/:id", merchant.Activity)
	m.Put("/activities/:id", merchant.Update)
	m.Post("/activities/:id/items", merchant.AddItem)
	m.Put("/activities/:id/items/:item", merchant.UpdateItem)
	m.Delete("/activities/:id/items/:item", merchant.DeleteItem)
	m.Post("/activities/:id/items/:item/image", h.images.Upload)
	m.Delete("/activities/:id/items/:item/image", h.images.Remove)
	m.Post("/activities/:id/submit", merchant.Submit)
	m.Post("/activities/:id/withdraw", merchant.Withdraw)
	m.Get("/decisions", merchant.Decisions)
	m.Post("/activities/:id/pause", merchant.Pause)
	m.Post("/activities/:id/resume", merchant.Resume)
	m.Post("/activities/:id/end", merchant.End)
	m.Get("/activities/:id/stats", merchant.ActivityStats)
	m.Get("/activities/:id/orders", h.ship.ActivityOrders)
	m.Get("/activities/:id/orders.csv", h.ship.ActivityOrdersCSV)
	m.Post("/activities/:id/shipments", h.ship.Shipments)
	m.Post("/orders/:order_no/ship", h.ship.Ship)

	a := api.Group("/admin", adminOnly)
	a.Get("/reviews", admin.Reviews)
	a.Post("/activities/:id/approve", admin.Approve)
	a.Post("/activities/:id/reject", admin.Reject)
	a.Post("/activities/:id/pause", admin.Pause)
	a.Post("/activities/:id/resume", admin.Resume)
	a.Post("/activities/:id/end", admin.End)
	a.Get("/activities/:id/stats", admin.ActivityStats)
	a.Get("/items/:id/clusters", h.shadow.Clusters)
	a.Post("/items/:id/clusters/:key/clear", h.shadow.Clear)
	a.Post("/items/:id/clusters/:key/confirm", h.shadow.Confirm)
	a.Get("/edge", h.edge.Get)
	a.Get("/users", admin.Users)
	a.Post("/users/:id/role", accounts.SetRole)
	a.Post("/users/:id/block", accounts.Block)
	a.Post("/users/:id/unblock", accounts.Unblock)
	a.Get("/audit", admin.Audit)
	a.Get("/orders", h.refunds.List)
	a.Get("/orders/:order_no", h.refunds.Order)
	a.Post("/orders/:order_no/refund", h.refunds.Refund)
	a.Post("/orders/:order_no/refunds/retry", h.refunds.RetryRefunds)

	// Appeals (one person, one chance): a shopper in a queue sale's line asks a person to look; the
	// admins read and answer them.
	api.Post("/items/:id/appeal", user, h.appeals.Create)
	api.Get("/items/:id/appeal", user, h.appeals.Mine)
	a.Get("/appeals", h.appeals.List)
	a.Post("/appeals/:id/answer", h.appeals.Answer)
	f.Get("/admin/appeals", h.appeals.Page)
	f.Get("/admin/items/:id/clusters", h.clusters.Page) // its clusters and their evidence, from the lead's clusters API
}

// loadViews reads the assets and parses every template, so that a broken one fails at start.
func loadViews() (*assets.Set, *html.Engine, error) {
	files, err := assets.Load()
	if err != nil {
		return nil, nil, fmt.Errorf("assets: %w", err)
	}
	engine := html.NewFileSystem(http.FS(views.FS), ".html")
	engine.AddFuncMap(templateFuncs(files))
	if err := engine.Load(); err != nil {
		return nil, nil, fmt.Errorf("templates: %w", err)
	}
	return files, engine, nil
}

// newSandboxApp is the payment sandbox alone (seckill sandbox-pay): the provider's API and pages, for
// running the provider as the separate service a real one is.
func newSandboxApp(cfg Config, rdb redis.UniversalClient, log *slog.Logger, now func() time.Time) (*fiber.App, error) {
	files, engine, err := loadViews()
	if err != nil {
		return nil, err
	}
	fcfg := fiber.Config{AppName: "seckill-sandbox-pay", BodyLimit: cfg.BodyLimit, ErrorHandler: errorHandler(log, now),
		Views: engine, DisableStartupMessage: true, WriteTimeout: 30 * time.Second}
	connTimeouts(&fcfg, cfg)
	trustProxies(&fcfg, cfg.proxies()) // behind a proxy, the payer's limit counts the payer's address
	f := fiber.New(fcfg)
	f.Server().HeaderReceived = bodyTimeout(cfg.BodyTimeout, nil)
	f.Use(recover.New())
	f.Use(securityHeaders(cfg))
	static := &handlers.Static{Files: files}
	f.Get("/assets/*", static.Serve)
	sandboxRoutes(f.Group("/sandbox"), newSandbox(cfg, rdb, ratelimit.NewShared(rdb), cfg.providerURL(), cfg.PayNotifyURL, now))
	return f, nil
}

// newSandbox is the payment sandbox served at baseURL, calling the shop back at notifyURL.
func newSandbox(cfg Config, rdb redis.UniversalClient, limits *ratelimit.Shared, baseURL, notifyURL string, now func() time.Time) *handlers.SandboxAPI {
	secret := cfg.callbackSecret()
	return &handlers.SandboxAPI{Pay: payment.NewSandbox(rdb, baseURL, secret, notifyURL, now), Key: payment.APIKey(secret),
		Limits: limits, RateLimitIP: cfg.RateLimitIP, Now: now}
}

// sandboxRoutes are the provider's routes, under /sandbox wherever it is served: its API for merchants
// (with their API key), and the payer's page.
func sandboxRoutes(r fiber.Router, sandbox *handlers.SandboxAPI) {
	api := r.Group("/api", sandbox.RequireKey)
	api.Post("/payments", sandbox.Create)
	api.Get("/payments/:id", sandbox.Query)
	api.Post("/payments/:id/close", sandbox.Close)
	api.Post("/payments/:id/refund", sandbox.Refund)
	r.Get("/pay/:id", sandbox.Page)
	r.Post("/pay/:id/confirm", sandbox.Confirm)
	r.Post("/pay/:id/cancel", sandbox.Cancel)
}

func templateFuncs(files *assets.Set) template.FuncMap {
	return template.FuncMap{
		"asset": files.URL,
		"rfc3339": func(t any) string {
			switch t := t.(type) {
			case time.Time:
				return t.UTC().Format(time.RFC3339)
			case *time.Time:
				if t != nil {
					return t.UTC().Format(time.RFC3339)
				}
			}
			return ""
		},
		"list": func(v ...string) []string { return v },
		// dict passes several values to a template: dict "A" .Activity "Tr" $.Tr.
		"dict": func(kv ...any) map[string]any {
			m := make(map[string]any, len(kv)/2)
			for i := 0; i+1 < len(kv); i += 2 {
				m[kv[i].(string)] = kv[i+1]
			}
			return m
		},
		"money": func(cents int64) string { return fmt.Sprintf("¥%d.%02d", cents/100, cents%100) },
		// uploadMax is the largest upload a merchant sends, in bytes, for the pages to check before sending.
		"uploadMax": func() int { return handlers.MaxUpload },
		"percent": func(part, whole int64) int64 {
			if whole <= 0 {
				return 0
			}
			return part * 100 / whole
		},
	}
}

// shoppersPerUnit is how many shoppers a sale is expected to draw per unit of stock, for drawing
// captchas ahead of it.
const shoppersPerUnit = 20

// expectedShoppers estimates, from the catalog, how many shoppers the sales running or starting within
// lead will bring: the captcha pool fills to that many before they arrive. An item that sold out brings
// none (its shoppers get no purchase path, so no captcha): a pool that kept drawing for it would take a
// fifth of the server's CPU from the crowd still being answered (the profile is in docs/performance.md).
// It looks again every five seconds at most (by the wall clock: an interval).
func expectedShoppers(shop *catalog.Catalog, soldOut func(itemID int64) bool, now func() time.Time, lead time.Duration) func() int {
	var mu sync.Mutex
	var n int
	var at time.Time
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(at) < 5*time.Second {
			return n
		}
		at = time.Now()
		snap, err := shop.Snapshot(context.Background())
		if err != nil {
			return n
		}
		t := now()
		n = 0
		for _, a := range snap.Open(t) {
			if a.StartsAt.After(t.Add(lead)) {
				continue
			}
			for _, it := range a.Items {
				if !soldOut(it.ID) {
					n += int(min(it.StockTotal, 1_000_000)) * shoppersPerUnit
				}
			}
		}
		return n
	}
}

// failoverMetrics show the Redis failovers this instance saw and the hold of buys after each (an alert on
// the held gauge staying 1 says the books cannot be checked: the database is away, say).
func failoverMetrics(f *stock.Failover) []prometheus.Collector {
	seen := func() float64 { n, _, _ := f.Stats(); return float64(n) }
	last := func() float64 { _, d, _ := f.Stats(); return d.Seconds() }
	held := func() float64 {
		if _, _, h := f.Stats(); h {
			return 1
		}
		return 0
	}
	return []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "seckill_redis_failovers_total",
			Help: "Redis master changes this instance saw (a failover, or a master restarted): each holds the buys until the books are checked."}, seen),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "seckill_redis_failover_hold_seconds",
			Help: "How long the buys were held after the last Redis master change, until the books were checked."}, last),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "seckill_redis_failover_held",
			Help: "1 while the buys are held after a Redis master change."}, held),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "seckill_redis_failover_replayed_total",
			Help: "Takes this instance answered that a new master lacked after a failover, taken again from its journal."},
			func() float64 { n, _ := f.Replays(); return float64(n) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "seckill_redis_failover_lost_total",
			Help: "Takes this instance answered that a new master lacked and had no unit left to take again: promises broken (alert on any)."},
			func() float64 { _, n := f.Replays(); return float64(n) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "seckill_redis_failover_unmet_total",
			Help: "Holds after a failover lifted after the bound with another live instance still not done checking the books (dead or stuck): a journalled buyer of that instance may find their unit sold."},
			func() float64 { return float64(f.Unmet()) }),
	}
}

// captchaMetrics show the captcha pool: how many it holds, and how the captchas handed out came.
func captchaMetrics(c *captcha.Captchas) []prometheus.Collector {
	held := func() float64 { n, _, _ := c.PoolStats(); return float64(n) }
	fromPool := func() float64 { _, n, _ := c.PoolStats(); return float64(n) }
	onDemand := func() float64 { _, _, n := c.PoolStats(); return float64(n) }
	handed := func(from string, f func() float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "seckill_captchas_handed_out_total",
			Help: "Captchas handed out, from the pool drawn ahead of need or drawn on demand.", ConstLabels: prometheus.Labels{"from": from}}, f)
	}
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "seckill_captcha_pool", Help: "Captchas drawn ahead of need and not handed out yet."}, held),
		handed("pool", fromPool), handed("demand", onDemand),
	}
}

// waitForReplicas sets how many replicas each buy's batch waits for, and how long (REDIS_WAIT_REPLICAS,
// REDIS_WAIT_TIMEOUT): auto waits for 1 once every master has a replica, asked now and, while none is
// seen, again as the shop runs (a replica that comes later is waited for; stock.WaitReplicasAuto says
// why one lost later is still waited for). A count beyond the replicas there are answers every buyer
// unconfirmed: said in the log.
func waitForReplicas(ctx context.Context, cfg Config, rdb redis.UniversalClient, ledger *stock.Ledger, log *slog.Logger) {
	ledger.LogWaits(log)
	ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if cfg.RedisWaitReplicas == RedisWaitAuto {
		switch have, err := ledger.WaitReplicasAuto(ictx, cfg.RedisWaitTimeout); {
		case err != nil && cfg.Demo: // the demo's in-process Redis has no replicas, nor says so: asked no more
			ledger.WaitReplicas(0, cfg.RedisWaitTimeout)
		case err != nil:
			log.Warn("Redis did not say how many replicas it has: buys wait for none until it does", "err", err)
		case have < 1:
			log.Info("REDIS_WAIT_REPLICAS=auto: a Redis master has no replica; buys wait for none until each has one")
		} // else the ledger said that buys wait for one
		return
	}
	n := cfg.RedisWaitReplicas
	have, err := stock.ReplicasOf(ictx, rdb)
	switch {
	case err != nil:
		if !cfg.Demo {
			log.Warn("Redis did not say how many replicas it has", "err", err)
		}
	case n > have:
		log.Warn("REDIS_WAIT_REPLICAS asks for more replicas than a Redis master has: every buy will be answered unconfirmed", "replicas", n, "connected", have)
	}
	ledger.WaitReplicas(n, cfg.RedisWaitTimeout)
	if n > 0 {
		log.Info("buys wait for Redis replicas", "replicas", n, "timeout", cfg.RedisWaitTimeout)
	}
}
