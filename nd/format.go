package nd

// The printing of an array's values, as NumPy 2 prints them: this file ports
// the parts of numpy/_core/arrayprint.py that a numeric array reaches
// (_formatArray, FloatingFormat, IntegerFormat, BoolFormat, array_repr), so
// that an array copied to the host reads the same here as in Python. The
// helpers carry an "ap" (arrayprint) prefix because the rest of package nd is
// written elsewhere at the same time and must not collide with them.

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	cuda "github.com/gocuda/cuda"
)

// printOptions are NumPy's print options (numpy.set_printoptions defaults).
type printOptions struct {
	Precision int // 8
	Threshold int // 1000: more elements than this are summarized
	EdgeItems int // 3
	LineWidth int // 75
}

// formatValues returns NumPy's str() of an array of the given shape holding data in row-major (C) order
// (len(data) == product of shape; a 0-d array has shape [] and one element).
func formatValues[T any](data []T, shape []int, opt printOptions) string {
	size, ok := apSize(shape)
	if !ok || size != len(data) {
		return apMismatch(len(data), shape)
	}
	if len(shape) == 0 {
		// NumPy's str of a 0-d array is the str of its scalar, which has
		// its own rules (numpy/_core/src/multiarray/scalartypes.c.src):
		// no print options, a float keeps all its shortest digits.
		return apScalar(data[0])
	}
	if size == 0 {
		return "[]"
	}
	return apArray(data, shape, opt, " ", 0, 0)
}

// formatRepr returns NumPy's repr(): "array([[1., 2.],\n       [3., 4.]], dtype=float32)" with
// the prefix given (e.g. "nd.Array[float32](" … ")") instead of "array(", and always ending with
// the shape and the type: ", shape=(2, 2), dtype=float32)" (NumPy 2 adds shape= only for summarized
// arrays; here it is always there, so a reader sees both).
func formatRepr[T any](data []T, shape []int, dtype string, prefix string, opt printOptions) string {
	return formatReprOf(data, shape, shape, dtype, prefix, opt)
}

// formatReprOf is formatRepr of data of shape, whose repr names another
// shape: that of the array data summarizes (read.go's summary).
func formatReprOf[T any](data []T, shape, named []int, dtype string, prefix string, opt printOptions) string {
	size, ok := apSize(shape)
	if !ok || size != len(data) {
		return apMismatch(len(data), shape)
	}
	prefixLen := utf8.RuneCountInString(prefix)
	lst := "[]" // array2string's answer for any array with no elements
	if size > 0 {
		// repr passes suffix=")" to array2string, which wraps one column
		// earlier so that the closing parenthesis fits.
		lst = apArray(data, shape, opt, ", ", prefixLen, 1)
	}
	arr := prefix + lst + ","
	extra := "shape=" + apShapeString(named) + ", dtype=" + dtype + ")"
	// As _array_repr_implementation: the extras go on a line of their own,
	// indented under the values, when they would overflow the last line.
	last := arr[strings.LastIndexByte(arr, '\n')+1:]
	spacer := " "
	if utf8.RuneCountInString(last)+utf8.RuneCountInString(extra)+1 > opt.LineWidth {
		spacer = "\n" + strings.Repeat(" ", prefixLen)
	}
	return arr + spacer + extra
}

// apSize is the number of elements of shape; false for a negative dimension
// or a product past int, which no data can match.
func apSize(shape []int) (int, bool) {
	size := 1
	for _, d := range shape {
		if d < 0 {
			return 0, false
		}
		if d != 0 && size > math.MaxInt/d {
			// A later zero would make the product 0, but such a shape
			// is nonsense anyway; reporting it is better than guessing.
			return 0, false
		}
		size *= d
	}
	return size, true
}

// apMismatch is what formatValues and formatRepr return instead of
// panicking when data and shape disagree.
func apMismatch(n int, shape []int) string {
	return fmt.Sprintf("<nd: %d values for shape %s>", n, apShapeString(shape))
}

// apShapeString writes shape as a Python tuple, as NumPy's repr shows it:
// (), (5,), (2, 3).
func apShapeString(shape []int) string {
	var b strings.Builder
	b.WriteByte('(')
	for i, d := range shape {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(d))
	}
	if len(shape) == 1 {
		b.WriteByte(',')
	}
	b.WriteByte(')')
	return b.String()
}

