package nd

// The expected strings are NumPy 2's output for the same arrays, derived by
// hand from numpy/_core/arrayprint.py (and checked against the examples in
// NumPy's documentation where one exists), with Go's true/false for
// True/False and the repr always ending in shape= and dtype=.

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
)

// apDefaults are numpy.set_printoptions' defaults.
var apDefaults = printOptions{Precision: 8, Threshold: 1000, EdgeItems: 3, LineWidth: 75}

// apArange is numpy.arange(n) in type T.
func apArange[T apInteger | apUnsigned | ~float32 | ~float64](n int) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = T(i)
	}
	return out
}

func apHalves(xs ...float32) []cuda.Float16 {
	out := make([]cuda.Float16, len(xs))
	for i, x := range xs {
		out[i] = cuda.NewFloat16(x)
	}
	return out
}

func apBHalves(xs ...float32) []cuda.BFloat16 {
	out := make([]cuda.BFloat16, len(xs))
	for i, x := range xs {
		out[i] = cuda.NewBFloat16(x)
	}
	return out
}

// apCompare fails t with both texts, line by line, when they differ.
func apCompare(t *testing.T, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s\n(got %q)", got, want, got)
	}
}

type apCase struct {
	name      string
	got, want string
}

func apRun(t *testing.T, cases []apCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			apCompare(t, c.got, c.want)
		})
	}
}

func TestFormatValuesIntegers(t *testing.T) {
	opt := apDefaults
	apRun(t, []apCase{
		{"1-d", formatValues([]int32{1, 2, 3}, []int{3}, opt), "[1 2 3]"},
		{"2-d", formatValues(apArange[int64](6), []int{2, 3}, opt), "[[0 1 2]\n [3 4 5]]"},
		{"3-d", formatValues(apArange[int64](24), []int{2, 3, 4}, opt),
			"[[[ 0  1  2  3]\n  [ 4  5  6  7]\n  [ 8  9 10 11]]\n\n [[12 13 14 15]\n  [16 17 18 19]\n  [20 21 22 23]]]"},
		{"4-d", formatValues(apArange[int](4), []int{1, 2, 1, 2}, opt), "[[[[0 1]]\n\n  [[2 3]]]]"},
		{"right-aligned", formatValues([]int16{-5, 100, 7}, []int{3}, opt), "[ -5 100   7]"},
		{"int8 min", formatValues([]int8{-128, 127, 0}, []int{3}, opt), "[-128  127    0]"},
		{"uint64 max", formatValues([]uint64{0, math.MaxUint64}, []int{2}, opt),
			"[                   0 18446744073709551615]"},
		{"uint8", formatValues([]uint8{255, 0, 9}, []int{3}, opt), "[255   0   9]"},
		// 24 elements fill the first line: the 25th would end at column
		// 75, past the 74 left after room for "]".
		{"wrapped row", formatValues(apArange[int64](30), []int{30}, opt),
			"[ 0  1  2  3  4  5  6  7  8  9 10 11 12 13 14 15 16 17 18 19 20 21 22 23\n 24 25 26 27 28 29]"},
		{"linewidth option", formatValues(apArange[int64](10), []int{10}, printOptions{8, 1000, 3, 20}),
			"[0 1 2 3 4 5 6 7 8\n 9]"},
	})
}

