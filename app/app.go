// Package app is the composition root: configuration, wiring, the Fiber application with its middleware
// and its one route table, and the start and graceful stop of the server and its jobs.
package app

import (
	"context"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/gofiber/fiber/v2/middleware/recover"
	"github.com/gofiber/fiber/v2/middleware/requestid"
	"github.com/gofiber/template/html/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"seckill/assets"
	"seckill/auth"
	"seckill/handlers"
	"seckill/models"
	"seckill/ratelimit"
	"seckill/views"
)

// Deps are what the application runs on. Tests build them from the real services; serve opens them
// from the configuration.
type Deps struct {
	DB    *gorm.DB
	Redis redis.UniversalClient
	Log   *slog.Logger
	Now   func() time.Time // the clock; tests inject their own
}

// Server is the application and the background work it needs while it serves.
type Server struct {
	Fiber    *fiber.App
	Sessions *auth.Sessions
}

// New builds the Fiber application; tests that need no background work use it with app.Test.
func New(cfg Config, d Deps) (*fiber.App, error) {
	s, err := NewServer(cfg, d)
	if err != nil {
		return nil, err
	}
	return s.Fiber, nil
}

// Start loads what must be in memory before the first request and starts the background work, which
// stops when ctx ends; wait on the returned channel for it to have stopped.
func (s *Server) Start(ctx context.Context) (<-chan struct{}, error) {
	if err := s.Sessions.Load(ctx); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Sessions.Run(ctx)
	}()
	return done, nil
}

// NewServer builds the Fiber application: middleware, templates and the route table. A broken template
// fails here.
func NewServer(cfg Config, d Deps) (*Server, error) {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	files, err := assets.Load()
	if err != nil {
		return nil, fmt.Errorf("assets: %w", err)
	}
	engine := html.NewFileSystem(http.FS(views.FS), ".html")
	engine.AddFuncMap(templateFuncs(files))
	if err := engine.Load(); err != nil {
		return nil, fmt.Errorf("templates: %w", err)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	f := fiber.New(fiber.Config{
		AppName:               "seckill",
		BodyLimit:             cfg.BodyLimit,
		ErrorHandler:          errorHandler(d.Log, d.Now),
		Views:                 engine,
		DisableStartupMessage: true,
		ReadTimeout:           30 * time.Second,
		WriteTimeout:          30 * time.Second,
		IdleTimeout:           120 * time.Second,
	})
	f.Use(requestid.New())
	f.Use(observe(newHTTPMetrics(reg), d.Log))
	f.Use(recover.New())

	if cfg.SessionSecret == "" {
		return nil, fmt.Errorf("SESSION_SECRET is empty")
	}
	srv := &Server{Fiber: f, Sessions: auth.NewSessions(cfg.SessionSecret, cfg.SessionTTL, d.DB, d.Redis, d.Now, d.Log)}
	accounts, err := handlers.NewAccounts(handlers.Accounts{
		DB: d.DB, Sessions: srv.Sessions, CSRF: auth.NewCSRF(cfg.SessionSecret), Limits: ratelimit.NewShared(d.Redis),
		BcryptCost: cfg.BcryptCost, SecureCookies: cfg.SecureCookies(), RateLimitIP: cfg.RateLimitIP, SessionTTL: cfg.SessionTTL,
	})
	if err != nil {
		return nil, err
	}
	f.Use(accounts.LoadSession)

	// Whatever no route takes ends in the router's 404, which the error handler answers as the contract
	// says: JSON under /api, a page elsewhere.
	routes(f, cfg, d, files, reg, accounts)
	return srv, nil
}

// routes is the one route table: it reads as a map of the site.
func routes(f *fiber.App, cfg Config, d Deps, files *assets.Set, reg *prometheus.Registry, accounts *handlers.Accounts) {
	health := &handlers.Health{DB: d.DB, Redis: d.Redis}
	catalog := &handlers.Catalog{DB: d.DB, Now: d.Now}
	pages := &handlers.Pages{DB: d.DB, Now: d.Now}
	static := &handlers.Static{Files: files}
	qr := &handlers.QRLogin{Accounts: accounts, QR: auth.NewQRLogin(d.Redis, cfg.QRTTL, d.Now), BaseURL: cfg.BaseURL, Now: d.Now}
	merchant := &handlers.Merchant{DB: d.DB, Now: d.Now}
	user := handlers.RequireUser
	merchantOnly := handlers.RequireRole(models.RoleMerchant)
	adminOnly := handlers.RequireRole(models.RoleAdmin)

	f.Get("/healthz", health.Live)
	f.Get("/readyz", health.Ready)
	f.Get("/metrics", adaptor.HTTPHandler(promhttp.HandlerFor(reg, promhttp.HandlerOpts{})))
	f.Get("/assets/*", static.Serve)

	f.Get("/", pages.Home)
	f.Get("/login", pages.Login)
	f.Get("/register", pages.Register)
	f.Get("/m/qr/:id", pages.QRPhone)

	api := f.Group("/api", accounts.RequireCSRF)
	api.Get("/csrf", accounts.CSRFToken)
	api.Post("/auth/register", accounts.Register)
	api.Post("/auth/login", accounts.Login)
	api.Post("/auth/logout", accounts.Logout)
	api.Get("/me", user, accounts.Me)

	api.Post("/qr/login", qr.Create)
	api.Get("/qr/login/:id", qr.State)
	api.Post("/qr/login/:id/scan", user, qr.Scan)
	api.Post("/qr/login/:id/confirm", user, qr.Confirm)
	api.Post("/qr/login/:id/cancel", user, qr.Cancel)

	api.Get("/activities", catalog.Activities)
	api.Get("/activities/:id", catalog.Activity)
	api.Get("/items/:id", catalog.Item)

	api.Get("/merchant/activities", merchantOnly, merchant.Activities)

	api.Post("/admin/users/:id/role", adminOnly, accounts.SetRole)
}

func templateFuncs(files *assets.Set) template.FuncMap {
	return template.FuncMap{
		"asset":   files.URL,
		"rfc3339": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		"money":   func(cents int64) string { return fmt.Sprintf("¥%d.%02d", cents/100, cents%100) },
		"stockLeft": func(it models.Item) int64 {
			return handlers.StockLeft(&it)
		},
		"stockPercent": func(it models.Item) int64 {
			if it.StockTotal <= 0 {
				return 0
			}
			return handlers.StockLeft(&it) * 100 / it.StockTotal
		},
	}
}
