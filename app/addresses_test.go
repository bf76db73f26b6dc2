package app

import (
	"strconv"
	"strings"
	"testing"
)

// An order cannot be paid until it has a delivery address; it keeps its copy of the address whatever
// happens to the address book afterwards.
func TestPayingNeedsAnAddressAndTheOrderKeepsItsCopy(t *testing.T) {
	s := startLive(t, liveOpts{only: []string{"order_consumer"}})
	item, _ := newPaySale(t, s, 5)
	b, o := bareOrderFor(t, s, item, "addr_buyer")
	if a := b.call("GET", "/api/orders/"+o.OrderNo, nil).json(t)["address"]; a != nil {
		t.Fatalf("a new order has address %v, want null", a)
	}
	expect(t, "paying with no address", b.call("POST", "/api/orders/"+o.OrderNo+"/pay", nil), 409, "address_required")
	page := b.call("GET", "/orders/"+o.OrderNo, nil)
	if !strings.Contains(string(page.Body), `id="pay-start" disabled`) || !strings.Contains(string(page.Body), "data-address-form") {
		t.Errorf("the order page offers Pay before an address, or no address form:\n%s", page.Body)
	}

	id := deliverTo(t, b, o.OrderNo, homeAddress)
	got := b.call("GET", "/api/orders/"+o.OrderNo, nil).json(t)["address"].(map[string]any)
	if got["recipient"] != "张伟" || got["city"] != "杭州市" || got["street"] != "西湖区文三路 90 号 3 栋 501" {
		t.Fatalf("the order's address is %v", got)
	}
	// The book changes: the entry is edited, then deleted. The order keeps what was chosen.
	edited := map[string]any{"recipient": "李娜", "phone": "13900000000", "region": "上海市", "city": "上海市", "street": "南京东路 1 号", "postcode": ""}
	if r := b.call("PUT", "/api/addresses/"+strconv.FormatInt(id, 10), edited); r.Status != 200 || r.json(t)["recipient"] != "李娜" {
		t.Fatalf("edit the address: %d %s", r.Status, r.Body)
	}
	if r := b.call("DELETE", "/api/addresses/"+strconv.FormatInt(id, 10), nil); r.Status != 204 {
		t.Fatalf("delete the address: %d %s", r.Status, r.Body)
	}
	if a := b.call("GET", "/api/orders/"+o.OrderNo, nil).json(t)["address"].(map[string]any); a["recipient"] != "张伟" {
		t.Errorf("after the book changed the order's address is %v, want the copy it took", a)
	}
	pay(t, b, o.OrderNo)
	page = b.call("GET", "/orders/"+o.OrderNo, nil)
	if !strings.Contains(string(page.Body), "西湖区文三路 90 号 3 栋 501") {
		t.Errorf("the order page does not show where the order goes")
	}
}

// Every bad field of an address is answered at once, by name, and nothing is saved.
func TestBadAddressNamesEveryBadField(t *testing.T) {
	s := startLive(t, liveOpts{noBackground: true})
	b := newBrowser(t, s.URL)
	b.register("addr_typo", passwordOf("addr_typo"))
	r := b.call("POST", "/api/addresses", map[string]any{"recipient": "  ", "phone": "call me", "region": "浙江省",
		"city": strings.Repeat("杭", 51), "street": "文三路 90 号", "postcode": "!"})
	expect(t, "a bad address", r, 400, "bad_request")
	fields, _ := r.json(t)["fields"].(map[string]any)
	for _, f := range []string{"recipient", "phone", "city", "postcode"} {
		if fields[f] == nil {
			t.Errorf("no reason for %s in %v", f, fields)
		}
	}
	for _, f := range []string{"region", "street"} {
		if fields[f] != nil {
			t.Errorf("the good field %s was called bad: %v", f, fields[f])
		}
	}
	if book := b.call("GET", "/api/addresses", nil); string(book.Body) != "[]" {
		t.Errorf("a refused address was saved: %s", book.Body)
	}
	expect(t, "a body that is not JSON", b.send("POST", "/api/addresses", []byte("recipient=x"), nil), 400, "bad_request")
}

// A shopper sees and uses only their own addresses and orders: another's are 404.
func TestAddressesAreTheShoppersOwn(t *testing.T) {
	s := startLive(t, liveOpts{only: []string{"order_consumer"}})
	item, _ := newPaySale(t, s, 5)
	alice, ao := bareOrderFor(t, s, item, "addr_alice")
	bob, bo := bareOrderFor(t, s, item, "addr_bob")
	id := deliverTo(t, alice, ao.OrderNo, homeAddress)
	path := "/api/addresses/" + strconv.FormatInt(id, 10)
	expect(t, "bob edits alice's address", bob.call("PUT", path, homeAddress), 404, "not_found")
	expect(t, "bob deletes alice's address", bob.call("DELETE", path, nil), 404, "not_found")
	expect(t, "bob ships to alice's address", bob.call("POST", "/api/orders/"+bo.OrderNo+"/address", map[string]any{"address_id": id}), 404, "not_found")
	bobs := deliverTo(t, bob, bo.OrderNo, homeAddress)
	expect(t, "alice's order to bob's address", alice.call("POST", "/api/orders/"+ao.OrderNo+"/address", map[string]any{"address_id": bobs}), 404, "not_found")
	expect(t, "bob chooses for alice's order", bob.call("POST", "/api/orders/"+ao.OrderNo+"/address", map[string]any{"address_id": bobs}), 404, "not_found")
	if book := bob.call("GET", "/api/addresses", nil).Body; strings.Contains(string(book), `"id":`+strconv.FormatInt(id, 10)+",") {
		t.Errorf("bob's book lists alice's address: %s", book)
	}
}

// The address book's page: logged out it sends to the login and back; logged in it lists the book and
// offers the form, in either language.
func TestAddressBookPage(t *testing.T) {
	s := startLive(t, liveOpts{noBackground: true})
	b := newBrowser(t, s.URL)
	if r := b.call("GET", "/account/addresses", nil); r.Status != 302 || r.Header.Get("Location") != "/login?next=%2Faccount%2Faddresses" {
		t.Fatalf("logged out: %d to %q", r.Status, r.Header.Get("Location"))
	}
	b.register("addr_pager", passwordOf("addr_pager"))
	if r := b.call("POST", "/api/addresses", homeAddress); r.Status != 201 {
		t.Fatalf("add: %d %s", r.Status, r.Body)
	}
	page := string(b.call("GET", "/account/addresses", nil).Body)
	for _, want := range []string{"西湖区文三路 90 号 3 栋 501", "data-address-form", "data-delete-address", "Recipient",
		`value="138 0013 8000"`, `data-edit-cancel>Cancel</button>`} {
		if !strings.Contains(page, want) {
			t.Errorf("the address book page lacks %q", want)
		}
	}
	b.call("GET", "/lang/zh", nil)
	if page := string(b.call("GET", "/account/addresses", nil).Body); !strings.Contains(page, "收货人") || !strings.Contains(page, "请填写收货人姓名") ||
		!strings.Contains(page, `data-edit-cancel>取消</button>`) {
		t.Errorf("the Chinese address book page is not in Chinese")
	}
}
