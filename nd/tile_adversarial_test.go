package nd_test

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"testing"
	"unsafe"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/nd"
)

// Adversarial tests of the tiled elementwise kernel (tile.go): shapes at
// and around every tile-size boundary, transposed, flipped, offset and
// stepped views, broadcast inputs beside staged ones, two to seven
// staged inputs, every element type, mixed input types, outputs written
// into views (transposed, flipped, offset, stepped; the rest of their
// base checked untouched), 3-d batches with the batch axis first, middle
// and last, and grids past the hook's most blocks. Every result is
// checked against a CPU reference computed from a host model of the
// views (hv below, written independently of ndshape), and every call is
// checked to take the tiled kernel exactly where tileFor's rule (as
// predictTile restates it) says it applies, with the tile that rule
// gives.

// ---------------------------------------------------------------------
// A host model of a strided view.

type hv[T any] struct {
	data    []T
	shape   []int
	strides []int
	off     int
}

func contigHV[T any](data []T, shape ...int) hv[T] {
	st := make([]int, len(shape))
	acc := 1
	for i := len(shape) - 1; i >= 0; i-- {
		st[i] = acc
		acc *= shape[i]
	}
	return hv[T]{data, slices.Clone(shape), st, 0}
}

func (h hv[T]) pos(idx []int) int {
	o := h.off
	for i, j := range idx {
		o += j * h.strides[i]
	}
	return o
}

func (h hv[T]) at(idx []int) T { return h.data[h.pos(idx)] }

func (h hv[T]) permute(p ...int) hv[T] {
	out := hv[T]{data: h.data, off: h.off}
	for _, a := range p {
		out.shape = append(out.shape, h.shape[a])
		out.strides = append(out.strides, h.strides[a])
	}
	return out
}

func (h hv[T]) transpose() hv[T] {
	p := make([]int, len(h.shape))
	for i := range p {
		p[i] = len(p) - 1 - i
	}
	return h.permute(p...)
}

// advPySlice is Python's slice(start, stop, step).indices(n): the first
// index and the count.
func advPySlice(n, start, stop, step int) (first, length int) {
	lower, upper := 0, n
	if step < 0 {
		lower, upper = -1, n-1
	}
	norm := func(v, def int) int {
		if v == nd.None {
			return def
		}
		if v < 0 {
			v += n
			if v < lower {
				v = lower
			}
		} else if v > upper {
			v = upper
		}
		return v
	}
	var s, e int
	if step > 0 {
		s, e = norm(start, lower), norm(stop, upper)
		if e > s {
			length = (e - s + step - 1) / step
		}
	} else {
		s, e = norm(start, upper), norm(stop, lower)
		if s > e {
			length = (s - e - step - 1) / (-step)
		}
	}
	return s, length
}

func (h hv[T]) slice(axis, start, stop, step int) hv[T] {
	out := hv[T]{data: h.data, shape: slices.Clone(h.shape), strides: slices.Clone(h.strides), off: h.off}
	first, n := advPySlice(h.shape[axis], start, stop, step)
	if n > 0 {
		out.off += first * h.strides[axis]
	}
	out.shape[axis] = n
	out.strides[axis] = h.strides[axis] * step
	return out
}

// bcastStrides is the strides of a layout (shape, strides) broadcast to
// shape to, NumPy's rules.
func bcastStrides(shape, strides, to []int) []int {
	out := make([]int, len(to))
	for i := range shape {
		j := len(to) - len(shape) + i
		if shape[i] != 1 {
			out[j] = strides[i]
		}
	}
	return out
}

func (h hv[T]) bcast(to ...int) hv[T] {
	return hv[T]{data: h.data, shape: slices.Clone(to), strides: bcastStrides(h.shape, h.strides, to), off: h.off}
}

func sizeOfShape(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

func eachIdx(shape []int, f func(idx []int)) {
	n := sizeOfShape(shape)
	idx := make([]int, len(shape))
	for range n {
		f(idx)
		for a := len(shape) - 1; a >= 0; a-- {
			idx[a]++
			if idx[a] < shape[a] {
				break
			}
			idx[a] = 0
		}
	}
}

func (h hv[T]) elems() []T {
	out := make([]T, 0, sizeOfShape(h.shape))
	eachIdx(h.shape, func(idx []int) { out = append(out, h.at(idx)) })
	return out
}

// ---------------------------------------------------------------------
// A device view and its host model, made by the same operations.

type pa[T nd.Elem] struct {
	d *nd.Array[T]
	h hv[T]
}

func newPA[T nd.Elem](t testing.TB, s *cuda.Stream, gen func(int) T, shape ...int) pa[T] {
	t.Helper()
	data := make([]T, sizeOfShape(shape))
	for i := range data {
		data[i] = gen(i)
	}
	d := free(t, must(nd.FromSlice(s, data, shape...))(t))
	return pa[T]{d, contigHV(data, shape...)}
}

func (p pa[T]) tr() pa[T] { return pa[T]{p.d.T(), p.h.transpose()} }

func (p pa[T]) perm(t testing.TB, axes ...int) pa[T] {
	t.Helper()
	return pa[T]{must(p.d.Permute(axes...))(t), p.h.permute(axes...)}
}

func (p pa[T]) sl(t testing.TB, axis, start, stop, step int) pa[T] {
	t.Helper()
	return pa[T]{must(p.d.Slice(axis, start, stop, step))(t), p.h.slice(axis, start, stop, step)}
}

// model checks that the device view is what the host model says: its
// shape, strides and elements (ToSlice picks them out on the host).
func (p pa[T]) model(t testing.TB, what string) {
	t.Helper()
	sameStrides := len(p.d.Strides()) == len(p.h.strides)
	for i, st := range p.d.Strides() {
		// The stride of an axis of one element (or none) means nothing.
		sameStrides = sameStrides && (p.h.shape[i] <= 1 || st == p.h.strides[i])
	}
	if !slices.Equal(p.d.Shape(), p.h.shape) || !sameStrides {
		t.Fatalf("%s: the view has shape %v strides %v, the host model %v %v", what, p.d.Shape(), p.d.Strides(), p.h.shape, p.h.strides)
	}
	if g := must(p.d.ToSlice())(t); !slices.EqualFunc(g, p.h.elems(), eqBits[T]) {
		t.Fatalf("%s: the view's elements differ from the host model's", what)
	}
}

// ---------------------------------------------------------------------
// Element values and comparisons.

func isHalf[T any]() bool {
	switch any(*new(T)).(type) {
	case cuda.Float16, cuda.BFloat16:
		return true
	}
	return false
}

func isUnsignedT[T any]() bool {
	switch any(*new(T)).(type) {
	case uint8, uint16, uint32, uint64, nd.Bool:
		return true
	}
	return false
}

// smallVal is element i of an arithmetic test array: small integers,
// exact in every type and in their sums and products (int8's included).
func smallVal[T nd.Elem](i int) T {
	v := (i*7)%23 - 11
	if isUnsignedT[T]() {
		v += 11
	}
	return fromF[T](float64(v))
}

// smallVal2 is another such array's.
func smallVal2[T nd.Elem](i int) T { return smallVal[T](i*5 + 3) }

// bitsVal is element i of a copy test array: every bit of the type used
// (halves' NaNs included; float32 and float64 NaNs replaced, their
// payloads being no part of what a copy promises for them).
func bitsVal[T nd.Elem](i int) T {
	h := uint64(i+1) * 0x9E3779B97F4A7C15
	h ^= h >> 31
	h *= 0xBF58476D1CE4E5B9
	h ^= h >> 29
	switch any(*new(T)).(type) {
	case float32:
		f := math.Float32frombits(uint32(h))
		if f != f {
			f = float32(int32(h))
		}
		return any(f).(T)
	case float64:
		f := math.Float64frombits(h)
		if f != f {
			f = float64(int64(h))
		}
		return any(f).(T)
	case cuda.Float16:
		return any(cuda.Float16(uint16(h))).(T)
	case cuda.BFloat16:
		return any(cuda.BFloat16(uint16(h))).(T)
	case nd.Bool:
		return any(nd.Bool(h & 1)).(T)
	}
	return T(h)
}

func eqBits[T any](a, b T) bool {
	sa := unsafe.Slice((*byte)(unsafe.Pointer(&a)), unsafe.Sizeof(a))
	sb := unsafe.Slice((*byte)(unsafe.Pointer(&b)), unsafe.Sizeof(b))
	return bytes.Equal(sa, sb)
}

// eqVal compares values (a float's -0 equal to 0).
func eqVal[T nd.Elem](a, b T) bool {
	if isHalf[T]() {
		return toF64(a) == toF64(b)
	}
	return a == b
}

// hostBin is the binary operation op of T as the kernels compute it: in
// float32 for the halves, rounded once.
func hostBin[T nd.Elem](op string) func(a, b T) T {
	if isHalf[T]() {
		return func(a, b T) T {
			x, y := float32(toF64(a)), float32(toF64(b))
			var r float32
			switch op {
			case "add":
				r = x + y
			case "sub":
				r = x - y
			case "mul":
				r = x * y
			case "max":
				r = max(x, y)
			}
			return fromF[T](float64(r))
		}
	}
	return func(a, b T) T {
		switch op {
		case "add":
			return a + b
		case "sub":
			return a - b
		case "mul":
			return a * b
		}
		if a > b {
			return a
		}
		return b
	}
}

func hostLess[T nd.Elem](a, b T) bool {
	if isHalf[T]() {
		return toF64(a) < toF64(b)
	}
	return a < b
}

func b2B(v bool) nd.Bool {
	if v {
		return 1
	}
	return 0
}

// checkElems compares got with want, element for element, naming the
// first difference by its index in shape and counting them.
func checkElems[T any](t testing.TB, what string, shape []int, got, want []T, eq func(a, b T) bool) bool {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d elements, want %d", what, len(got), len(want))
		return false
	}
	bad, first := 0, -1
	for i := range got {
		if !eq(got[i], want[i]) {
			if first < 0 {
				first = i
			}
			bad++
		}
	}
	if bad == 0 {
		return true
	}
	idx := make([]int, len(shape))
	r := first
	for a := len(shape) - 1; a >= 0; a-- {
		idx[a] = r % shape[a]
		r /= shape[a]
	}
	t.Errorf("%s: %d of %d elements differ; first at %v (flat %d): got %v, want %v", what, bad, len(got), idx, first, got[first], want[first])
	return false
}