func TestFormatValuesSummarized(t *testing.T) {
	opt := apDefaults
	apRun(t, []apCase{
		{"arange(2000)", formatValues(apArange[int64](2000), []int{2000}, opt), "[   0    1    2 ... 1997 1998 1999]"},
		{"arange(1001) float", formatValues(apArange[float64](1001), []int{1001}, opt), "[   0.    1.    2. ...  998.  999. 1000.]"},
		{"not at threshold", formatValues(apArange[int64](1000), []int{1000}, opt)[:20], "[  0   1   2   3   4"},
		{"100x100", formatValues(apArange[int32](10000), []int{100, 100}, opt),
			"[[   0    1    2 ...   97   98   99]\n" +
				" [ 100  101  102 ...  197  198  199]\n" +
				" [ 200  201  202 ...  297  298  299]\n" +
				" ...\n" +
				" [9700 9701 9702 ... 9797 9798 9799]\n" +
				" [9800 9801 9802 ... 9897 9898 9899]\n" +
				" [9900 9901 9902 ... 9997 9998 9999]]"},
		{"3-d last axis", formatValues(apArange[int64](4000), []int{2, 2, 1000}, opt),
			"[[[   0    1    2 ...  997  998  999]\n" +
				"  [1000 1001 1002 ... 1997 1998 1999]]\n\n" +
				" [[2000 2001 2002 ... 2997 2998 2999]\n" +
				"  [3000 3001 3002 ... 3997 3998 3999]]]"},
		{"3-d first and last axes", formatValues(apArange[int64](2000), []int{10, 2, 100}, opt),
			"[[[   0    1    2 ...   97   98   99]\n  [ 100  101  102 ...  197  198  199]]\n\n" +
				" [[ 200  201  202 ...  297  298  299]\n  [ 300  301  302 ...  397  398  399]]\n\n" +
				" [[ 400  401  402 ...  497  498  499]\n  [ 500  501  502 ...  597  598  599]]\n\n" +
				" ...\n\n" +
				" [[1400 1401 1402 ... 1497 1498 1499]\n  [1500 1501 1502 ... 1597 1598 1599]]\n\n" +
				" [[1600 1601 1602 ... 1697 1698 1699]\n  [1700 1701 1702 ... 1797 1798 1799]]\n\n" +
				" [[1800 1801 1802 ... 1897 1898 1899]\n  [1900 1901 1902 ... 1997 1998 1999]]]"},
		// The widths come from the shown elements only: the hidden
		// -100000 does not widen the column.
		{"widths from shown", formatValues([]int64{1, 2, 3, -100000, 4, 5, 6}, []int{7}, printOptions{8, 5, 3, 75}),
			"[1 2 3 ... 4 5 6]"},
		{"edgeitems 1", formatValues(apArange[int64](10), []int{10}, printOptions{8, 5, 1, 75}), "[0 ... 9]"},
	})
}

