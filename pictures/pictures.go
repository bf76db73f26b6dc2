// Package pictures turns a merchant's uploaded item image into the images the pages show: it accepts
// PNG and JPEG only, refuses what is not one (or would take too much memory to open), turns a phone
// photo upright, scales it to each size the pages use and re-encodes it as JPEG, which drops whatever
// metadata the file carried (a camera's GPS position, say).
package pictures

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	_ "image/png" // PNG uploads

	"github.com/disintegration/imaging"
)

// Size is one size the pages show an item's image at: it fits in Max × Max pixels.
type Size struct {
	Name string
	Max  int
}

// sizes are the sizes made of every upload: the item page's (960, sharp on a phone's dense screen) and
// the home page's cards (480).
var sizes = []Size{{"960", 960}, {"480", 480}}

// maxBytes bounds the memory one image takes while it is processed: the decoded image (its bytes a pixel
// depend on the file: 1.5 to 3 for a JPEG, 4 for an 8-bit PNG, 8 for a 16-bit one) and, for a photo to be
// turned upright, a turned copy of 4 a pixel. A phone's 12-megapixel JPEG takes about 84 MB; an image
// that would take more than 160 MB is refused from its header, before it is decoded. maxSide bounds each
// side whatever the bytes.
const (
	maxBytes = 160 << 20
	maxSide  = 12_000
)

// bytesPerPixel is what a decoded image of the color model takes a pixel (at most; 8 when unknown).
func bytesPerPixel(m color.Model) int64 {
	switch m {
	case color.GrayModel, color.AlphaModel:
		return 1
	case color.Gray16Model, color.Alpha16Model:
		return 2
	case color.YCbCrModel:
		return 3
	case color.RGBAModel, color.NRGBAModel:
		return 4
	case color.CMYKModel: // the decoder holds its YCbCr and black planes and the CMYK image at once
		return 8
	}
	if _, ok := m.(color.Palette); ok {
		return 1
	}
	return 8
}

// ErrNotImage means the file is not a PNG or JPEG image that can be opened.
var ErrNotImage = errors.New("the file is not a PNG or JPEG image")

// ErrTooBig means the image has too many pixels to be opened.
var ErrTooBig = errors.New("the image has too many pixels: at most about 20 megapixels (a phone's 12-megapixel photo is fine) and 12,000 a side")

// ErrTooCostly means the image is a JPEG whose scans would take the decoder too long: too many of them,
// or too many blocks walked over all of them.
var ErrTooCostly = errors.New("the JPEG has too many scans to be opened")

// A JPEG's decoder walks every block of the components a scan names, in every scan, whatever the scan
// holds: a scan of a few bytes (every block skipped by one end-of-band run) costs as much as a full one,
// about 50 ns a block here, and Go's decoder cannot be stopped once started. So a JPEG is refused before
// it is decoded when it has more than maxScans scans (libjpeg writes 10 for a progressive colour photo,
// mozjpeg and jpegtran about as many; a baseline JPEG has 1 to 3), or when its scans would walk more than
// maxScanBlocks blocks in all (a 12-megapixel 4:2:0 photo in 10 progressive scans walks about 1.3
// million; the bound is about half a core-second of decoding). 2,000 repeated scans of an 8-megapixel
// image, 283 KB, took 6.4 core-seconds before; a 5 MB file of them about 4.5 core-minutes.
const (
	maxScans      = 64
	maxScanBlocks = 8_000_000
)

// Processed is an upload turned into the images the pages show.
type Processed struct {
	Sum      string            // the first 32 hex digits of the upload's SHA-256: the same file gives the same sum
	Variants map[string][]byte // JPEG by size name
	Width    int               // the upright original's size
	Height   int
}

