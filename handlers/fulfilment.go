package handlers

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"golang.org/x/text/encoding/simplifiedchinese"
	"gorm.io/gorm"

	"seckill/errs"
	"seckill/i18n"
	"seckill/models"
	"seckill/orders"
)

// Fulfilment serves a merchant's paid orders: the list with the delivery addresses, its CSV, and marking
// orders shipped one by one or by sending the CSV back with carriers and tracking numbers filled in.
type Fulfilment struct {
	DB     *gorm.DB
	Orders *orders.Service
	Now    func() time.Time
}

// ordersPage is one page of an activity's orders.
type OrdersPage struct {
	Orders  []orderJSON `json:"orders"`
	Page    int         `json:"page"`
	PerPage int         `json:"per_page"`
	Total   int64       `json:"total"`

	activityID int64
}

// filter reads ?status= (to_ship, shipped or all; all when absent).
func filter(c *fiber.Ctx) (string, error) {
	f := c.Query("status", models.AllPaid)
	if !models.ValidOrderFilter(f) {
		return "", errs.Bad(errs.W("status", "order_filter"))
	}
	return f, nil
}

// ActivityOrders answers one page of an activity's paid and shipped orders: ?status=, ?page= (from 1).
func (h *Fulfilment) ActivityOrders(c *fiber.Ctx) error {
	page, err := h.ordersPage(c)
	if err != nil {
		return err
	}
	return c.JSON(page)
}

// ordersPage reads the page of orders a request asks for (the API's and the console page's).
func (h *Fulfilment) ordersPage(c *fiber.Ctx) (*OrdersPage, error) {
	s, _ := SessionOf(c)
	id, err := pathID(c, "id", "activity")
	if err != nil {
		return nil, err
	}
	f, err := filter(c)
	if err != nil {
		return nil, err
	}
	page := 1
	if p := c.Query("page"); p != "" {
		if page, err = strconv.Atoi(p); err != nil || page < 1 || page > 1_000_000 {
			return nil, errs.Bad(errs.W("page", "page_number"))
		}
	}
	list, total, err := models.ActivityOrders(c.UserContext(), h.DB, s.UserID, id, f, page)
	if err != nil {
		return nil, err
	}
	views, err := orderViews(c, h.DB, list)
	if err != nil {
		return nil, err
	}
	return &OrdersPage{Orders: views, Page: page, PerPage: models.OrdersPerPage, Total: total, activityID: id}, nil
}

// csvColumns are the CSV's columns. Sending it back, only order_no, carrier and tracking_no are read.
var csvColumns = []string{"order_no", "item", "price", "status", "paid_at", "recipient", "phone", "region", "city", "street", "postcode", "carrier", "tracking_no"}

// The byte order mark that makes spreadsheets read the file as UTF-8 (Excel shows Chinese as mojibake
// without it).
const bom = "\uFEFF"

// ActivityOrdersCSV answers an activity's paid and shipped orders (?status=) as CSV.
func (h *Fulfilment) ActivityOrdersCSV(c *fiber.Ctx) error {
	s, _ := SessionOf(c)
	id, err := pathID(c, "id", "activity")
	if err != nil {
		return err
	}
	f, err := filter(c)
	if err != nil {
		return err
	}
	list, err := models.AllActivityOrders(c.UserContext(), h.DB, s.UserID, id, f)
	if err != nil {
		return err
	}
	views, err := orderViews(c, h.DB, list)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	buf.WriteString(bom)
	w := csv.NewWriter(&buf)
	w.UseCRLF = true
	_ = w.Write(csvColumns)
	for _, o := range views {
		var d models.Delivery
		if o.Address != nil {
			d = *o.Address
		}
		paid := ""
		if o.PaidAt != nil {
			paid = o.PaidAt.Format(time.RFC3339)
		}
		row := []string{o.OrderNo, o.Name, fmt.Sprintf("%d.%02d", o.PriceCents/100, o.PriceCents%100), o.Status, paid,
			d.Recipient, d.Phone, d.Region, d.City, d.Street, d.Postcode, o.Carrier, o.TrackingNo}
		for i := range row {
			row[i] = inert(row[i])
		}
		_ = w.Write(row)
	}
	w.Flush()
	noStore(c)
	c.Set(fiber.HeaderContentType, "text/csv; charset=utf-8")
	c.Set(fiber.HeaderContentDisposition, fmt.Sprintf(`attachment; filename="activity-%d-orders.csv"`, id))
	return c.Send(buf.Bytes())
}