func TestFormatValuesFloats(t *testing.T) {
	opt := apDefaults
	eps := math.Nextafter(1, 2) - 1
	var small []float64 // x**2 - (x + eps)**2 from set_printoptions' docs
	for i := range 4 {
		x := float64(i)
		y := x + eps
		small = append(small, float64(x*x)-float64(y*y))
	}
	apRun(t, []apCase{
		{"integral", formatValues([]float64{1, 2, 3}, []int{3}, opt), "[1. 2. 3.]"},
		{"2-d", formatValues([]float32{1, 2, 3, 4}, []int{2, 2}, opt), "[[1. 2.]\n [3. 4.]]"},
		// maxprec pads with spaces, not zeros, so the points line up.
		{"maxprec padding", formatValues([]float64{0.5, 0.25}, []int{2}, opt), "[0.5  0.25]"},
		{"8 digits at most", formatValues([]float64{1.0 / 3, 2.5}, []int{2}, opt), "[0.33333333 2.5       ]"},
		{"mixed negative", formatValues([]float64{-1.5, 2, 3.25}, []int{3}, opt), "[-1.5   2.    3.25]"},
		{"negative zero", formatValues([]float64{math.Copysign(0, -1), 1}, []int{2}, opt), "[-0.  1.]"},
		{"float32 0.1", formatValues([]float32{0.1, 0.2, 0.3}, []int{3}, opt), "[0.1 0.2 0.3]"},
		{"below 1e8", formatValues([]float64{12345678.9}, []int{1}, opt), "[12345678.9]"},
		{"1e8", formatValues([]float64{123456789}, []int{1}, opt), "[1.23456789e+08]"},
		{"float64 1e6", formatValues([]float64{1e6}, []int{1}, opt), "[1000000.]"},
		// NumPy 2.3 moved float32's cutoff to 10**finfo(float32).precision.
		{"float32 1e6", formatValues([]float32{1e6}, []int{1}, opt), "[1.e+06]"},
		{"float32 999999", formatValues([]float32{999999}, []int{1}, opt), "[999999.]"},
		{"ratio 1000", formatValues([]float64{1, 1000}, []int{2}, opt), "[   1. 1000.]"},
		{"ratio 1001", formatValues([]float64{1, 1001}, []int{2}, opt), "[1.000e+00 1.001e+03]"},
		{"1e-4", formatValues([]float64{1e-4, 1}, []int{2}, opt), "[1.e-04 1.e+00]"},
		{"1e-4 alone", formatValues([]float64{1e-4}, []int{1}, opt), "[0.0001]"},
		// NEP 50: the float32 is compared with float32(1e-4), its equal.
		{"float32 1e-4", formatValues([]float32{1e-4}, []int{1}, opt), "[0.0001]"},
		{"tiny", formatValues([]float64{1e-16, 1, 2, 3}, []int{4}, opt), "[1.e-16 1.e+00 2.e+00 3.e+00]"},
		{"huge", formatValues([]float64{1e10, 1e20}, []int{2}, opt), "[1.e+10 1.e+20]"},
		{"common mantissa", formatValues([]float64{1.5e-5, 1, 250}, []int{3}, opt), "[1.5e-05 1.0e+00 2.5e+02]"},
		{"three-digit exponents", formatValues([]float64{1e-5, 1e100}, []int{2}, opt), "[1.e-005 1.e+100]"},
		{"precision 4", formatValues(small, []int{4}, printOptions{4, 1000, 3, 75}),
			"[-4.9304e-32 -4.4409e-16  0.0000e+00  0.0000e+00]"},
		// The zero pads to the common mantissa by the exact digits of
		// float32(0.1), 0.100000001490116..., as Dragon4's min_digits.
		{"float32 exact digits", formatValues([]float32{0.1, 1.50000005e-05}, []int{2}, opt),
			"[1.00000001e-01 1.50000005e-05]"},
		{"nan inf", formatValues([]float64{1, math.NaN(), math.Inf(1), math.Inf(-1)}, []int{4}, opt),
			"[  1.  nan  inf -inf]"},
		{"only nan inf", formatValues([]float64{math.NaN(), math.Inf(1)}, []int{2}, opt), "[nan inf]"},
		{"nan with fraction", formatValues([]float64{math.NaN(), 1.5}, []int{2}, opt), "[nan 1.5]"},
		{"-inf scientific", formatValues([]float64{math.Inf(-1), 1e-5}, []int{2}, opt), "[  -inf 1.e-05]"},
		{"all zeros", formatValues([]float64{0, 0}, []int{2}, opt), "[0. 0.]"},
		{"wrapped row", formatValues(apArange[float64](30), []int{30}, opt),
			"[ 0.  1.  2.  3.  4.  5.  6.  7.  8.  9. 10. 11. 12. 13. 14. 15. 16. 17.\n" +
				" 18. 19. 20. 21. 22. 23. 24. 25. 26. 27. 28. 29.]"},
	})
}

