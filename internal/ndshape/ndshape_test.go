package ndshape

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

func mustNew(t *testing.T, shape, strides []int, offset int) Layout {
	t.Helper()
	l, err := New(shape, strides, offset)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func mustContig(t *testing.T, shape ...int) Layout {
	t.Helper()
	l, err := Contiguous(shape)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func offsets(l Layout) []int { return l.AppendOffsets([]int{}) }

func seq(lo, n, step int) []int {
	s := []int{}
	for i := range n {
		s = append(s, lo+i*step)
	}
	return s
}

func isShapeErr(t *testing.T, err error, words ...string) {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	if !errors.Is(err, ErrShape) {
		t.Fatalf("%v does not wrap ErrShape", err)
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("%v is not an *Error", err)
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q does not say %q", err, w)
		}
	}
}

func TestContiguous(t *testing.T) {
	for _, tc := range []struct {
		shape, strides []int
		size           int
	}{
		{[]int{}, []int{}, 1},
		{[]int{5}, []int{1}, 5},
		{[]int{2, 3, 4}, []int{12, 4, 1}, 24},
		{[]int{2, 0, 4}, []int{4, 4, 1}, 0},
		{[]int{1, 1}, []int{1, 1}, 1},
	} {
		l := mustContig(t, tc.shape...)
		if !slices.Equal(l.Strides(), tc.strides) || l.Size() != tc.size || !l.IsContiguous() || l.Offset() != 0 {
			t.Errorf("Contiguous(%v) = %v size %d", tc.shape, l, l.Size())
		}
	}
	var zero Layout
	if zero.Size() != 1 || zero.Ndim() != 0 || !zero.IsContiguous() || !slices.Equal(offsets(zero), []int{0}) {
		t.Errorf("zero Layout: %v", zero)
	}
	if _, err := Contiguous([]int{2, -1}); err == nil {
		t.Error("negative dim accepted")
	} else {
		isShapeErr(t, err, "[2 -1]")
	}
	if _, err := Contiguous([]int{math.MaxInt / 2, 3}); err == nil {
		t.Error("overflowing size accepted")
	}
	if _, err := Contiguous([]int{0, math.MaxInt / 2, 3}); err == nil {
		t.Error("overflowing size (with a 0) accepted")
	}
}

func TestNewChecks(t *testing.T) {
	if _, err := New([]int{2}, []int{1, 1}, 0); err == nil {
		t.Error("length mismatch accepted")
	}
	if _, err := New([]int{3}, []int{math.MaxInt/2 + 1}, 0); err == nil {
		t.Error("overflowing extent accepted")
	}
	if _, err := New([]int{2}, []int{-1}, math.MinInt); err == nil {
		t.Error("underflowing extent accepted")
	}
	if _, err := New([]int{2}, []int{math.MaxInt}, 0); err != nil {
		t.Error(err)
	}
	// No aliasing of the caller's slices.
	sh, st := []int{2, 3}, []int{3, 1}
	l := mustNew(t, sh, st, 0)
	sh[0], st[0] = 9, 9
	got := l.Shape()
	got[1] = 7
	if !slices.Equal(l.Shape(), []int{2, 3}) || !slices.Equal(l.Strides(), []int{3, 1}) {
		t.Errorf("aliased: %v", l)
	}
}

func TestIsContiguous(t *testing.T) {
	for _, tc := range []struct {
		shape, strides []int
		want           bool
	}{
		{[]int{2, 3}, []int{3, 1}, true},
		{[]int{2, 3}, []int{1, 2}, false},
		{[]int{2, 1, 3}, []int{3, 99, 1}, true},
		{[]int{2, 3}, []int{0, 1}, false},
		{[]int{0, 3}, []int{7, 7}, true},
		{[]int{1}, []int{-5}, true},
		{[]int{3}, []int{-1}, false},
	} {
		if got := mustNew(t, tc.shape, tc.strides, 4).IsContiguous(); got != tc.want {
			t.Errorf("%v %v: %v", tc.shape, tc.strides, got)
		}
	}
}

func TestRepeats(t *testing.T) {
	for _, tc := range []struct {
		shape, strides []int
		want           bool
	}{
		{[]int{2, 3}, []int{3, 1}, false},
		{[]int{2, 3}, []int{0, 1}, true},
		{[]int{2, 3}, []int{1, 0}, true},
		{[]int{1, 3}, []int{0, 1}, false}, // one index on the stride-0 axis
		{[]int{0, 3}, []int{0, 0}, false}, // no element at all
		{[]int{3}, []int{-1}, false},
		{nil, nil, false},
	} {
		if got := mustNew(t, tc.shape, tc.strides, 4).Repeats(); got != tc.want {
			t.Errorf("%v %v: %v, want %v", tc.shape, tc.strides, got, tc.want)
		}
	}
}

func TestSpanAt(t *testing.T) {
	l := mustNew(t, []int{2, 3}, []int{-3, 2}, 10)
	if lo, hi := l.Span(); lo != 7 || hi != 14 {
		t.Errorf("span %d %d", lo, hi)
	}
	if !l.Fits(15) || l.Fits(14) {
		t.Error("Fits")
	}
	if o, err := l.At(1, 2); err != nil || o != 11 {
		t.Errorf("At(1,2) = %d %v", o, err)
	}
	if o, err := l.At(-1, -3); err != nil || o != 7 {
		t.Errorf("At(-1,-3) = %d %v", o, err)
	}
	for _, idx := range [][]int{{2, 0}, {0, 3}, {-3, 0}, {0}, {0, 0, 0}} {
		if _, err := l.At(idx...); err == nil {
			t.Errorf("At(%v) accepted", idx)
		}
	}
	z := mustNew(t, []int{3, 0}, []int{1, 1}, -50)
	if lo, hi := z.Span(); lo != 0 || hi != -1 || !z.Fits(0) {
		t.Errorf("size-0 span %d %d", lo, hi)
	}
	var s Layout
	if o, err := s.At(); err != nil || o != 0 {
		t.Errorf("0-d At() = %d %v", o, err)
	}
}

func TestReshape(t *testing.T) {
	for _, tc := range []struct {
		name           string
		shape, strides []int
		to             []int
		ok             bool
		want           []int // strides of the view
	}{
		{"contiguous", []int{2, 3}, []int{3, 1}, []int{3, 2}, true, []int{2, 1}},
		{"infer", []int{2, 3, 4}, []int{12, 4, 1}, []int{-1, 4}, true, []int{4, 1}},
		{"to 0-d", []int{1, 1}, []int{5, 9}, []int{}, true, []int{}},
		{"transposed flatten", []int{3, 2}, []int{1, 3}, []int{6}, false, nil},
		{"transposed split", []int{4, 6}, []int{1, 4}, []int{2, 2, 6}, true, []int{2, 1, 4}},
		{"sliced rows merge", []int{2, 3}, []int{6, 1}, []int{6}, false, nil},
		{"sliced keep rows", []int{2, 4}, []int{8, 1}, []int{2, 2, 2}, true, []int{8, 2, 1}},
		{"negative stride", []int{4}, []int{-1}, []int{2, 2}, true, []int{-2, -1}},
		{"broadcast merge", []int{3, 2}, []int{0, 0}, []int{6}, true, []int{0}},
		{"broadcast split", []int{3, 2}, []int{0, 1}, []int{3, 1, 2}, true, []int{0, 2, 1}},
		{"size 0", []int{0, 3}, []int{1, 5}, []int{3, 0, 2}, true, nil},
	} {
		l := mustNew(t, tc.shape, tc.strides, 0)
		v, ok, err := l.Reshape(tc.to)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if ok != tc.ok {
			t.Errorf("%s: ok %v", tc.name, ok)
			continue
		}
		if !ok {
			continue
		}
		if tc.want != nil && l.Size() != 0 && !slices.Equal(v.Strides(), tc.want) {
			t.Errorf("%s: strides %v, want %v", tc.name, v.Strides(), tc.want)
		}
		if !slices.Equal(offsets(v), offsets(l)) {
			t.Errorf("%s: order %v, want %v", tc.name, offsets(v), offsets(l))
		}
	}
	l := mustContig(t, 2, 3)
	for _, to := range [][]int{{4}, {-1, -1}, {-2, 3}, {-1, 4}, {math.MaxInt, 2}} {
		_, _, err := l.Reshape(to)
		isShapeErr(t, err, "[2 3]")
	}
	_, _, err := mustContig(t, 0, 3).Reshape([]int{-1, 0})
	isShapeErr(t, err, "[-1 0]")
	v, ok, err := mustContig(t, 0, 3).Reshape([]int{-1, 3, 5})
	if err != nil || !ok || !slices.Equal(v.Shape(), []int{0, 3, 5}) {
		t.Errorf("size-0 infer: %v %v %v", v, ok, err)
	}
	_, _, err = l.Reshape([]int{4})
	isShapeErr(t, err, "[2 3]", "[4]")
}

func TestPermuteTranspose(t *testing.T) {
	l := mustContig(t, 2, 3, 4)
	p, err := l.Permute(2, 0, -2)
	if err != nil || !slices.Equal(p.Shape(), []int{4, 2, 3}) || !slices.Equal(p.Strides(), []int{1, 12, 4}) {
		t.Errorf("Permute = %v %v", p, err)
	}
	tr := l.Transpose()
	if !slices.Equal(tr.Shape(), []int{4, 3, 2}) || !slices.Equal(tr.Strides(), []int{1, 4, 12}) {
		t.Errorf("Transpose = %v", tr)
	}
	if !slices.Equal(l.Shape(), []int{2, 3, 4}) {
		t.Error("Transpose changed its receiver")
	}
	for _, axes := range [][]int{{0, 1}, {0, 0, 1}, {0, 1, 3}, {0, 1, -4}} {
		_, err := l.Permute(axes...)
		isShapeErr(t, err, "[2 3 4]")
	}
}

func TestSliceIndices(t *testing.T) {
	for _, tc := range []struct {
		n, start, stop, step int
		first, count         int
	}{
		{5, 0, 5, 1, 0, 5},
		{5, 1, 4, 2, 1, 2},
		{5, -2, None, 1, 3, 2},
		{5, None, None, -1, 4, 5},
		{5, 10, -10, -1, 4, 5},
		{5, -10, 10, 1, 0, 5},
		{5, 3, 1, 1, 3, 0},
		{5, 1, 3, -1, 1, 0},
		{5, None, None, 3, 0, 2},
		{5, None, 0, -2, 4, 2},
		{0, None, None, -1, -1, 0},
		{5, math.MinInt + 1, math.MaxInt, math.MaxInt, 0, 1},
		{5, math.MaxInt, math.MinInt + 1, math.MinInt, 4, 1},
		{5, -1, math.MinInt + 1, -1, 4, 5},
	} {
		first, count, err := SliceIndices(tc.n, tc.start, tc.stop, tc.step)
		if err != nil || count != tc.count || (count > 0 && first != tc.first) {
			t.Errorf("SliceIndices(%d, %d, %d, %d) = %d, %d, %v; want %d, %d",
				tc.n, tc.start, tc.stop, tc.step, first, count, err, tc.first, tc.count)
		}
	}
	if _, _, err := SliceIndices(5, 0, 5, 0); err == nil {
		t.Error("step 0 accepted")
	}
}

func TestSlice(t *testing.T) {
	l := mustContig(t, 3, 4)
	v, err := l.Slice(1, None, None, -2)
	if err != nil || !slices.Equal(offsets(v), []int{3, 1, 7, 5, 11, 9}) {
		t.Errorf("[:, ::-2] = %v %v", offsets(v), err)
	}
	v, err = l.Slice(-2, 1, None, 1)
	if err != nil || !slices.Equal(offsets(v), seq(4, 8, 1)) {
		t.Errorf("[1:] = %v %v", offsets(v), err)
	}
	v, err = l.Slice(0, 5, 9, 1)
	if err != nil || v.Size() != 0 || !slices.Equal(v.Shape(), []int{0, 4}) {
		t.Errorf("[5:9] = %v %v", v, err)
	}
	if _, err := l.Slice(2, 0, 1, 1); err == nil {
		t.Error("axis 2 accepted")
	} else {
		isShapeErr(t, err, "[3 4]")
	}
	if _, err := l.Slice(0, 0, 1, 0); err == nil {
		t.Error("step 0 accepted")
	}
	var s Layout
	if _, err := s.Slice(0, 0, 1, 1); err == nil {
		t.Error("slice of 0-d accepted")
	}
}

func TestIndex(t *testing.T) {
	l := mustContig(t, 3, 4)
	v, err := l.Index(0, -1)
	if err != nil || !slices.Equal(offsets(v), seq(8, 4, 1)) || v.Ndim() != 1 {
		t.Errorf("[-1] = %v %v", v, err)
	}
	v, err = v.Index(0, 2)
	if err != nil || v.Ndim() != 0 || !slices.Equal(offsets(v), []int{10}) {
		t.Errorf("[-1][2] = %v %v", v, err)
	}
	for _, c := range [][2]int{{0, 3}, {0, -4}, {2, 0}, {-3, 0}} {
		_, err := l.Index(c[0], c[1])
		isShapeErr(t, err, "[3 4]")
	}
	if _, err := mustContig(t, 0).Index(0, 0); err == nil {
		t.Error("index into size 0 accepted")
	}
}

func TestBroadcastTo(t *testing.T) {
	l := mustNew(t, []int{3, 1}, []int{2, 7}, 1)
	v, err := l.BroadcastTo([]int{2, 3, 4})
	if err != nil || !slices.Equal(v.Strides(), []int{0, 2, 0}) || v.Size() != 24 {
		t.Errorf("BroadcastTo = %v %v", v, err)
	}
	v, err = l.BroadcastTo([]int{3, 0})
	if err != nil || v.Size() != 0 {
		t.Errorf("BroadcastTo [3 0] = %v %v", v, err)
	}
	for _, to := range [][]int{{2, 2}, {1}, {3, -1}, {-1, 3, 1}} {
		_, err := l.BroadcastTo(to)
		isShapeErr(t, err, "[3 1]")
	}
	v, err = l.Expand([]int{5, -1, 4})
	if err != nil || !slices.Equal(v.Shape(), []int{5, 3, 4}) {
		t.Errorf("Expand = %v %v", v, err)
	}
	if _, err := l.Expand([]int{-1, 3, 4}); err == nil {
		t.Error("Expand -1 on a new axis accepted")
	}
	if _, err := l.BroadcastTo([]int{math.MaxInt, 3, 2}); err == nil {
		t.Error("overflowing broadcast accepted")
	}
}

func TestSqueezeUnsqueeze(t *testing.T) {
	l := mustNew(t, []int{1, 3, 1, 2}, []int{50, 2, 60, 1}, 0)
	v, err := l.Squeeze()
	if err != nil || !slices.Equal(v.Shape(), []int{3, 2}) || !slices.Equal(v.Strides(), []int{2, 1}) {
		t.Errorf("Squeeze() = %v %v", v, err)
	}
	v, err = l.Squeeze(-2)
	if err != nil || !slices.Equal(v.Shape(), []int{1, 3, 2}) {
		t.Errorf("Squeeze(-2) = %v %v", v, err)
	}
	for _, axes := range [][]int{{1}, {4}, {0, 0}, {0, -4}} {
		_, err := l.Squeeze(axes...)
		isShapeErr(t, err)
	}
	var s Layout
	if v, err := s.Squeeze(); err != nil || v.Ndim() != 0 {
		t.Errorf("0-d Squeeze = %v %v", v, err)
	}
	m := mustContig(t, 3, 2)
	for axis, want := range map[int][]int{0: {1, 3, 2}, 1: {3, 1, 2}, 2: {3, 2, 1}, -1: {3, 2, 1}, -3: {1, 3, 2}} {
		v, err := m.Unsqueeze(axis)
		if err != nil || !slices.Equal(v.Shape(), want) || !slices.Equal(offsets(v), offsets(m)) || !v.IsContiguous() {
			t.Errorf("Unsqueeze(%d) = %v %v", axis, v, err)
		}
	}
	for _, axis := range []int{3, -4} {
		_, err := m.Unsqueeze(axis)
		isShapeErr(t, err, "[3 2]")
	}
	if v, err := s.Unsqueeze(0); err != nil || !slices.Equal(v.Shape(), []int{1}) {
		t.Errorf("0-d Unsqueeze = %v %v", v, err)
	}
}

func TestBroadcast(t *testing.T) {
	for _, tc := range []struct {
		in   [][]int
		want []int
	}{
		{nil, []int{}},
		{[][]int{{}}, []int{}},
		{[][]int{{}, {3}}, []int{3}},
		{[][]int{{4096, 4096}, {4096}}, []int{4096, 4096}},
		{[][]int{{8, 1, 6, 1}, {7, 1, 5}}, []int{8, 7, 6, 5}},
		{[][]int{{5, 4}, {1}}, []int{5, 4}},
		{[][]int{{15, 3, 5}, {15, 1, 5}, {3, 1}}, []int{15, 3, 5}},
		{[][]int{{0, 1}, {1, 3}}, []int{0, 3}},
		{[][]int{{1}, {0}}, []int{0}},
	} {
		got, err := Broadcast(tc.in...)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("Broadcast(%v) = %v %v", tc.in, got, err)
		}
	}
	_, err := Broadcast([]int{2, 1}, []int{8, 4, 3})
	isShapeErr(t, err, "[2 1]", "[8 4 3]")
	_, err = Broadcast([]int{3}, []int{1}, []int{4})
	isShapeErr(t, err, "[3]", "[4]")
	_, err = Broadcast([]int{0}, []int{2})
	isShapeErr(t, err, "[0]", "[2]")
	_, err = Broadcast([]int{-1})
	isShapeErr(t, err)
	_, err = Broadcast([]int{math.MaxInt, 1}, []int{3})
	isShapeErr(t, err)

	ls, err := BroadcastLayouts(mustContig(t, 3, 1), mustContig(t, 4))
	if err != nil || !slices.Equal(ls[0].Strides(), []int{1, 0}) || !slices.Equal(ls[1].Strides(), []int{0, 1}) {
		t.Errorf("BroadcastLayouts = %v %v", ls, err)
	}
}

