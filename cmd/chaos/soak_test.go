package main

import (
	"math"
	"testing"
)

// A sale's keys left behind each cycle (a few, under a sawtooth of keys that come and go with each
// sale) read as growth from the troughs; the same sawtooth without them does not.
func TestTroughsSeeALeakUnderASawtooth(t *testing.T) {
	const cycle, every = 120.0, 10.0 // a sale every two minutes, a sample every ten seconds
	series := func(leakPerCycle float64) [][]float64 {
		var rows [][]float64
		for s := 0.0; s <= 600; s += every { // the last sample alone in a sixth cycle, a sale's peak
			k := math.Floor(s / cycle)
			phase := math.Mod(s, cycle)
			v := 20 + k*leakPerCycle // what stays
			if phase < 60 {
				v += 8 + 4*math.Sin(s) // a sale's keys while it runs, noisily
			}
			rows = append(rows, []float64{s, v})
		}
		return rows
	}
	for _, tt := range []struct {
		leak float64
		grow bool
	}{{0, false}, {1.5, true}, {6, true}} {
		xs, ys := troughs(series(tt.leak), 1, cycle, 1)
		got, _ := slope(xs, ys)
		if len(xs) != 4 {
			t.Fatalf("%d troughs in five whole cycles and a sixth cut short, want 4 (the first and the last are left out)", len(xs))
		}
		if grows := got > 30; grows != tt.grow {
			t.Errorf("%.1f keys left a cycle: the troughs rise %+.1f an hour; judged growing %v, want %v", tt.leak, got, grows, tt.grow)
		}
	}
}
