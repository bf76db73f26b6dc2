package handlers

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"golang.org/x/sync/singleflight"
	"gorm.io/gorm"

	"seckill/errs"
	"seckill/internal/memo"
	"seckill/models"
	"seckill/stock"
)

// Report serves a sale's fairness report: what the line did and what the rules held back, per item.
// Public once the sale is over; its merchant and the admins see it at any time. Made from the line (kept
// in Redis a week after the sale) and the orders, at most once per reportTTL per activity.
type Report struct {
	DB       *gorm.DB
	Line     *stock.Line
	Refusals *stock.Refusals
	Now      func() time.Time

	once   sync.Once
	cache  *memo.Timed[int64, *reportJSON]
	flight singleflight.Group
}

// reportTTL is how long a report is served as made: it is asked by the public after a sale, not polled.
const reportTTL = 5 * time.Second

// maxReports bounds the reports kept.
const maxReports = 1024

// reportJSON is the contract's report.
type reportJSON struct {
	ActivityID int64            `json:"activity_id"`
	Items      []itemReportJSON `json:"items"`
}

type itemReportJSON struct {
	ItemID int64 `json:"item_id"`
	// Who joined the line, before the start or after it; of them, those in the draw (who joined before the
	// start: the later ones queue behind it).
	Entrants int64            `json:"entrants"`
	InDraw   int64            `json:"in_draw"`
	Refused  map[string]int64 `json:"refused"`
	// The draw's entrants flagged as one person's many accounts; of them, those who waited in the shadow
	// line (not cleared), those an admin cleared and those an admin confirmed.
	Flagged             int64  `json:"flagged"`
	Shadowed            int64  `json:"shadowed"`
	Cleared             int64  `json:"cleared"`
	Confirmed           int64  `json:"confirmed"`
	Turns               int64  `json:"turns"`
	Missed              int64  `json:"missed"`
	Buyers              int64  `json:"buyers"`
	Returned            int64  `json:"returned"`
	SoldAgain           int64  `json:"sold_again"`
	SoldOutAfterSeconds *int64 `json:"sold_out_after_seconds"`
	Refunds             int64  `json:"refunds"`
}

var errReportLater = errs.New(errs.Forbidden, "a sale's report is public once the sale is over")

// Activity answers GET /api/activities/{id}/report.
func (h *Report) Activity(c *fiber.Ctx) error {
	_, r, err := h.report(c)
	if err != nil {
		return err
	}
	return c.JSON(r)
}

// Page answers the report's page, /activities/{id}/report, in the reader's language.
func (h *Report) Page(c *fiber.Ctx) error {
	a, r, err := h.report(c)
	if err != nil {
		return err
	}
	names := map[int64]string{}
	for _, it := range a.Items {
		names[it.ID] = it.Name
	}
	return c.Render("report", PageData(c, h.Now(), "report.title", "Activity", a, "Report", r, "Names", names), Layout)
}

// report answers the activity and its report, if the caller may see it now.
func (h *Report) report(c *fiber.Ctx) (*models.Activity, *reportJSON, error) {
	id, err := pathID(c, "id", "activity")
	if err != nil {
		return nil, nil, err
	}
	ctx := c.UserContext()
	a, err := models.ActivityByID(ctx, h.DB, id)
	if err != nil {
		return nil, nil, err
	}
	if a.State != models.ActivityApproved {
		return nil, nil, errs.New(errs.NotFound, "no such sale")
	}
	if h.Now().Before(a.EndsAt) {
		s, ok := SessionOf(c)
		if !ok || !(s.Role == models.RoleAdmin || s.Role == models.RoleMerchant && s.UserID == a.MerchantID) {
			return nil, nil, errReportLater
		}
	}
	h.once.Do(func() { h.cache = memo.NewTimed[int64, *reportJSON](maxReports, reportTTL) })
	if r, ok := h.cache.Get(id); ok {
		return a, r, nil
	}
	v, err, _ := h.flight.Do(strconv.FormatInt(id, 10), func() (any, error) {
		r, err := h.make(context.WithoutCancel(ctx), a)
		if err == nil {
			h.cache.Add(id, r)
		}
		return r, err
	})
	if err != nil {
		return nil, nil, err
	}
	return a, v.(*reportJSON), nil
}

// make reads the report of the activity's items.
func (h *Report) make(ctx context.Context, a *models.Activity) (*reportJSON, error) {
	out := reportJSON{ActivityID: a.ID, Items: make([]itemReportJSON, 0, len(a.Items))}
	for i := range a.Items {
		it := &a.Items[i]
		r := itemReportJSON{ItemID: it.ID, Refused: map[string]int64{}}
		if a.SaleMode == models.SaleQueue {
			st, err := h.Line.LineOf(ctx, it.ID)
			if err != nil {
				return nil, err
			}
			// Every turn given counts in let_in once, the held's and the shadowed's let in again too.
			r.Entrants, r.InDraw, r.Turns, r.Missed = st.Joined(), st.Entrants, st.LetIn, st.Missed
			sh, err := h.Line.ShadowOf(ctx, it.ID)
			if err != nil {
				return nil, err
			}
			r.Flagged, r.Shadowed, r.Cleared, r.Confirmed = sh.Flagged, sh.Shadowed, sh.Cleared, sh.Confirmed
		}
		refused, err := h.Refusals.Of(ctx, it.ID)
		if err != nil {
			return nil, err
		}
		for code, n := range refused {
			r.Refused[code] = n
		}
		f, err := models.ItemOrderFigures(ctx, h.DB, it.ID, it.StockTotal)
		if err != nil {
			return nil, err
		}
		r.Buyers, r.Returned, r.Refunds = f.Buyers, f.Cancelled, f.Refunded
		r.SoldAgain = max(0, f.Orders-it.StockTotal)
		if f.SoldOutAt != nil {
			secs := int64(f.SoldOutAt.Sub(a.StartsAt).Seconds())
			r.SoldOutAfterSeconds = &secs
		}
		out.Items = append(out.Items, r)
	}
	return &out, nil
}
