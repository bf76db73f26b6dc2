package handlers

import (
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"seckill/models"
)

// Merchant serves the merchant console's API.
type Merchant struct {
	DB  *gorm.DB
	Now func() time.Time
}

// Activities answers the merchant's own activities, in every state.
func (h *Merchant) Activities(c *fiber.Ctx) error {
	s, _ := SessionOf(c)
	acts, err := models.MerchantActivities(c.UserContext(), h.DB, s.UserID)
	if err != nil {
		return err
	}
	now := h.Now()
	left := LeftOf(c.UserContext(), nil, acts)
	out := make([]ActivityJSON, 0, len(acts))
	for i := range acts {
		out = append(out, activityJSON(&acts[i], left, now))
	}
	return c.JSON(out)
}