// ---------------------------------------------------------------------
// Which launches took the tiled kernel, and which should have.

type tileWatch struct{ got [][4]int }

func watchTiles(t *testing.T) *tileWatch {
	w := &tileWatch{}
	t.Cleanup(nd.SetTileSeen(func(rows, cols, tr, tc int) { w.got = append(w.got, [4]int{rows, cols, tr, tc}) }))
	return w
}

func (w *tileWatch) take() [][4]int {
	g := w.got
	w.got = nil
	return g
}

func pow2ceil(n int) int {
	p := 1
	for p < n {
		p *= 2
	}
	return p
}

// tileOf is the tile of rows by cols, as the package documents it: 32×32,
// or the short axis rounded up to a power of two by 1024 over that.
func tileOf(rows, cols int) (tr, tc int) {
	tr, tc = 32, 32
	switch {
	case cols < 32:
		tc = pow2ceil(cols)
		tr = 1024 / tc
	case rows < 32:
		tr = pow2ceil(rows)
		tc = 1024 / tr
	}
	return tr, tc
}

// lay is an operand as predictTile sees it: its shape, strides and
// element size.
type lay struct {
	shape, strides []int
	size           int
}

type shaped interface {
	Shape() []int
	Strides() []int
	Dtype() string
}

var dtypeSizes = map[string]int{"int8": 1, "uint8": 1, "bool": 1, "int16": 2, "uint16": 2, "float16": 2, "bfloat16": 2,
	"int32": 4, "uint32": 4, "float32": 4, "int64": 8, "uint64": 8, "float64": 8}

func layOf(a shaped) lay { return lay{a.Shape(), a.Strides(), dtypeSizes[a.Dtype()]} }

// predictTile restates tileFor's rule: the operands broadcast to out's
// shape and coalesced (axes of 1 dropped, adjacent axes contiguous in
// every operand merged), two or three axes left, out of stride ±1 along
// one (the run, the last such), an input of stride ±1 along another and
// neither 0 nor ±1 along the run (staged), the staged inputs' tiles
// within 40 KiB (1536 elements each). It returns the tiled launch's rows
// and columns.
func predictTile(out lay, ins ...lay) (rows, cols int, ok bool) {
	shape := out.shape
	all := []lay{out}
	for _, in := range ins {
		all = append(all, lay{shape, bcastStrides(in.shape, in.strides, shape), in.size})
	}
	var dims []int
	st := make([][]int, len(all))
	for ax, d := range shape {
		if d == 1 {
			continue
		}
		if k := len(dims) - 1; k >= 0 {
			merge := true
			for i, l := range all {
				if st[i][k] != d*l.strides[ax] {
					merge = false
				}
			}
			if merge {
				dims[k] *= d
				for i, l := range all {
					st[i][k] = l.strides[ax]
				}
				continue
			}
		}
		dims = append(dims, d)
		for i, l := range all {
			st[i] = append(st[i], l.strides[ax])
		}
	}
	n := len(dims)
	if n != 2 && n != 3 {
		return 0, 0, false
	}
	unit := func(v int) bool { return v == 1 || v == -1 }
	run := -1
	for ax := range n {
		if unit(st[0][ax]) {
			run = ax
		}
	}
	if run < 0 {
		return 0, 0, false
	}
	staged := func(s []int, ax int) bool { return ax != run && unit(s[ax]) && s[run] != 0 && !unit(s[run]) }
	other := -1
	for i := 1; i < len(all); i++ {
		for ax := range n {
			if other < 0 && staged(st[i], ax) {
				other = ax
			}
		}
	}
	if other < 0 {
		return 0, 0, false
	}
	b := 0
	for i := 1; i < len(all); i++ {
		if staged(st[i], other) {
			b += 1536 * all[i].size
		}
	}
	if b > 40<<10 {
		return 0, 0, false
	}
	return dims[other], dims[run], true
}

// expect checks the launches since the last take: one tiled launch with
// predictTile's rows, columns and their tile where it applies, none
// where it does not.
func (w *tileWatch) expect(t testing.TB, what string, out shaped, ins ...shaped) {
	t.Helper()
	var ls []lay
	for _, in := range ins {
		ls = append(ls, layOf(in))
	}
	rows, cols, ok := predictTile(layOf(out), ls...)
	got := w.take()
	if !ok {
		if len(got) != 0 {
			t.Errorf("%s: the tiled kernel ran (%v) where tileFor's rule says it does not apply", what, got)
		}
		return
	}
	tr, tc := tileOf(rows, cols)
	if want := [4]int{rows, cols, tr, tc}; len(got) != 1 || got[0] != want {
		t.Errorf("%s: tiled launches %v, want one of rows, cols, tile %v", what, got, want)
	}
}

// expectSome checks that at least one launch since the last take was
// tiled (an operation that copies an overlapping input first).
func (w *tileWatch) expectSome(t testing.TB, what string) {
	t.Helper()
	if len(w.take()) == 0 {
		t.Errorf("%s: the tiled kernel did not run", what)
	}
}

var tileBoundaries = []int{1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 511, 512, 513, 1023, 1024, 1025}

// ---------------------------------------------------------------------

// TestTileAdvBoundaryShapes: every boundary size as the rows and as the
// columns of the output, beside short and long partners: a transposed
// copy (the type rotating among six, every bit compared) and a
// difference of the transpose and a contiguous array, each with the
// tile the rule gives.
func TestTileAdvBoundaryShapes(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	w := watchTiles(t)
	k := 0
	for _, n := range tileBoundaries {
		long := 1100
		if n > 65 {
			long = 260
		}
		for _, p := range []int{2, 17, 33, long} {
			for _, sh := range [][2]int{{n, p}, {p, n}} {
				R, C := sh[0], sh[1]
				k++
				t.Run(fmt.Sprintf("%dx%d", R, C), func(t *testing.T) {
					switch k % 6 {
					case 0:
						boundaryCopy[float32](t, s, w, R, C)
					case 1:
						boundaryCopy[float64](t, s, w, R, C)
					case 2:
						boundaryCopy[int8](t, s, w, R, C)
					case 3:
						boundaryCopy[cuda.Float16](t, s, w, R, C)
					case 4:
						boundaryCopy[uint64](t, s, w, R, C)
					case 5:
						boundaryCopy[nd.Bool](t, s, w, R, C)
					}
					x := newPA(t, s, smallVal[float32], C, R)
					y := newPA(t, s, smallVal2[float32], R, C)
					dst := free(t, must(nd.Empty[float32](s, R, C))(t))
					w.take()
					if err := nd.SubInto(dst, x.d.T(), y.d); err != nil {
						t.Fatal(err)
					}
					w.expect(t, "SubInto(dst, x.T(), y)", dst, x.d.T(), y.d)
					want := make([]float32, 0, R*C)
					xt := x.h.transpose()
					eachIdx([]int{R, C}, func(idx []int) { want = append(want, xt.at(idx)-y.h.at(idx)) })
					checkElems(t, "SubInto(dst, x.T(), y)", []int{R, C}, must(dst.ToSlice())(t), want, eqVal[float32])
				})
			}
		}
	}
}

func boundaryCopy[T nd.Elem](t *testing.T, s *cuda.Stream, w *tileWatch, R, C int) {
	t.Helper()
	x := newPA(t, s, bitsVal[T], C, R)
	w.take()
	got := free(t, must(x.d.T().Copy())(t))
	what := fmt.Sprintf("%s x.T().Copy()", got.Dtype())
	w.expect(t, what, got, x.d.T())
	checkElems(t, what, []int{R, C}, must(got.ToSlice())(t), x.h.transpose().elems(), eqBits[T])
}

