package handlers

import (
	"context"
	"log/slog"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"seckill/catalog"
	"seckill/models"
	"seckill/stock"
)

// SaleStop is the emergency stop of a live sale: one mechanism in two roles' hands. An admin pauses,
// resumes or ends any sale; a merchant its own (and resumes only its own pause). Each is audited with
// who made it and why, and heard by every instance at once.
type SaleStop struct {
	Stops  *catalog.Stops
	DB     *gorm.DB
	Ledger *stock.Ledger
	Line   *stock.Line // a resumed sale's turns get the pause back
	Books  stock.Books // the sales as the database has them, to write an ended sale's window
	Now    func() time.Time
}

// run makes action on the sale of the route's :id, as an admin or (merchant) as the sale's merchant.
func (h *SaleStop) run(c *fiber.Ctx, action string, merchant bool) error {
	id, err := pathID(c, "id", "activity")
	if err != nil {
		return err
	}
	who, reason, err := reasoned(c, h.DB, action == models.ActResume)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	stop := models.Stop
	if merchant {
		stop = models.MerchantStop
	}
	a, err := stop(ctx, h.DB, who, id, action, reason, h.Now(), func(a *models.Activity, paused time.Time) error {
		return h.giveTurnsBack(ctx, a, paused)
	})
	if err != nil {
		return err
	}
	if action == models.ActEnd {
		// The sale's window in Redis, which the buy script checks, closes now (a sale not loaded yet has none).
		for _, it := range a.Items {
			// Refused in memory on every instance from now on (Stops); this closes it in Redis too. A
			// failure here is logged, not answered: the end stands.
			_, loaded, err := h.Ledger.SaleEnds(ctx, it.ID)
			if err == nil && loaded {
				_, err = h.Ledger.Preheat(ctx, h.Books, it.ID)
			}
			if err != nil {
				slog.WarnContext(ctx, "ending a sale: its window in Redis was not closed", "item", it.ID, "err", err)
			}
		}
	}
	// Every instance rebuilds its catalog and its memory of paused sales now.
	if err := h.Stops.Announce(ctx); err != nil {
		return err
	}
	return c.JSON(managedJSON(a, "", h.Now()))
}

// stopsHeard is how long every instance may take to hear of a resume: the turns' time given back counts
// from then.
const stopsHeard = time.Second

// giveTurnsBack gives the turns that the sale's pause interrupted their time back, before the sale goes
// on: a shopper let in with a minute left when it was paused has a minute left when it resumes. Done
// while the resume is being written: a failure leaves the sale paused, and the next try moves the turns
// on to its own time (by what the pause lasted since).
func (h *SaleStop) giveTurnsBack(ctx context.Context, a *models.Activity, paused time.Time) error {
	for _, it := range a.Items {
		if _, err := h.Line.Resume(ctx, it.ID, paused, h.Now().Add(stopsHeard)); err != nil {
			return err
		}
	}
	return nil
}
