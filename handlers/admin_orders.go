package handlers

import (
	"context"
	"fmt"
	"html/template"
	"net/url"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"seckill/errs"
	"seckill/i18n"
	"seckill/models"
	"seckill/orders"
)

// AdminOrders serves an admin's look at one order (its payments and refunds) and the refund of a paid
// order that will not be shipped.
type AdminOrders struct {
	DB     *gorm.DB
	Orders *orders.Service
	// Refunds makes an order's pending refunds at the provider now (jobs.Refunds); what it cannot, the
	// refunds job retries.
	Refunds interface {
		MakeFor(ctx context.Context, orderID int64) error
	}
	Now func() time.Time
}

// paymentJSON is a payment as an admin sees it.
type paymentJSON struct {
	PaymentID   string    `json:"payment_id"`
	Provider    string    `json:"provider"` // whose console to look in: wechat, alipay, http, sandbox
	Status      string    `json:"status"`
	AmountCents int64     `json:"amount_cents"`
	CreatedAt   time.Time `json:"created_at"`
}

// providerOf names the provider p is at.
func (h *AdminOrders) providerOf(p *models.Payment) string {
	return h.Orders.Providers.NameOf(p.Provider)
}

// refundJSON is a refund as an admin sees it.
type refundJSON struct {
	PaymentID   string     `json:"payment_id"`
	AmountCents int64      `json:"amount_cents"`
	Kind        string     `json:"kind"` // late_payment or admin
	Reason      string     `json:"reason"`
	Status      string     `json:"status"` // pending, done or failed
	Attempts    int        `json:"attempts"`
	LastError   string     `json:"last_error"`
	CreatedAt   time.Time  `json:"created_at"`
	DoneAt      *time.Time `json:"done_at"`
}

// adminOrderJSON is one order as an admin sees it.
type adminOrderJSON struct {
	Order    orderJSON     `json:"order"`
	Buyer    string        `json:"buyer"`
	Payments []paymentJSON `json:"payments"`
	Refunds  []refundJSON  `json:"refunds"`
}

func (h *AdminOrders) view(c *fiber.Ctx, no string) (*adminOrderJSON, error) {
	ctx := c.UserContext()
	o, err := models.OrderByNo(ctx, h.DB, no)
	if err != nil {
		return nil, err
	}
	views, err := orderViews(c, h.DB, []models.Order{*o})
	if err != nil {
		return nil, err
	}
	names, err := models.Usernames(ctx, h.DB, []int64{o.UserID})
	if err != nil {
		return nil, err
	}
	ps, err := models.PaymentsOfOrder(ctx, h.DB, o.ID)
	if err != nil {
		return nil, err
	}
	rs, err := models.RefundsOfOrder(ctx, h.DB, o.ID)
	if err != nil {
		return nil, err
	}
	out := &adminOrderJSON{Order: views[0], Buyer: names[o.UserID], Payments: []paymentJSON{}, Refunds: []refundJSON{}}
	for _, p := range ps {
		out.Payments = append(out.Payments, paymentJSON{p.ProviderID, h.providerOf(&p), p.Status, p.AmountCents, p.CreatedAt.UTC()})
	}
	for _, r := range rs {
		out.Refunds = append(out.Refunds, refundJSON{r.ProviderID, r.AmountCents, r.Kind, r.Reason, r.Status, r.Attempts, r.LastError, r.CreatedAt.UTC(), utc(r.DoneAt)})
	}
	return out, nil
}

// Order answers one order with its buyer, payments and refunds.
func (h *AdminOrders) Order(c *fiber.Ctx) error {
	no, err := pathOrderNo(c)
	if err != nil {
		return err
	}
	v, err := h.view(c, no)
	if err != nil {
		return err
	}
	return c.JSON(v)
}

// Refund refunds a paid order, or a shipped one that came back (a return), with a reason (audited): the
// order becomes refunded at once, its unit is not sold again, and the money goes back now or, if the
// provider cannot take it now, as soon as it can.
func (h *AdminOrders) Refund(c *fiber.Ctx) error {
	no, err := pathOrderNo(c)
	if err != nil {
		return err
	}
	who, reason, err := reasoned(c, h.DB, false)
	if err != nil {
		return err
	}
	_, o, err := h.Orders.Refund(c.UserContext(), who, no, reason)
	if err != nil {
		return err
	}
	return h.refundNow(c, no, o.ID)
}

