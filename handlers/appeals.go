package handlers

import (
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"seckill/catalog"
	"seckill/errs"
	"seckill/models"
	"seckill/ratelimit"
	"seckill/stock"
)

// Appeals serves a shopper's appeal from a queue sale's line ("Something wrong? Ask us to look"), and the
// admins' list of appeals with their answers. Every entrant may appeal, so that a shadowed one, who must
// not be able to tell, may too. Appeals are read from PostgreSQL only when a shopper or an admin asks:
// never on the line's hot polls.
type Appeals struct {
	DB          *gorm.DB
	Catalog     *catalog.Catalog
	Line        *stock.Line
	Limits      *ratelimit.Shared
	RateLimitIP bool
	Now         func() time.Time
}

// The appeals' limits: a person writes a few, a script is slowed down.
var (
	appealsPerUser = ratelimit.Limit{Rate: 10, Burst: 3, Period: time.Hour}
	appealsPerIP   = ratelimit.Limit{Rate: 60, Burst: 20, Period: time.Hour}
)

// appealsPerPage is how many appeals a page of the admins' list holds.
const appealsPerPage = 50

// appealJSON is the contract's `appeal`.
type appealJSON struct {
	ID        int64     `json:"id"`
	ItemID    int64     `json:"item_id"`
	Message   string    `json:"message"`
	State     string    `json:"state"`
	Answer    *string   `json:"answer"`
	CreatedAt time.Time `json:"created_at"`
}

func toAppealJSON(a *models.Appeal) appealJSON {
	return appealJSON{ID: a.ID, ItemID: a.ItemID, Message: a.Message, State: a.State, Answer: a.Answer, CreatedAt: a.CreatedAt.UTC()}
}

// adminAppealJSON is an appeal as the admins read it: with who wrote it.
type adminAppealJSON struct {
	appealJSON
	UserID   int64  `json:"user_id"`
	Username string `json:"username"`
}

func toAdminAppealJSON(a *models.AppealWithUser) adminAppealJSON {
	return adminAppealJSON{appealJSON: toAppealJSON(&a.Appeal), UserID: a.UserID, Username: a.Username}
}

var errNotInLine = errs.New(errs.NotInLine, "you are not in this item's line: only its entrants may ask us to look at it")

// Create answers POST /api/items/{id}/appeal: the caller, in the item's line, asks a person to look.
func (h *Appeals) Create(c *fiber.Ctx) error {
	s, _ := SessionOf(c)
	itemID, err := pathID(c, "id", "item")
	if err != nil {
		return err
	}
	var in struct {
		Message string `json:"message"`
	}
	if err := parseJSON(c, &in); err != nil {
		return err
	}
	if err := models.CheckAppealMessage(&in.Message); err != nil {
		return err
	}
	ctx := c.UserContext()
	if h.RateLimitIP {
		if err := h.Limits.Allow(ctx, "appeal:ip:"+addressKey(c), appealsPerIP); err != nil {
			return err
		}
	}
	if err := h.Limits.Allow(ctx, "appeal:user:"+strconv.FormatInt(s.UserID, 10), appealsPerUser); err != nil {
		return err
	}
	if err := h.inLine(c, itemID, s.UserID); err != nil {
		return err
	}
	a, err := models.CreateAppeal(ctx, h.DB, s.UserID, itemID, in.Message, h.Now())
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(toAppealJSON(a))
}

// inLine answers not_in_line unless userID has joined the line of itemID, a queue sale's item.
func (h *Appeals) inLine(c *fiber.Ctx, itemID, userID int64) error {
	ctx := c.UserContext()
	_, a, err := h.Catalog.Item(ctx, itemID)
	if err != nil {
		return err
	}
	if a.SaleMode != models.SaleQueue {
		return errNotInLine
	}
	st, err := h.Line.StandingOf(ctx, itemID, userID)
	if err != nil {
		return err
	}
	if st.Place.Ticket == "" {
		return errNotInLine
	}
	return nil
}