// apArray is _array2string and _formatArray: the nested, wrapped, maybe
// summarized text of a non-empty array. sep is ' ' for str and ', ' for
// repr; prefixLen and suffixLen are the lengths of the text repr puts around
// it (the continuation lines are indented past the prefix, and the suffix
// narrows the lines).
func apArray[T any](data []T, shape []int, opt printOptions, sep string, prefixLen, suffixLen int) string {
	size := len(data)
	strides := make([]int, len(shape))
	stride := 1
	for i := len(shape) - 1; i >= 0; i-- {
		strides[i] = stride
		stride *= shape[i]
	}
	edge := max(opt.EdgeItems, 0)
	summarize := size > opt.Threshold

	// The widths come from the elements shown only (_leading_trailing).
	var shown []int
	if summarize {
		shown = apShown(shape, strides, edge, 0, 0, nil)
	} else {
		shown = make([]int, size)
		for i := range shown {
			shown[i] = i
		}
	}
	p := apPrinter{
		format:    apFormatter(data, shown, len(shape) == 0, max(opt.Precision, 0)),
		shape:     shape,
		strides:   strides,
		sep:       sep,
		edge:      edge,
		summarize: summarize,
	}
	// "[" is skipped over on every continuation line, and so is the prefix.
	hanging := strings.Repeat(" ", 1+prefixLen)
	return p.recurse(0, 0, hanging, opt.LineWidth-suffixLen)
}

// apShown lists the flat indices of the elements a summarized array shows:
// on every axis longer than 2*edge, the first and last edge. An edge of 0
// shows the whole axis, as NumPy's a[-0:] is all of a.
func apShown(shape, strides []int, edge, axis, offset int, out []int) []int {
	if axis == len(shape) {
		return append(out, offset)
	}
	n := shape[axis]
	if edge > 0 && apSummarized(n, edge) {
		for i := 0; i < edge; i++ {
			out = apShown(shape, strides, edge, axis+1, offset+i*strides[axis], out)
		}
		for i := n - edge; i < n; i++ {
			out = apShown(shape, strides, edge, axis+1, offset+i*strides[axis], out)
		}
		return out
	}
	for i := 0; i < n; i++ {
		out = apShown(shape, strides, edge, axis+1, offset+i*strides[axis], out)
	}
	return out
}

// apSummarized is 2*edge < n without the overflow of 2*edge.
func apSummarized(n, edge int) bool { return edge < n && n-edge > edge }

// apPrinter holds what _formatArray's recurser closes over.
type apPrinter struct {
	format    func(i int) string // one element, by flat index, padded
	shape     []int
	strides   []int
	sep       string
	edge      int
	summarize bool
}

// recurse is _formatArray's recurser for the sub-array at flat offset on
// axis: hanging is the indent of its continuation lines and width the
// columns it may use.
func (p *apPrinter) recurse(axis, offset int, hanging string, width int) string {
	if axis == len(p.shape) {
		return p.format(offset)
	}
	// Each level of nesting adds a "[" to align with and a "]" to fit.
	nextHanging := hanging + " "
	nextWidth := width - 1
	n := p.shape[axis]
	stride := p.strides[axis]
	showSummary := p.summarize && apSummarized(n, p.edge)
	leading, trailing := 0, n
	if showSummary {
		leading, trailing = p.edge, p.edge
	}
	// The elements printed: leading from the start, then trailing from the
	// end, the last of which is always printed (even with an edge of 0).
	child := func(i int) string {
		return p.recurse(axis+1, offset+i*stride, nextHanging, nextWidth)
	}

	var s strings.Builder
	if len(p.shape)-axis == 1 {
		// The last axis: elements on lines, wrapped before an element that
		// would pass the width less the room for "," or "]".
		elemWidth := width - max(len(strings.TrimRight(p.sep, " ")), 1)
		line := []byte(hanging)
		extend := func(word string) {
			// _extendLine: a line holding no element yet is never
			// wrapped, as wrapping it would not help.
			if len(line)+len(word) > elemWidth && len(line) > len(hanging) {
				s.Write(apTrimRight(line))
				s.WriteByte('\n')
				line = append(line[:0], hanging...)
			}
			line = append(line, word...)
		}
		for i := 0; i < leading; i++ {
			extend(child(i))
			line = append(line, p.sep...)
		}
		if showSummary {
			extend("...")
			line = append(line, p.sep...)
		}
		for i := trailing; i > 1; i-- {
			extend(child(n - i))
			line = append(line, p.sep...)
		}
		extend(child(n - 1))
		s.Write(line)
	} else {
		// Other axes: one sub-array a line (or block), separated by as
		// many newlines as the axes below, so 3-d blocks have a blank line
		// between them.
		lineSep := strings.TrimRight(p.sep, " ") + strings.Repeat("\n", len(p.shape)-axis-1)
		for i := 0; i < leading; i++ {
			s.WriteString(hanging)
			s.WriteString(child(i))
			s.WriteString(lineSep)
		}
		if showSummary {
			s.WriteString(hanging)
			s.WriteString("...")
			s.WriteString(lineSep)
		}
		for i := trailing; i > 1; i-- {
			s.WriteString(hanging)
			s.WriteString(child(n - i))
			s.WriteString(lineSep)
		}
		s.WriteString(hanging)
		s.WriteString(child(n - 1))
	}
	// The text was written with the hanging indent on its first line too;
	// the "[" takes that place.
	return "[" + s.String()[len(hanging):] + "]"
}