// refundNow asks the provider for the order's pending refunds now (its word, if it answers quickly; else
// the job carries on) and answers the order as Order does.
func (h *AdminOrders) refundNow(c *fiber.Ctx, no string, orderID int64) error {
	ctx, cancel := context.WithTimeout(c.UserContext(), payTime)
	_ = h.Refunds.MakeFor(ctx, orderID)
	cancel()
	v, err := h.view(c, no)
	if err != nil {
		return err
	}
	return c.JSON(v)
}

// RetryRefunds asks again for an order's refunds the provider refused (once what it refused for is
// fixed: its key, say), audited; 200 with the order as Order answers it.
func (h *AdminOrders) RetryRefunds(c *fiber.Ctx) error {
	no, err := pathOrderNo(c)
	if err != nil {
		return err
	}
	who, err := actor(c, h.DB)
	if err != nil {
		return err
	}
	o, err := models.OrderByNo(c.UserContext(), h.DB, no)
	if err != nil {
		return err
	}
	n, err := models.RetryRefunds(c.UserContext(), h.DB, who, no, h.Now())
	if err != nil {
		return err
	}
	if n == 0 {
		return errs.Say(errs.Conflict, "no_refused_refund")
	}
	return h.refundNow(c, no, o.ID)
}

// Page is the admin's orders page: the orders found by part of the buyer's name, status, sale and date
// (the filters of GET /api/admin/orders), a page at a time; one order (?no=) with its payments, refunds
// and its story from the audit log, and Refund with a reason (asked first, and said when done); and the
// refunds that need a person (refused by the provider) or are still on their way.
func (h *AdminOrders) Page(c *fiber.Ctx) error {
	if _, ok, err := pageRole(c, h.Now(), models.RoleAdmin); !ok {
		return err
	}
	ctx := c.UserContext()
	tr := i18n.For(Lang(c))
	data := PageData(c, h.Now(), "adm.orders", "Filter", searchForm(c, "q", "status", "activity_id", "from", "to"),
		"Statuses", orderFilters)
	if no := c.Query("no"); no != "" {
		data["Query"] = no
		if validOrderNo(no) {
			v, err := h.view(c, no)
			if err != nil && errs.Code(err) != errs.NotFound {
				return err
			}
			if v != nil {
				data["Found"] = v
				story, err := models.OrderStory(ctx, h.DB, v.Order.OrderNo)
				if err != nil {
					return err
				}
				views, err := auditViews(ctx, h.DB, story, tr)
				if err != nil {
					return err
				}
				data["Story"] = orderStory(v.Order, v.Buyer, story, views, tr)
				say := strings.NewReplacer("{amount}", fmt.Sprintf("¥%d.%02d", v.Order.PriceCents/100, v.Order.PriceCents%100), "{buyer}", v.Buyer)
				data["RefundConfirm"] = say.Replace(tr.T("srch.refundConfirm"))
				if c.Query("refunded") == "1" && v.Order.Status == models.OrderRefunded {
					data["Refunded"] = say.Replace(tr.T("srch.refunded"))
				}
			}
		}
	}
	s, err := orderSearchOf(c)
	if err != nil && errs.Code(err) != errs.BadRequest {
		return err
	}
	if err != nil {
		data["SearchError"] = localized(c, err)
		s = models.OrderSearch{Page: 1}
	}
	page, found, err := h.foundOrders(c, s)
	if err != nil && errs.Code(err) != errs.BadRequest {
		return err
	}
	if err != nil {
		data["SearchError"] = localized(c, err)
	} else {
		data["Orders"], data["Pager"] = found, pagerOf(c, tr, page.Page, page.PerPage, page.Total, page.Capped, len(page.Rows))
	}
	sales, err := models.RecentActivities(ctx, h.DB, 200)
	if err != nil {
		return err
	}
	data["Sales"] = sales
	keep := url.Values{}
	for k, v := range data["Filter"].(map[string]string) {
		if v != "" {
			keep.Set(k, v)
		}
	}
	if p := c.Query("page"); p != "" {
		keep.Set("page", p)
	}
	if len(keep) > 0 {
		data["Keep"] = template.URL("&" + keep.Encode()) // #nosec G203: the query is encoded above
	}
	open, err := models.UnsettledRefunds(ctx, h.DB, 100)
	if err != nil {
		return err
	}
	data["OpenRefunds"] = open
	noStore(c)
	return c.Render("admin_orders", data, Layout)
}
