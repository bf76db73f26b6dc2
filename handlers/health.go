package handlers

import (
	"context"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"seckill/errs"
)

// Health answers the liveness and readiness probes.
type Health struct {
	DB    *gorm.DB
	Redis redis.UniversalClient
}

// Live answers 200 while the process runs.
func (h *Health) Live(c *fiber.Ctx) error {
	return c.JSON(fiber.Map{"status": "ok"})
}

// Ready answers 200 when the database and Redis answer, else 503 naming each that failed.
func (h *Health) Ready(c *fiber.Ctx) error {
	ctx, cancel := context.WithTimeout(c.UserContext(), 2*time.Second)
	defer cancel()
	checks := fiber.Map{"database": "ok", "redis": "ok"}
	var failed []string
	if err := pingDB(ctx, h.DB); err != nil {
		checks["database"] = "unreachable"
		failed = append(failed, "database")
	}
	if err := h.Redis.Ping(ctx).Err(); err != nil {
		checks["redis"] = "unreachable"
		failed = append(failed, "redis")
	}
	if len(failed) > 0 {
		msg := failed[0]
		if len(failed) == 2 {
			msg += " and " + failed[1]
		}
		return c.Status(fiber.StatusServiceUnavailable).JSON(fiber.Map{
			"error":   errs.NotReady,
			"message": msg + " did not answer",
			"checks":  checks,
		})
	}
	return c.JSON(fiber.Map{"status": "ok", "checks": checks})
}

func pingDB(ctx context.Context, db *gorm.DB) error {
	sqlDB, err := db.DB()
	if err != nil {
		return err
	}
	return sqlDB.PingContext(ctx)
}