// apTrimRight is Python's line.rstrip() for the ASCII text written here.
func apTrimRight(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\n') {
		b = b[:len(b)-1]
	}
	return b
}

// apFloatKind is what FloatingFormat learns from the dtype.
type apFloatKind struct {
	// bits is strconv's bitSize for the shortest digits: 32 for float32;
	// 64 for float64 and for the halves, whose values are first made the
	// decimal of fewest digits that rounds back to the half (apShortest):
	// NumPy prints float16(0.1) as 0.1, not as its float32 value's digits.
	bits int
	// cutoff is the magnitude from which the array turns scientific:
	// 10**min(8, finfo(dtype).precision) since NumPy 2.3, as a type with
	// fewer decimal digits cannot print larger integers exactly (bfloat16's
	// precision is 2 in ml_dtypes' finfo).
	cutoff float64
	// round rounds a float64 to the dtype, as NumPy compares and divides
	// in the dtype (NEP 50 makes Python's 1e-4 a float32 for a float32
	// array).
	round func(float64) float64
}

var (
	apFloat64  = apFloatKind{bits: 64, cutoff: 1e8, round: func(x float64) float64 { return x }}
	apFloat32  = apFloatKind{bits: 32, cutoff: 1e6, round: func(x float64) float64 { return float64(float32(x)) }}
	apFloat16  = apFloatKind{bits: 64, cutoff: 1e3, round: func(x float64) float64 { return float64(cuda.NewFloat16(float32(x)).Float32()) }}
	apBFloat16 = apFloatKind{bits: 64, cutoff: 1e2, round: func(x float64) float64 { return float64(cuda.NewBFloat16(float32(x)).Float32()) }}
)

// apShortest returns the decimal of fewest significant digits that round
// takes back to x, as a float64 (whose own shortest digits are those): a
// half's shortest digits, as NumPy prints a float16.
func apShortest(x float64, round func(float64) float64) float64 {
	if x == 0 || math.IsInf(x, 0) || math.IsNaN(x) {
		return x
	}
	for p := 1; p < 17; p++ {
		y, err := strconv.ParseFloat(strconv.FormatFloat(x, 'e', p-1, 64), 64)
		if err == nil && round(y) == x {
			return y
		}
	}
	return x
}

// apFormatter is _get_format_function: a formatter for data's element type
// whose widths fit the shown elements. zeroD drops the bool padding, as
// BoolFormat does for a 0-d array.
func apFormatter[T any](data []T, shown []int, zeroD bool, prec int) func(int) string {
	if f := apFormatterOf(data, shown, zeroD, prec); f != nil {
		return f
	}
	// A type defined on a Go number (nd admits `type Celsius float32`)
	// prints as that number: copied to its underlying type.
	if c := apUnderlying(data); c != nil {
		if f := apFormatterOf(c, shown, zeroD, prec); f != nil {
			return f
		}
	}
	// Any other type prints as its Go text, unpadded, as NumPy prints the
	// str of a dtype it does not know.
	return func(i int) string { return fmt.Sprint(data[i]) }
}

// apFormatterOf is apFormatter for the element types it knows by name; nil
// for others.
func apFormatterOf(data any, shown []int, zeroD bool, prec int) func(int) string {
	switch d := data.(type) {
	case []int8:
		return apInts(d, shown)
	case []int16:
		return apInts(d, shown)
	case []int32:
		return apInts(d, shown)
	case []int64:
		return apInts(d, shown)
	case []int:
		return apInts(d, shown)
	case []uint8:
		return apUints(d, shown)
	case []uint16:
		return apUints(d, shown)
	case []uint32:
		return apUints(d, shown)
	case []uint64:
		return apUints(d, shown)
	case []uint:
		return apUints(d, shown)
	case []bool:
		return apBools(d, zeroD)
	case []float64:
		return apFloats(func(i int) float64 { return d[i] }, shown, apFloat64, prec)
	case []float32:
		return apFloats(func(i int) float64 { return float64(d[i]) }, shown, apFloat32, prec)
	case []cuda.Float16:
		return apFloats(func(i int) float64 { return apShortest(float64(d[i].Float32()), apFloat16.round) }, shown, apFloat16, prec)
	case []cuda.BFloat16:
		return apFloats(func(i int) float64 { return apShortest(float64(d[i].Float32()), apBFloat16.round) }, shown, apBFloat16, prec)
	}
	return nil
}

