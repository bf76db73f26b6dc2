package handlers

import (
	"encoding/base64"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/utils"
	qrcode "github.com/skip2/go-qrcode"

	"seckill/auth"
	"seckill/errs"
	"seckill/models"
	"seckill/ratelimit"
)

// QRBindCookie binds a browser to the login codes it made: only it may read their state and be logged in.
const QRBindCookie = "sk_qr"

var qrPerIP = ratelimit.Limit{Rate: 20, Burst: 20, Period: time.Minute}

// QRLogin serves logging a PC in by scanning a code with a logged-in phone.
type QRLogin struct {
	Accounts *Accounts
	QR       *auth.QRLogin
	BaseURL  string
	Now      func() time.Time
}

// PNGDataURL encodes content as a QR code in a data: URL that an <img> shows.
func PNGDataURL(content string) (string, error) {
	png, err := qrcode.Encode(content, qrcode.Medium, 256)
	if err != nil {
		return "", err
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(png), nil
}

// Create makes a code for this browser.
func (h *QRLogin) Create(c *fiber.Ctx) error {
	ctx := c.UserContext()
	if h.Accounts.RateLimitIP {
		if err := h.Accounts.Limits.Allow(ctx, "qr:ip:"+addressKey(c), qrPerIP); err != nil {
			return err
		}
	}
	bind := c.Cookies(QRBindCookie)
	if len(bind) != 32 {
		var err error
		if bind, err = auth.RandomToken(16); err != nil {
			return err
		}
	}
	pc := auth.PC{IP: c.IP(), UserAgent: utils.CopyString(c.Get(fiber.HeaderUserAgent)), CreatedAt: h.Now()}
	if len(pc.UserAgent) > 300 {
		pc.UserAgent = pc.UserAgent[:300]
	}
	code, err := h.QR.Create(ctx, bind, pc)
	if err != nil {
		return err
	}
	img, err := PNGDataURL(h.BaseURL + "/m/qr/" + code.ID)
	if err != nil {
		return err
	}
	h.Accounts.setCookie(c, QRBindCookie, bind, h.Now().Add(24*time.Hour))
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"qr_id": code.ID, "image": img, "expires_at": code.ExpiresAt})
}

// State answers the code's state to the browser that made it; the first read of confirmed logs it in.
func (h *QRLogin) State(c *fiber.Ctx) error {
	bind := c.Cookies(QRBindCookie)
	if bind == "" {
		return errs.New(errs.NotFound, "no such login code")
	}
	state, userID, err := h.QR.Poll(c.UserContext(), c.Params("id"), bind)
	if err != nil {
		return err
	}
	if userID == 0 {
		return c.JSON(fiber.Map{"state": state})
	}
	u, err := models.UserByID(c.UserContext(), h.Accounts.DB, userID)
	if err != nil {
		return err
	}
	if err := h.Accounts.StartSession(c, u); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"state": state, "user": userJSON(u)})
}

// Scan records that this phone scanned the code and shows it the PC's details.
func (h *QRLogin) Scan(c *fiber.Ctx) error {
	s, _ := SessionOf(c)
	pc, err := h.QR.Scan(c.UserContext(), c.Params("id"), s.IDString(), s.UserID)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"state": auth.QRScanned, "pc": pc})
}

// Confirm logs the PC in.
func (h *QRLogin) Confirm(c *fiber.Ctx) error {
	s, _ := SessionOf(c)
	if err := h.QR.Confirm(c.UserContext(), c.Params("id"), s.IDString()); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"state": auth.QRConfirmed})
}

// Cancel refuses the PC.
func (h *QRLogin) Cancel(c *fiber.Ctx) error {
	s, _ := SessionOf(c)
	if err := h.QR.Cancel(c.UserContext(), c.Params("id"), s.IDString()); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"state": auth.QRCancelled})
}
