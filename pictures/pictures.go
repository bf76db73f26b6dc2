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

// MaxPixels is the largest image opened: 40 megapixels (a phone camera's photo is about 12), which take
// 160 MB while they are scaled. MaxSide bounds each side.
const (
	MaxPixels = 40_000_000
	MaxSide   = 12_000
)

// ErrNotImage means the file is not a PNG or JPEG image that can be opened.
var ErrNotImage = errors.New("the file is not a PNG or JPEG image")

// ErrTooBig means the image has too many pixels to be opened.
var ErrTooBig = fmt.Errorf("the image is larger than %d megapixels", MaxPixels/1_000_000)

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
	if cfg.Width <= 0 || cfg.Height <= 0 || cfg.Width > MaxSide || cfg.Height > MaxSide || int64(cfg.Width)*int64(cfg.Height) > MaxPixels {
		return nil, ErrTooBig
	}
	img, err := imaging.Decode(bytes.NewReader(raw), imaging.AutoOrientation(true))
	if err != nil {
		return nil, ErrNotImage
	}
	b := img.Bounds()
	// JPEG has no transparency: a transparent PNG is laid on white, as the pages' background.
	flat := imaging.New(b.Dx(), b.Dy(), color.White)
	flat = imaging.Overlay(flat, img, image.Point{}, 1)
	sum := sha256.Sum256(raw)
	out := &Processed{Sum: hex.EncodeToString(sum[:16]), Variants: map[string][]byte{}, Width: b.Dx(), Height: b.Dy()}
	for _, s := range Sizes {
		scaled := image.Image(flat)
		if b.Dx() > s.Max || b.Dy() > s.Max {
			scaled = imaging.Fit(flat, s.Max, s.Max, imaging.Lanczos)
		}
		var buf bytes.Buffer
		if err := jpeg.Encode(&buf, scaled, &jpeg.Options{Quality: 85}); err != nil {
			return nil, fmt.Errorf("encode %s: %w", s.Name, err)
		}
		out.Variants[s.Name] = buf.Bytes()
	}
	return out, nil
}
