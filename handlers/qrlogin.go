package handlers

import (
	"encoding/base64"
	"encoding/json"
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

// QRLoginAPI serves logging a PC in by scanning a code with a logged-in phone.
type QRLoginAPI struct {
	Accounts *Accounts
	QR       *auth.QRLogin
	BaseURL  string
	Now      func() time.Time
	Places   Places // nil: the phone is shown addresses without cities
}

// Places names the city an address is in, in a language ("en", "zh"), or "" when it cannot.
type Places interface {
	City(ip, lang string) string
}

// pngDataURL encodes content as a QR code in a data: URL that an <img> shows.
func pngDataURL(content string) (string, error) {
	png, err := qrcode.Encode(content, qrcode.Medium, 256)
	if err != nil {
		return "", err
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(png), nil
}

// Create makes a code for this browser.
func (h *QRLoginAPI) Create(c *fiber.Ctx) error {
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
	img, err := pngDataURL(h.BaseURL + "/m/qr/" + code.ID)
	if err != nil {
		return err
	}
	h.Accounts.setCookie(c, QRBindCookie, bind, h.Now().Add(24*time.Hour))
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"qr_id": code.ID, "image": img, "expires_at": code.ExpiresAt})
}

// State answers the code's state to the browser that made it; the first read of confirmed logs it in.
func (h *QRLoginAPI) State(c *fiber.Ctx) error {
	bind := c.Cookies(QRBindCookie)
	if bind == "" {
		return errs.New(errs.NotFound, "no such login code")
	}
	p, err := h.QR.Poll(c.UserContext(), c.Params("id"), bind)
	if err != nil {
		return err
	}
	if p.State == auth.QRScanned {
		return c.JSON(fiber.Map{"state": p.State, "code": p.Code})
	}
	if p.UserID == 0 {
		return c.JSON(fiber.Map{"state": p.State})
	}
	u, err := models.UserByID(c.UserContext(), h.Accounts.DB, p.UserID)
	if err != nil {
		return err
	}
	if err := h.Accounts.startSession(c, u); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"state": p.State, "user": userJSON(u)})
}

// Scan records that this phone scanned the code and shows it what a person needs to judge the PC: where
// it is (its address, a city when there is a location database, whether it is on the phone's network),
// its browser and time, and the numbers to pick the one the PC shows from.
func (h *QRLoginAPI) Scan(c *fiber.Ctx) error {
	s, _ := SessionOf(c)
	scan, err := h.QR.Scan(c.UserContext(), c.Params("id"), s.IDString(), s.UserID)
	if err != nil {
		return err
	}
	if h.Places != nil {
		scan.PC.City = h.Places.City(scan.PC.IP, Lang(c))
	}
	phoneIP := c.IP()
	same := auth.SameNetwork(scan.PC.IP, phoneIP)
	answer := fiber.Map{"state": auth.QRScanned, "pc": scan.PC, "phone_ip": phoneIP, "same_network": same}
	// On one network the person taps the PC's number among three. Elsewhere, where a page relaying a code
	// it took from this site would be, they type it: a victim whose screen shows no number, told by that
	// page which to tap, would hit it one time in three; typed, one in a hundred.
	if same {
		answer["choices"] = scan.Choices
	}
	return c.JSON(answer)
}

// Confirm logs the PC in when the body carries the number the PC shows. A body without it (none, not
// JSON, another number) answers bad_code and cancels the code: the person makes a new one.
func (h *QRLoginAPI) Confirm(c *fiber.Ctx) error {
	s, _ := SessionOf(c)
	var body struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(c.Body(), &body) // a body that is not {"code": "..."} carries no number: a wrong one
	if err := h.QR.Confirm(c.UserContext(), c.Params("id"), s.IDString(), body.Code); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"state": auth.QRConfirmed})
}

// Cancel refuses the PC.
func (h *QRLoginAPI) Cancel(c *fiber.Ctx) error {
	s, _ := SessionOf(c)
	if err := h.QR.Cancel(c.UserContext(), c.Params("id"), s.IDString()); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"state": auth.QRCancelled})
}