// Process checks and converts an upload.
func Process(raw []byte) (*Processed, error) {
	cfg, format, err := image.DecodeConfig(bytes.NewReader(raw))
	if err != nil || (format != "png" && format != "jpeg") {
		return nil, ErrNotImage
	}
	pixels := int64(cfg.Width) * int64(cfg.Height)
	perPixel := bytesPerPixel(cfg.ColorModel) + 4
	var scans jpegScans
	if format == "jpeg" {
		scans = walkJPEG(raw)
	}
	if scans.progressive {
		perPixel += 4 * 4 // a progressive JPEG's decoder keeps every coefficient too: 4 bytes each, up to 4 planes
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || cfg.Width > maxSide || cfg.Height > maxSide || pixels*perPixel > maxBytes {
		return nil, ErrTooBig
	}
	if scans.scans > maxScans || scans.blocks > maxScanBlocks {
		return nil, ErrTooCostly
	}
	img, err := imaging.Decode(bytes.NewReader(raw), imaging.AutoOrientation(true))
	if err != nil {
		return nil, ErrNotImage
	}
	b := img.Bounds()
	sum := sha256.Sum256(raw)
	out := &Processed{Sum: hex.EncodeToString(sum[:16]), Variants: map[string][]byte{}, Width: b.Dx(), Height: b.Dy()}
	for _, s := range sizes {
		// Scaled first, from the decoded image (the copies are the size of the result), then laid on white:
		// JPEG has no transparency, and a transparent PNG shows on the pages' white.
		scaled := img
		if b.Dx() > s.Max || b.Dy() > s.Max {
			scaled = imaging.Fit(img, s.Max, s.Max, imaging.Lanczos)
		}
		if !opaque(scaled) {
			sb := scaled.Bounds()
			scaled = imaging.Overlay(imaging.New(sb.Dx(), sb.Dy(), color.White), scaled, image.Point{}, 1)
		}
		var buf bytes.Buffer
		if err := jpeg.Encode(&buf, scaled, &jpeg.Options{Quality: 85}); err != nil {
			return nil, fmt.Errorf("encode %s: %w", s.Name, err)
		}
		out.Variants[s.Name] = buf.Bytes()
	}
	return out, nil
}

// jpegScans is what a JPEG's decoder will do, read from its markers: whether its frame is progressive,
// how many scans it has, and how many blocks its decoder walks over all of them.
type jpegScans struct {
	progressive bool
	scans       int
	blocks      int64
}

// walkJPEG reads a JPEG's markers, as the decoder would meet them, up to its end (EOI), skipping each
// scan's entropy-coded data and, as the decoder does, any bytes between segments that are no marker. The blocks
// of a scan are counted as the decoder walks them: every MCU of the frame times the blocks each named
// component has in one.
func walkJPEG(raw []byte) jpegScans {
	var out jpegScans
	type comp struct{ id, h, v byte }
	var comps []comp
	var mcus int64 // MCUs of the frame (0 until its header is read)
	for i := 2; i+1 < len(raw); {
		if raw[i] != 0xff {
			// Bytes that are no marker: Go's decoder (like libjpeg) skips them and reads on, so the walk
			// does too. Stopping here let one junk byte hide every scan after it from the count.
			j := bytes.IndexByte(raw[i:], 0xff)
			if j < 0 {
				break
			}
			i += j
			continue
		}
		m := raw[i+1]
		switch {
		case m == 0xff: // fill
			i++
			continue
		case m == 0xd9: // EOI
			return out
		case m == 0xd8 || m == 0x01 || m >= 0xd0 && m <= 0xd7: // markers without a length
			i += 2
			continue
		}
		if i+4 > len(raw) {
			return out
		}
		n := int(raw[i+2])<<8 | int(raw[i+3])
		body := raw[i+4 : min(i+2+max(n, 2), len(raw))]
		i += 2 + n
		switch {
		case m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc: // a frame header (SOFn)
			if comps != nil || len(body) < 6 {
				continue // the decoder refuses a second one
			}
			out.progressive = m == 0xc2 || m == 0xc6 || m == 0xca || m == 0xce
			h, w := int64(body[1])<<8|int64(body[2]), int64(body[3])<<8|int64(body[4])
			var hmax, vmax int64 = 1, 1
			for c := 6; c < 6+3*int(body[5]) && c+1 < len(body); c += 3 {
				k := comp{body[c], max(body[c+1]>>4, 1), max(body[c+1]&15, 1)}
				comps = append(comps, k)
				hmax, vmax = max(hmax, int64(k.h)), max(vmax, int64(k.v))
			}
			mcus = ((w + 8*hmax - 1) / (8 * hmax)) * ((h + 8*vmax - 1) / (8 * vmax))
		case m == 0xda: // SOS, then the scan's data up to the next marker
			out.scans++
			for c := 1; len(body) > 0 && c < 1+2*int(body[0]) && c < len(body); c += 2 {
				for _, k := range comps {
					if k.id == body[c] {
						out.blocks += mcus * int64(k.h) * int64(k.v)
					}
				}
			}
			i = scanEnd(raw, i)
		}
	}
	// The walk is the decoder's reading, and a reading can be wrong. Every SOS marker in the file is
	// counted too (inside a scan's data 0xff is always stuffed, so one can stand only in a segment, such as
	// an Exif thumbnail's): one the walk did not meet is taken as a scan over the whole frame.
	if raw := bytes.Count(raw, []byte{0xff, 0xda}); raw > out.scans {
		var perMCU int64
		for _, k := range comps {
			perMCU += int64(k.h) * int64(k.v)
		}
		out.blocks += int64(raw-out.scans) * mcus * perMCU
		out.scans = raw
	}
	return out
}

// scanEnd answers where the entropy-coded data starting at i ends: at the first marker that is neither
// a stuffed zero (0xff 0x00), a restart (RSTn) nor fill.
func scanEnd(raw []byte, i int) int {
	for i < len(raw) {
		j := bytes.IndexByte(raw[i:], 0xff)
		if j < 0 {
			return len(raw)
		}
		i += j
		if i+1 >= len(raw) {
			return len(raw)
		}
		if m := raw[i+1]; m == 0x00 || m >= 0xd0 && m <= 0xd7 || m == 0xff {
			i++
			if m != 0xff {
				i++
			}
			continue
		}
		return i
	}
	return i
}

// opaque reports whether img has no transparent pixel (an image that cannot say is treated as having one).
func opaque(img image.Image) bool {
	o, ok := img.(interface{ Opaque() bool })
	return ok && o.Opaque()
}