func TestFormatValuesHalvesAndBools(t *testing.T) {
	opt := apDefaults
	apRun(t, []apCase{
		{"float16", formatValues(apHalves(0.5, 1.5, -2), []int{3}, opt), "[ 0.5  1.5 -2. ]"},
		// Float16(0.1) is 0.0999755859375: 0.1 is the decimal of fewest
		// digits that rounds back to it, what NumPy prints.
		{"float16 0.1", formatValues(apHalves(0.1), []int{1}, opt), "[0.1]"},
		{"float16 0.1 scalar", formatValues(apHalves(0.1), []int{}, opt), "0.1"},
		{"float16 1/3", formatValues(apHalves(1.0/3), []int{1}, opt), "[0.3333]"},
		// float16's cutoff is 10**finfo(float16).precision = 1000.
		{"float16 1000", formatValues(apHalves(1000, 2000), []int{2}, opt), "[1.e+03 2.e+03]"},
		{"float16 nan", formatValues(apHalves(float32(math.NaN()), 1), []int{2}, opt), "[nan  1.]"},
		{"bfloat16", formatValues(apBHalves(1, 2.5), []int{2}, opt), "[1.  2.5]"},
		// BFloat16(0.1) is 0.10009765625: 0.1 rounds back to it.
		{"bfloat16 0.1", formatValues(apBHalves(0.1), []int{1}, opt), "[0.1]"},
		{"bfloat16 128", formatValues(apBHalves(128, 256), []int{2}, opt), "[1.28e+02 2.56e+02]"},
		{"bools", formatValues([]bool{true, false, true}, []int{3}, opt), "[ true false  true]"},
		{"all true", formatValues([]bool{true, true}, []int{2}, opt), "[ true  true]"},
		{"bools 2-d", formatValues([]bool{true, false, false, true}, []int{2, 2}, opt), "[[ true false]\n [false  true]]"},
	})
}

// Types defined on Go's numbers, which nd admits as elements.
type (
	apCelsius float32
	apCount   int16
	apFlag    bool
)

func TestFormatValuesDefinedTypes(t *testing.T) {
	opt := apDefaults
	apRun(t, []apCase{
		{"float32", formatValues([]apCelsius{0.5, 0.25}, []int{2}, opt), "[0.5  0.25]"},
		{"float32 cutoff", formatValues([]apCelsius{1e6}, []int{1}, opt), "[1.e+06]"},
		{"int16", formatValues([]apCount{-5, 100}, []int{2}, opt), "[ -5 100]"},
		{"bool", formatValues([]apFlag{true, false}, []int{2}, opt), "[ true false]"},
		{"0-d float32", formatValues([]apCelsius{1}, nil, opt), "1.0"},
		{"0-d int16", formatValues([]apCount{-3}, nil, opt), "-3"},
		// Types that are no numbers print as Go prints them, unpadded.
		{"strings", formatValues([]string{"a", "bc"}, []int{2}, opt), "[a bc]"},
		{"nil interface", formatValues([]any{nil, 1}, []int{2}, opt), "[<nil> 1]"},
		{"0-d nil interface", formatValues([]any{nil}, nil, opt), "<nil>"},
	})
}

func TestFormatValuesZeroDAndEmpty(t *testing.T) {
	opt := apDefaults
	apRun(t, []apCase{
		// A 0-d array prints as its scalar: all shortest digits, ".0".
		{"float 1.5", formatValues([]float64{1.5}, nil, opt), "1.5"},
		{"float 1", formatValues([]float64{1}, []int{}, opt), "1.0"},
		{"float 1e20", formatValues([]float64{1e20}, nil, opt), "1e+20"},
		{"float 1e16", formatValues([]float64{1e16}, nil, opt), "1e+16"},
		{"float 1e-5", formatValues([]float64{1.5e-5}, nil, opt), "1.5e-05"},
		{"many digits", formatValues([]float64{1.0 / 3}, nil, opt), "0.3333333333333333"},
		{"float32 0.1", formatValues([]float32{0.1}, nil, opt), "0.1"},
		// The scalar compares in double: float32(1e-4) < 1e-4.
		{"float32 1e-4", formatValues([]float32{1e-4}, nil, opt), "1e-04"},
		{"negative zero", formatValues([]float64{math.Copysign(0, -1)}, nil, opt), "-0.0"},
		{"nan", formatValues([]float64{math.NaN()}, nil, opt), "nan"},
		{"-inf", formatValues([]float32{float32(math.Inf(-1))}, nil, opt), "-inf"},
		{"float16", formatValues(apHalves(1.5), nil, opt), "1.5"},
		{"int", formatValues([]int64{-7}, nil, opt), "-7"},
		{"uint64", formatValues([]uint64{math.MaxUint64}, nil, opt), "18446744073709551615"},
		{"bool", formatValues([]bool{true}, nil, opt), "true"},
		{"empty", formatValues([]float32{}, []int{0}, opt), "[]"},
		{"zero-size dim", formatValues([]float32{}, []int{2, 0}, opt), "[]"},
		{"zero-size leading dim", formatValues([]int8(nil), []int{0, 3, 4}, opt), "[]"},
		{"too few values", formatValues([]float32{1, 2, 3, 4, 5}, []int{2, 3}, opt), "<nd: 5 values for shape (2, 3)>"},
		{"too many for 0-d", formatValues([]float32{1, 2}, nil, opt), "<nd: 2 values for shape ()>"},
		{"negative dim", formatValues([]int8{1, 2}, []int{-2}, opt), "<nd: 2 values for shape (-2,)>"},
		{"overflowing shape", formatValues([]int8{}, []int{math.MaxInt, 2, 0}, opt),
			"<nd: 0 values for shape (" + strconv.Itoa(math.MaxInt) + ", 2, 0)>"},
	})
}