// TestTileAdvDtypes: every element type through the tiled kernel: copies
// (every bit) of transposed, offset, flipped and stepped views, and
// Add, Sub, Mul and Maximum (exact, small integers) of one and two
// staged inputs beside contiguous and broadcast ones, comparisons into
// a mask, into contiguous arrays; Bool's copies and logical operations.
func TestTileAdvDtypes(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	w := watchTiles(t)
	t.Run("float32", func(t *testing.T) { advDtype[float32](t, s, w) })
	t.Run("float64", func(t *testing.T) { advDtype[float64](t, s, w) })
	t.Run("float16", func(t *testing.T) { advDtype[cuda.Float16](t, s, w) })
	t.Run("bfloat16", func(t *testing.T) { advDtype[cuda.BFloat16](t, s, w) })
	t.Run("int8", func(t *testing.T) { advDtype[int8](t, s, w) })
	t.Run("int16", func(t *testing.T) { advDtype[int16](t, s, w) })
	t.Run("int32", func(t *testing.T) { advDtype[int32](t, s, w) })
	t.Run("int64", func(t *testing.T) { advDtype[int64](t, s, w) })
	t.Run("uint8", func(t *testing.T) { advDtype[uint8](t, s, w) })
	t.Run("uint16", func(t *testing.T) { advDtype[uint16](t, s, w) })
	t.Run("uint32", func(t *testing.T) { advDtype[uint32](t, s, w) })
	t.Run("uint64", func(t *testing.T) { advDtype[uint64](t, s, w) })
	t.Run("bool", func(t *testing.T) { advBool(t, s, w) })
}

var dtypeShapes = [][2]int{{37, 70}, {9, 1025}, {513, 17}, {2, 1100}, {1100, 2}, {33, 3}}

func advDtype[T nd.Elem](t *testing.T, s *cuda.Stream, w *tileWatch) {
	for _, sh := range dtypeShapes {
		R, C := sh[0], sh[1]
		t.Run(fmt.Sprintf("%dx%d", R, C), func(t *testing.T) {
			// Copies of views of x (C×R): the views' transposes are
			// about R×C.
			xb := newPA(t, s, bitsVal[T], C, R)
			views := []struct {
				name string
				v    pa[T]
			}{
				{"x.T()", xb.tr()},
				{"x[1:, ::-1].T()", xb.sl(t, 0, 1, nd.None, 1).sl(t, 1, nd.None, nd.None, -1).tr()},
				{"x[::-1, 1:].T()", xb.sl(t, 0, nd.None, nd.None, -1).sl(t, 1, 1, nd.None, 1).tr()},
				{"x[::2].T()", xb.sl(t, 0, nd.None, nd.None, 2).tr()},
				{"x[-2::-3, ::-1].T()", xb.sl(t, 0, -2, nd.None, -3).sl(t, 1, nd.None, nd.None, -1).tr()},
			}
			for _, v := range views {
				if sizeOfShape(v.v.h.shape) == 0 {
					continue
				}
				v.v.model(t, v.name)
				w.take()
				got := free(t, must(v.v.d.Copy())(t))
				w.expect(t, v.name+".Copy()", got, v.v.d)
				checkElems(t, v.name+".Copy()", v.v.h.shape, must(got.ToSlice())(t), v.v.h.elems(), eqBits[T])
			}

			x := newPA(t, s, smallVal[T], C, R)
			z := newPA(t, s, smallVal2[T], C, R)
			y := newPA(t, s, smallVal2[T], R, C)
			row := newPA(t, s, smallVal[T], C)                             // broadcast along the rows
			col := newPA(t, s, smallVal2[T], R, 1)                         // broadcast along the columns
			xo := x.sl(t, 0, 1, nd.None, 1).sl(t, 1, nd.None, nd.None, -1) // offset and flipped, (C-1)×R
			pairs := []struct {
				name string
				a, b pa[T]
			}{
				{"x.T(), y", x.tr(), y},
				{"y, x.T()", y, x.tr()},
				{"x.T(), z.T()", x.tr(), z.tr()},
				{"x.T(), x.T()", x.tr(), x.tr()},
				{"x.T(), row", x.tr(), pa[T]{row.d, row.h.bcast(R, C)}},
				{"col, x.T()", pa[T]{col.d, col.h.bcast(R, C)}, x.tr()},
			}
			if C > 1 {
				pairs = append(pairs, struct {
					name string
					a, b pa[T]
				}{"x[1:, ::-1].T(), z[1:].T()", xo.tr(), z.sl(t, 0, 1, nd.None, 1).tr()})
			}
			ops := []struct {
				name string
				dev  func(dst, a, b *nd.Array[T]) error
			}{
				{"add", nd.AddInto[T]}, {"sub", nd.SubInto[T]}, {"mul", nd.MulInto[T]}, {"max", nd.MaximumInto[T]},
			}
			switch any(*new(T)).(type) {
			case float32, int8, cuda.Float16, uint64:
			default:
				// The other types: Add and Sub (the kernels' compilation
				// on the fake is most of this test's time).
				ops = ops[:2]
			}
			for _, pr := range pairs {
				shape := pr.a.h.shape
				for _, op := range ops {
					what := fmt.Sprintf("%s(%s)", op.name, pr.name)
					dst := free(t, must(nd.Empty[T](s, shape...))(t))
					w.take()
					if err := op.dev(dst, pr.a.d, pr.b.d); err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					w.expect(t, what, dst, pr.a.d, pr.b.d)
					f := hostBin[T](op.name)
					want := make([]T, 0, sizeOfShape(shape))
					eachIdx(shape, func(idx []int) { want = append(want, f(pr.a.h.at(idx), pr.b.h.at(idx))) })
					checkElems(t, what, shape, must(dst.ToSlice())(t), want, eqVal[T])
				}
				// A comparison into a new mask.
				what := fmt.Sprintf("Less(%s)", pr.name)
				w.take()
				m := free(t, must(nd.Less(pr.a.d, pr.b.d))(t))
				w.expect(t, what, m, pr.a.d, pr.b.d)
				want := make([]nd.Bool, 0, sizeOfShape(shape))
				eachIdx(shape, func(idx []int) { want = append(want, b2B(hostLess(pr.a.h.at(idx), pr.b.h.at(idx)))) })
				checkElems(t, what, shape, must(m.ToSlice())(t), want, eqBits[nd.Bool])
			}
		})
	}
}

func advBool(t *testing.T, s *cuda.Stream, w *tileWatch) {
	for _, sh := range dtypeShapes {
		R, C := sh[0], sh[1]
		t.Run(fmt.Sprintf("%dx%d", R, C), func(t *testing.T) {
			// Bytes of any value (a true of 2, 255): a copy keeps them.
			x := newPA(t, s, func(i int) nd.Bool { return nd.Bool(uint8(bitsVal[uint64](i)) % 4 * 85) }, C, R)
			y := newPA(t, s, func(i int) nd.Bool { return nd.Bool(i % 3 % 2) }, R, C)
			z := newPA(t, s, func(i int) nd.Bool { return nd.Bool(i % 5 % 2 * 7) }, C, R)
			v := x.sl(t, 1, nd.None, nd.None, -1).tr()
			w.take()
			c := free(t, must(v.d.Copy())(t))
			w.expect(t, "x[:, ::-1].T().Copy()", c, v.d)
			checkElems(t, "x[:, ::-1].T().Copy()", v.h.shape, must(c.ToSlice())(t), v.h.elems(), eqBits[nd.Bool])

			shape := []int{R, C}
			logical := func(what string, dst *nd.Array[nd.Bool], a, b pa[nd.Bool], f func(p, q bool) bool) {
				t.Helper()
				w.expect(t, what, dst, a.d, b.d)
				want := make([]nd.Bool, 0, R*C)
				eachIdx(shape, func(idx []int) { want = append(want, b2B(f(a.h.at(idx) != 0, b.h.at(idx) != 0))) })
				checkElems(t, what, shape, must(dst.ToSlice())(t), want, eqBits[nd.Bool])
			}
			w.take()
			and := free(t, must(nd.LogicalAnd(x.tr().d, y.d))(t))
			logical("LogicalAnd(x.T(), y)", and, x.tr(), y, func(p, q bool) bool { return p && q })
			dst := free(t, must(nd.Empty[nd.Bool](s, R, C))(t))
			w.take()
			if err := nd.LogicalOrInto(dst, x.tr().d, z.tr().d); err != nil {
				t.Fatal(err)
			}
			logical("LogicalOrInto(dst, x.T(), z.T())", dst, x.tr(), z.tr(), func(p, q bool) bool { return p || q })
			w.take()
			if err := nd.LogicalNotInto(dst, x.tr().d); err != nil {
				t.Fatal(err)
			}
			w.expect(t, "LogicalNotInto(dst, x.T())", dst, x.tr().d)
			want := make([]nd.Bool, 0, R*C)
			xt := x.h.transpose()
			eachIdx(shape, func(idx []int) { want = append(want, b2B(xt.at(idx) == 0)) })
			checkElems(t, "LogicalNotInto(dst, x.T())", shape, must(dst.ToSlice())(t), want, eqBits[nd.Bool])
		})
	}
}

