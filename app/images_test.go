package app

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"mime/multipart"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"seckill/handlers"
	"seckill/models"
)

// picture draws a w × h test image: a left half red and a right half blue.
func picture(w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c := color.RGBA{200, 30, 30, 255}
			if x >= w/2 {
				c = color.RGBA{30, 30, 200, 255}
			}
			img.Set(x, y, c)
		}
	}
	return img
}

// phonePhoto is a JPEG as a phone saves it: with an Exif block that says to show it turned a quarter
// clockwise (orientation 6) and that carries a description a shopper must never get (where it was taken).
func phonePhoto(t *testing.T, w, h int, secret string) []byte {
	t.Helper()
	var plain bytes.Buffer
	if err := jpeg.Encode(&plain, picture(w, h), nil); err != nil {
		t.Fatal(err)
	}
	// TIFF header (big-endian), one IFD of two entries: Orientation = 6 and ImageDescription = secret.
	var tiff bytes.Buffer
	tiff.WriteString("MM\x00\x2a\x00\x00\x00\x08")
	binary.Write(&tiff, binary.BigEndian, uint16(2))
	desc := secret + "\x00"
	binary.Write(&tiff, binary.BigEndian, []uint16{0x010e, 2})
	binary.Write(&tiff, binary.BigEndian, []uint32{uint32(len(desc)), 8 + 2 + 2*12 + 4})
	binary.Write(&tiff, binary.BigEndian, []uint16{0x0112, 3})
	binary.Write(&tiff, binary.BigEndian, []uint32{1, 6 << 16})
	binary.Write(&tiff, binary.BigEndian, uint32(0))
	tiff.WriteString(desc)
	app1 := append([]byte("Exif\x00\x00"), tiff.Bytes()...)
	var out bytes.Buffer
	out.Write(plain.Bytes()[:2]) // SOI
	out.Write([]byte{0xff, 0xe1})
	binary.Write(&out, binary.BigEndian, uint16(len(app1)+2))
	out.Write(app1)
	out.Write(plain.Bytes()[2:])
	return out.Bytes()
}

