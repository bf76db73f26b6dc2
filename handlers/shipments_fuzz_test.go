package handlers

import (
	"testing"
	"unicode/utf8"

	"seckill/errs"
)

// FuzzReadShipments: whatever a merchant sends back as the CSV, reading it answers rows or a clear
// 400, never a panic; every row it keeps names an order as an order can be named (or says why not), with
// a line in the file, and no more rows than the limit.
func FuzzReadShipments(f *testing.F) {
	for _, seed := range []string{
		"\uFEFForder_no,item,price,status,paid_at,recipient,phone,region,city,street,postcode,carrier,tracking_no\r\nSK1,Kettle,9.90,paid,2026-11-22T08:14:02Z,张伟,138,浙江,杭州,文三路,310012,顺丰,SF123456\r\n",
		"order_no,carrier,tracking_no\nSK1,,\nSK2,EMS,\n\n'SK3,'=x,'T-1234\n",
		"tracking_no,order_no,carrier\n\"SK1\",\"a\"\"b\",\"x\ny\"\n",
		"a,b\n1,2\n",
		"",
		"order_no,carrier,tracking_no\n\"unterminated,x,y\n",
		"order_no,carrier,tracking_no\n\xb6\xa9\xb5\xa5,\xcb\xb3\xb7\xe1,SF1\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		rows, err := readShipments(raw)
		if err != nil {
			if errs.Code(err) != errs.BadRequest {
				t.Fatalf("reading %q answered %v, want a 400", raw, err)
			}
			return
		}
		if len(rows) == 0 || len(rows) > MaxShipmentRows {
			t.Fatalf("reading %q kept %d rows", raw, len(rows))
		}
		for _, r := range rows {
			if r.line < 2 {
				t.Fatalf("a row on line %d: the header is line 1", r.line)
			}
			if r.err == nil && !validOrderNo(r.orderNo) {
				t.Fatalf("row %d kept order number %q", r.line, r.orderNo)
			}
			// (A row kept without an error names an order as orders are named, so without the ' that made its
			// cell inert: checked above.)
			if !utf8.ValidString(r.ship.Carrier) || !utf8.ValidString(r.ship.TrackingNo) {
				t.Fatalf("row %d: %q %q %q", r.line, r.orderNo, r.ship.Carrier, r.ship.TrackingNo)
			}
		}
	})
}
