package handlers

import (
	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"seckill/auth"
	"seckill/errs"
	"seckill/models"
	"seckill/orders"
	"seckill/ratelimit"
	"seckill/stock"
)

// Addresses serves the shopper's address book and the choice of an order's delivery address.
type Addresses struct {
	DB     *gorm.DB
	Orders *orders.Service
	Limits *ratelimit.Shared  // the shopper's address probes (one entrant per address)
	Claims *stock.Claims      // the claim keys of an address (one entrant per address)
	Cards  *auth.AddressCards // signs each address's card, which a join hands back instead of a read
	// PhoneRegion is the country (ISO 3166) of a phone number written without a country code: PHONE_REGION,
	// as the one-entrant-per-address rule reads it ("" is CN).
	PhoneRegion string
}

// AddressJSON is the contract's `address`: an entry of the address book.
type AddressJSON struct {
	ID int64 `json:"id"`
	models.Delivery
	// Card is the address's signed claim keys, which a join of a sale with one entrant per address may
	// carry (address_card) so that it reads no address book; "" where the book answers none.
	Card string `json:"card,omitempty"`
}

func addressJSON(a *models.Address) AddressJSON { return AddressJSON{ID: a.ID, Delivery: a.Delivery} }

// withCard is a's JSON with its card.
func (h *Addresses) withCard(a *models.Address) AddressJSON {
	out := addressJSON(a)
	if h.Cards != nil && h.Claims != nil {
		k := h.Claims.KeysOf(a.Delivery)
		out.Card = h.Cards.Sign(a.UserID, a.ID, k.Place, k.Phone)
	}
	return out
}

// List answers the caller's address book, oldest first.
func (h *Addresses) List(c *fiber.Ctx) error {
	s, _ := SessionOf(c)
	book, err := models.AddressesOfUser(c.UserContext(), h.DB, s.UserID)
	if err != nil {
		return err
	}
	out := make([]AddressJSON, len(book))
	for i := range book {
		out[i] = h.withCard(&book[i])
	}
	return c.JSON(out)
}

// Add adds an address to the caller's book.
func (h *Addresses) Add(c *fiber.Ctx) error {
	s, _ := SessionOf(c)
	var d models.Delivery
	if err := parseJSON(c, &d); err != nil {
		return err
	}
	a, err := models.AddAddress(c.UserContext(), h.DB, s.UserID, h.PhoneRegion, d)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(h.withCard(a))
}

// Update changes one of the caller's addresses; the orders that took a copy keep it.
func (h *Addresses) Update(c *fiber.Ctx) error {
	s, _ := SessionOf(c)
	id, err := pathID(c, "id", "address")
	if err != nil {
		return err
	}
	var d models.Delivery
	if err := parseJSON(c, &d); err != nil {
		return err
	}
	a, err := models.UpdateAddress(c.UserContext(), h.DB, s.UserID, id, h.PhoneRegion, d)
	if err != nil {
		return err
	}
	return c.JSON(h.withCard(a))
}

// Delete removes one of the caller's addresses; the orders that took a copy keep it.
func (h *Addresses) Delete(c *fiber.Ctx) error {
	s, _ := SessionOf(c)
	id, err := pathID(c, "id", "address")
	if err != nil {
		return err
	}
	if err := models.DeleteAddress(c.UserContext(), h.DB, s.UserID, id); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// Choose gives one of the caller's unpaid orders a copy of one of the caller's addresses, and answers
// the order.
func (h *Addresses) Choose(c *fiber.Ctx) error {
	s, _ := SessionOf(c)
	no, err := pathOrderNo(c)
	if err != nil {
		return err
	}
	var body struct {
		AddressID int64 `json:"address_id"`
	}
	if err := parseJSON(c, &body); err != nil {
		return err
	}
	if body.AddressID <= 0 {
		return errs.Bad(errs.W("address_id", "choose_address"))
	}
	if err := probesLeft(c.UserContext(), h.Limits, s.UserID); err != nil {
		return err
	}
	o, err := h.Orders.ChooseAddress(c.UserContext(), s.UserID, no, body.AddressID)
	if err != nil {
		return probed(c.UserContext(), h.Limits, s.UserID, err)
	}
	return sendOrder(c, h.DB, o)
}