// inert keeps a cell from running as a formula when a spreadsheet opens the file (a shopper's address
// line "=HYPERLINK(…)", say): a cell starting with = + - @ or a tab or carriage return gets a leading '.
func inert(cell string) string {
	if cell != "" && strings.ContainsRune("=+-@\t\r", rune(cell[0])) {
		return "'" + cell
	}
	return cell
}

// Ship marks one of the merchant's paid orders shipped, or corrects a shipped order's carrier and
// tracking number.
func (h *Fulfilment) Ship(c *fiber.Ctx) error {
	s, _ := SessionOf(c)
	no, err := pathOrderNo(c)
	if err != nil {
		return err
	}
	var in models.Shipment
	if err := parseJSON(c, &in); err != nil {
		return err
	}
	outcome, o, err := h.Orders.Ship(c.UserContext(), s.UserID, no, in)
	if err != nil {
		return err
	}
	views, err := orderViews(c, h.DB, []models.Order{*o})
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"outcome": outcome, "order": views[0]})
}

// MaxShipmentRows is how many orders one CSV sent back can hold.
const MaxShipmentRows = 20_000

// maxRowErrors is how many bad rows an answer lists (it counts them all, and says how many it left out),
// each with its order number cut as errs.Echo cuts them: a file of 5 MB of bad order numbers
// answered 4 MB of JSON when every one was quoted whole.
const maxRowErrors = 200

// RowError is a row of a CSV sent back that was not applied, by its line in the file.
type RowError struct {
	Line    int               `json:"line"`
	OrderNo string            `json:"order_no,omitempty"`
	Error   string            `json:"error"`
	Message string            `json:"message"`
	Fields  map[string]string `json:"fields,omitempty"`
}

// shipmentsResult is what a CSV sent back did.
type shipmentsResult struct {
	Shipped   int        `json:"shipped"`    // orders shipped now
	Corrected int        `json:"corrected"`  // shipped orders whose carrier or tracking number changed
	Unchanged int        `json:"unchanged"`  // shipped already, as the row says
	Skipped   int        `json:"skipped"`    // rows with neither carrier nor tracking number: not shipped yet
	Bad       int        `json:"bad"`        // rows not applied (the first 200 are in errors)
	NotListed int        `json:"not_listed"` // bad rows left out of errors
	Errors    []RowError `json:"errors"`
}

// Shipments marks shipped the orders of a CSV sent back (the exported file, with carrier and tracking_no
// filled in): a multipart upload in the field "file", or the CSV as the body (text/csv). Every good row
// is applied and every bad one reported by its line, so a fixed file can be sent again: rows applied
// before change nothing. UTF-8 (with or without a BOM) is read, and GB18030, which Chinese Excel saves.
func (h *Fulfilment) Shipments(c *fiber.Ctx) error {
	s, _ := SessionOf(c)
	id, err := pathID(c, "id", "activity")
	if err != nil {
		return err
	}
	// The activity first: a merchant sending a file to another's activity learns nothing, not even whether
	// its file parses.
	if err := models.OwnActivity(c.UserContext(), h.DB, s.UserID, id); err != nil {
		return err
	}
	raw, err := uploaded(c, "file", "text/csv")
	if err != nil {
		return err
	}
	rows, err := readShipments(raw)
	if err != nil {
		return err
	}
	lang := Lang(c)
	res := shipmentsResult{Errors: []RowError{}}
	bad := func(r RowError) {
		res.Bad++
		res.Errors = append(res.Errors, r)
	}
	var batch []orders.ShipRow
	var lines []int
	for _, r := range rows {
		switch {
		case r.err != nil:
			bad(rowError(lang, r.line, r.orderNo, r.err))
		case r.ship.Carrier == "" && r.ship.TrackingNo == "":
			res.Skipped++
		default:
			batch = append(batch, orders.ShipRow{OrderNo: r.orderNo, Shipment: r.ship})
			lines = append(lines, r.line)
		}
	}
	if err := h.Orders.ShipAll(c.UserContext(), s.UserID, id, batch); err != nil {
		return err
	}
	for i, r := range batch {
		switch {
		case r.Err != nil:
			bad(rowError(lang, lines[i], r.OrderNo, r.Err))
		case r.Outcome == orders.ShipDone:
			res.Shipped++
		case r.Outcome == orders.ShipCorrected:
			res.Corrected++
		default:
			res.Unchanged++
		}
	}
	// The bad rows by their lines, whichever step found them.
	sort.Slice(res.Errors, func(a, b int) bool { return res.Errors[a].Line < res.Errors[b].Line })
	res.Errors = res.Errors[:min(len(res.Errors), maxRowErrors)]
	res.NotListed = res.Bad - len(res.Errors)
	return c.JSON(res)
}