// TestTileAdvViews: input views (transposed, flipped along either axis
// or both, offset, stepped along the run or along the staged axis, not
// transposed at all) against output views (new, transposed, flipped
// along either axis, offset, stepped along either axis, transposed
// offset and flipped), by CopyInto, AddInto beside a contiguous array
// and MaximumInto beside a broadcast column; every element of the
// output's base checked (those outside the view keep their sentinel).
func TestTileAdvViews(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	w := watchTiles(t)
	for _, sh := range [][2]int{{70, 37}, {40, 9}, {3, 300}} {
		t.Run(fmt.Sprintf("float32 %dx%d", sh[0], sh[1]), func(t *testing.T) { advViews[float32](t, s, w, sh[0], sh[1]) })
	}
	t.Run("int16 70x37", func(t *testing.T) { advViews[int16](t, s, w, 70, 37) })
	t.Run("bfloat16 33x65", func(t *testing.T) { advViews[cuda.BFloat16](t, s, w, 33, 65) })
	t.Run("float64 17x1025", func(t *testing.T) { advViews[float64](t, s, w, 17, 1025) })
}

func advViews[T nd.Elem](t *testing.T, s *cuda.Stream, w *tileWatch, B0, B1 int) {
	x := newPA(t, s, smallVal[T], B0, B1)
	ins := []struct {
		name string
		v    pa[T]
	}{
		{"x.T()", x.tr()},
		{"x[::-1].T()", x.sl(t, 0, nd.None, nd.None, -1).tr()},
		{"x[:, ::-1].T()", x.sl(t, 1, nd.None, nd.None, -1).tr()},
		{"x[::-1, ::-1].T()", x.sl(t, 0, nd.None, nd.None, -1).sl(t, 1, nd.None, nd.None, -1).tr()},
		{"x[3:, 2:].T()", x.sl(t, 0, 3, nd.None, 1).sl(t, 1, 2, nd.None, 1).tr()},
		{"x[1:-1:2].T()", x.sl(t, 0, 1, -1, 2).tr()},
		{"x[::-3, 1:-1].T()", x.sl(t, 0, nd.None, nd.None, -3).sl(t, 1, 1, -1, 1).tr()},
		{"x[:, ::2].T()", x.sl(t, 1, nd.None, nd.None, 2).tr()},
		{"x[1:]", x.sl(t, 0, 1, nd.None, 1)},
	}
	sentinel := fromF[T](99)
	outs := []struct {
		name string
		base func(R, C int) []int
		view func(p pa[T]) pa[T]
	}{
		{"dst", func(R, C int) []int { return []int{R, C} }, func(p pa[T]) pa[T] { return p }},
		{"dst.T()", func(R, C int) []int { return []int{C, R} }, func(p pa[T]) pa[T] { return p.tr() }},
		{"dst[:, ::-1]", func(R, C int) []int { return []int{R, C} }, func(p pa[T]) pa[T] { return p.sl(t, 1, nd.None, nd.None, -1) }},
		{"dst[::-1]", func(R, C int) []int { return []int{R, C} }, func(p pa[T]) pa[T] { return p.sl(t, 0, nd.None, nd.None, -1) }},
		{"dst[2:, 3:]", func(R, C int) []int { return []int{R + 2, C + 3} }, func(p pa[T]) pa[T] { return p.sl(t, 0, 2, nd.None, 1).sl(t, 1, 3, nd.None, 1) }},
		{"dst[::2]", func(R, C int) []int { return []int{2 * R, C} }, func(p pa[T]) pa[T] { return p.sl(t, 0, nd.None, nd.None, 2) }},
		{"dst[:, ::2]", func(R, C int) []int { return []int{R, 2 * C} }, func(p pa[T]) pa[T] { return p.sl(t, 1, nd.None, nd.None, 2) }},
		{"dst.T()[::-1, 1:]", func(R, C int) []int { return []int{C + 1, R} }, func(p pa[T]) pa[T] {
			return p.tr().sl(t, 1, 1, nd.None, 1).sl(t, 0, nd.None, nd.None, -1)
		}},
	}
	add := hostBin[T]("add")
	mx := hostBin[T]("max")
	for _, in := range ins {
		if sizeOfShape(in.v.h.shape) == 0 {
			continue
		}
		in.v.model(t, in.name)
		shape := in.v.h.shape
		R, C := shape[0], shape[1]
		other := newPA(t, s, smallVal2[T], R, C)
		col := newPA(t, s, smallVal2[T], R, 1)
		colH := col.h.bcast(R, C)
		for _, o := range outs {
			ops := []struct {
				name string
				run  func(dst *nd.Array[T]) error
				ins  []shaped
				f    func(idx []int) T
			}{
				{"CopyInto", func(dst *nd.Array[T]) error { return nd.CopyInto(dst, in.v.d) }, []shaped{in.v.d}, in.v.h.at},
				{"AddInto(·, other)", func(dst *nd.Array[T]) error { return nd.AddInto(dst, in.v.d, other.d) }, []shaped{in.v.d, other.d},
					func(idx []int) T { return add(in.v.h.at(idx), other.h.at(idx)) }},
				{"MaximumInto(col, ·)", func(dst *nd.Array[T]) error { return nd.MaximumInto(dst, col.d, in.v.d) }, []shaped{col.d, in.v.d},
					func(idx []int) T { return mx(colH.at(idx), in.v.h.at(idx)) }},
			}
			for _, op := range ops {
				what := fmt.Sprintf("%s %s of %s", op.name, o.name, in.name)
				bshape := o.base(R, C)
				base := newPA(t, s, func(int) T { return sentinel }, bshape...)
				dv := o.view(base)
				if !slices.Equal(dv.h.shape, shape) {
					t.Fatalf("%s: output view shape %v, want %v", what, dv.h.shape, shape)
				}
				dv.model(t, what+" (dst)")
				w.take()
				if err := op.run(dv.d); err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				w.expect(t, what, dv.d, op.ins...)
				want := slices.Clone(base.h.data)
				eachIdx(shape, func(idx []int) { want[dv.h.pos(idx)] = op.f(idx) })
				checkElems(t, what+" (dst's base)", bshape, must(base.d.ToSlice())(t), want, eqVal[T])
			}
		}
	}
}

// TestTileAdvStaged: two, three and more staged inputs, of mixed types
// (Where's Bool mask beside two arrays of T), staged inputs beside
// broadcast ones, and fused expressions of four to seven transposed
// arrays: tiled while their tiles fit 40 KiB, the strided kernel past
// that; the results the same either way.
func TestTileAdvStaged(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	w := watchTiles(t)
	t.Run("where float64", func(t *testing.T) { advWhere[float64](t, s, w, 65, 33) })
	t.Run("where float16", func(t *testing.T) { advWhere[cuda.Float16](t, s, w, 9, 513) })
	t.Run("where int8", func(t *testing.T) { advWhere[int8](t, s, w, 1025, 7) })
	t.Run("where uint64", func(t *testing.T) { advWhere[uint64](t, s, w, 2, 600) })
	t.Run("fused float32", func(t *testing.T) { advFused[float32](t, s, w, 45, 70) })
	t.Run("fused float64", func(t *testing.T) { advFused[float64](t, s, w, 31, 65) })
	t.Run("fused int16", func(t *testing.T) { advFused[int16](t, s, w, 3, 1030) })
	t.Run("fused bfloat16", func(t *testing.T) { advFused[cuda.BFloat16](t, s, w, 100, 16) })
}

func advWhere[T nd.Elem](t *testing.T, s *cuda.Stream, w *tileWatch, R, C int) {
	mask := newPA(t, s, func(i int) nd.Bool { return nd.Bool(i % 3 % 2 * (1 + i%5)) }, C, R)
	a := newPA(t, s, smallVal[T], C, R)
	b := newPA(t, s, smallVal2[T], C, R)
	bc := newPA(t, s, smallVal2[T], R, C)
	row := newPA(t, s, smallVal[T], C)
	mrow := newPA(t, s, func(i int) nd.Bool { return nd.Bool(i % 2) }, C)
	type tri struct {
		name string
		m    pa[nd.Bool]
		a, b pa[T]
	}
	bRow := pa[T]{row.d, row.h.bcast(R, C)}
	bMask := pa[nd.Bool]{mrow.d, mrow.h.bcast(R, C)}
	flipM := mask.sl(t, 1, nd.None, nd.None, -1).tr()
	for _, c := range []tri{
		{"mask.T(), a.T(), b.T()", mask.tr(), a.tr(), b.tr()},
		{"mask.T(), row, bc", mask.tr(), bRow, bc},
		{"mask[:, ::-1].T(), a.T(), row", flipM, a.tr(), bRow},
		{"mrow, a.T(), b.T()", bMask, a.tr(), b.tr()},
		{"mrow, bc, a.T()", bMask, bc, a.tr()},
	} {
		check := func(what string, got *nd.Array[T], view hv[T], base []T, outShape []int) {
			t.Helper()
			want := slices.Clone(base)
			eachIdx([]int{R, C}, func(idx []int) {
				v := c.b.h.at(idx)
				if c.m.h.at(idx) != 0 {
					v = c.a.h.at(idx)
				}
				want[view.pos(idx)] = v
			})
			checkElems(t, what, outShape, must(got.ToSlice())(t), want, eqBits[T])
		}
		w.take()
		dst := free(t, must(nd.Empty[T](s, R, C))(t))
		if err := nd.WhereInto(dst, c.m.d, c.a.d, c.b.d); err != nil {
			t.Fatal(err)
		}
		w.expect(t, "WhereInto(dst, "+c.name+")", dst, c.m.d, c.a.d, c.b.d)
		check("WhereInto(dst, "+c.name+")", dst, contigHV(make([]T, R*C), R, C), make([]T, R*C), []int{R, C})
		// Into a flipped transposed view of a base of sentinels.
		base := newPA(t, s, func(int) T { return fromF[T](99) }, C, R)
		dv := base.tr().sl(t, 1, nd.None, nd.None, -1)
		w.take()
		if err := nd.WhereInto(dv.d, c.m.d, c.a.d, c.b.d); err != nil {
			t.Fatal(err)
		}
		w.expect(t, "WhereInto(dst.T()[:, ::-1], "+c.name+")", dv.d, c.m.d, c.a.d, c.b.d)
		check("WhereInto(dst.T()[:, ::-1], "+c.name+")", base.d, dv.h, base.h.data, []int{C, R})
	}
}

