// Package picturestest builds the costly images an attacker uploads, for the tests of the bounds that
// refuse them: a progressive JPEG whose scans repeat, each one a pass of the decoder over every block.
package picturestest

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

// ManyScans is a grey w × h progressive JPEG of scans scans: a DC scan, then scans-1 AC scans over
// the whole band (each of them a few bytes, every block skipped by end-of-band runs), each after a
// Huffman table (as encoders write one before each scan) and a comment of pad bytes. The decoder walks
// every block in every scan, whatever it holds: the cost grows with scans × blocks, the file with
// scans × (50 + pad) bytes.
func ManyScans(w, h, scans, pad int) []byte { return build(w, h, 1, scans, pad, false) }

// ManyColourScans is a colour (three components, 4:4:4) w × h progressive JPEG of scans DC scans, each
// over the three components at once: a scan costs a bit a block of the file, and the decoder a pass over
// every block of the three.
func ManyColourScans(w, h, scans int) []byte { return build(w, h, 3, scans, 0, true) }

func build(w, h, comps, scans, pad int, allDC bool) []byte {
	var out bytes.Buffer
	seg := func(marker byte, body []byte) {
		out.Write([]byte{0xff, marker})
		binary.Write(&out, binary.BigEndian, uint16(len(body)+2))
		out.Write(body)
	}
	out.Write([]byte{0xff, 0xd8})
	seg(0xdb, append([]byte{0}, bytes.Repeat([]byte{1}, 64)...)) // DQT: table 0, all ones
	sof := []byte{8, byte(h >> 8), byte(h), byte(w >> 8), byte(w), byte(comps)}
	sos := []byte{byte(comps)}
	for c := range comps {
		sof = append(sof, byte(c+1), 0x11, 0)
		sos = append(sos, byte(c+1), 0x00)
	}
	sos = append(sos, 0, 0, 0)
	seg(0xc2, sof)
	// DC table 0: one code, "0", for "no difference"; AC table 0: fifteen 4-bit codes, the end-of-band
	// runs 0x00, 0x10, ..., 0xe0 (a run of 2^r blocks and r more bits).
	dc := append([]byte{0x00, 1}, make([]byte, 15)...)
	dc = append(dc, 0)
	ac := []byte{0x10, 0, 0, 0, 15, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	for r := range 15 {
		ac = append(ac, byte(r<<4))
	}
	seg(0xc4, dc)
	blocks := ((w + 7) / 8) * ((h + 7) / 8)
	// A DC scan: one 0 bit a block of each component.
	var bw bitWriter
	for range blocks * comps {
		bw.put(0, 1)
	}
	dcData := bw.flush()
	seg(0xda, sos)
	out.Write(dcData)
	if allDC {
		for range scans - 1 {
			seg(0xda, sos)
			out.Write(dcData)
		}
		out.Write([]byte{0xff, 0xd9})
		return out.Bytes()
	}
	acData := func() []byte {
		var bw bitWriter
		for left := blocks; left > 0; {
			n := min(left, 1<<15-1)
			r := bits.Len(uint(n)) - 1
			bw.put(uint32(r), 4)
			bw.put(uint32(n-1<<r), r)
			left -= n
		}
		return bw.flush()
	}()
	for range scans - 1 {
		seg(0xc4, ac)
		if pad > 0 {
			seg(0xfe, bytes.Repeat([]byte{' '}, min(pad, 65000)))
		}
		seg(0xda, []byte{1, 1, 0x00, 1, 63, 0})
		out.Write(acData)
	}
	out.Write([]byte{0xff, 0xd9})
	return out.Bytes()
}

// bitWriter writes the entropy-coded bits of a scan, most significant first, with the stuffed zero
// byte after every 0xff and the last byte filled with ones.
type bitWriter struct {
	buf   []byte
	acc   uint32
	nbits int
}

func (b *bitWriter) put(v uint32, n int) {
	for i := n - 1; i >= 0; i-- {
		b.acc = b.acc<<1 | (v>>uint(i))&1
		b.nbits++
		if b.nbits == 8 {
			b.emit(byte(b.acc))
			b.acc, b.nbits = 0, 0
		}
	}
}

func (b *bitWriter) emit(c byte) {
	b.buf = append(b.buf, c)
	if c == 0xff {
		b.buf = append(b.buf, 0)
	}
}

func (b *bitWriter) flush() []byte {
	if b.nbits > 0 {
		b.emit(byte(b.acc<<uint(8-b.nbits) | (1<<uint(8-b.nbits) - 1)))
		b.acc, b.nbits = 0, 0
	}
	return b.buf
}
