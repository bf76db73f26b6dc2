package pictures

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"testing"

	"seckill/pictures/picturestest"
)

func encoded(t testing.TB, w, h int, asPNG bool) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.NRGBA{uint8(x), uint8(y), 128, uint8(255 * (x % 2))})
		}
	}
	var buf bytes.Buffer
	var err error
	if asPNG {
		err = png.Encode(&buf, img)
	} else {
		err = jpeg.Encode(&buf, img, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// A small image keeps its size at every size (never enlarged); a large one fits each; a transparent PNG
// is laid on white.
func TestProcessSizes(t *testing.T) {
	for _, tt := range []struct {
		w, h   int
		png    bool
		sizes  map[string]image.Point
		whiter bool
	}{
		{300, 200, true, map[string]image.Point{"960": {300, 200}, "480": {300, 200}}, true},
		{2000, 1000, false, map[string]image.Point{"960": {960, 480}, "480": {480, 240}}, false},
	} {
		p, err := Process(encoded(t, tt.w, tt.h, tt.png))
		if err != nil {
			t.Fatal(err)
		}
		for name, want := range tt.sizes {
			img, err := jpeg.Decode(bytes.NewReader(p.Variants[name]))
			if err != nil {
				t.Fatalf("%dx%d at %s: %v", tt.w, tt.h, name, err)
			}
			if got := img.Bounds().Size(); got != want {
				t.Errorf("%dx%d at %s is %v, want %v", tt.w, tt.h, name, got, want)
			}
			// Column 0 is fully transparent in the PNG: on white it shows white.
			if r, g, b, _ := img.At(0, 5).RGBA(); tt.whiter && (r < 0xe000 || g < 0xe000 || b < 0xe000) {
				t.Errorf("a transparent pixel came out %x %x %x, want white", r, g, b)
			}
		}
		if len(p.Sum) != 32 {
			t.Errorf("the sum %q is not 32 hex digits", p.Sum)
		}
	}
}

// pngClaiming is a PNG header claiming w × h pixels of 8-bit RGBA, and nothing after it.
func pngClaiming(w, h uint32, colorType byte) []byte {
	var buf bytes.Buffer
	png.Encode(&buf, image.NewGray(image.Rect(0, 0, 1, 1)))
	raw := buf.Bytes()
	binary.BigEndian.PutUint32(raw[16:20], w)
	binary.BigEndian.PutUint32(raw[20:24], h)
	raw[24], raw[25] = 8, colorType
	binary.BigEndian.PutUint32(raw[29:33], crc32.ChecksumIEEE(raw[12:29])) // the header chunk's checksum
	return raw
}

// An image too large to open is refused from its header alone: by its memory, or by a side.
func TestProcessRefusesHugeImages(t *testing.T) {
	for name, raw := range map[string][]byte{
		"8000 × 8000 RGBA (512 MB)": pngClaiming(8000, 8000, 6),
		"6000 × 4000 RGBA (192 MB)": pngClaiming(6000, 4000, 6),
		"20000 × 10 (a long strip)": pngClaiming(20000, 10, 0),
	} {
		if _, err := Process(raw); !errors.Is(err, ErrTooBig) {
			t.Errorf("%s: %v, want ErrTooBig", name, err)
		}
	}
	// Just within: the header passes, and the missing pixels make it no image.
	if _, err := Process(pngClaiming(4000, 3000, 6)); !errors.Is(err, ErrNotImage) {
		t.Errorf("a 4000 × 3000 PNG header with no pixels: %v, want ErrNotImage", err)
	}
}

// FuzzProcess: whatever is uploaded, Process answers images that decode, or ErrNotImage, ErrTooBig or
// ErrTooCostly;
// never a panic.
func FuzzProcess(f *testing.F) {
	f.Add(encoded(f, 8, 6, true))
	f.Add(encoded(f, 8, 6, false))
	f.Add([]byte("GIF89a"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := Process(raw)
		if err != nil {
			if !errors.Is(err, ErrNotImage) && !errors.Is(err, ErrTooBig) && !errors.Is(err, ErrTooCostly) {
				t.Fatalf("Process answered %v", err)
			}
			return
		}
		for name, b := range p.Variants {
			if _, err := jpeg.Decode(bytes.NewReader(b)); err != nil {
				t.Fatalf("size %s does not decode: %v", name, err)
			}
		}
	})
}

// jpegClaiming is the start of a JPEG whose frame header (SOF0 baseline, or SOF2 progressive) claims
// w × h pixels in three components, after an APP0 segment, and nothing after it.
func jpegClaiming(w, h uint16, sof byte) []byte {
	raw := []byte{0xff, 0xd8, 0xff, 0xe0, 0, 16, 'J', 'F', 'I', 'F', 0, 1, 1, 0, 0, 1, 0, 1, 0, 0}
	raw = append(raw, 0xff, sof, 0, 17, 8, byte(h>>8), byte(h), byte(w>>8), byte(w), 3,
		1, 0x11, 0, 2, 0x11, 1, 3, 0x11, 1)
	return raw
}

// A progressive JPEG costs more to open (its decoder keeps every coefficient): the same size that passes
// as a baseline JPEG is refused as a progressive one.
func TestProcessCountsProgressiveJPEGs(t *testing.T) {
	if !walkJPEG(jpegClaiming(3000, 3000, 0xc2)).progressive || walkJPEG(jpegClaiming(3000, 3000, 0xc0)).progressive {
		t.Fatal("walkJPEG does not tell SOF2 from SOF0")
	}
	if _, err := Process(jpegClaiming(3000, 3000, 0xc0)); !errors.Is(err, ErrNotImage) {
		t.Errorf("a 3000 × 3000 baseline JPEG header: %v, want it let through to the decoder (ErrNotImage: no pixels)", err)
	}
	if _, err := Process(jpegClaiming(3000, 3000, 0xc2)); !errors.Is(err, ErrTooBig) {
		t.Errorf("a 3000 × 3000 progressive JPEG header: %v, want ErrTooBig", err)
	}
}

// A JPEG whose scans would keep the decoder busy is refused from its markers, before any decoding, in
// a few milliseconds whatever its size: 2,000 repeated scans of an 8-megapixel image (283 KB, 6.4
// core-seconds to decode), and a 5 MB file of them. Honest JPEGs pass: a baseline one, and a
// progressive one of 10 scans.
func TestProcessRefusesCostlyScans(t *testing.T) {
	for _, tt := range []struct {
		name string
		raw  []byte
	}{
		{"2,000 scans, 283 KB", picturestest.ManyScans(2800, 2800, 2000, 71)},
		{"a 5 MB file of scans", picturestest.ManyScans(2800, 2800, 84_000, 0)},
		{"65 scans of a small image", picturestest.ManyScans(64, 64, maxScans+1, 0)},
		{"40 scans of 7 colour megapixels", picturestest.ManyColourScans(2800, 2600, 40)},
		// Found by the review: the decoder skips bytes that are no marker, and the walk stopped at them.
		{"2,000 scans behind one junk byte", junkBefore(picturestest.ManyScans(2700, 2700, 2000, 0), 2, []byte{0})},
		{"2,000 scans behind junk before each", junkBefore(picturestest.ManyScans(2700, 2700, 2000, 0), 0, []byte{0x00, 0x12, 0xfe})},
	} {
		// ErrTooCostly comes only from the check before decoding: a decoded file would answer nil or
		// ErrNotImage, so no clock is needed to tell that it was refused at once.
		_, err := Process(tt.raw)
		if !errors.Is(err, ErrTooCostly) {
			t.Errorf("%s (%d bytes): %v, want ErrTooCostly", tt.name, len(tt.raw), err)
		}
	}
	for name, raw := range map[string][]byte{
		"a baseline JPEG":                      encoded(t, 600, 400, false),
		"10 progressive scans":                 picturestest.ManyScans(1024, 1024, 10, 0),
		"64 scans of a small image":            picturestest.ManyScans(64, 64, maxScans, 0),
		"10 scans with junk before the second": junkBefore(picturestest.ManyScans(1024, 1024, 10, 0), 2, []byte{0}),
	} {
		if _, err := Process(raw); err != nil {
			t.Errorf("%s: %v, want it opened", name, err)
		}
	}
	// A 12-megapixel 4:2:0 photo in libjpeg's 10 progressive scans walks 1.3 million blocks: well within.
	if s := walkJPEG(picturestest.ManyScans(4000, 3000, 10, 0)); s.scans != 10 || s.blocks != 10*500*375 {
		t.Errorf("10 scans of 4000 × 3000 grey: %+v, want 10 scans of 187,500 blocks", s)
	}
}

// junkBefore puts junk before the nth SOS marker of raw (every one when n is 0): bytes that are no marker,
// which Go's decoder skips, reading on.
func junkBefore(raw []byte, n int, junk []byte) []byte {
	var out []byte
	seen := 0
	for i := 0; i < len(raw); i++ {
		if i+1 < len(raw) && raw[i] == 0xff && raw[i+1] == 0xda {
			if seen++; n == 0 || seen == n {
				out = append(out, junk...)
			}
		}
		out = append(out, raw[i])
	}
	return out
}