// advFused evaluates chains over k transposed arrays, k from 2 to 7
// (x0·x1, then max(· − x2, x0), · x3, max(· − x4, x0), ...), and a chain
// of operations over four staged arrays and a broadcast one. The values
// stay integers below 2^15, exact in float32 (the arithmetic type of the
// halves: a fused chain rounds once, at the store) and in int16: the
// reference computes in float64 and converts at the end.
func advFused[T nd.Elem](t *testing.T, s *cuda.Stream, w *tileWatch, R, C int) {
	var xs []pa[T]
	for j := range 7 {
		xs = append(xs, newPA(t, s, func(i int) T { return smallVal[T](i*(j+1) + j) }, C, R))
	}
	shape := []int{R, C}
	at := func(p pa[T], idx []int) float64 { return toF64(p.h.at(idx)) }
	for k := 2; k <= 7; k++ {
		x0 := xs[0].tr()
		e := nd.Lazy(x0.d)
		f := func(idx []int) float64 { return at(x0, idx) }
		for j := 1; j < k; j++ {
			xj := xs[j].tr()
			prev := f
			if j%2 == 1 {
				e = e.Mul(nd.Lazy(xj.d))
				f = func(idx []int) float64 { return prev(idx) * at(xj, idx) }
			} else {
				e = e.Sub(nd.Lazy(xj.d)).Maximum(nd.Lazy(x0.d))
				f = func(idx []int) float64 { return math.Max(prev(idx)-at(xj, idx), at(x0, idx)) }
			}
		}
		what := fmt.Sprintf("fused over %d transposed arrays", k)
		dst := free(t, must(nd.Empty[T](s, R, C))(t))
		w.take()
		if err := e.EvalInto(dst); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		var ins []shaped
		for j := range k {
			ins = append(ins, xs[j].tr().d)
		}
		w.expect(t, what, dst, ins...)
		want := make([]T, 0, R*C)
		eachIdx(shape, func(idx []int) { want = append(want, fromF[T](f(idx))) })
		checkElems(t, what, shape, must(dst.ToSlice())(t), want, eqVal[T])
	}
	// relu(x0.T·x1.T + x2[::-1].T) · row − x3.T, into a new array.
	row := newPA(t, s, smallVal2[T], C)
	x2f := xs[2].sl(t, 0, nd.None, nd.None, -1).tr()
	x0, x1, x3 := xs[0].tr(), xs[1].tr(), xs[3].tr()
	e := nd.Lazy(x0.d).Mul(nd.Lazy(x1.d)).Add(nd.Lazy(x2f.d)).Relu().Mul(nd.Lazy(row.d)).Sub(nd.Lazy(x3.d))
	w.take()
	got := free(t, must(e.Eval())(t))
	const what = "relu(x0.T·x1.T + x2[::-1].T)·row − x3.T"
	w.expect(t, what, got, x0.d, x1.d, x2f.d, row.d, x3.d)
	rowH := pa[T]{row.d, row.h.bcast(R, C)}
	want := make([]T, 0, R*C)
	eachIdx(shape, func(idx []int) {
		v := max(at(x0, idx)*at(x1, idx)+at(x2f, idx), 0)
		want = append(want, fromF[T](v*at(rowH, idx)-at(x3, idx)))
	})
	checkElems(t, what, shape, must(got.ToSlice())(t), want, eqVal[T])
}

// TestTileAdvCast: conversions between types through the tiled kernel:
// the staged input of one type, the output of another (halves both
// ways, floats to integers, Bool both ways, sign extension), into new
// arrays and into a transposed output.
func TestTileAdvCast(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	w := watchTiles(t)
	const R, C = 67, 45
	shape := []int{R, C}
	f32 := newPA(t, s, func(i int) float32 { return float32(math.Sin(float64(i))) * 1000 }, C, R)
	{
		w.take()
		got := free(t, must(nd.Cast[cuda.Float16](f32.d.T()))(t))
		w.expect(t, "Cast[float16](f32.T())", got, f32.d.T())
		// Cast of a transposed view keeps its memory order: compare by
		// index.
		want := make([]cuda.Float16, 0, R*C)
		ft := f32.h.transpose()
		eachIdx(shape, func(idx []int) { want = append(want, cuda.NewFloat16(ft.at(idx))) })
		checkElems(t, "Cast[float16](f32.T())", shape, must(got.ToSlice())(t), want, eqBits[cuda.Float16])
		dst := free(t, must(nd.Empty[cuda.BFloat16](s, R, C))(t))
		w.take()
		if err := nd.CastInto(dst, f32.d.T()); err != nil {
			t.Fatal(err)
		}
		w.expect(t, "CastInto(bf16 dst, f32.T())", dst, f32.d.T())
		wantB := make([]cuda.BFloat16, 0, R*C)
		eachIdx(shape, func(idx []int) { wantB = append(wantB, cuda.NewBFloat16(ft.at(idx))) })
		checkElems(t, "CastInto(bf16 dst, f32.T())", shape, must(dst.ToSlice())(t), wantB, eqBits[cuda.BFloat16])
	}
	{
		h := newPA(t, s, func(i int) cuda.Float16 { return cuda.NewFloat16(float32(i%300) - 150.5) }, C, R)
		dst := free(t, must(nd.Empty[float64](s, R, C))(t))
		w.take()
		if err := nd.CastInto(dst, h.d.T()); err != nil {
			t.Fatal(err)
		}
		w.expect(t, "CastInto(f64 dst, f16.T())", dst, h.d.T())
		want := make([]float64, 0, R*C)
		ht := h.h.transpose()
		eachIdx(shape, func(idx []int) { want = append(want, float64(ht.at(idx).Float32())) })
		checkElems(t, "CastInto(f64 dst, f16.T())", shape, must(dst.ToSlice())(t), want, eqBits[float64])
	}
	{
		f64 := newPA(t, s, func(i int) float64 { return float64(i%251) - 125.75 }, C, R)
		dst := free(t, must(nd.Empty[int8](s, R, C))(t))
		w.take()
		if err := nd.CastInto(dst, f64.d.T()); err != nil {
			t.Fatal(err)
		}
		w.expect(t, "CastInto(int8 dst, f64.T())", dst, f64.d.T())
		want := make([]int8, 0, R*C)
		ft := f64.h.transpose()
		eachIdx(shape, func(idx []int) { want = append(want, int8(ft.at(idx))) })
		checkElems(t, "CastInto(int8 dst, f64.T())", shape, must(dst.ToSlice())(t), want, eqBits[int8])
	}
	{
		i8 := newPA(t, s, func(i int) int8 { return int8(i*37 + 5) }, C, R)
		dst := free(t, must(nd.Empty[uint64](s, R, C))(t))
		w.take()
		if err := nd.CastInto(dst, i8.d.T()); err != nil {
			t.Fatal(err)
		}
		w.expect(t, "CastInto(uint64 dst, int8.T())", dst, i8.d.T())
		want := make([]uint64, 0, R*C)
		it := i8.h.transpose()
		eachIdx(shape, func(idx []int) { want = append(want, uint64(it.at(idx))) })
		checkElems(t, "CastInto(uint64 dst, int8.T())", shape, must(dst.ToSlice())(t), want, eqBits[uint64])
	}
	{
		i32 := newPA(t, s, func(i int) int32 { return int32(i%3) * int32(i%7-3) * 1000 }, C, R)
		m := free(t, must(nd.Empty[nd.Bool](s, R, C))(t))
		w.take()
		if err := nd.CastInto(m, i32.d.T()); err != nil {
			t.Fatal(err)
		}
		w.expect(t, "CastInto(Bool dst, int32.T())", m, i32.d.T())
		want := make([]nd.Bool, 0, R*C)
		it := i32.h.transpose()
		eachIdx(shape, func(idx []int) { want = append(want, b2B(it.at(idx) != 0)) })
		checkElems(t, "CastInto(Bool dst, int32.T())", shape, must(m.ToSlice())(t), want, eqBits[nd.Bool])
		// And back, a Bool of 7 being 1, into a transposed output.
		bm := newPA(t, s, func(i int) nd.Bool { return nd.Bool(i % 3 * 7 % 9) }, R, C)
		base := free(t, must(nd.Zeros[float32](s, C, R))(t))
		w.take()
		if err := nd.CastInto(base.T(), bm.d); err != nil {
			t.Fatal(err)
		}
		w.expect(t, "CastInto(f32 dst.T(), Bool)", base.T(), bm.d)
		wantF := make([]float32, 0, R*C)
		eachIdx([]int{C, R}, func(idx []int) {
			var v float32
			if bm.h.at([]int{idx[1], idx[0]}) != 0 {
				v = 1
			}
			wantF = append(wantF, v)
		})
		checkElems(t, "CastInto(f32 dst.T(), Bool)", []int{C, R}, must(base.ToSlice())(t), wantF, eqBits[float32])
	}
}