// Mine answers GET /api/items/{id}/appeal: the caller's latest appeal about the item, or 404.
func (h *Appeals) Mine(c *fiber.Ctx) error {
	s, _ := SessionOf(c)
	itemID, err := pathID(c, "id", "item")
	if err != nil {
		return err
	}
	a, err := models.LatestAppeal(c.UserContext(), h.DB, s.UserID, itemID)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(toAppealJSON(a))
}

// appealsPage reads ?state= (open, the default, or answered) and ?page= (from 1).
func appealsPage(c *fiber.Ctx) (string, int, error) {
	state := c.Query("state", models.AppealOpen)
	var whys []errs.Why
	if state != models.AppealOpen && state != models.AppealAnswered {
		whys = append(whys, errs.W("state", "appeal_state"))
	}
	page := 1
	if p := c.Query("page"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 100_000 {
			whys = append(whys, errs.W("page", "page_number"))
		}
		page = n
	}
	if len(whys) > 0 {
		return "", 0, errs.Bad(whys...)
	}
	return state, page, nil
}

// List answers GET /api/admin/appeals: a page of the appeals in a state, newest first.
func (h *Appeals) List(c *fiber.Ctx) error {
	state, page, err := appealsPage(c)
	if err != nil {
		return err
	}
	rows, total, err := models.Appeals(c.UserContext(), h.DB, state, appealsPerPage, (page-1)*appealsPerPage)
	if err != nil {
		return err
	}
	out := make([]adminAppealJSON, len(rows))
	for i := range rows {
		out[i] = toAdminAppealJSON(&rows[i])
	}
	return c.JSON(fiber.Map{"appeals": out, "total": total, "page": page, "per_page": appealsPerPage})
}

// Answer answers POST /api/admin/appeals/{id}/answer: the admin's answer, which the shopper reads on the
// item page; audited.
func (h *Appeals) Answer(c *fiber.Ctx) error {
	id, err := pathID(c, "id", "appeal")
	if err != nil {
		return err
	}
	var in struct {
		Answer string `json:"answer"`
	}
	if err := parseJSON(c, &in); err != nil {
		return err
	}
	who, err := actor(c, h.DB)
	if err != nil {
		return err
	}
	a, err := models.AnswerAppeal(c.UserContext(), h.DB, who, id, in.Answer, h.Now())
	if err != nil {
		return err
	}
	return c.JSON(toAdminAppealJSON(a))
}

// appealRow is an appeal on the admins' page: with its item's name.
type appealRow struct {
	models.AppealWithUser
	ItemName string
}

// Page renders /admin/appeals: the appeals in a state, newest first, each open one with a form to answer.
func (h *Appeals) Page(c *fiber.Ctx) error {
	if _, ok, err := pageRole(c, h.Now(), models.RoleAdmin); !ok {
		return err
	}
	state, page, err := appealsPage(c)
	if err != nil {
		state, page = models.AppealOpen, 1 // a page's address typed wrong shows the first page of the open ones
	}
	ctx := c.UserContext()
	rows, total, err := models.Appeals(ctx, h.DB, state, appealsPerPage, (page-1)*appealsPerPage)
	if err != nil {
		return err
	}
	last := max(int((total+appealsPerPage-1)/appealsPerPage), 1)
	if page > last { // past the last page (the list shrank, or the address was typed): the last one
		return c.Redirect("/admin/appeals?state="+state+"&page="+strconv.Itoa(last), fiber.StatusFound)
	}
	ids := make([]int64, len(rows))
	for i := range rows {
		ids[i] = rows[i].ItemID
	}
	names, err := models.ItemNames(ctx, h.DB, ids)
	if err != nil {
		return err
	}
	out := make([]appealRow, len(rows))
	for i := range rows {
		out[i] = appealRow{AppealWithUser: rows[i], ItemName: names[rows[i].ItemID]}
	}
	noStore(c)
	return c.Render("admin_appeals", PageData(c, h.Now(), "appeal.adminTitle", "Appeals", out, "State", state, "Total", total,
		"Page", page, "Prev", page-1, "Next", page+1, "Last", last), Layout)
}