// rowError is a bad row as the merchant reads it, in lang's words.
func rowError(lang string, line int, orderNo string, err error) RowError {
	var e *errs.Error
	if !errors.As(err, &e) {
		e = errs.New(errs.BadRequest, err.Error())
	}
	e = e.Localize(lang, i18n.For(lang).T)
	return RowError{Line: line, OrderNo: errs.Echo(orderNo), Error: e.Code, Message: e.Message, Fields: e.Fields}
}

type shipmentRow struct {
	line    int
	orderNo string
	ship    models.Shipment
	err     error
}

var errNoRows = errs.Bad(errs.W("file", "file_empty"))

// readShipments reads a CSV sent back: a header naming order_no, carrier and tracking_no (in any order,
// among other columns), then one order per row.
func readShipments(raw []byte) ([]shipmentRow, error) {
	raw = bytes.TrimPrefix(raw, []byte(bom))
	if !utf8.Valid(raw) {
		dec, err := simplifiedchinese.GB18030.NewDecoder().Bytes(raw)
		if err != nil {
			return nil, errs.Bad(errs.W("file", "file_encoding"))
		}
		raw = dec
	}
	r := csv.NewReader(bytes.NewReader(raw))
	r.FieldsPerRecord = -1
	head, err := r.Read()
	if errors.Is(err, io.EOF) {
		return nil, errNoRows
	}
	if err != nil {
		return nil, errs.Bad(errs.W("file", "file_not_csv"))
	}
	col := map[string]int{}
	for i, h := range head {
		col[strings.ToLower(strings.TrimSpace(h))] = i
	}
	for _, want := range []string{"order_no", "carrier", "tracking_no"} {
		if _, ok := col[want]; !ok {
			return nil, errs.Bad(errs.W("file", "file_columns"))
		}
	}
	var out []shipmentRow
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if len(out) == MaxShipmentRows {
			return nil, errs.Bad(errs.W("file", "file_rows", MaxShipmentRows))
		}
		if err != nil {
			line := 0
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				line = pe.StartLine
			}
			out = append(out, shipmentRow{line: line, err: errs.Bad(errs.W("file", "file_line"))})
			if line == 0 || errors.Is(err, io.ErrUnexpectedEOF) {
				break // nothing more can be read
			}
			continue
		}
		line, _ := r.FieldPos(0)
		cell := func(name string) string {
			if i := col[name]; i < len(rec) {
				// The ' that made a cell inert in the export goes, wherever the spaces around it are.
				return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(rec[i]), "'"))
			}
			return ""
		}
		row := shipmentRow{line: line, orderNo: cell("order_no"), ship: models.Shipment{Carrier: cell("carrier"), TrackingNo: cell("tracking_no")}}
		if strings.Join(rec, "") == "" {
			continue // a blank line
		}
		if !validOrderNo(row.orderNo) {
			row.err = errs.Bad(errs.W("order_no", "no_order"))
		}
		out = append(out, row)
	}
	if len(out) == 0 {
		return nil, errNoRows
	}
	return out, nil
}

