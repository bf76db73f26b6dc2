package app

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"mime/multipart"
	"strings"
	"testing"
	"time"

	"golang.org/x/text/encoding/simplifiedchinese"

	"seckill/handlers"
	"seckill/internal/testenv"
	"seckill/jobs"
	"seckill/models"
)

// paidOrderFor has a new shopper buy one unit, give an address and pay it at the sandbox (its callback
// marks the order paid).
func paidOrderFor(t *testing.T, s *liveServer, item models.Item, name string, addr map[string]any) (*browser, models.Order) {
	t.Helper()
	b, o := bareOrderFor(t, s, item, name)
	deliverTo(t, b, o.OrderNo, addr)
	p := pay(t, b, o.OrderNo)
	if r := b.call("POST", "/sandbox/pay/"+p["payment_id"].(string)+"/confirm", nil); r.Status != 302 {
		t.Fatalf("pressing Pay: %d", r.Status)
	}
	waitStatus(t, s, o.OrderNo, models.OrderPaid, 10*time.Second)
	return b, o
}

// merchantSale makes an approved sale owned by the merchant named, preheated, and the merchant's browser.
func merchantSale(t *testing.T, s *liveServer, merchant string, stock int64) (*browser, models.Activity, models.Item) {
	t.Helper()
	b := withRole(t, s, merchant, models.RoleMerchant)
	now := s.Clock.Now()
	a, item := testenv.Sale(t, s.DB, stock, now.Add(-time.Minute), now.Add(24*time.Hour))
	u, err := models.UserByUsername(context.Background(), s.DB, merchant)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DB.Model(&models.Activity{}).Where("id = ?", a.ID).Update("merchant_id", u.ID).Error; err != nil {
		t.Fatal(err)
	}
	if _, err := s.Srv.Ledger.Preheat(context.Background(), jobs.DBBooks{DB: s.DB}, item.ID); err != nil {
		t.Fatal(err)
	}
	return b, a, item
}

// upload sends a file to path as a multipart form's field, as the console's pages do.
func (b *browser) upload(path, field, name string, content []byte) reply {
	b.t.Helper()
	if b.csrf == "" {
		b.getCSRF()
	}
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	f, _ := w.CreateFormFile(field, name)
	f.Write(content)
	w.Close()
	return b.send("POST", path, body.Bytes(), map[string]string{"Content-Type": w.FormDataContentType()})
}

func readCSV(t *testing.T, r reply) [][]string {
	t.Helper()
	if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/csv") {
		t.Fatalf("the CSV: %d %s %s", r.Status, r.Header.Get("Content-Type"), r.Body)
	}
	if !bytes.HasPrefix(r.Body, []byte("\xEF\xBB\xBF")) {
		t.Errorf("the CSV does not start with a UTF-8 byte order mark: spreadsheets would garble its Chinese")
	}
	rows, err := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(r.Body, []byte("\xEF\xBB\xBF")))).ReadAll()
	if err != nil {
		t.Fatalf("the CSV does not parse: %v", err)
	}
	return rows
}

func writeCSV(rows [][]string) []byte {
	var buf bytes.Buffer
	buf.WriteString("\uFEFF")
	w := csv.NewWriter(&buf)
	w.WriteAll(rows)
	return buf.Bytes()
}

