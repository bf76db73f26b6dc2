package handlers

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/nyaruka/phonenumbers"
	"golang.org/x/sync/singleflight"
	"gorm.io/gorm"

	"seckill/catalog"
	"seckill/errs"
	"seckill/i18n"
	"seckill/internal/memo"
	"seckill/models"
	"seckill/stock"
)

// Layout is the layout every page is rendered in.
const Layout = "layouts/main"

// LangCookie keeps the visitor's choice of language.
const LangCookie = "lang"

// Lang is the language of the request: the visitor's choice, else Accept-Language.
func Lang(c *fiber.Ctx) string {
	return i18n.Pick(c.Cookies(LangCookie), c.Get(fiber.HeaderAcceptLanguage))
}

// PageData is what every page's layout needs, with the page's own fields added.
func PageData(c *fiber.Ctx, now time.Time, title string, kv ...any) fiber.Map {
	tr := i18n.For(Lang(c))
	m := fiber.Map{"Tr": tr, "Now": now, "Title": tr.T(title)}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

// Pages renders the HTML pages. The shared pages (home, item detail) are the same for every visitor (the
// per-user parts come from the JSON API), so each is rendered at most once per second per language and
// served from memory in between: a crowd on the detail page costs one render a second. An item that does
// not exist is remembered as such for as long, so that asking for it again costs no query either.
type Pages struct {
	DB      *gorm.DB // the pages of one user (orders); the shared ones come from Catalog
	Catalog *catalog.Catalog
	Left    *stock.LeftCache
	Now     func() time.Time
	Views   fiber.Views
	TTL     time.Duration // how long a rendered shared page is served (default 1s)
	// PhoneRegion is the country (ISO 3166) of a phone number written without a country code (PHONE_REGION),
	// which the address form says.
	PhoneRegion string
	// PayWith are the payment providers an order page offers (PAY_PROVIDERS), in order.
	PayWith []string

	once   sync.Once
	cache  *memo.Timed[string, renderedPage]
	flight singleflight.Group
}

// maxSharedPages bounds the rendered pages kept: two languages of every item of a few thousand sales.
const maxSharedPages = 8192

type renderedPage struct {
	body   []byte
	status int
	err    error // a not_found answer, kept like a page
}

// shared answers a page that every visitor sees alike, rendering it at most once per TTL per key. key
// names what is rendered in canonical form (never the raw path), so that spellings of one page share one
// entry.
func (h *Pages) shared(c *fiber.Ctx, key string, build func() (status int, view string, data fiber.Map, err error)) error {
	h.once.Do(func() {
		ttl := h.TTL
		if ttl <= 0 {
			ttl = time.Second
		}
		h.cache = memo.NewTimed[string, renderedPage](maxSharedPages, ttl)
	})
	key = Lang(c) + ":" + key
	p, ok := h.cache.Get(key)
	if !ok {
		v, err, _ := h.flight.Do(key, func() (any, error) {
			status, view, data, err := build()
			if errs.Is(err, errs.NotFound) {
				p := renderedPage{err: err}
				h.cache.Add(key, p)
				return p, nil
			}
			if err != nil {
				return nil, err
			}
			var buf bytes.Buffer
			if err := h.Views.Render(&buf, view, data, Layout); err != nil {
				return nil, err
			}
			p := renderedPage{body: buf.Bytes(), status: status}
			h.cache.Add(key, p)
			return p, nil
		})
		if err != nil {
			return err
		}
		p = v.(renderedPage)
	}
	if p.err != nil {
		return p.err
	}
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	c.Set(fiber.HeaderCacheControl, "public, max-age=1")
	c.Set(fiber.HeaderVary, "Accept-Language, Cookie")
	return c.Status(p.status).Send(p.body)
}

// Home renders the live and upcoming sales.
func (h *Pages) Home(c *fiber.Ctx) error {
	return h.shared(c, "home", func() (int, string, fiber.Map, error) {
		now := h.Now()
		snap, err := h.Catalog.Snapshot(c.UserContext())
		if err != nil {
			return 0, "", nil, err
		}
		acts := snap.Open(now)
		return 200, "home", PageData(c, now, "home.title", "Activities", acts, "Left", leftOf(c.UserContext(), h.Left, acts)), nil
	})
}

// Item renders an item's detail page: countdown, stock, captcha and the Buy button (driven by item.js).
func (h *Pages) Item(c *fiber.Ctx) error {
	id, err := pathID(c, "id", "item")
	if err != nil {
		return err
	}
	return h.shared(c, "item:"+strconv.FormatInt(id, 10), func() (int, string, fiber.Map, error) {
		it, act, err := h.Catalog.Item(c.UserContext(), id)
		if err != nil {
			return 0, "", nil, err
		}
		words, _ := json.Marshal(i18n.Words(Lang(c), "err.", "buy.", "queue."))
		data := PageData(c, h.Now(), "", "Item", it, "Activity", act, "Left", stockLeft(c.UserContext(), h.Left, it), "Words", string(words))
		data["Title"] = it.Name
		return 200, "item", data, nil
	})
}

// SetLang keeps the visitor's choice of language and goes back to the page it came from.
func (h *Pages) SetLang(c *fiber.Ctx) error {
	lang := c.Params("lang")
	if lang != "en" && lang != "zh" {
		return errs.New(errs.NotFound, "no such language")
	}
	c.Cookie(&fiber.Cookie{Name: LangCookie, Value: lang, Path: "/", Expires: h.Now().Add(365 * 24 * time.Hour), SameSite: fiber.CookieSameSiteLaxMode})
	// Back to the page the switch was clicked on: a local path only, never another site.
	return redirectLocal(c, c.Query("back"))
}

// ordersTab is one of the orders page's filters: its ?status= value ("" for all) and its words.
type ordersTab struct{ Status, Words string }

// ordersTabs are the orders page's filters, in order.
var ordersTabs = []ordersTab{
	{"", "orders.all"}, {models.OrderPendingPayment, "orders.toPay"}, {models.OrderPaid, "orders.paid"},
	{models.OrderShipped, "orders.shipped"}, {models.OrderCancelled, "orders.cancelled"}, {models.OrderRefunded, "orders.refunded"},
}

// Orders renders the logged-in shopper's orders, newest first, with their dates and pictures; ?status=
// shows those of one status (a value the page does not know shows them all).
func (h *Pages) Orders(c *fiber.Ctx) error {
	s, ok := SessionOf(c)
	if !ok {
		return redirectLocal(c, "/login?next="+url.QueryEscape(LocalPath(c.OriginalURL())))
	}
	status, err := orderFilter(c)
	if err != nil {
		status = ""
	}
	orders, err := models.OrdersOfUserIn(c.UserContext(), h.DB, s.UserID, status)
	if err != nil {
		return err
	}
	views, err := orderViews(c, h.DB, orders)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Render("orders", PageData(c, h.Now(), "orders.title", "Orders", views, "Tabs", ordersTabs, "Status", status), Layout)
}

// Order renders one of the shopper's orders.
func (h *Pages) Order(c *fiber.Ctx) error {
	s, ok := SessionOf(c)
	if !ok {
		return redirectLocal(c, "/login?next="+url.QueryEscape("/orders/"+c.Params("order_no")))
	}
	no, err := pathOrderNo(c)
	if err != nil {
		return err
	}
	o, err := models.OrderOfUser(c.UserContext(), h.DB, s.UserID, no)
	if err != nil {
		return err
	}
	views, err := orderViews(c, h.DB, []models.Order{*o})
	if err != nil {
		return err
	}
	var book []models.Address
	if o.Status == models.OrderPendingPayment {
		if book, err = models.AddressesOfUser(c.UserContext(), h.DB, s.UserID); err != nil {
			return err
		}
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	data := PageData(c, h.Now(), "orders.title", "Order", views[0], "Addresses", book, "AddressFields", addressFields,
		"PhoneHelp", h.phoneHelp(c), "PayWith", h.PayWith)
	data["Title"] = views[0].Name
	return c.Render("order", data, Layout)
}

// addressField is one input of the address form.
type addressField struct {
	Name, Autocomplete string
	Max                int
	Required           bool
}

// addressFields are the address form's inputs, in order (the rules are models.Delivery.Clean's).
var addressFields = []addressField{
	{"recipient", "name", 50, true}, {"phone", "tel", 24, true}, {"region", "address-level1", 50, true},
	{"city", "address-level2", 50, true}, {"street", "street-address", 200, true}, {"postcode", "postal-code", 12, false},
}

// Addresses renders the shopper's address book, with a form to add one.
func (h *Pages) Addresses(c *fiber.Ctx) error {
	s, ok := SessionOf(c)
	if !ok {
		return redirectLocal(c, "/login?next="+url.QueryEscape("/account/addresses"))
	}
	book, err := models.AddressesOfUser(c.UserContext(), h.DB, s.UserID)
	if err != nil {
		return err
	}
	views := make([]addressView, len(book))
	for i, a := range book {
		d := a.Delivery
		views[i] = addressView{Address: a, Values: map[string]string{"recipient": d.Recipient, "phone": d.PhoneToEdit(h.PhoneRegion), "region": d.Region,
			"city": d.City, "street": d.Street, "postcode": d.Postcode}}
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Render("addresses", PageData(c, h.Now(), "addr.title", "Addresses", views, "AddressFields", addressFields,
		"PhoneHelp", h.phoneHelp(c)), Layout)
}

// phoneHelp is the address form's hint under the phone: how a number without a country code is read.
func (h *Pages) phoneHelp(c *fiber.Ctx) string {
	region := h.PhoneRegion
	if region == "" {
		region = models.DefaultPhoneRegion
	}
	code := "+" + strconv.Itoa(phonenumbers.GetCountryCodeForRegion(region))
	return strings.ReplaceAll(i18n.For(Lang(c)).T("addr.phoneHelp"), "{0}", code)
}

// addressView is an address of the book with its fields by name, to fill its edit form.
type addressView struct {
	models.Address
	Values map[string]string
}

// Login renders the login page: a password form and a QR code for a phone.
// A phone that opened a login code before logging in logs in first (the page says what it is approving,
// and shows no login code of its own), and goes back to the confirmation. A phone has no use for a code
// to scan with a phone: its User-Agent says so, or (accounts.js) its narrow screen.
func (h *Pages) Login(c *fiber.Ctx) error {
	next := nextPath(c)
	c.Vary(fiber.HeaderUserAgent)
	return c.Render("login", PageData(c, h.Now(), "login.title", "Next", next, "PhoneApproval", strings.HasPrefix(next, "/m/qr/"),
		"OnAPhone", onAPhone(c.Get(fiber.HeaderUserAgent))), Layout)
}

// onAPhone reports whether a User-Agent is a phone's browser: "Mobi" is in every major mobile browser's
// (MDN's advice), and in no desktop's or tablet's (an iPad says "Mobile" only when asked for the mobile
// site: it has a screen to show a code on).
func onAPhone(ua string) bool {
	if len(ua) > 512 {
		ua = ua[:512]
	}
	return strings.Contains(ua, "Mobi") && !strings.Contains(ua, "iPad")
}

// Register renders the sign-up page; like the login page, it goes back to ?next= (an item page, a login
// code) once the account is made.
func (h *Pages) Register(c *fiber.Ctx) error {
	next := nextPath(c)
	return c.Render("register", PageData(c, h.Now(), "register.title", "Next", next, "PhoneApproval", strings.HasPrefix(next, "/m/qr/")), Layout)
}

// nextPath is ?next= when it is a local path other than the home page, else "".
func nextPath(c *fiber.Ctx) string {
	if next := LocalPath(c.Query("next")); next != "/" {
		return next
	}
	return ""
}

// QRPhone renders the phone's page for a login code; a phone that is not logged in logs in first and
// comes back.
func (h *Pages) QRPhone(c *fiber.Ctx) error {
	s, ok := SessionOf(c)
	if !ok {
		return redirectLocal(c, "/login?next="+url.QueryEscape("/m/qr/"+c.Params("id")))
	}
	u, err := models.UserByID(c.UserContext(), h.DB, s.UserID)
	if err != nil {
		return err
	}
	return c.Render("qr_phone", PageData(c, h.Now(), "phone.title", "QRID", c.Params("id"), "Username", u.Username), Layout)
}