func TestFormatRepr(t *testing.T) {
	opt := apDefaults
	var lin []float64 // numpy.linspace(0, 10, 10)
	for i := range 10 {
		lin = append(lin, float64(i)*(10.0/9))
	}
	lin[9] = 10
	apRun(t, []apCase{
		{"2-d float32", formatRepr([]float32{1, 2, 3, 4}, []int{2, 2}, "float32", "array(", opt),
			"array([[1., 2.],\n       [3., 4.]], shape=(2, 2), dtype=float32)"},
		{"nd prefix", formatRepr([]float32{1, 2, 3, 4}, []int{2, 2}, "float32", "nd.Array[float32](", opt),
			"nd.Array[float32]([[1., 2.],\n" + strings.Repeat(" ", 19) + "[3., 4.]], shape=(2, 2), dtype=float32)"},
		{"maxprec", formatRepr([]float64{0.5, 0.25}, []int{2}, "float64", "array(", opt),
			"array([0.5 , 0.25], shape=(2,), dtype=float64)"},
		{"bools", formatRepr([]bool{true, false}, []int{2}, "bool", "array(", opt),
			"array([ true, false], shape=(2,), dtype=bool)"},
		// NumPy's own example: 17 on the first line, continuation under
		// the first element.
		{"wrapped ints", formatRepr(apArange[int64](30), []int{30}, "int64", "array(", opt),
			"array([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, 16,\n" +
				"       17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29],\n" +
				"      shape=(30,), dtype=int64)"},
		{"wrapped floats", formatRepr(apArange[float64](30), []int{30}, "float64", "array(", opt),
			"array([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12.,\n" +
				"       13., 14., 15., 16., 17., 18., 19., 20., 21., 22., 23., 24., 25.,\n" +
				"       26., 27., 28., 29.], shape=(30,), dtype=float64)"},
		{"wrapped rows", formatRepr(apArange[int64](60), []int{2, 30}, "int64", "array(", opt),
			"array([[ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15,\n" +
				"        16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29],\n" +
				"       [30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45,\n" +
				"        46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59]],\n" +
				"      shape=(2, 30), dtype=int64)"},
		{"3-d", formatRepr(apArange[int32](8), []int{2, 2, 2}, "int32", "array(", opt),
			"array([[[0, 1],\n        [2, 3]],\n\n       [[4, 5],\n        [6, 7]]], shape=(2, 2, 2), dtype=int32)"},
		// set_printoptions' examples, with shape= and dtype= added.
		{"threshold 5", formatRepr(apArange[int64](10), []int{10}, "int64", "array(", printOptions{8, 5, 3, 75}),
			"array([0, 1, 2, ..., 7, 8, 9], shape=(10,), dtype=int64)"},
		{"linspace", formatRepr(lin, []int{10}, "float64", "array(", printOptions{2, 5, 3, 75}),
			"array([ 0.  ,  1.11,  2.22, ...,  7.78,  8.89, 10.  ],\n      shape=(10,), dtype=float64)"},
		{"arange(2000)", formatRepr(apArange[int64](2000), []int{2000}, "int64", "nd.Array[int64](", opt),
			"nd.Array[int64]([   0,    1,    2, ..., 1997, 1998, 1999],\n" +
				"                shape=(2000,), dtype=int64)"},
		{"100x100", formatRepr(apArange[int32](10000), []int{100, 100}, "int32", "array(", opt),
			"array([[   0,    1,    2, ...,   97,   98,   99],\n" +
				"       [ 100,  101,  102, ...,  197,  198,  199],\n" +
				"       [ 200,  201,  202, ...,  297,  298,  299],\n" +
				"       ...,\n" +
				"       [9700, 9701, 9702, ..., 9797, 9798, 9799],\n" +
				"       [9800, 9801, 9802, ..., 9897, 9898, 9899],\n" +
				"       [9900, 9901, 9902, ..., 9997, 9998, 9999]],\n" +
				"      shape=(100, 100), dtype=int32)"},
		{"scientific", formatRepr([]float64{1e-16, 1, 2, 3}, []int{4}, "float64", "array(", opt),
			"array([1.e-16, 1.e+00, 2.e+00, 3.e+00], shape=(4,), dtype=float64)"},
		{"nan inf", formatRepr([]float64{1, math.NaN(), math.Inf(1), math.Inf(-1)}, []int{4}, "float64", "array(", opt),
			"array([  1.,  nan,  inf, -inf], shape=(4,), dtype=float64)"},
		// A 0-d repr goes through the array formatter: "1.", not "1.0".
		{"0-d float", formatRepr([]float64{1}, nil, "float64", "array(", opt), "array(1., shape=(), dtype=float64)"},
		{"0-d scientific", formatRepr([]float64{1e-5}, nil, "float64", "array(", opt), "array(1.e-05, shape=(), dtype=float64)"},
		{"0-d bool", formatRepr([]bool{true}, nil, "bool", "array(", opt), "array(true, shape=(), dtype=bool)"},
		{"empty", formatRepr([]float32{}, []int{0}, "float32", "nd.Array[float32](", opt),
			"nd.Array[float32]([], shape=(0,), dtype=float32)"},
		{"zero-size dim", formatRepr([]float32{}, []int{2, 0}, "float32", "nd.Array[float32](", opt),
			"nd.Array[float32]([], shape=(2, 0), dtype=float32)"},
		{"mismatch", formatRepr([]float32{1}, []int{2}, "float32", "array(", opt), "<nd: 1 values for shape (2,)>"},
	})
}

