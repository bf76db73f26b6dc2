package handlers

import (
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"seckill/models"
	"seckill/stock"
)

// Merchant serves the merchant console's API: a merchant's own activities and their items.
type Merchant struct {
	DB    *gorm.DB
	Stats *Stats
	Now   func() time.Time
}

// ManagedActivityJSON is an activity as its merchant and the admins see it.
type ManagedActivityJSON struct {
	ActivityJSON
	MerchantID   int64      `json:"merchant_id"`
	Merchant     string     `json:"merchant,omitempty"`
	ReviewReason string     `json:"review_reason"`
	ReviewedAt   *time.Time `json:"reviewed_at"`
	CreatedAt    time.Time  `json:"created_at"`
	UpdatedAt    time.Time  `json:"updated_at"`
}

func managedJSON(a *models.Activity, merchant string, now time.Time) ManagedActivityJSON {
	left := map[int64]int64{}
	for _, it := range a.Items {
		left[it.ID] = max(it.StockTotal-it.StockSold, 0)
	}
	return ManagedActivityJSON{ActivityJSON: activityJSON(a, left, now), MerchantID: a.MerchantID, Merchant: merchant,
		ReviewReason: a.ReviewReason, ReviewedAt: a.ReviewedAt, CreatedAt: a.CreatedAt.UTC(), UpdatedAt: a.UpdatedAt.UTC()}
}

func actor(c *fiber.Ctx, db *gorm.DB) (models.Actor, error) {
	s, _ := SessionOf(c)
	u, err := models.UserByID(c.UserContext(), db, s.UserID)
	if err != nil {
		return models.Actor{}, err
	}
	return models.Actor{ID: u.ID, Username: u.Username}, nil
}

// Activities answers the merchant's own activities, in every state.
func (h *Merchant) Activities(c *fiber.Ctx) error {
	s, _ := SessionOf(c)
	acts, err := models.MerchantActivities(c.UserContext(), h.DB, s.UserID)
	if err != nil {
		return err
	}
	now := h.Now()
	out := make([]ManagedActivityJSON, 0, len(acts))
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
	if err := ParseJSON(c, in); err != nil {
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
	var in models.ItemInput
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
	var in models.ItemInput
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

// ActivityStats answers the live figures of one of the merchant's activities.
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
	st, err := h.Stats.Of(c, a)
	if err != nil {
		return err
	}
	return c.JSON(st)
}

// Stats computes an activity's live figures: stock and orders per item from Redis and PostgreSQL, and
// the buy's answers per second over the last minutes.
type Stats struct {
	DB      *gorm.DB
	Ledger  *stock.Ledger
	Answers *stock.Answers
	Now     func() time.Time
	Window  time.Duration // how far back the answers go (default 5 minutes)
}

// ItemStats are an item's figures, and (summed) an activity's.
type ItemStats struct {
	ID              int64  `json:"id,omitempty"`
	Name            string `json:"name,omitempty"`
	StockTotal      int64  `json:"stock_total"`
	StockLeft       int64  `json:"stock_left"`
	Queued          int64  `json:"queued"`
	OrdersPending   int64  `json:"orders_pending"`
	OrdersPaid      int64  `json:"orders_paid"`
	OrdersCancelled int64  `json:"orders_cancelled"`
}

// ActivityStats is the contract's stats with the items' and the answers per second added.
type ActivityStats struct {
	ItemStats
	Items   []ItemStats   `json:"items"`
	Answers []stock.Point `json:"answers"`
}

// Of computes an activity's figures.
func (h *Stats) Of(c *fiber.Ctx, a *models.Activity) (*ActivityStats, error) {
	ctx := c.UserContext()
	// What is queued is read before the orders: an order written in between is then counted twice for a
	// moment (queued and written) rather than not at all, so "nothing queued" always comes with every
	// order counted.
	queued := map[int64]int64{}
	for _, it := range a.Items {
		if n, err := h.Ledger.Backlog(ctx, it.ID); err == nil {
			queued[it.ID] = n
		}
	}
	counts, err := models.OrderCounts(ctx, h.DB, a.ID)
	if err != nil {
		return nil, err
	}
	out := &ActivityStats{Items: []ItemStats{}}
	ids := make([]int64, 0, len(a.Items))
	for _, it := range a.Items {
		ids = append(ids, it.ID)
		st := ItemStats{ID: it.ID, Name: it.Name, StockTotal: it.StockTotal, StockLeft: max(it.StockTotal-it.StockSold, 0),
			OrdersPending: counts[it.ID][models.OrderPendingPayment], OrdersPaid: counts[it.ID][models.OrderPaid],
			OrdersCancelled: counts[it.ID][models.OrderCancelled]}
		if left, loaded, err := h.Ledger.Left(ctx, it.ID); err == nil && loaded {
			st.StockLeft = max(left, 0)
		}
		st.Queued = queued[it.ID]
		out.Items = append(out.Items, st)
		out.StockTotal += st.StockTotal
		out.StockLeft += st.StockLeft
		out.Queued += st.Queued
		out.OrdersPending += st.OrdersPending
		out.OrdersPaid += st.OrdersPaid
		out.OrdersCancelled += st.OrdersCancelled
	}
	window := h.Window
	if window <= 0 {
		window = 5 * time.Minute
	}
	if out.Answers, err = h.Answers.Series(ctx, ids, h.Now(), window); err != nil {
		return nil, err
	}
	return out, nil
}