// apUnderlying copies data to a slice of its elements' underlying Go
// number (int64, uint64, float32, float64) or bool; nil for other kinds.
func apUnderlying[T any](data []T) any {
	v := reflect.ValueOf(data)
	switch reflect.TypeFor[T]().Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		out := make([]int64, len(data))
		for i := range out {
			out[i] = v.Index(i).Int()
		}
		return out
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		out := make([]uint64, len(data))
		for i := range out {
			out[i] = v.Index(i).Uint()
		}
		return out
	case reflect.Float32:
		out := make([]float32, len(data))
		for i := range out {
			out[i] = float32(v.Index(i).Float())
		}
		return out
	case reflect.Float64:
		out := make([]float64, len(data))
		for i := range out {
			out[i] = v.Index(i).Float()
		}
		return out
	case reflect.Bool:
		out := make([]bool, len(data))
		for i := range out {
			out[i] = v.Index(i).Bool()
		}
		return out
	}
	return nil
}

// apScalar is the str of a NumPy scalar, for a 0-d array.
func apScalar[T any](v T) string {
	switch x := any(v).(type) {
	case cuda.Float16:
		return apScalarFloat(apShortest(float64(x.Float32()), apFloat16.round), 64)
	case cuda.BFloat16:
		return apScalarFloat(apShortest(float64(x.Float32()), apBFloat16.round), 64)
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Float32:
		return apScalarFloat(rv.Float(), 32)
	case reflect.Float64:
		return apScalarFloat(rv.Float(), 64)
	}
	// Integers and bools print plainly, without padding.
	return apFormatter([]T{v}, []int{0}, true, 8)(0)
}

// apScalarFloat is NumPy's float scalar str: positional for zero and
// magnitudes in [1e-4, 1e16) with at least one fractional digit ("1.0"),
// scientific otherwise ("1e+16", "1.5e-05"), all shortest digits.
func apScalarFloat(x float64, bits int) string {
	switch {
	case math.IsNaN(x):
		return "nan"
	case math.IsInf(x, 1):
		return "inf"
	case math.IsInf(x, -1):
		return "-inf"
	}
	if a := math.Abs(x); a == 0 || a >= 1e-4 && a < 1e16 {
		s := strconv.FormatFloat(x, 'f', -1, bits)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	return strconv.FormatFloat(x, 'e', -1, bits)
}

type apInteger interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~int
}

type apUnsigned interface {
	~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uint
}

// apInts is IntegerFormat: right-aligned to the wider of the largest and
// the smallest shown value.
func apInts[I apInteger](d []I, shown []int) func(int) string {
	width := 0
	for _, i := range shown {
		width = max(width, len(strconv.FormatInt(int64(d[i]), 10)))
	}
	return func(i int) string { return apPadLeft(strconv.FormatInt(int64(d[i]), 10), width) }
}

// apUints is IntegerFormat for unsigned types, which int64 cannot hold.
func apUints[U apUnsigned](d []U, shown []int) func(int) string {
	width := 0
	for _, i := range shown {
		width = max(width, len(strconv.FormatUint(uint64(d[i]), 10)))
	}
	return func(i int) string { return apPadLeft(strconv.FormatUint(uint64(d[i]), 10), width) }
}

// apBools is BoolFormat with Go's words: "true" gets a space so that it is
// as wide as "false", except in a 0-d array, always (as NumPy's " True").
func apBools(d []bool, zeroD bool) func(int) string {
	t := " true"
	if zeroD {
		t = "true"
	}
	return func(i int) string {
		if d[i] {
			return t
		}
		return "false"
	}
}

// apPadLeft right-aligns s in width columns.
func apPadLeft(s string, width int) string {
	if len(s) >= width {
		return s
	}
	return strings.Repeat(" ", width-len(s)) + s
}

