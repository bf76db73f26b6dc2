// Package app is the composition root: configuration, wiring, the Fiber application with its middleware
// and its one route table, and the start and graceful stop of the server and its jobs.
package app

import (
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
	"seckill/handlers"
	"seckill/models"
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

// New builds the Fiber application: middleware, templates and the route table. A broken template fails here.
func New(cfg Config, d Deps) (*fiber.App, error) {
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

	// Whatever no route takes ends in the router's 404, which the error handler answers as the contract
	// says: JSON under /api, a page elsewhere.
	routes(f, cfg, d, files, reg)
	return f, nil
}

// routes is the one route table: it reads as a map of the site.
func routes(f *fiber.App, cfg Config, d Deps, files *assets.Set, reg *prometheus.Registry) {
	health := &handlers.Health{DB: d.DB, Redis: d.Redis}
	catalog := &handlers.Catalog{DB: d.DB, Now: d.Now}
	pages := &handlers.Pages{DB: d.DB, Now: d.Now}
	static := &handlers.Static{Files: files}

	f.Get("/healthz", health.Live)
	f.Get("/readyz", health.Ready)
	f.Get("/metrics", adaptor.HTTPHandler(promhttp.HandlerFor(reg, promhttp.HandlerOpts{})))
	f.Get("/assets/*", static.Serve)

	f.Get("/", pages.Home)

	api := f.Group("/api")
	api.Get("/activities", catalog.Activities)
	api.Get("/activities/:id", catalog.Activity)
	api.Get("/items/:id", catalog.Item)
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