func TestMerchantShipsItsPaidOrders(t *testing.T) {
	s := startLive(t, liveOpts{only: []string{"order_consumer"}})
	merchant, sale, item := merchantSale(t, s, "shipper", 10)
	rival, rivalSale, rivalItem := merchantSale(t, s, "rival_shop", 10)

	shopperA, a := paidOrderFor(t, s, item, "ship_a", homeAddress)
	// A shopper's address line that a spreadsheet would run as a formula.
	formula := map[string]any{"recipient": "李娜", "phone": "13900139000", "region": "北京市", "city": "北京市",
		"street": `=HYPERLINK("http://evil.example","点我")`, "postcode": ""}
	_, b := paidOrderFor(t, s, item, "ship_b", formula)
	_, unpaid := orderFor(t, s, item, "ship_c")
	_, rivals := paidOrderFor(t, s, rivalItem, "ship_r", homeAddress)
	base := "/api/merchant/activities/" + itoa(sale.ID)

	// The list: the two paid orders, with their addresses; not the unpaid one.
	page := merchant.call("GET", base+"/orders", nil).json(t)
	if page["total"] != 2.0 || len(page["orders"].([]any)) != 2 {
		t.Fatalf("the merchant's paid orders: %v", page)
	}
	first := page["orders"].([]any)[0].(map[string]any)
	if first["order_no"] != a.OrderNo || first["address"].(map[string]any)["street"] != homeAddress["street"] || first["paid_at"] == nil {
		t.Errorf("the first paid order: %v", first)
	}

	// Another merchant sees none of it.
	expect(t, "a rival's list", rival.call("GET", base+"/orders", nil), 404, "not_found")
	expect(t, "a rival's CSV", rival.call("GET", base+"/orders.csv", nil), 404, "not_found")
	expect(t, "a rival ships the order", rival.call("POST", "/api/merchant/orders/"+a.OrderNo+"/ship",
		map[string]any{"carrier": "SF", "tracking_no": "SF0001"}), 404, "not_found")
	expect(t, "a rival sends a CSV", rival.upload(base+"/shipments", "file", "x.csv", writeCSV([][]string{{"order_no", "carrier", "tracking_no"},
		{a.OrderNo, "SF", "SF0001"}})), 404, "not_found")
	rivalRows := readCSV(t, rival.call("GET", "/api/merchant/activities/"+itoa(rivalSale.ID)+"/orders.csv", nil))
	if len(rivalRows) != 2 || rivalRows[1][0] != rivals.OrderNo {
		t.Errorf("the rival's CSV: %v, want its one order", rivalRows)
	}
	if bytes.Contains(rival.call("GET", "/api/merchant/activities/"+itoa(rivalSale.ID)+"/orders.csv", nil).Body, []byte(a.OrderNo)) {
		t.Errorf("the rival's CSV lists the other merchant's order")
	}

	// The CSV: a BOM, a header, one row per paid order with its address in Chinese; the formula is inert.
	rows := readCSV(t, merchant.call("GET", base+"/orders.csv", nil))
	if len(rows) != 3 || rows[0][0] != "order_no" || rows[1][0] != a.OrderNo || rows[1][5] != "张伟" || rows[2][0] != b.OrderNo {
		t.Fatalf("the CSV: %v", rows)
	}
	if street := rows[2][9]; street != "'"+formula["street"].(string) {
		t.Errorf("the formula address line is exported as %q: a spreadsheet would run it", street)
	}

	// Sent back: a filled in, b left empty, and three bad rows, reported by their lines.
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	rows[1][col["carrier"]], rows[1][col["tracking_no"]] = "顺丰速运", "SF1234567890"
	bad := func(no, carrier, tracking string) []string {
		r := make([]string, len(rows[0]))
		r[col["order_no"]], r[col["carrier"]], r[col["tracking_no"]] = no, carrier, tracking
		return r
	}
	rows = append(rows, bad(unpaid.OrderNo, "SF", "SF0002"), bad(rivals.OrderNo, "SF", "SF0003"), bad(b.OrderNo, "SF", "!"))
	res := merchant.upload(base+"/shipments", "file", "orders.csv", writeCSV(rows))
	if res.Status != 200 {
		t.Fatalf("sending the CSV back: %d %s", res.Status, res.Body)
	}
	j := res.json(t)
	if j["shipped"] != 1.0 || j["skipped"] != 1.0 || j["bad"] != 3.0 {
		t.Fatalf("sending the CSV back answered %s", res.Body)
	}
	errsByLine := map[float64]map[string]any{}
	for _, e := range j["errors"].([]any) {
		errsByLine[e.(map[string]any)["line"].(float64)] = e.(map[string]any)
	}
	if errsByLine[4]["error"] != "order_state" || errsByLine[5]["error"] != "not_found" ||
		errsByLine[6]["fields"].(map[string]any)["tracking_no"] == nil || len(errsByLine) != 3 {
		t.Errorf("the bad rows: %v", j["errors"])
	}
	for no, want := range map[string]string{a.OrderNo: "shipped", b.OrderNo: "paid", unpaid.OrderNo: "pending_payment", rivals.OrderNo: "paid"} {
		if got := orderStatus(t, s, no); got != want {
			t.Errorf("after the CSV, order %s is %s, want %s", no, got, want)
		}
	}
	// The same file again ships nothing twice.
	if j := merchant.upload(base+"/shipments", "file", "orders.csv", writeCSV(rows)).json(t); j["shipped"] != 0.0 || j["unchanged"] != 1.0 {
		t.Errorf("the same CSV again: %v", j)
	}

	// The shopper sees it shipped, with the tracking number, on the API and the order page.
	got := shopperA.call("GET", "/api/orders/"+a.OrderNo, nil).json(t)
	if got["status"] != "shipped" || got["carrier"] != "顺丰速运" || got["tracking_no"] != "SF1234567890" || got["shipped_at"] == nil {
		t.Errorf("the shopper's order: %v", got)
	}
	shopperA.setCookie("lang", "zh")
	if pg := shopperA.call("GET", "/orders/"+a.OrderNo, nil); !bytes.Contains(pg.Body, []byte("SF1234567890")) || !bytes.Contains(pg.Body, []byte("已发货")) {
		t.Errorf("the shopper's order page does not show the shipment")
	}

	// One by one: every bad field at once, then shipped.
	r := merchant.call("POST", "/api/merchant/orders/"+b.OrderNo+"/ship", map[string]any{"carrier": " ", "tracking_no": "x"})
	expect(t, "shipping with bad fields", r, 400, "bad_request")
	if f, _ := r.json(t)["fields"].(map[string]any); f["carrier"] == nil || f["tracking_no"] == nil {
		t.Errorf("shipping with bad fields names %v, want carrier and tracking_no", r.json(t)["fields"])
	}
	if r := merchant.call("POST", "/api/merchant/orders/"+b.OrderNo+"/ship", map[string]any{"carrier": "EMS", "tracking_no": "EA123456789CN"}); r.Status != 200 || r.json(t)["outcome"] != "shipped" {
		t.Errorf("shipping b: %d %s", r.Status, r.Body)
	}
	if j := merchant.call("GET", base+"/orders?status=to_ship", nil).json(t); j["total"] != 0.0 {
		t.Errorf("orders left to ship: %v", j["total"])
	}

	// A correction, in the file Chinese Excel saves (GB18030, no BOM).
	gb, err := simplifiedchinese.GB18030.NewEncoder().Bytes([]byte("order_no,carrier,tracking_no\r\n" + a.OrderNo + ",圆通速递,YT9876543210\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	if j := merchant.upload(base+"/shipments", "file", "orders.csv", gb).json(t); j["corrected"] != 1.0 {
		t.Errorf("a GB18030 correction: %v", j)
	}
	if got := shopperA.call("GET", "/api/orders/"+a.OrderNo, nil).json(t); got["carrier"] != "圆通速递" {
		t.Errorf("after the correction the carrier is %v", got["carrier"])
	}

	// A file that is not the CSV says so.
	expect(t, "a file without the columns", merchant.upload(base+"/shipments", "file", "x.csv", []byte("a,b\n1,2\n")), 400, "bad_request")
	expect(t, "no file", merchant.send("POST", base+"/shipments", []byte("{}"), nil), 415, "unsupported_media_type")
}

func TestMerchantOrdersPage(t *testing.T) {
	testenv.Long(t)
	s := startLive(t, liveOpts{only: []string{"order_consumer"}})
	merchant, sale, item := merchantSale(t, s, "page_shop", 10)
	_, o := paidOrderFor(t, s, item, "page_buyer", homeAddress)
	path := "/merchant/activities/" + itoa(sale.ID) + "/orders"
	if r := newBrowser(t, s.URL).call("GET", path, nil); r.Status != 302 || !strings.HasPrefix(r.Header.Get("Location"), "/login?next=") {
		t.Errorf("logged out, the orders page answers %d %s", r.Status, r.Header.Get("Location"))
	}
	merchant.setCookie("lang", "zh")
	pg := merchant.call("GET", path, nil)
	for _, want := range []string{o.OrderNo, "张伟", "西湖区文三路", "待发货订单", "下载 CSV", "快递公司"} {
		if !bytes.Contains(pg.Body, []byte(want)) {
			t.Errorf("the orders page lacks %q", want)
		}
	}
	rival := withRole(t, s, "page_rival", models.RoleMerchant)
	if r := rival.call("GET", path, nil); r.Status != 404 || bytes.Contains(r.Body, []byte(o.OrderNo)) {
		t.Errorf("a rival's orders page: %d", r.Status)
	}
}

// A whole sale's CSV at the most rows a file may hold ships in one answer (a transaction per few hundred
// orders, not one per order), well within a request's deadline: 20,000 rows in 2.8 s here. Under the
// race detector (5.5 s alone, over the 15 s deadline when the rest of make test shares the cores) a
// quarter of them.
func TestShipmentsOfAWholeSale(t *testing.T) {
	testenv.Long(t)
	n := handlers.MaxShipmentRows
	if raceDetector {
		n /= 4
	}
	s := startLive(t, liveOpts{noBackground: true})
	merchant, sale, item := merchantSale(t, s, "bulk_shop", int64(n))
	now := s.Clock.Now()
	orders := make([]models.Order, n)
	rows := [][]string{{"order_no", "carrier", "tracking_no"}}
	for i := range orders {
		no := fmt.Sprintf("SKbulk%d", i)
		orders[i] = models.Order{OrderNo: no, UserID: int64(1000 + i), ItemID: item.ID, ActivityID: sale.ID, PriceCents: 990,
			Status: models.OrderPaid, PayDeadline: now, PaidAt: &now, CreatedAt: now, UpdatedAt: now}
		rows = append(rows, []string{no, "SF", fmt.Sprintf("SF%08d", i)})
	}
	if err := s.DB.CreateInBatches(orders, 2000).Error; err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	r := merchant.upload("/api/merchant/activities/"+itoa(sale.ID)+"/shipments", "file", "orders.csv", writeCSV(rows))
	t.Logf("%d rows shipped in %v", len(orders), time.Since(started))
	if r.Status != 200 || r.json(t)["shipped"] != float64(len(orders)) {
		t.Fatalf("a whole sale's CSV: %d %.300s", r.Status, r.Body)
	}
	// Each with its own row's tracking number.
	var got []models.Order
	s.DB.Select("order_no", "status", "tracking_no", "shipped_at").Where("activity_id = ?", sale.ID).Find(&got)
	wrong := 0
	for _, o := range got {
		var i int
		fmt.Sscanf(o.OrderNo, "SKbulk%d", &i)
		if o.Status != models.OrderShipped || o.TrackingNo != fmt.Sprintf("SF%08d", i) || o.ShippedAt == nil {
			wrong++
		}
	}
	if len(got) != len(orders) || wrong > 0 {
		t.Errorf("%d of %d orders not shipped with their own tracking number", wrong, len(got))
	}
}
