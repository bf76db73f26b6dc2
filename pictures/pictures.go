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

// Sizes are the sizes made of every upload: the item page's (960, sharp on a phone's dense screen) and
// the home page's cards (480).
var Sizes = []Size{{"960", 960}, {"480", 480}}

// MaxBytes bounds the memory one image takes while it is processed: the decoded image (its bytes a pixel
// depend on the file: 1.5 to 3 for a JPEG, 4 for an 8-bit PNG, 8 for a 16-bit one) and, for a photo to be
// turned upright, a turned copy of 4 a pixel. A phone's 12-megapixel JPEG takes about 84 MB; an image
// that would take more than 160 MB is refused from its header, before it is decoded. MaxSide bounds each
// side whatever the bytes.
const (
	MaxBytes = 160 << 20
	MaxSide  = 12_000
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
	if format == "jpeg" && progressive(raw) {
		perPixel += 4 * 4 // a progressive JPEG's decoder keeps every coefficient too: 4 bytes each, up to 4 planes
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || cfg.Width > MaxSide || cfg.Height > MaxSide || pixels*perPixel > MaxBytes {
		return nil, ErrTooBig
	}
	img, err := imaging.Decode(bytes.NewReader(raw), imaging.AutoOrientation(true))
	if err != nil {
		return nil, ErrNotImage
	}
	b := img.Bounds()
	sum := sha256.Sum256(raw)
	out := &Processed{Sum: hex.EncodeToString(sum[:16]), Variants: map[string][]byte{}, Width: b.Dx(), Height: b.Dy()}
	for _, s := range Sizes {
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

// progressive reports whether a JPEG is progressive: its frame header (the first SOFn marker) is SOF2
// (or another progressive kind).
func progressive(raw []byte) bool {
	for i := 2; i+4 <= len(raw); {
		if raw[i] != 0xff {
			return false
		}
		m := raw[i+1]
		switch {
		case m == 0xff: // padding
			i++
			continue
		case m == 0xd8 || m == 0x01 || m >= 0xd0 && m <= 0xd7: // markers without a length
			i += 2
			continue
		case m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc: // a frame header
			return m == 0xc2 || m == 0xc6 || m == 0xca || m == 0xce
		}
		i += 2 + (int(raw[i+2])<<8 | int(raw[i+3]))
	}
	return false
}

// opaque reports whether img has no transparent pixel (an image that cannot say is treated as having one).
func opaque(img image.Image) bool {
	o, ok := img.(interface{ Opaque() bool })
	return ok && o.Opaque()
}