// maxUpload is the largest file a merchant uploads (an item's image, a CSV sent back), and MaxUploadBody
// the largest request body carrying one (the multipart envelope's few lines on top).
const (
	maxUpload     = 5 << 20
	MaxUploadBody = maxUpload + 64<<10
	MaxUpload     = maxUpload // for the pages, which check a file's size before sending it
)

// TooLargeUpload is the 413 of a file over maxUpload sent in field ("image" or "file"), said with the
// real limit in the reader's words, beside the field.
func TooLargeUpload(field string) *errs.Error {
	key := "file_too_large"
	if field == "image" {
		key = "image_too_large"
	}
	e := errs.Bad(errs.W(field, key, maxUpload>>20))
	e.Code = errs.TooLarge
	return e
}

// UploadField names the file field of an upload route (path and query): "image" or "file".
func UploadField(uri string) string {
	path, _, _ := strings.Cut(uri, "?")
	if strings.HasSuffix(path, "/image") {
		return "image"
	}
	return "file"
}

// IsUpload reports whether a request for uri (path and query) is one of the upload routes.
func IsUpload(uri string) bool {
	path, _, _ := strings.Cut(uri, "?")
	rest, ok := strings.CutPrefix(path, "/api/merchant/activities/")
	return ok && (strings.HasSuffix(rest, "/shipments") || strings.HasSuffix(rest, "/image"))
}

// uploaded reads an uploaded file: the multipart field, or the whole body when the request's type is one
// of bodyTypes. A file over maxUpload answers too_large.
func uploaded(c *fiber.Ctx, field string, bodyTypes ...string) ([]byte, error) {
	tooLarge := func(int64) error { return TooLargeUpload(field) }
	ct := strings.ToLower(strings.TrimSpace(strings.SplitN(c.Get(fiber.HeaderContentType), ";", 2)[0]))
	if ct == fiber.MIMEMultipartForm {
		fh, err := c.FormFile(field)
		if err != nil {
			return nil, errs.Bad(errs.W(field, "choose_file"))
		}
		if fh.Size > maxUpload {
			return nil, tooLarge(fh.Size)
		}
		f, err := fh.Open()
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return io.ReadAll(io.LimitReader(f, maxUpload+1))
	}
	for _, t := range bodyTypes {
		if ct == t {
			if len(c.Body()) > maxUpload {
				return nil, tooLarge(int64(len(c.Body())))
			}
			return c.Body(), nil
		}
	}
	return nil, errs.Newf(errs.UnsupportedMedia, "send the file as multipart/form-data (field %s) or as %s", field, strings.Join(bodyTypes, " or "))
}

// Page is the merchant's orders page of an activity: the paid orders with their addresses, a ship form
// each, the CSV to download and the form to send it back.
func (h *Fulfilment) Page(c *fiber.Ctx) error {
	if _, ok, err := pageRole(c, h.Now(), models.RoleMerchant); !ok {
		return err
	}
	page, err := h.ordersPage(c)
	if err != nil {
		return err
	}
	s, _ := SessionOf(c)
	a, err := models.MerchantActivity(c.UserContext(), h.DB, s.UserID, page.activityID)
	if err != nil {
		return err
	}
	last := max(int((page.Total+int64(page.PerPage)-1)/int64(page.PerPage)), 1)
	status := c.Query("status", models.AllPaid)
	// An empty list says why: none paid yet, or (to ship) every paid one shipped, or (shipped) none yet.
	none := "ful.none"
	if page.Total == 0 && status != models.AllPaid {
		paid, err := models.CountActivityOrders(c.UserContext(), h.DB, page.activityID, models.AllPaid)
		if err != nil {
			return err
		}
		if paid > 0 && status == models.ToShip {
			none = "ful.noneToShip"
		} else if paid > 0 {
			none = "ful.noneShipped"
		}
	}
	noStore(c)
	data := PageData(c, h.Now(), "ful.title", "Activity", a, "Page", page, "Status", status,
		"Prev", page.Page-1, "Next", page.Page+1, "Last", last, "None", none)
	data["Title"] = a.Name
	return c.Render("merchant_orders", data, Layout)
}