// TestTileAdvBatch: 3-d arrays in every permutation, flipped or offset
// along an axis, into row-major outputs and outputs permuted so that the
// output's run is the first, middle or last axis (the batch then first,
// middle or last), by CopyInto and AddInto beside a contiguous array.
func TestTileAdvBatch(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	w := watchTiles(t)
	for _, sh := range [][3]int{{3, 33, 65}, {5, 9, 40}, {2, 513, 17}} {
		t.Run(fmt.Sprintf("float32 %dx%dx%d", sh[0], sh[1], sh[2]), func(t *testing.T) { advBatch[float32](t, s, w, sh) })
	}
	t.Run("int8 4x31x66", func(t *testing.T) { advBatch[int8](t, s, w, [3]int{4, 31, 66}) })
	t.Run("float16 7x2x130", func(t *testing.T) { advBatch[cuda.Float16](t, s, w, [3]int{7, 2, 130}) })
}

var perms3 = [][]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}

func advBatch[T nd.Elem](t *testing.T, s *cuda.Stream, w *tileWatch, sh [3]int) {
	x := newPA(t, s, smallVal[T], sh[0], sh[1], sh[2])
	add := hostBin[T]("add")
	sentinel := fromF[T](99)
	xvs := []struct {
		name string
		v    pa[T]
	}{
		{"x", x},
		{"x[::-1]", x.sl(t, 0, nd.None, nd.None, -1)},
		{"x[:, 1:, ::-1]", x.sl(t, 1, 1, nd.None, 1).sl(t, 2, nd.None, nd.None, -1)},
	}
	for _, xv := range xvs {
		for _, p := range perms3 {
			in := xv.v.perm(t, p...)
			in.model(t, fmt.Sprintf("%s.Permute%v", xv.name, p))
			S := in.h.shape
			other := newPA(t, s, smallVal2[T], S...)
			for _, q := range [][]int{{0, 1, 2}, {0, 2, 1}, {2, 1, 0}, {1, 2, 0}} {
				// dst = base.Permute(q) of shape S: base's axis q[i] is S[i].
				bshape := make([]int, 3)
				for i, a := range q {
					bshape[a] = S[i]
				}
				bshape[0]++ // a row of sentinels past the view
				for _, op := range []string{"copy", "add"} {
					what := fmt.Sprintf("%s %s.Permute%v into base[1:].Permute%v", op, xv.name, p, q)
					base := newPA(t, s, func(int) T { return sentinel }, bshape...)
					dv := base.sl(t, 0, 1, nd.None, 1).perm(t, q...)
					w.take()
					var err error
					var ins []shaped
					if op == "copy" {
						err = nd.CopyInto(dv.d, in.d)
						ins = []shaped{in.d}
					} else {
						err = nd.AddInto(dv.d, other.d, in.d)
						ins = []shaped{other.d, in.d}
					}
					if err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					w.expect(t, what, dv.d, ins...)
					want := slices.Clone(base.h.data)
					eachIdx(S, func(idx []int) {
						v := in.h.at(idx)
						if op == "add" {
							v = add(other.h.at(idx), v)
						}
						want[dv.h.pos(idx)] = v
					})
					checkElems(t, what+" (dst's base)", bshape, must(base.d.ToSlice())(t), want, eqVal[T])
				}
			}
		}
	}
}

// TestTileAdvGridMax: grids of at most 1, 2 and 3 blocks along the
// tiles of rows and the batch, whose blocks loop over the rest: shapes
// of many tiles of rows (thin and square tiles) and batches of several
// times the grid. Each shape is new to the process at its setting (a
// plan, once made, keeps the grid it was made with).
func TestTileAdvGridMax(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	w := watchTiles(t)
	for _, most := range []int{1, 2, 3} {
		t.Run(fmt.Sprint("grid ", most), func(t *testing.T) {
			defer nd.SetTileGridMax(most)()
			m := most
			for _, sh := range [][2]int{{97 + m, 70}, {1025 + m, 9}, {3, 2000 + m}, {300 + m, 3}} {
				R, C := sh[0], sh[1]
				x := newPA(t, s, bitsVal[float32], C, R)
				w.take()
				got := free(t, must(x.d.T().Copy())(t))
				w.expect(t, fmt.Sprintf("%dx%d copy", R, C), got, x.d.T())
				checkElems(t, fmt.Sprintf("%dx%d copy", R, C), []int{R, C}, must(got.ToSlice())(t), x.h.transpose().elems(), eqBits[float32])
			}
			for _, sh := range [][3]int{{5 + m, 40, 33}, {7 + 2*m, 65, 3}} {
				x := newPA(t, s, smallVal[int32], sh[0], sh[1], sh[2])
				for _, p := range [][]int{{0, 2, 1}, {2, 0, 1}, {1, 2, 0}} {
					v := x.perm(t, p...)
					other := newPA(t, s, smallVal2[int32], v.h.shape...)
					dst := free(t, must(nd.Empty[int32](s, v.h.shape...))(t))
					what := fmt.Sprintf("%v.Permute%v + other", sh, p)
					w.take()
					if err := nd.AddInto(dst, v.d, other.d); err != nil {
						t.Fatal(err)
					}
					w.expect(t, what, dst, v.d, other.d)
					want := make([]int32, 0, sizeOfShape(v.h.shape))
					eachIdx(v.h.shape, func(idx []int) { want = append(want, v.h.at(idx)+other.h.at(idx)) })
					checkElems(t, what, v.h.shape, must(dst.ToSlice())(t), want, eqBits[int32])
				}
			}
		})
	}
}

// TestTileAdvInPlace: outputs that are inputs: a square transposed in
// place (the input overlaps the output: read from a copy), an input
// the output itself element for element beside a staged one, a
// transposed output over its own transposed input.
func TestTileAdvInPlace(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	w := watchTiles(t)
	for _, n := range []int{33, 64, 65} {
		x := newPA(t, s, bitsVal[float64], n, n)
		want := x.h.transpose().elems()
		w.take()
		if err := nd.CopyInto(x.d, x.d.T()); err != nil {
			t.Fatal(err)
		}
		w.expectSome(t, fmt.Sprintf("CopyInto(x, x.T()) %d", n))
		checkElems(t, fmt.Sprintf("CopyInto(x, x.T()) %d", n), []int{n, n}, must(x.d.ToSlice())(t), want, eqBits[float64])

		a := newPA(t, s, smallVal[int32], n, n)
		b := newPA(t, s, smallVal2[int32], n, n)
		wantA := make([]int32, 0, n*n)
		bt := b.h.transpose()
		eachIdx([]int{n, n}, func(idx []int) { wantA = append(wantA, a.h.at(idx)+bt.at(idx)) })
		w.take()
		if err := nd.AddInto(a.d, a.d, b.d.T()); err != nil {
			t.Fatal(err)
		}
		w.expect(t, "AddInto(a, a, b.T())", a.d, a.d, b.d.T())
		checkElems(t, fmt.Sprintf("AddInto(a, a, b.T()) %d", n), []int{n, n}, must(a.d.ToSlice())(t), wantA, eqBits[int32])

		// a.T() = a.T() - b: out and its first input the same layout, b
		// staged.
		cur := must(a.d.ToSlice())(t)
		wantS := make([]int32, 0, n*n)
		eachIdx([]int{n, n}, func(idx []int) { wantS = append(wantS, cur[idx[0]*n+idx[1]]-b.h.at([]int{idx[1], idx[0]})) })
		w.take()
		if err := nd.SubInto(a.d.T(), a.d.T(), b.d); err != nil {
			t.Fatal(err)
		}
		w.expect(t, "SubInto(a.T(), a.T(), b)", a.d.T(), a.d.T(), b.d)
		checkElems(t, fmt.Sprintf("SubInto(a.T(), a.T(), b) %d", n), []int{n, n}, must(a.d.ToSlice())(t), wantS, eqBits[int32])

		// A shifted transposed overlap: a[:-1, :-1] = a[1:, 1:].T().
		cur = must(a.d.ToSlice())(t)
		wantO := slices.Clone(cur)
		for i := range n - 1 {
			for j := range n - 1 {
				wantO[i*n+j] = cur[(j+1)*n+i+1]
			}
		}
		dst := must(must(a.d.Slice(0, 0, -1, 1))(t).Slice(1, 0, -1, 1))(t)
		src := must(must(a.d.Slice(0, 1, nd.None, 1))(t).Slice(1, 1, nd.None, 1))(t).T()
		w.take()
		if err := nd.CopyInto(dst, src); err != nil {
			t.Fatal(err)
		}
		w.expectSome(t, "a[:-1, :-1] = a[1:, 1:].T()")
		checkElems(t, fmt.Sprintf("a[:-1, :-1] = a[1:, 1:].T() %d", n), []int{n, n}, must(a.d.ToSlice())(t), wantO, eqBits[int32])
	}
}