// apTokens splits a printed array into its element texts.
func apTokens(s string) []string {
	s = strings.NewReplacer("[", " ", "]", " ", ",", " ").Replace(s)
	return strings.Fields(s)
}

// apBalanced reports whether the brackets of s nest properly.
func apBalanced(s string) bool {
	depth := 0
	for _, r := range s {
		switch r {
		case '[':
			depth++
		case ']':
			depth--
			if depth < 0 {
				return false
			}
		}
	}
	return depth == 0
}

// apProperty formats data of a random shape and checks what must hold
// whatever the values: no panic, balanced brackets, lines within the width,
// and, unless summarized, every element in order (check says whether a
// token is the text of element i).
func apProperty[T any](t *testing.T, rng *rand.Rand, data []T, shape []int, check func(i int, tok string) bool) {
	t.Helper()
	opt := apDefaults
	if rng.IntN(4) == 0 {
		// Odd options must not panic either.
		opt = printOptions{rng.IntN(12) - 2, rng.IntN(200) - 2, rng.IntN(5) - 1, rng.IntN(100) - 5}
	}
	s := formatValues(data, shape, opt)
	r := formatRepr(data, shape, "T", "nd.Array[T](", opt)
	if !strings.HasPrefix(r, "nd.Array[T](") || !strings.HasSuffix(r, ", dtype=T)") {
		t.Fatalf("shape %v: repr %q", shape, r)
	}
	if len(shape) == 0 {
		if !check(0, s) {
			t.Fatalf("0-d: %q", s)
		}
		return
	}
	if !apBalanced(s) || !apBalanced(r) {
		t.Fatalf("shape %v: unbalanced brackets:\n%s\n%s", shape, s, r)
	}
	if opt != apDefaults {
		return
	}
	// Every line fits: the elements here are far narrower than a line.
	for _, line := range strings.Split(s, "\n") {
		if len(line) > opt.LineWidth {
			t.Fatalf("shape %v: line of %d columns: %q", shape, len(line), line)
		}
	}
	if len(data) > opt.Threshold {
		if !strings.Contains(s, "...") {
			t.Fatalf("shape %v: %d elements not summarized", shape, len(data))
		}
		return
	}
	toks := apTokens(s)
	if len(toks) != len(data) {
		t.Fatalf("shape %v: %d tokens for %d elements:\n%s", shape, len(toks), len(data), s)
	}
	for i, tok := range toks {
		if !check(i, tok) {
			t.Fatalf("shape %v: element %d printed %q:\n%s", shape, i, tok, s)
		}
	}
}

