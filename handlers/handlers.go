// Package handlers holds the HTTP handlers by area. Each area is a struct of its dependencies; app/ builds
// them and owns the one route table.
package handlers

// This file holds what every area shares: the session and role checks, reading a request's JSON body and
// ids, and who is acting.

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"seckill/auth"
	"seckill/errs"
	"seckill/models"
)

// SessionOf returns the request's session, if it carries a valid one.
func SessionOf(c *fiber.Ctx) (auth.Session, bool) {
	s, ok := c.Locals(sessionLocal).(*auth.Session)
	if !ok {
		return auth.Session{}, false
	}
	return *s, true
}

// RequireUser answers 401 without a session.
func RequireUser(c *fiber.Ctx) error {
	if _, ok := SessionOf(c); !ok {
		return errNeedLogin
	}
	return c.Next()
}

// RequireRole answers 401 without a session and 403 with a role not listed.
func RequireRole(roles ...string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		s, ok := SessionOf(c)
		if !ok {
			return errNeedLogin
		}
		for _, r := range roles {
			if s.Role == r {
				return c.Next()
			}
		}
		return errs.Newf(errs.Forbidden, "this needs the role %s", strings.Join(roles, " or "))
	}
}

// parseJSON decodes the request body into v, answering bad_request for a body that is not that JSON.
func parseJSON(c *fiber.Ctx, v any) error {
	if err := json.Unmarshal(c.Body(), v); err != nil {
		return errBadBody
	}
	return nil
}

var errNoSuchOrder = errs.Static(errs.NotFound, "no such order")

// pathOrderNo reads an order number from the path: 1 to 32 letters, digits, "_" or "-" (the shop makes
// "SK" and a snowflake id). Anything else names no order and never reaches the database (a byte that is
// not UTF-8 would make PostgreSQL fail).
func pathOrderNo(c *fiber.Ctx) (string, error) {
	no := c.Params("order_no")
	if !validOrderNo(no) {
		return "", errNoSuchOrder
	}
	return no, nil
}

// validOrderNo reports whether no can be an order number.
// queryText reads the query parameter field as text a search may hand to the database: at most most
// bytes of UTF-8 without control characters. PostgreSQL refuses a NUL or invalid UTF-8 with an error that
// would answer 500; a person's search holds neither.
func queryText(c *fiber.Ctx, field string, most int) (string, error) {
	v := c.Query(field)
	switch {
	case len(v) > most:
		return "", errs.Bad(errs.W(field, "max_bytes", most))
	case models.BadText(v, false):
		return "", errs.Bad(errs.W(field, "control_chars"))
	}
	return v, nil
}

func validOrderNo(no string) bool {
	if len(no) == 0 || len(no) > 32 {
		return false
	}
	for i := 0; i < len(no); i++ {
		if b := no[i]; !('0' <= b && b <= '9' || 'A' <= b && b <= 'Z' || 'a' <= b && b <= 'z' || b == '_' || b == '-') {
			return false
		}
	}
	return true
}

// pathID reads a positive integer id from the path. A malformed id cannot name anything: 404.
func pathID(c *fiber.Ctx, param, what string) (int64, error) {
	raw := c.Params(param)
	id, err := strconv.ParseInt(raw, 10, 64)
	// Only the canonical form names an item: "02", "+2" and "2.0" are 404, so that no cache or key is
	// made per spelling of one id.
	if err != nil || id <= 0 || strconv.FormatInt(id, 10) != raw {
		return 0, errs.New(errs.NotFound, "no such "+what)
	}
	return id, nil
}

func actor(c *fiber.Ctx, db *gorm.DB) (models.Actor, error) {
	s, _ := SessionOf(c)
	u, err := models.UserByID(c.UserContext(), db, s.UserID)
	if err != nil {
		return models.Actor{}, err
	}
	return models.Actor{ID: u.ID, Username: u.Username}, nil
}

// reasoned reads who acts and the reason they give ({"reason"}; the body may be empty when optional),
// for an action a person explains: a rejection, a stop, a refund, a block.
func reasoned(c *fiber.Ctx, db *gorm.DB, optional bool) (models.Actor, string, error) {
	var in struct {
		Reason string `json:"reason"`
	}
	if !optional || len(c.Body()) > 0 {
		if err := parseJSON(c, &in); err != nil {
			return models.Actor{}, "", err
		}
	}
	who, err := actor(c, db)
	return who, in.Reason, err
}
