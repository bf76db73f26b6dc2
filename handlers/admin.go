package handlers

import (
	"context"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"seckill/catalog"
	"seckill/errs"
	"seckill/models"
	"seckill/stock"
)

// Admin serves the approval dashboard's API.
type Admin struct {
	Catalog       *catalog.Catalog
	Stops         *catalog.Stops
	DB            *gorm.DB
	Ledger        *stock.Ledger
	Stop          *SaleStop   // the emergency stop, which the sales' merchants share
	Books         stock.Books // the sales as the database has them, to load an approved one at once
	Stats         *Live
	PreheatWindow time.Duration
	QueueOpens    time.Duration // how long before its start a queue sale's waiting room opens
	Now           func() time.Time
	// Decided queues the merchant's mail of a decision in the transaction that writes it (nil: none).
	Decided func(ctx context.Context, tx *gorm.DB, a *models.Activity) error
}

func (h *Admin) withMerchants(c *fiber.Ctx, acts []models.Activity) ([]managedActivityJSON, error) {
	ids := make([]int64, 0, len(acts))
	for _, a := range acts {
		ids = append(ids, a.MerchantID)
	}
	names, err := models.Usernames(c.UserContext(), h.DB, ids)
	if err != nil {
		return nil, err
	}
	now := h.Now()
	out := make([]managedActivityJSON, 0, len(acts))
	for i := range acts {
		out = append(out, managedJSON(&acts[i], names[acts[i].MerchantID], now))
	}
	return out, nil
}

// Reviews answers the activities waiting for review.
func (h *Admin) Reviews(c *fiber.Ctx) error {
	acts, err := models.PendingReviews(c.UserContext(), h.DB)
	if err != nil {
		return err
	}
	out, err := h.withMerchants(c, acts)
	if err != nil {
		return err
	}
	return c.JSON(out)
}

// Approve approves an activity; one that starts within the preheat window is loaded into Redis at once,
// so that it is on sale from its first second.
func (h *Admin) Approve(c *fiber.Ctx) error {
	return h.review(c, true, "")
}

// Reject rejects an activity with a reason the merchant sees.
func (h *Admin) Reject(c *fiber.Ctx) error {
	var in struct {
		Reason string `json:"reason"`
	}
	if err := parseJSON(c, &in); err != nil {
		return err
	}
	return h.review(c, false, in.Reason)
}

func (h *Admin) review(c *fiber.Ctx, approve bool, reason string) error {
	id, err := pathID(c, "id", "activity")
	if err != nil {
		return err
	}
	who, err := actor(c, h.DB)
	if err != nil {
		return err
	}
	now := h.Now()
	var decided func(tx *gorm.DB, a *models.Activity) error
	if h.Decided != nil {
		decided = func(tx *gorm.DB, a *models.Activity) error { return h.Decided(c.UserContext(), tx, a) }
	}
	a, err := models.Review(c.UserContext(), h.DB, who, id, approve, reason, h.QueueOpens, now, decided)
	if err != nil {
		return err
	}
	if approve {
		// The sale is on this instance's pages at once (the others' within a second).
		if err := h.Catalog.Refresh(c.UserContext()); err != nil {
			return err
		}
	}
	if approve && a.StartsAt.Before(now.Add(h.PreheatWindow)) {
		for _, it := range a.Items {
			if _, err := h.Ledger.Preheat(c.UserContext(), h.Books, it.ID); err != nil {
				return err // the approval stands; the preheat job loads it within seconds
			}
		}
	}
	return c.JSON(fiber.Map{"state": a.State})
}

// Pause pauses an approved sale at once on every instance (buying, purchase paths and its waiting room's
// turns stop; the line keeps its order), with a reason the merchant sees.
func (h *Admin) Pause(c *fiber.Ctx) error { return h.Stop.run(c, models.ActPause, false) }

// Resume resumes a paused sale (whoever paused it); it needs no reason.
func (h *Admin) Resume(c *fiber.Ctx) error { return h.Stop.run(c, models.ActResume, false) }

// End ends an approved sale now: its window in Redis closes at once, and it leaves the catalog.
func (h *Admin) End(c *fiber.Ctx) error { return h.Stop.run(c, models.ActEnd, false) }

// activityStats answers an activity's live figures.
func (h *Admin) ActivityStats(c *fiber.Ctx) error {
	id, err := pathID(c, "id", "activity")
	if err != nil {
		return err
	}
	a, err := models.ActivityByID(c.UserContext(), h.DB, id)
	if err != nil {
		return err
	}
	st, err := h.Stats.of(c, a)
	if err != nil {
		return err
	}
	return c.JSON(st)
}

// Users answers the users with their roles.
func (h *Admin) Users(c *fiber.Ctx) error {
	users, total, page, err := searchUsers(c, h.DB)
	if err != nil {
		return err
	}
	out := make([]ManagedUserJSON, len(users))
	for i := range users {
		out[i] = managedUserJSON(&users[i])
	}
	c.Set("X-Total-Count", strconv.FormatInt(total, 10))
	c.Set("X-Page", strconv.Itoa(page))
	return c.JSON(out)
}

// usersPerPage is how many users a page of the admin's search shows.
const usersPerPage = 100

// searchUsers reads ?q= (part of a name, any case; 100 characters at most) and ?page= (from 1) and
// answers that page of the users found, how many there are, and the page.
func searchUsers(c *fiber.Ctx, db *gorm.DB) ([]models.User, int64, int, error) {
	q, err := queryText(c, "q", 100)
	if err != nil {
		return nil, 0, 0, err
	}
	page := 1
	if p := c.Query("page"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 100_000 {
			return nil, 0, 0, errs.Bad(errs.W("page", "page_number"))
		}
		page = n
	}
	users, total, err := models.SearchUsers(c.UserContext(), db, q, usersPerPage, (page-1)*usersPerPage)
	return users, total, page, err
}