// apFloatClose reports whether tok reads back as x to within what 8
// fractional digits (or float32's shortest digits) may lose.
func apFloatClose(tok string, x float64) bool {
	switch {
	case math.IsNaN(x):
		return tok == "nan"
	case math.IsInf(x, 1):
		return tok == "inf"
	case math.IsInf(x, -1):
		return tok == "-inf"
	}
	y, err := strconv.ParseFloat(tok, 64)
	return err == nil && math.Abs(y-x) <= 5e-9+1e-6*math.Abs(x) && math.Signbit(y) == math.Signbit(x)
}

func TestFormatValuesProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 400 {
		ndim := rng.IntN(5)
		shape := make([]int, ndim)
		size := 1
		for i := range shape {
			limit := 3000 / max(size, 1)
			shape[i] = rng.IntN(min(limit, 60) + 1)
			if rng.IntN(8) == 0 {
				shape[i] = rng.IntN(limit + 1)
			}
			size *= shape[i]
		}
		t.Run(strconv.Itoa(iter), func(t *testing.T) {
			switch iter % 5 {
			case 0:
				data := make([]int16, size)
				for i := range data {
					data[i] = int16(rng.Uint32())
				}
				apProperty(t, rng, data, shape, func(i int, tok string) bool { return tok == strconv.Itoa(int(data[i])) })
			case 1:
				data := make([]uint64, size)
				for i := range data {
					data[i] = rng.Uint64() >> rng.IntN(64)
				}
				apProperty(t, rng, data, shape, func(i int, tok string) bool { return tok == strconv.FormatUint(data[i], 10) })
			case 2:
				data := make([]bool, size)
				for i := range data {
					data[i] = rng.IntN(2) == 0
				}
				apProperty(t, rng, data, shape, func(i int, tok string) bool { return tok == strconv.FormatBool(data[i]) })
			case 3:
				data := make([]float64, size)
				scale := math.Pow(10, float64(rng.IntN(30)-15))
				for i := range data {
					data[i] = rng.NormFloat64() * scale
					switch rng.IntN(50) {
					case 0:
						data[i] = math.NaN()
					case 1:
						data[i] = math.Inf(1 - 2*rng.IntN(2))
					case 2:
						data[i] = 0
					}
				}
				apProperty(t, rng, data, shape, func(i int, tok string) bool { return apFloatClose(tok, data[i]) })
			case 4:
				data := make([]float32, size)
				scale := math.Pow(10, float64(rng.IntN(20)-10))
				for i := range data {
					data[i] = float32(rng.NormFloat64() * scale)
				}
				apProperty(t, rng, data, shape, func(i int, tok string) bool { return apFloatClose(tok, float64(data[i])) })
			}
		})
	}
}