// apFloats is FloatingFormat with floatmode 'maxprec' and sign '-': each
// value's shortest digits, at most prec of them after the point, padded so
// that the points line up; or scientific notation for the whole array.
func apFloats(get func(int) float64, shown []int, kind apFloatKind, prec int) func(int) string {
	// fillFormat: only the finite values count for the digits, and only
	// the finite nonzero ones for the choice of notation.
	var finite []float64
	var maxAbs, minAbs float64
	nonzero, nonfinite, negInf := false, false, false
	for _, i := range shown {
		x := get(i)
		if math.IsNaN(x) || math.IsInf(x, 0) {
			nonfinite = true
			negInf = negInf || math.IsInf(x, -1)
			continue
		}
		finite = append(finite, x)
		if a := math.Abs(x); a != 0 {
			if !nonzero {
				maxAbs, minAbs, nonzero = a, a, true
			}
			maxAbs, minAbs = max(maxAbs, a), min(minAbs, a)
		}
	}
	exp := false
	if nonzero {
		// max/min is computed in the dtype and may overflow to inf,
		// which counts as large.
		ratio := kind.round(maxAbs / minAbs)
		exp = maxAbs >= kind.cutoff || minAbs < kind.round(1e-4) || ratio > 1000
	}

	padLeft, padRight, expSize := 0, 0, -1
	if exp {
		// The digits after the point: the most any value needs; every
		// value then prints that many, as Dragon4's min_digits does.
		for _, x := range finite {
			intPart, frac, e := apSciParts(x, prec, kind.bits)
			padLeft = max(padLeft, len(intPart))
			padRight = max(padRight, len(frac))
			expSize = max(expSize, len(e)-1)
		}
		prec = padRight
		// Only the width of nan and inf uses padRight from here on.
		padRight = expSize + 2 + prec
	} else {
		for _, x := range finite {
			intPart, frac := apPosParts(x, prec, kind.bits)
			padLeft = max(padLeft, len(intPart))
			padRight = max(padRight, len(frac))
		}
	}
	if nonfinite {
		// Room for "nan", "inf" and "-inf" in the columns of the numbers.
		offset := padRight + 1
		neg := 0
		if negInf {
			neg = 1
		}
		padLeft = max(padLeft, 3-offset, 3+neg-offset)
	}
	width := padLeft + padRight + 1

	return func(i int) string {
		x := get(i)
		switch {
		case math.IsNaN(x):
			return apPadLeft("nan", width)
		case math.IsInf(x, 1):
			return apPadLeft("inf", width)
		case math.IsInf(x, -1):
			return apPadLeft("-inf", width)
		}
		if exp {
			s := strconv.FormatFloat(x, 'e', prec, kind.bits)
			mant, e, _ := strings.Cut(s, "e")
			intPart, frac, _ := strings.Cut(mant, ".")
			digits := e[1:]
			if len(digits) < expSize {
				digits = strings.Repeat("0", expSize-len(digits)) + digits
			}
			return apPadLeft(intPart, padLeft) + "." + frac + "e" + e[:1] + digits
		}
		intPart, frac := apPosParts(x, prec, kind.bits)
		return apPadLeft(intPart, padLeft) + "." + frac + strings.Repeat(" ", max(padRight-len(frac), 0))
	}
}

// apPosParts is dragon4_positional with unique=True, precision=prec and
// trim='.': the shortest digits that read back as x, or x rounded to prec
// fractional digits when those are more, split at the point, trailing
// zeros dropped ("1." has an empty fraction).
func apPosParts(x float64, prec, bits int) (intPart, frac string) {
	s := strconv.FormatFloat(x, 'f', -1, bits)
	intPart, frac, _ = strings.Cut(s, ".")
	if len(frac) > prec {
		intPart, frac, _ = strings.Cut(strconv.FormatFloat(x, 'f', prec, bits), ".")
		frac = strings.TrimRight(frac, "0")
	}
	return intPart, frac
}

// apSciParts is dragon4_scientific with unique=True, precision=prec and
// trim='.': the mantissa's integer digit (with the sign), its fractional
// digits, and the exponent with its sign ("+10").
func apSciParts(x float64, prec, bits int) (intPart, frac, exp string) {
	s := strconv.FormatFloat(x, 'e', -1, bits)
	mant, exp, _ := strings.Cut(s, "e")
	intPart, frac, _ = strings.Cut(mant, ".")
	if len(frac) > prec {
		// Rounding may carry into the exponent (9.99999999e5 is 1.e+06).
		mant, exp, _ = strings.Cut(strconv.FormatFloat(x, 'e', prec, bits), "e")
		intPart, frac, _ = strings.Cut(mant, ".")
		frac = strings.TrimRight(frac, "0")
	}
	return intPart, frac, exp
}