// TestTileAdvTranscendental: functions of floats of every float type
// through the tiled kernel, of flipped and offset transposed views, into
// new arrays and transposed outputs, within tolerances of float64's.
func TestTileAdvTranscendental(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	w := watchTiles(t)
	t.Run("float32", func(t *testing.T) { advMath[float32](t, s, w, 1e-5) })
	t.Run("float64", func(t *testing.T) { advMath[float64](t, s, w, 1e-12) })
	t.Run("float16", func(t *testing.T) { advMath[cuda.Float16](t, s, w, 2e-3) })
	t.Run("bfloat16", func(t *testing.T) { advMath[cuda.BFloat16](t, s, w, 1.6e-2) })
}

func advMath[T interface {
	nd.Elem
	cuda.AnyFloat
}](t *testing.T, s *cuda.Stream, w *tileWatch, rel float64) {
	fns := []struct {
		name string
		dev  func(dst, a *nd.Array[T]) error
		f    func(float64) float64
	}{
		{"Exp", nd.ExpInto[T], math.Exp},
		{"Tanh", nd.TanhInto[T], math.Tanh},
		{"Sigmoid", nd.SigmoidInto[T], func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }},
		{"Gelu", nd.GeluInto[T], func(x float64) float64 { return x * 0.5 * (1 + math.Erf(x/math.Sqrt2)) }},
		{"Sqrt", nd.SqrtInto[T], func(x float64) float64 { return math.Sqrt(math.Abs(x)) }},
		{"Sin", nd.SinInto[T], math.Sin},
	}
	for _, sh := range [][2]int{{17, 130}, {1025, 3}, {64, 64}} {
		R, C := sh[0], sh[1]
		x := newPA(t, s, func(i int) T { return fromF[T](math.Sin(float64(i)*0.37) * 4) }, C+1, R)
		ax := newPA(t, s, func(i int) T { return fromF[T](math.Abs(math.Sin(float64(i)*0.37) * 4)) }, C+1, R)
		for _, fn := range fns {
			src := x
			if fn.name == "Sqrt" {
				src = ax
			}
			v := src.sl(t, 0, 1, nd.None, 1).sl(t, 1, nd.None, nd.None, -1).tr() // R×C
			for _, into := range []string{"dst", "dst.T()"} {
				what := fmt.Sprintf("%s %dx%d into %s", fn.name, R, C, into)
				var base pa[T]
				var dv pa[T]
				if into == "dst" {
					base = newPA(t, s, func(int) T { return fromF[T](0) }, R, C)
					dv = base
				} else {
					base = newPA(t, s, func(int) T { return fromF[T](0) }, C, R)
					dv = base.tr()
				}
				w.take()
				if err := fn.dev(dv.d, v.d); err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				w.expect(t, what, dv.d, v.d)
				want := make([]T, len(base.h.data))
				eachIdx([]int{R, C}, func(idx []int) { want[dv.h.pos(idx)] = fromF[T](fn.f(toF64(v.h.at(idx)))) })
				checkElems(t, what, base.h.shape, must(base.d.ToSlice())(t), want, func(g, e T) bool {
					gf, ef := toF64(g), toF64(e)
					return math.Abs(gf-ef) <= rel*math.Max(math.Abs(ef), 1)
				})
			}
		}
	}
}

// TestTileAdvNewArrayOrder: operations into new arrays, whose layout
// follows the first operand of the result's shape (order K): a
// transposed first operand makes a transposed result, the contiguous
// second operand then staged; a flipped transposed first operand, a
// broadcast first operand.
func TestTileAdvNewArrayOrder(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	w := watchTiles(t)
	for _, sh := range [][2]int{{33, 65}, {1024, 9}, {2, 1025}} {
		R, C := sh[0], sh[1]
		x := newPA(t, s, smallVal[int32], C, R)
		y := newPA(t, s, smallVal2[int32], R, C)
		row := newPA(t, s, smallVal2[int32], C)
		cases := []struct {
			name string
			a, b pa[int32]
		}{
			{"x.T() * y", x.tr(), y},
			{"x[::-1, ::-1].T() * y", x.sl(t, 0, nd.None, nd.None, -1).sl(t, 1, nd.None, nd.None, -1).tr(), y},
			{"y * x.T()", y, x.tr()},
			{"row * x.T()", pa[int32]{row.d, row.h.bcast(R, C)}, x.tr()},
		}
		for _, c := range cases {
			what := fmt.Sprintf("%s %dx%d", c.name, R, C)
			w.take()
			got := free(t, must(nd.Mul(c.a.d, c.b.d))(t))
			w.expect(t, what, got, c.a.d, c.b.d)
			want := make([]int32, 0, R*C)
			eachIdx([]int{R, C}, func(idx []int) { want = append(want, c.a.h.at(idx)*c.b.h.at(idx)) })
			checkElems(t, what, []int{R, C}, must(got.ToSlice())(t), want, eqBits[int32])
		}
	}
}

