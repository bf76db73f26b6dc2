package handlers

import (
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"seckill/models"
)

// Pages renders the HTML pages.
type Pages struct {
	DB  *gorm.DB
	Now func() time.Time
}

// Layout is the layout every page is rendered in.
const Layout = "layouts/main"

// Home renders the live and upcoming sales.
func (h *Pages) Home(c *fiber.Ctx) error {
	now := h.Now()
	acts, err := models.OpenActivities(c.UserContext(), h.DB, now)
	if err != nil {
		return err
	}
	return c.Render("home", fiber.Map{"Title": "Flash sales", "Now": now, "Activities": acts}, Layout)
}