// announceBody sends the headers of a POST whose body would be n bytes, and answers the status the
// server gives before any of it is sent.
func announceBody(t *testing.T, base, path string, n int, session string) int {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cookie := ""
	if session != "" {
		cookie = "Cookie: " + handlers.SessionCookie + "=" + session + "\r\n"
	}
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: image/png\r\nContent-Length: %d\r\n%s\r\n", path, n, cookie)
	// Not a time limit on the server, only on the test: a server that waited for the body would answer
	// nothing (or a timeout, not 413) however long it is given; a busy one may take seconds to look up
	// the session in the header callback.
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a body of %d bytes announced: %v", n, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func encodePNG(t *testing.T, img image.Image) []byte {
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestItemImageUpload(t *testing.T) {
	s := startLive(t, liveOpts{only: []string{"order_consumer"}})
	now := s.Clock.Now()
	merchant := withRole(t, s, "image_shop", models.RoleMerchant)
	rival := withRole(t, s, "image_rival", models.RoleMerchant)
	admin := withRole(t, s, "image_admin", models.RoleAdmin)
	r := merchant.call("POST", "/api/merchant/activities", activityBody(now.Add(5*time.Minute), now.Add(2*time.Hour)))
	id := itoa(int64(r.json(t)["id"].(float64)))
	item := itoa(int64(merchant.call("POST", "/api/merchant/activities/"+id+"/items", goodItem).json(t)["id"].(float64)))
	bare := map[string]any{}
	for k, v := range goodItem {
		bare[k] = v
	}
	bare["name"], bare["image_url"] = "Bare", ""
	merchant.call("POST", "/api/merchant/activities/"+id+"/items", bare)
	path := "/api/merchant/activities/" + id + "/items/" + item + "/image"

	// Refused, each with a clear error: not an image, a GIF, too large, someone else's item.
	r = merchant.upload(path, "image", "notes.png", []byte("these are my notes, not a picture"))
	expect(t, "a text file", r, 400, "bad_request")
	if f, _ := r.json(t)["fields"].(map[string]any); f["image"] == nil {
		t.Errorf("a text file: the error names %v, want the image field", r.json(t)["fields"])
	}
	var gifBuf bytes.Buffer
	gif.Encode(&gifBuf, picture(40, 30), nil)
	expect(t, "a GIF", merchant.upload(path, "image", "a.gif", gifBuf.Bytes()), 400, "bad_request")
	big := append(encodePNG(t, picture(10, 10)), make([]byte, 5<<20)...)
	if r := merchant.upload(path, "image", "big.png", big); r.Status != 413 || !strings.Contains(r.json(t)["message"].(string), "5 MB") {
		t.Errorf("a file over 5 MB: %d %s", r.Status, r.Body)
	}
	if status := announceBody(t, s.URL, path, 7<<20, ""); status != 413 {
		t.Errorf("a body of 7 MB announced: %d, want 413 before it is sent", status)
	}
	// Room for an upload is set aside for a merchant's session only: a stranger, or a shopper, announcing
	// 2 MB is refused at once (BODY_LIMIT is 64 KB).
	shopper := newBrowser(t, s.URL)
	shopper.register("image_shopper", passwordOf("image_shopper"))
	for who, cookie := range map[string]string{"a stranger": "", "a shopper": shopper.cookie(handlers.SessionCookie)} {
		if status := announceBody(t, s.URL, path, 2<<20, cookie); status != 413 {
			t.Errorf("%s announcing 2 MB to the upload route: %d, want 413 before it is sent", who, status)
		}
	}
	// The upload routes take files, not JSON, but never without the CSRF token.
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("image", "a.png")
	fw.Write(encodePNG(t, picture(40, 30)))
	mw.Close()
	noToken := *merchant
	noToken.csrf, noToken.noAutoCSRF = "", true
	expect(t, "an upload without the CSRF token", noToken.send("POST", path, body.Bytes(), map[string]string{"Content-Type": mw.FormDataContentType()}), 403, "csrf")
	expect(t, "another merchant's item", rival.upload(path, "image", "a.png", encodePNG(t, picture(40, 30))), 404, "not_found")
	expect(t, "no file", merchant.send("POST", path, []byte("{}"), nil), 415, "unsupported_media_type")

	// A phone's photo: turned upright, scaled to each size, its metadata gone. It is answered once its
	// images are made, a core-second or two under -race: on two cores under a load of 25, more than the
	// browser's 15 s for an answer, a bound that only tells a hung server from a busy one.
	merchant.c.Timeout = 2 * time.Minute
	const secret = "GPS 31.2304N 121.4737E home"
	r = merchant.upload(path, "image", "IMG_0001.jpg", phonePhoto(t, 1000, 750, secret))
	if r.Status != 200 {
		t.Fatalf("the upload: %d %s", r.Status, r.Body)
	}
	j := r.json(t)
	large, thumb := j["image_url"].(string), j["image_thumb_url"].(string)
	if !strings.HasPrefix(large, "/images/") || !strings.HasSuffix(large, "-960.jpg") || !strings.HasSuffix(thumb, "-480.jpg") {
		t.Fatalf("the item's image addresses: %q %q", large, thumb)
	}
	for url, want := range map[string]image.Point{large: {720, 960}, thumb: {360, 480}} {
		got := newBrowser(t, s.URL).call("GET", url, nil)
		if got.Status != 200 || got.Header.Get("Content-Type") != "image/jpeg" || !strings.Contains(got.Header.Get("Cache-Control"), "max-age=31536000") {
			t.Fatalf("GET %s: %d %s %s", url, got.Status, got.Header.Get("Content-Type"), got.Header.Get("Cache-Control"))
		}
		img, err := jpeg.Decode(bytes.NewReader(got.Body))
		if err != nil {
			t.Fatalf("GET %s is no JPEG: %v", url, err)
		}
		if size := img.Bounds().Size(); size != want {
			t.Errorf("%s is %v, want %v (upright: the photo is portrait)", url, size, want)
		}
		// Upright: turned a quarter clockwise, the red left half is now the top.
		if r, _, b, _ := img.At(want.X/2, want.Y/4).RGBA(); r < b {
			t.Errorf("%s is not turned upright: its top is blue", url)
		}
		if bytes.Contains(got.Body, []byte(secret)) || bytes.Contains(got.Body, []byte("Exif")) {
			t.Errorf("%s still carries the photo's metadata", url)
		}
		etag := got.Header.Get("ETag")
		if again := newBrowser(t, s.URL).send("GET", url, nil, map[string]string{"If-None-Match": etag}); again.Status != 304 {
			t.Errorf("GET %s with its ETag: %d, want 304", url, again.Status)
		}
	}
	expect(t, "an image that does not exist", newBrowser(t, s.URL).call("GET", "/images/"+strings.Repeat("0", 32)+"-960.jpg", nil), 404, "")
	expect(t, "a name that cannot be an image", newBrowser(t, s.URL).call("GET", "/images/..%2f..%2fetc-960.jpg", nil), 404, "")

	// Removed, the item shows its image_url again; uploaded again, the same file gives the same address.
	if r := merchant.call("DELETE", path, nil); r.Status != 200 || r.json(t)["image_url"] != goodItem["image_url"] {
		t.Errorf("removing the image: %d %s", r.Status, r.Body)
	}
	// (Its address names what it held, so an instance that has it in memory may still serve it, as
	// browsers keep it; the database no longer has it.)
	other := startLive(t, liveOpts{db: s.DB, rdb: s.Redis, noBackground: true})
	if got := newBrowser(t, other.URL).call("GET", large, nil); got.Status != 404 {
		t.Errorf("an image no item shows is still in the database: GET %s on another instance answered %d", large, got.Status)
	}
	if r := merchant.upload(path, "image", "IMG_0001.jpg", phonePhoto(t, 1000, 750, secret)); r.Status != 200 || r.json(t)["image_url"] != large {
		t.Fatalf("uploading again: %d %s", r.Status, r.Body)
	}

	// Another instance on the same database serves it too.
	if got := newBrowser(t, other.URL).call("GET", large, nil); got.Status != 200 {
		t.Errorf("another instance: GET %s answered %d", large, got.Status)
	}

	// Approved, the pages show the uploaded image, and the drawn placeholder for the item without one.
	expect(t, "submit", merchant.call("POST", "/api/merchant/activities/"+id+"/submit", nil), 200, "")
	expect(t, "approve", admin.call("POST", "/api/admin/activities/"+id+"/approve", nil), 200, "")
	s.Srv.site.pages.Catalog.Refresh(t.Context())
	home := newBrowser(t, s.URL).call("GET", "/", nil)
	if !bytes.Contains(home.Body, []byte(thumb)) || !bytes.Contains(home.Body, []byte("placeholder")) {
		t.Errorf("the home page lacks the uploaded image's thumbnail or the placeholder")
	}
	if pg := newBrowser(t, s.URL).call("GET", "/items/"+item, nil); !bytes.Contains(pg.Body, []byte(large)) {
		t.Errorf("the item page lacks the uploaded image")
	}
	if pl := newBrowser(t, s.URL).call("GET", "/assets/img/placeholder.svg", nil); pl.Status != 200 {
		t.Errorf("the placeholder: %d", pl.Status)
	}
	expect(t, "an image for an approved item", merchant.upload(path, "image", "a.png", encodePNG(t, picture(40, 30))), 409, "activity_state")
}
