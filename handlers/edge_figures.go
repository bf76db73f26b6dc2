package handlers

import (
	"context"

	"github.com/gofiber/fiber/v2"
)

// EdgeFigures are what nginx in front of the instances did, for the admins' live dashboard: its
// connections and requests (its stub_status page) and what it answered itself (its edge log). The
// same for every sale: nginx's cache and sold-out answers are counted over all of them.
type EdgeFigures struct {
	Status     bool              `json:"status"`      // NGINX_STATUS_URL is set
	Up         bool              `json:"up"`          // and its status page answered just now
	Active     int64             `json:"connections"` // client connections open
	Requests   int64             `json:"requests"`    // client requests answered since nginx started
	Log        bool              `json:"log"`         // NGINX_EDGE_LOG is counted by this instance
	Answers    map[string]uint64 `json:"answers"`     // nginx's own answers, by kind, since this instance started
	Configured bool              `json:"configured"`  // either of the two
}

// Edge answers nginx's figures to an admin (GET /api/admin/edge). Without nginx in front (no
// NGINX_STATUS_URL, no NGINX_EDGE_LOG), configured is false and the rest empty.
type Edge struct {
	Figures func(ctx context.Context) EdgeFigures // nil: nothing configured
}

// Get answers the figures as they are now (a status page that does not answer within a second says up
// false).
func (h *Edge) Get(c *fiber.Ctx) error {
	f := EdgeFigures{Answers: map[string]uint64{}}
	if h.Figures != nil {
		f = h.Figures(c.UserContext())
		if f.Answers == nil {
			f.Answers = map[string]uint64{}
		}
	}
	f.Configured = f.Status || f.Log
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(f)
}
