package cuda_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	cuda "github.com/gocuda/cuda"
)

// halfValues returns every finite value of a 16-bit format, ascending, with
// their bits: the reference the conversions are checked against (the
// nearest of them, found by search, ties to the even bit pattern).
func halfValues(toFloat func(uint16) float32) (vals []float64, bits []uint16) {
	type v struct {
		f float64
		b uint16
	}
	var all []v
	for b := 0; b < 1<<16; b++ {
		f := float64(toFloat(uint16(b)))
		if math.IsNaN(f) || math.IsInf(f, 0) || (f == 0 && b != 0) {
			continue // one zero, +0, stands for both
		}
		all = append(all, v{f, uint16(b)})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].f < all[j].f })
	for _, x := range all {
		vals = append(vals, x.f)
		bits = append(bits, x.b)
	}
	return vals, bits
}

// nearest returns the bits of the value of vals nearest to f, ties to the
// even pattern; beyond the largest finite value by half a step or more,
// the infinity of f's sign (IEEE 754 rounding).
func nearest(f float64, vals []float64, bits []uint16, inf uint16) uint16 {
	top := vals[len(vals)-1]
	step := top - vals[len(vals)-2]
	if math.Abs(f) >= top+step/2 {
		if f < 0 {
			return inf | 0x8000
		}
		return inf
	}
	i := sort.SearchFloat64s(vals, f)
	switch {
	case i == 0: // below the lowest finite value, by less than half a step
		return bits[0]
	case i == len(vals):
		return bits[i-1]
	}
	if vals[i] == f {
		return signedZero(bits[i], f)
	}
	lo, hi := vals[i-1], vals[i]
	switch d := (f - lo) - (hi - f); {
	case d < 0:
		return signedZero(bits[i-1], f)
	case d > 0:
		return signedZero(bits[i], f)
	}
	if bits[i-1]&1 == 0 {
		return signedZero(bits[i-1], f)
	}
	return signedZero(bits[i], f)
}

// signedZero gives a zero result the sign of the number rounded to it.
func signedZero(b uint16, f float64) uint16 {
	if b == 0 && math.Signbit(f) {
		return 0x8000
	}
	return b
}

func TestHalfConversions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		toFloat func(uint16) float32
		from    func(float32) uint16
		inf     uint16
	}{
		{"Float16", func(b uint16) float32 { return cuda.Float16(b).Float32() }, func(f float32) uint16 { return uint16(cuda.NewFloat16(f)) }, 0x7c00},
		{"BFloat16", func(b uint16) float32 { return cuda.BFloat16(b).Float32() }, func(f float32) uint16 { return uint16(cuda.NewBFloat16(f)) }, 0x7f80},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Every pattern converts to float32 and back to itself; NaNs
			// stay NaNs.
			for b := 0; b < 1<<16; b++ {
				f := tc.toFloat(uint16(b))
				got := tc.from(f)
				if math.IsNaN(float64(f)) {
					if !math.IsNaN(float64(tc.toFloat(got))) {
						t.Fatalf("NaN %#04x came back as %#04x, not a NaN", b, got)
					}
					continue
				}
				if got != uint16(b) {
					t.Fatalf("%#04x -> %v -> %#04x", b, f, got)
				}
			}
			vals, bits := halfValues(tc.toFloat)
			check := func(f float32) {
				t.Helper()
				want := nearest(float64(f), vals, bits, tc.inf)
				if got := tc.from(f); got != want {
					t.Fatalf("%s(%v = %#08x) = %#04x (%v), want %#04x (%v)", tc.name, f, math.Float32bits(f), got, tc.toFloat(got), want, tc.toFloat(want))
				}
			}
			// Midpoints between neighbours, and a float32 step either
			// side: where rounding decides.
			for i := 0; i+1 < len(vals); i++ {
				mid := float32((vals[i] + vals[i+1]) / 2)
				check(mid)
				check(math.Nextafter32(mid, float32(math.Inf(1))))
				check(math.Nextafter32(mid, float32(math.Inf(-1))))
			}
			r := rand.New(rand.NewPCG(1, 2))
			for range 200000 {
				f := math.Float32frombits(r.Uint32())
				if math.IsNaN(float64(f)) {
					if !math.IsNaN(float64(tc.toFloat(tc.from(f)))) {
						t.Fatalf("NaN %#08x became a number", math.Float32bits(f))
					}
					continue
				}
				check(f)
			}
			for _, f := range []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32} {
				check(f)
			}
		})
	}
}

func TestHalfString(t *testing.T) {
	if got := cuda.NewFloat16(1.5).String(); got != "1.5" {
		t.Errorf("Float16 1.5 prints %q", got)
	}
	if got := cuda.NewBFloat16(-2).String(); got != "-2" {
		t.Errorf("BFloat16 -2 prints %q", got)
	}
}

// TestHalfFormat: fmt prints a half as its float32 for a float's verbs,
// as String for %v and %s (in a slice too), and in Go syntax for %#v.
func TestHalfFormat(t *testing.T) {
	h, b := cuda.NewFloat16(1.5), cuda.NewBFloat16(-2)
	for _, c := range []struct {
		format string
		arg    any
		want   string
	}{
		{"%v", h, "1.5"},
		{"%s", b, "-2"},
		{"%6v|", h, "   1.5|"},
		{"%-5s|", b, "-2   |"},
		{"%.3f", h, "1.500"},
		{"%8.2e", b, "-2.00e+00"},
		{"%g", cuda.NewFloat16(65504), "65504"},
		{"%+.1f", cuda.NewFloat16(float32(math.Inf(-1))), "-Inf"},
		{"%x", h, "0x1.8p+00"},
		{"%v", []cuda.Float16{h, cuda.NewFloat16(0.25)}, "[1.5 0.25]"},
		{"%.2f", []cuda.BFloat16{b}, "[-2.00]"},
		{"%#v", h, "cuda.Float16(0x3e00)"},
		{"%#v", b, "cuda.BFloat16(0xc000)"},
		{"%d", h, "%!d(float32=1.5)"},
	} {
		if got := fmt.Sprintf(c.format, c.arg); got != c.want {
			t.Errorf("Sprintf(%q, %T) = %q, want %q", c.format, c.arg, got, c.want)
		}
	}
}
