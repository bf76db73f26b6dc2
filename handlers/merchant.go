package handlers

import (
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"seckill/models"
)

// Merchant serves the merchant console's API: a merchant's own activities and their items.
type Merchant struct {
	DB         *gorm.DB
	Stats      *Live
	ImageHosts []string  // IMAGE_HOSTS: the hosts whose https:// addresses an item's image_url may name
	Stop       *SaleStop // the admins' emergency stop, on the merchant's own sales
	Now        func() time.Time
}

// managedActivityJSON is an activity as its merchant and the admins see it.
type managedActivityJSON struct {
	ActivityJSON
	MerchantID   int64      `json:"merchant_id"`
	Merchant     string     `json:"merchant,omitempty"`
	ReviewReason string     `json:"review_reason"`
	ReviewedAt   *time.Time `json:"reviewed_at"`
	PausedAt     *time.Time `json:"paused_at"`   // an admin's or its merchant's pause, null while it runs
	StoppedBy    string     `json:"stopped_by"`  // who paused it or ended it early: "merchant" or "admin" ("" neither)
	EndedEarly   bool       `json:"ended_early"` // an admin or its merchant ended it before its time
	StopReason   string     `json:"stop_reason"` // the reason for the last pause, resume or end
	Phase        string     `json:"phase"`       // draft, in_review, rejected, upcoming, live, paused or over
	CreatedAt    time.Time  `json:"created_at"`
	UpdatedAt    time.Time  `json:"updated_at"`
}

func managedJSON(a *models.Activity, merchant string, now time.Time) managedActivityJSON {
	left := map[int64]int64{}
	for _, it := range a.Items {
		left[it.ID] = max(it.StockTotal-it.StockSold, 0)
	}
	return managedActivityJSON{ActivityJSON: activityJSON(a, left, now), MerchantID: a.MerchantID, Merchant: merchant,
		ReviewReason: a.ReviewReason, ReviewedAt: a.ReviewedAt, PausedAt: utc(a.PausedAt), StoppedBy: stoppedBy(a), EndedEarly: a.EndedEarly, StopReason: a.StopReason,
		Phase: a.Phase(now), CreatedAt: a.CreatedAt.UTC(), UpdatedAt: a.UpdatedAt.UTC()}
}

func stoppedBy(a *models.Activity) string {
	switch {
	case a.PausedAt == nil && !a.EndedEarly:
		return ""
	case a.StoppedByMerchant():
		return models.StopByMerchant
	}
	return models.StopByAdmin
}

// Activities answers the merchant's own activities, in every state.
func (h *Merchant) Activities(c *fiber.Ctx) error {
	s, _ := SessionOf(c)
	acts, err := models.MerchantActivities(c.UserContext(), h.DB, s.UserID)
	if err != nil {
		return err
	}
	now := h.Now()
	out := make([]managedActivityJSON, 0, len(acts))
	for i := range acts {
		out = append(out, managedJSON(&acts[i], "", now))
	}
	return c.JSON(out)
}

// Activity answers one of the merchant's activities.
func (h *Merchant) Activity(c *fiber.Ctx) error {
	s, _ := SessionOf(c)
	id, err := pathID(c, "id", "activity")
	if err != nil {
		return err
	}
	a, err := models.MerchantActivity(c.UserContext(), h.DB, s.UserID, id)
	if err != nil {
		return err
	}
	return c.JSON(managedJSON(a, "", h.Now()))
}

// validator is an input that checks itself at now.
type validator interface{ Validate(now time.Time) error }

// change reads what a merchant's change needs: the input from the body (checked), and who makes it.
func (h *Merchant) change(c *fiber.Ctx, in validator) (models.Actor, error) {
	if err := parseJSON(c, in); err != nil {
		return models.Actor{}, err
	}
	if err := in.Validate(h.Now()); err != nil {
		return models.Actor{}, err
	}
	return actor(c, h.DB)
}

// ids reads the activity id and, when the route has one, the item id.
func ids(c *fiber.Ctx) (activityID, itemID int64, err error) {
	if activityID, err = pathID(c, "id", "activity"); err != nil || c.Params("item") == "" {
		return activityID, 0, err
	}
	itemID, err = pathID(c, "item", "item")
	return activityID, itemID, err
}

// Create makes a draft activity.
func (h *Merchant) Create(c *fiber.Ctx) error {
	var in models.ActivityInput
	who, err := h.change(c, &in)
	if err != nil {
		return err
	}
	a, err := models.CreateActivity(c.UserContext(), h.DB, who, in, h.Now())
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(managedJSON(a, "", h.Now()))
}