// TestTileAdvExprs: expressions of other shapes through the tiled
// kernel, each of a staged input beside a contiguous one or alone: Div
// (integers' zero and -1 divisors), integer Pow's statements, Minimum
// and Maximum with NaNs, Neg, Abs, Sign, Relu, Floor, Round, IsNaN of
// halves' NaNs; and Clip (its bounds Scalars: never tiled) and Diff
// (two views of one array at different offsets).
func TestTileAdvExprs(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	w := watchTiles(t)
	const R, C = 45, 67
	shape := []int{R, C}
	t.Run("int32", func(t *testing.T) {
		x := newPA(t, s, func(i int) int32 { return int32(i*7%23 - 11) }, C, R)
		y := newPA(t, s, func(i int) int32 { return int32(i%5 - 2) }, R, C) // 0 and -1 among the divisors
		e := newPA(t, s, func(i int) int32 { return int32(i%6 - 1) }, R, C) // exponents -1..4
		xt := x.tr()
		bin := func(name string, dev func(dst, a, b *nd.Array[int32]) error, a, b pa[int32], f func(p, q int32) int32) {
			t.Helper()
			dst := free(t, must(nd.Empty[int32](s, R, C))(t))
			w.take()
			if err := dev(dst, a.d, b.d); err != nil {
				t.Fatal(err)
			}
			w.expect(t, name, dst, a.d, b.d)
			want := make([]int32, 0, R*C)
			eachIdx(shape, func(idx []int) { want = append(want, f(a.h.at(idx), b.h.at(idx))) })
			checkElems(t, name, shape, must(dst.ToSlice())(t), want, eqBits[int32])
		}
		bin("DivInto(x.T(), y)", nd.DivInto[int32], xt, y, func(p, q int32) int32 {
			switch q {
			case 0:
				return 0
			case -1:
				return -p
			}
			return p / q
		})
		bin("PowInto(x.T(), e)", nd.PowInto[int32], xt, e, func(p, q int32) int32 {
			if q < 0 {
				switch p {
				case 1:
					return 1
				case -1:
					if q&1 != 0 {
						return -1
					}
					return 1
				}
				return 0
			}
			r := int32(1)
			for range q {
				r *= p
			}
			return r
		})
		bin("MinimumInto(y, x.T())", nd.MinimumInto[int32], y, xt, func(p, q int32) int32 { return min(p, q) })
		un := func(name string, dev func(dst, a *nd.Array[int32]) error, f func(p int32) int32) {
			t.Helper()
			dst := free(t, must(nd.Empty[int32](s, R, C))(t))
			w.take()
			if err := dev(dst, xt.d); err != nil {
				t.Fatal(err)
			}
			w.expect(t, name, dst, xt.d)
			want := make([]int32, 0, R*C)
			eachIdx(shape, func(idx []int) { want = append(want, f(xt.h.at(idx))) })
			checkElems(t, name, shape, must(dst.ToSlice())(t), want, eqBits[int32])
		}
		un("NegInto(x.T())", nd.NegInto[int32], func(p int32) int32 { return -p })
		un("AbsInto(x.T())", nd.AbsInto[int32], func(p int32) int32 { return max(p, -p) })
		un("SignInto(x.T())", nd.SignInto[int32], func(p int32) int32 {
			switch {
			case p > 0:
				return 1
			case p < 0:
				return -1
			}
			return 0
		})
		un("ReluInto(x.T())", nd.ReluInto[int32], func(p int32) int32 { return max(p, 0) })
		// Clip: its bounds are Scalars, and the tiled kernel takes none.
		w.take()
		c := free(t, must(nd.Clip(xt.d, -3, 5))(t))
		if got := w.take(); len(got) != 0 {
			t.Errorf("Clip(x.T()): tiled %v with Scalar operands", got)
		}
		want := make([]int32, 0, R*C)
		eachIdx(shape, func(idx []int) { want = append(want, min(max(xt.h.at(idx), -3), 5)) })
		checkElems(t, "Clip(x.T())", shape, must(c.ToSlice())(t), want, eqBits[int32])
		// Diff along each axis of a transposed view: x.T()[1:] - x.T()[:-1].
		for axis := range 2 {
			what := fmt.Sprintf("Diff(x.T(), %d)", axis)
			hi, lo := xt.sl(t, axis, 1, nd.None, 1), xt.sl(t, axis, 0, -1, 1)
			w.take()
			d := free(t, must(nd.Diff(xt.d, axis))(t))
			w.expect(t, what, d, hi.d, lo.d)
			want := make([]int32, 0, sizeOfShape(hi.h.shape))
			eachIdx(hi.h.shape, func(idx []int) { want = append(want, hi.h.at(idx)-lo.h.at(idx)) })
			checkElems(t, what, hi.h.shape, must(d.ToSlice())(t), want, eqBits[int32])
		}
	})
	t.Run("float32 NaNs", func(t *testing.T) {
		nan := float32(math.NaN())
		x := newPA(t, s, func(i int) float32 {
			switch i % 7 {
			case 0:
				return nan
			case 3:
				return float32(math.Inf(-1))
			}
			return float32(i%13) - 6.5
		}, C, R)
		y := newPA(t, s, func(i int) float32 {
			if i%5 == 1 {
				return nan
			}
			return float32(i%11) - 5.25
		}, R, C)
		xt := x.tr()
		isNaN := func(v float32) bool { return v != v }
		eq := func(a, b float32) bool { return a == b || isNaN(a) && isNaN(b) }
		for _, c := range []struct {
			name string
			dev  func(dst, a, b *nd.Array[float32]) error
			f    func(a, b float32) float32
		}{
			{"MaximumInto(x.T(), y)", nd.MaximumInto[float32], func(a, b float32) float32 {
				if isNaN(a) || a > b {
					return a
				}
				return b
			}},
			{"MinimumInto(x.T(), y)", nd.MinimumInto[float32], func(a, b float32) float32 {
				if isNaN(a) || a < b {
					return a
				}
				return b
			}},
			{"DivInto(x.T(), y)", nd.DivInto[float32], func(a, b float32) float32 { return a / b }},
		} {
			dst := free(t, must(nd.Empty[float32](s, R, C))(t))
			w.take()
			if err := c.dev(dst, xt.d, y.d); err != nil {
				t.Fatal(err)
			}
			w.expect(t, c.name, dst, xt.d, y.d)
			want := make([]float32, 0, R*C)
			eachIdx(shape, func(idx []int) { want = append(want, c.f(xt.h.at(idx), y.h.at(idx))) })
			checkElems(t, c.name, shape, must(dst.ToSlice())(t), want, eq)
		}
		for _, c := range []struct {
			name string
			dev  func(dst, a *nd.Array[float32]) error
			f    func(a float32) float32
		}{
			{"FloorInto(x.T())", nd.FloorInto[float32], func(a float32) float32 { return float32(math.Floor(float64(a))) }},
			{"RoundInto(x.T())", nd.RoundInto[float32], func(a float32) float32 { return float32(math.RoundToEven(float64(a))) }},
			{"ReluInto(x.T())", nd.ReluInto[float32], func(a float32) float32 {
				if a > 0 || isNaN(a) {
					return a
				}
				return 0
			}},
			{"SignInto(x.T())", nd.SignInto[float32], func(a float32) float32 {
				switch {
				case a > 0:
					return 1
				case a < 0:
					return -1
				}
				return a
			}},
		} {
			dst := free(t, must(nd.Empty[float32](s, R, C))(t))
			w.take()
			if err := c.dev(dst, xt.d); err != nil {
				t.Fatal(err)
			}
			w.expect(t, c.name, dst, xt.d)
			want := make([]float32, 0, R*C)
			eachIdx(shape, func(idx []int) { want = append(want, c.f(xt.h.at(idx))) })
			checkElems(t, c.name, shape, must(dst.ToSlice())(t), want, eq)
		}
	})
	t.Run("float16 IsNaN", func(t *testing.T) {
		x := newPA(t, s, bitsVal[cuda.Float16], C, R)
		xt := x.sl(t, 1, nd.None, nd.None, -1).tr()
		m := free(t, must(nd.Empty[nd.Bool](s, R, C))(t))
		w.take()
		if err := nd.IsNaNInto(m, xt.d); err != nil {
			t.Fatal(err)
		}
		w.expect(t, "IsNaNInto(m, x[:, ::-1].T())", m, xt.d)
		want := make([]nd.Bool, 0, R*C)
		eachIdx(shape, func(idx []int) { v := xt.h.at(idx).Float32(); want = append(want, b2B(v != v)) })
		checkElems(t, "IsNaNInto(m, x[:, ::-1].T())", shape, must(m.ToSlice())(t), want, eqBits[nd.Bool])
	})
}

// TestTileAdvPlanReuse: one pattern (shape, strides, types) at several
// offsets in a row, so that the later calls reuse the first's plan and
// tiled kernel with their own offsets; a Reshape of a transposed view
// (a copy through the tiled kernel); a staged input broadcast along a
// batch.
func TestTileAdvPlanReuse(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	w := watchTiles(t)
	const R, C = 35, 50
	x := newPA(t, s, bitsVal[uint16], C+4, R+3)
	for off := range 4 {
		v := x.sl(t, 0, off, off+C, 1).sl(t, 1, 3-off%4, 3-off%4+R, 1).tr()
		dst := free(t, must(nd.Empty[uint16](s, R, C))(t))
		what := fmt.Sprintf("CopyInto(dst, x[%d:%d, %d:].T())", off, off+C, 3-off%4)
		w.take()
		if err := nd.CopyInto(dst, v.d); err != nil {
			t.Fatal(err)
		}
		w.expect(t, what, dst, v.d)
		checkElems(t, what, []int{R, C}, must(dst.ToSlice())(t), v.h.elems(), eqBits[uint16])
	}
	w.take()
	r := free(t, must(x.d.T().Reshape(-1))(t))
	if len(w.take()) == 0 {
		t.Error("x.T().Reshape(-1): the tiled kernel did not run")
	}
	checkElems(t, "x.T().Reshape(-1)", []int{(C + 4) * (R + 3)}, must(r.ToSlice())(t), x.h.transpose().elems(), eqBits[uint16])

	// A 3-d batch plus a transposed matrix broadcast along the batch: the
	// staged input's batch stride 0.
	const B = 5
	b3 := newPA(t, s, smallVal[float32], B, R, C)
	m := newPA(t, s, smallVal2[float32], C, R)
	mt := pa[float32]{m.d.T(), m.h.transpose().bcast(B, R, C)}
	dst := free(t, must(nd.Empty[float32](s, B, R, C))(t))
	w.take()
	if err := nd.AddInto(dst, b3.d, mt.d); err != nil {
		t.Fatal(err)
	}
	w.expect(t, "AddInto(dst, b3, m.T() broadcast along the batch)", dst, b3.d, mt.d)
	want := make([]float32, 0, B*R*C)
	eachIdx([]int{B, R, C}, func(idx []int) { want = append(want, b3.h.at(idx)+mt.h.at(idx)) })
	checkElems(t, "AddInto(dst, b3, m.T() broadcast along the batch)", []int{B, R, C}, must(dst.ToSlice())(t), want, eqVal[float32])
	// And along the middle axis: m.T()[:, None, :] against a (R, B, C) array.
	b3m := newPA(t, s, smallVal[float32], R, B, C)
	mm := pa[float32]{must(m.d.T().Unsqueeze(1))(t), hv[float32]{}}
	mm.h = m.h.transpose()
	mm.h = hv[float32]{data: mm.h.data, shape: []int{R, B, C}, strides: []int{mm.h.strides[0], 0, mm.h.strides[1]}, off: mm.h.off}
	dst2 := free(t, must(nd.Empty[float32](s, R, B, C))(t))
	w.take()
	if err := nd.AddInto(dst2, b3m.d, mm.d); err != nil {
		t.Fatal(err)
	}
	w.expect(t, "AddInto(dst, b3m, m.T()[:, None, :])", dst2, b3m.d, mm.d)
	want = want[:0]
	eachIdx([]int{R, B, C}, func(idx []int) { want = append(want, b3m.h.at(idx)+mm.h.at(idx)) })
	checkElems(t, "AddInto(dst, b3m, m.T()[:, None, :])", []int{R, B, C}, must(dst2.ToSlice())(t), want, eqVal[float32])
}
