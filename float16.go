package cuda

import (
	"fmt"
	"math"
	"strconv"
)

// Float16 is an IEEE 754 half-precision number (binary16: 1 sign bit, 5
// exponent bits, 10 fraction bits), the element type of CUDA's __half and
// cuBLAS's CUDA_R_16F. Its bits are those of the number: Float16(0x3c00) is
// 1. Go has no arithmetic on it; convert with NewFloat16 and Float32. It is
// a DeviceBuffer element type like any other.
type Float16 uint16

// BFloat16 is a brain floating-point number (1 sign bit, 8 exponent bits,
// 7 fraction bits: the upper half of a float32), the element type of CUDA's
// __nv_bfloat16 and cuBLAS's CUDA_R_16BF. Convert with NewBFloat16 and
// Float32.
type BFloat16 uint16

// NewFloat16 rounds f to the nearest Float16, ties to even, as CUDA's
// __float2half does: values beyond the largest finite Float16 (65504)
// become infinities, values below the smallest subnormal (2^-24) round to
// zero or to it, NaNs stay NaNs (quiet, with the top bits of their payload)
// and the sign of zeros, infinities and NaNs is kept.
func NewFloat16(f float32) Float16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	frac := b & 0x7fffff
	if exp == 0xff {
		if frac != 0 {
			return Float16(sign | 0x7e00 | uint16(frac>>13))
		}
		return Float16(sign | 0x7c00)
	}
	e := exp - 127 + 15 // the exponent in Float16's bias
	switch {
	case e >= 0x1f:
		return Float16(sign | 0x7c00)
	case e <= 0:
		// A subnormal Float16 (or zero): the float32's significand,
		// with its implicit bit, shifted to where 2^-24 is bit 0.
		if e < -10 {
			return Float16(sign) // below half the smallest subnormal
		}
		m := frac | 0x800000
		shift := uint(14 - e)
		return Float16(sign | uint16(roundShift(m, shift)))
	}
	// A carry out of the fraction steps the exponent, up to infinity:
	// both are what rounding asks for.
	return Float16(sign | uint16(roundShift(uint32(e)<<23|frac, 13)))
}

// roundShift returns m >> shift rounded to nearest, ties to even.
func roundShift(m uint32, shift uint) uint32 {
	r := m >> shift
	rem := m & (1<<shift - 1)
	half := uint32(1) << (shift - 1)
	if rem > half || rem == half && r&1 == 1 {
		r++
	}
	return r
}

// Float32 returns h as a float32, exactly (every Float16 is a float32).
func (h Float16) Float32() float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h & 0x3ff)
	switch exp {
	case 0:
		if frac == 0 {
			return math.Float32frombits(sign)
		}
		// Subnormal: normalize, the exponent falling as the fraction
		// shifts up to the implicit bit.
		e := uint32(127 - 15 + 1)
		for frac&0x400 == 0 {
			frac <<= 1
			e--
		}
		return math.Float32frombits(sign | e<<23 | (frac&0x3ff)<<13)
	case 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | frac<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | frac<<13)
}

// String formats h in decimal, as its float32 prints.
func (h Float16) String() string { return formatHalf(h.Float32()) }

// Format makes fmt print h as its float32 for every verb of a float
// (%.3f, %8.2e, %g, %x), %v and %s as String, and %#v in Go syntax.
func (h Float16) Format(f fmt.State, verb rune) {
	formatVerb(f, verb, h.Float32(), uint16(h), "cuda.Float16")
}

// NewBFloat16 rounds f to the nearest BFloat16, ties to even, as CUDA's
// __float2bfloat16 does: values beyond the largest finite BFloat16 become
// infinities, and NaNs stay NaNs (quiet).
func NewBFloat16(f float32) BFloat16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return BFloat16(b>>16 | 0x40)
	}
	return BFloat16(roundShift(b, 16))
}

// Float32 returns h as a float32, exactly.
func (h BFloat16) Float32() float32 { return math.Float32frombits(uint32(h) << 16) }

// String formats h in decimal, as its float32 prints.
func (h BFloat16) String() string { return formatHalf(h.Float32()) }

// Format makes fmt print h as its float32 for every verb of a float
// (%.3f, %8.2e, %g, %x), %v and %s as String, and %#v in Go syntax.
func (h BFloat16) Format(f fmt.State, verb rune) {
	formatVerb(f, verb, h.Float32(), uint16(h), "cuda.BFloat16")
}

func formatHalf(f float32) string { return strconv.FormatFloat(float64(f), 'g', -1, 32) }

// formatVerb is Format of a half whose value is v and bits bits: without
// it, fmt would print the bits' integer for a float's verbs (%f of 1 was
// %!f(cuda.Float16=1)) and apply %x to String's text.
func formatVerb(f fmt.State, verb rune, v float32, bits uint16, typ string) {
	switch {
	case f == nil: // fmt never passes one; a caller of Format may
		return
	case verb == 'v' && f.Flag('#'):
		fmt.Fprintf(f, "%s(%#04x)", typ, bits)
	case verb == 'v' || verb == 's':
		fmt.Fprintf(f, fmt.FormatString(f, verb), formatHalf(v))
	default:
		fmt.Fprintf(f, fmt.FormatString(f, verb), v)
	}
}