func TestSimplifyCoalesce(t *testing.T) {
	for _, tc := range []struct {
		shape, strides []int
		wshape, wstr   []int
	}{
		{[]int{2, 3, 4}, []int{12, 4, 1}, []int{24}, []int{1}},
		{[]int{2, 1, 3}, []int{3, 8, 1}, []int{6}, []int{1}},
		{[]int{2, 3, 4}, []int{24, 4, 1}, []int{2, 12}, []int{24, 1}},
		{[]int{2, 3}, []int{1, 2}, []int{2, 3}, []int{1, 2}},
		{[]int{1, 1}, []int{4, 4}, []int{}, []int{}},
		{[]int{4, 0}, []int{1, 1}, []int{0}, []int{0}},
		{[]int{3, 4}, []int{0, 0}, []int{12}, []int{0}},
		{[]int{3, 4}, []int{-4, -1}, []int{12}, []int{-1}},
	} {
		l := mustNew(t, tc.shape, tc.strides, 30)
		s := l.Simplify()
		if !slices.Equal(s.Shape(), tc.wshape) || !slices.Equal(s.Strides(), tc.wstr) || !slices.Equal(offsets(s), offsets(l)) {
			t.Errorf("Simplify(%v) = %v", l, s)
		}
	}
	// A broadcast operand stops the merge where the other would merge.
	a := mustContig(t, 3, 4)
	b, _ := mustContig(t, 4).BroadcastTo([]int{3, 4})
	cs, err := Coalesce(a, b)
	if err != nil || cs[0].Ndim() != 2 || cs[1].Ndim() != 2 {
		t.Errorf("Coalesce = %v %v", cs, err)
	}
	if _, err := Coalesce(a, mustContig(t, 4, 3)); err == nil {
		t.Error("Coalesce of different shapes accepted")
	} else {
		isShapeErr(t, err, "[3 4]", "[4 3]")
	}
	if cs, err := Coalesce(); cs != nil || err != nil {
		t.Error("Coalesce()")
	}
}

func TestOffsetsStop(t *testing.T) {
	n := 0
	for range mustContig(t, 4, 4).Offsets() {
		n++
		if n == 3 {
			break
		}
	}
	if n != 3 {
		t.Error(n)
	}
}

func TestString(t *testing.T) {
	var s Layout
	if got := s.String(); got != "shape [] strides [] offset 0" {
		t.Error(got)
	}
}

// TestWithOffset: a layout moved keeps its shape and strides, reaches its
// elements from the new offset, and refuses one whose offsets overflow.
func TestWithOffset(t *testing.T) {
	l, err := New([]int{2, 3}, []int{-3, 1}, 3)
	if err != nil {
		t.Fatal(err)
	}
	m, err := l.WithOffset(10)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.AppendOffsets(nil); !slices.Equal(got, []int{10, 11, 12, 7, 8, 9}) {
		t.Errorf("offsets %v", got)
	}
	if !slices.Equal(m.Shape(), l.Shape()) || !slices.Equal(m.Strides(), l.Strides()) || l.Offset() != 3 {
		t.Errorf("moved %v from %v", m, l)
	}
	if _, err := l.WithOffset(math.MaxInt); !errors.Is(err, ErrShape) {
		t.Errorf("an overflowing offset: %v", err)
	}
}
