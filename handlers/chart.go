package handlers

import (
	"bytes"
	"fmt"
	"html"
	"time"

	"seckill/errs"
	"seckill/i18n"
	"seckill/stock"
)

// answerColors draws each answer of the buy endpoint in its own colour.
var answerColors = map[string]string{
	stock.AnswerQueued: "#1a7f37", stock.AnswerUnconfirmed: "#7ee2a8", errs.SoldOut: "#d4351c", errs.AlreadyBought: "#8250df", errs.InvalidPath: "#bf8700",
	errs.RateLimited: "#0969da", errs.NotStarted: "#57606a", errs.Ended: "#24292f", errs.Paused: "#9a6700", stock.AnswerOther: "#cf222e",
}

// niceTop is the top of the chart's scale for a peak: four steps of 1, 2 or 5 times a power of ten, so
// that every grid line is a whole number (a peak of 1 made the lines read 1, 0, 0, 0, 0).
func niceTop(peak int64) int64 {
	step := int64(1)
	for {
		for _, m := range []int64{1, 2, 5} {
			if step*m*4 >= peak {
				return step * m * 4
			}
		}
		step *= 10
	}
}

// chartSVG draws the buy endpoint's answers per second as an SVG line chart, one line per answer seen;
// with none, it says empty.
func chartSVG(points []stock.Point, title string, tr i18n.Tr) []byte {
	empty := tr.T("live.noAnswers")
	const w, h, left, right, top, bottom = 860, 300, 50, 150, 16, 30
	pw, ph := float64(w-left-right), float64(h-top-bottom)
	var peak int64 = 1
	seen := map[string]bool{}
	for _, p := range points {
		for k, n := range p.Counts {
			seen[k] = true
			peak = max(peak, n)
		}
	}
	peak = niceTop(peak)
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" role="img" aria-label="%s">`, w, h, html.EscapeString(title))
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/>`, w, h)
	for i := 0; i <= 4; i++ { // grid lines and their values
		y := float64(top) + ph*float64(i)/4
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e3e6ec"/>`, left, y, w-right, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" font-size="11" font-family="sans-serif" fill="#5b6475" text-anchor="end">%d</text>`,
			left-6, y+4, peak*int64(4-i)/4)
	}
	if len(points) > 1 {
		first, last := points[0].At, points[len(points)-1].At
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" font-family="sans-serif" fill="#5b6475">%s</text>`, left, h-8, first.Local().Format(time.TimeOnly))
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" font-family="sans-serif" fill="#5b6475" text-anchor="end">%s</text>`, w-right, h-8, last.Local().Format(time.TimeOnly))
	}
	if len(seen) == 0 {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="14" font-family="sans-serif" fill="#5b6475" text-anchor="middle">%s</text>`,
			float64(left)+pw/2, float64(top)+ph/2, html.EscapeString(empty))
	}
	row := 0
	for _, kind := range stock.AnswerKinds {
		if !seen[kind] {
			continue
		}
		color := answerColors[kind]
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="`, color)
		for i, p := range points {
			x := float64(left) + pw*float64(i)/float64(max(len(points)-1, 1))
			y := float64(top) + ph*(1-float64(p.Counts[kind])/float64(peak))
			fmt.Fprintf(&b, "%.1f,%.1f ", x, y)
		}
		b.WriteString(`"/>`)
		ly := top + 14 + row*18
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="4" fill="%s"/><text x="%d" y="%d" font-size="12" font-family="sans-serif" fill="#1d2330">%s</text>`,
			w-right+12, ly-4, color, w-right+30, ly, html.EscapeString(tr.T("chart."+kind)))
		row++
	}
	b.WriteString(`</svg>`)
	return b.Bytes()
}