// Update changes a draft or rejected activity.
func (h *Merchant) Update(c *fiber.Ctx) error {
	id, _, err := ids(c)
	if err != nil {
		return err
	}
	var in models.ActivityInput
	who, err := h.change(c, &in)
	if err != nil {
		return err
	}
	a, err := models.UpdateActivity(c.UserContext(), h.DB, who, id, in, h.Now())
	if err != nil {
		return err
	}
	return c.JSON(managedJSON(a, "", h.Now()))
}

func (h *Merchant) itemAnswer(c *fiber.Ctx, status int, it *models.Item) error {
	a, err := models.ActivityByID(c.UserContext(), h.DB, it.ActivityID)
	if err != nil {
		return err
	}
	return c.Status(status).JSON(itemJSON(it, a, max(it.StockTotal-it.StockSold, 0), h.Now()))
}

// AddItem adds an item to a draft or rejected activity.
func (h *Merchant) AddItem(c *fiber.Ctx) error {
	id, _, err := ids(c)
	if err != nil {
		return err
	}
	in := models.ItemInput{ImageHosts: h.ImageHosts}
	who, err := h.change(c, &in)
	if err != nil {
		return err
	}
	it, err := models.AddItem(c.UserContext(), h.DB, who, id, in, h.Now())
	if err != nil {
		return err
	}
	return h.itemAnswer(c, fiber.StatusCreated, it)
}

// UpdateItem changes an item of a draft or rejected activity.
func (h *Merchant) UpdateItem(c *fiber.Ctx) error {
	id, itemID, err := ids(c)
	if err != nil {
		return err
	}
	in := models.ItemInput{ImageHosts: h.ImageHosts}
	who, err := h.change(c, &in)
	if err != nil {
		return err
	}
	it, err := models.UpdateItem(c.UserContext(), h.DB, who, id, itemID, in, h.Now())
	if err != nil {
		return err
	}
	return h.itemAnswer(c, fiber.StatusOK, it)
}

// DeleteItem removes an item from a draft or rejected activity.
func (h *Merchant) DeleteItem(c *fiber.Ctx) error {
	id, itemID, err := ids(c)
	if err != nil {
		return err
	}
	who, err := actor(c, h.DB)
	if err != nil {
		return err
	}
	if err := models.DeleteItem(c.UserContext(), h.DB, who, id, itemID, h.Now()); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// Submit sends a draft or rejected activity for review.
func (h *Merchant) Submit(c *fiber.Ctx) error {
	id, err := pathID(c, "id", "activity")
	if err != nil {
		return err
	}
	who, err := actor(c, h.DB)
	if err != nil {
		return err
	}
	a, err := models.SubmitActivity(c.UserContext(), h.DB, who, id, h.Now())
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"state": a.State})
}

// Decisions answers how many of the merchant's sales were approved or rejected since it last opened its
// console's list: the badge on the console's link (asked by the pages of a merchant only, so that
// /api/me stays free of queries).
func (h *Merchant) Decisions(c *fiber.Ctx) error {
	s, _ := SessionOf(c)
	n, err := models.UnseenDecisions(c.UserContext(), h.DB, s.UserID)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(fiber.Map{"unseen": n})
}

// Withdraw takes a sale in review back to the merchant's drafts.
func (h *Merchant) Withdraw(c *fiber.Ctx) error {
	id, err := pathID(c, "id", "activity")
	if err != nil {
		return err
	}
	who, err := actor(c, h.DB)
	if err != nil {
		return err
	}
	a, err := models.WithdrawActivity(c.UserContext(), h.DB, who, id, h.Now())
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"state": a.State})
}

// Pause pauses one of the merchant's live (or upcoming) sales at once, with a reason the admins see:
// the admins' emergency stop.
func (h *Merchant) Pause(c *fiber.Ctx) error { return h.Stop.run(c, models.ActPause, true) }

// Resume resumes a sale the merchant paused itself (an admin's pause only an admin resumes).
func (h *Merchant) Resume(c *fiber.Ctx) error { return h.Stop.run(c, models.ActResume, true) }

// End ends one of the merchant's sales now, with a reason.
func (h *Merchant) End(c *fiber.Ctx) error { return h.Stop.run(c, models.ActEnd, true) }

// activityStats answers the live figures of one of the merchant's activities.
func (h *Merchant) ActivityStats(c *fiber.Ctx) error {
	s, _ := SessionOf(c)
	id, err := pathID(c, "id", "activity")
	if err != nil {
		return err
	}
	a, err := models.MerchantActivity(c.UserContext(), h.DB, s.UserID, id)
	if err != nil {
		return err
	}
	st, err := h.Stats.of(c, a)
	if err != nil {
		return err
	}
	return c.JSON(st)
}
