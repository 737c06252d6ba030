package nd_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/nd"
)

// TestPropertyAxisLines: the operations along a random axis of a random
// view (TestPropertyAxisOps' cases) with Softmax, LogSoftmax and Cumsum
// taking every axis but the last a thread a line, however few the lines,
// against the CPU's.
func TestPropertyAxisLines(t *testing.T) {
	s := propStream(t)
	defer nd.SetLines(1, nil)()
	forCases(t, 200, func(t *testing.T, rng *rand.Rand) {
		oneOf(rng,
			func() { axisCase[float32](t, s, rng, softmaxOf[float32]) }, func() { axisCase[float64](t, s, rng, softmaxOf[float64]) },
			func() { axisCase[cuda.Float16](t, s, rng, softmaxOf[cuda.Float16]) }, func() { axisCase[cuda.BFloat16](t, s, rng, softmaxOf[cuda.BFloat16]) },
			func() { axisCase[int32](t, s, rng, nil) }, func() { axisCase[uint8](t, s, rng, nil) })
	})
}

// TestSoftmaxLines: Softmax and LogSoftmax along an axis but the last,
// a thread a line, give the rows' results (within a float32's rounding:
// the sum's terms are added in another order) and the same NaNs and
// infinities, into every kind of dst, and the line kernel ran.
func TestSoftmaxLines(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	inf := float32(math.Inf(1))
	nan := float32(math.NaN())
	data := make([]float32, 4*3*5)
	for i := range data {
		data[i] = float32(math.Sin(float64(i)*1.7) * 4)
	}
	// Lines of special values along axis 0 of 4x3x5: the line at [*, 0, 0]
	// holds a NaN, [*, 0, 1] +Inf, [*, 0, 2] nothing but -Inf.
	data[15] = nan
	data[1] = inf
	for k := range 4 {
		data[k*15+2] = -inf
	}
	type dstKind int
	const (
		none       dstKind = 0
		contiguous dstKind = 1
		strided    dstKind = 2
		inPlace    dstKind = 3
	)
	for _, log := range []bool{false, true} {
		for _, c := range []struct {
			name string
			axis int
			view bool // a is a permuted view (not contiguous)
			dst  dstKind
		}{
			{"axis 0", 0, false, none},
			{"axis 1", 1, false, none},
			{"axis -3 into dst", -3, false, contiguous},
			{"axis 1 into a strided dst", 1, false, strided},
			{"axis 0 in place", 0, false, inPlace},
			{"axis 0 of a view", 0, true, none},
			{"axis 1 of a view into dst", 1, true, contiguous},
		} {
			name := c.name
			if log {
				name = "log " + name
			}
			t.Run(name, func(t *testing.T) {
				input := func() *nd.Array[float32] {
					a := pArr(t, s, slices.Clone(data), 4, 3, 5)
					if c.view {
						// The same shape, strided: a's elements of 5x3x4
						// permuted back.
						b := pArr(t, s, slices.Clone(data), 5, 3, 4)
						return must(b.Permute(2, 1, 0))(t)
					}
					return a
				}
				op := func(a, dst *nd.Array[float32]) (*nd.Array[float32], error) {
					switch {
					case dst == nil && log:
						return nd.LogSoftmax(a, c.axis)
					case dst == nil:
						return nd.Softmax(a, c.axis)
					case log:
						return dst, nd.LogSoftmaxInto(dst, a, c.axis)
					}
					return dst, nd.SoftmaxInto(dst, a, c.axis)
				}
				dstOf := func(a *nd.Array[float32]) *nd.Array[float32] {
					switch c.dst {
					case contiguous:
						return pArr(t, s, make([]float32, 60), 4, 3, 5)
					case strided:
						return must(pArr(t, s, make([]float32, 60), 5, 3, 4).Permute(2, 1, 0))(t)
					case inPlace:
						return a
					}
					return nil
				}
				// The rows' results: no array has enough lines for the
				// line kernel.
				a := input()
				want, err := op(a, dstOf(a))
				if err != nil {
					t.Fatal(err)
				}
				wantData := must(want.ToSlice())(t)
				var seen []int
				defer nd.SetLines(1, func(dim, post, lines int) { seen = append(seen, dim, post, lines) })()
				a = input()
				got, err := op(a, dstOf(a))
				if err != nil {
					t.Fatal(err)
				}
				gotData := must(got.ToSlice())(t)
				ax := (c.axis + 3) % 3
				wantSeen := [][]int{{4, 15, 15}, {3, 5, 20}}[ax]
				if !slices.Equal(seen, wantSeen) {
					t.Errorf("line kernels launched with (dim, post, lines) %v, want %v", seen, wantSeen)
				}
				if !slices.Equal(got.Shape(), []int{4, 3, 5}) {
					t.Fatalf("shape %v, want [4 3 5]", got.Shape())
				}
				for i := range gotData {
					g, w := float64(gotData[i]), float64(wantData[i])
					if g == w || math.IsNaN(g) && math.IsNaN(w) || !math.IsInf(w, 0) && !math.IsNaN(w) && math.Abs(g-w) <= 1e-6*math.Max(1, math.Abs(w)) {
						continue
					}
					t.Fatalf("element %d (at %v) is %v, the rows' %v\ngot  %v\nwant %v", i, unravel(i, []int{4, 3, 5}), g, w, gotData, wantData)
				}
				if c.dst == none {
					free(t, want)
					free(t, got)
				}
			})
		}
	}
}

// TestCumsumLines: Cumsum along an axis but the last, a thread a line,
// gives the rows' results bit for bit (each line is folded in order
// either way), for integers that wrap, floats and Bools (true from the
// first true on, never wrapping past 255 trues), and the line kernel
// ran.
func TestCumsumLines(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	t.Run("int8", func(t *testing.T) { cumsumLinesCase(t, s, func(i int) int8 { return int8(i*37 - 90) }) })
	t.Run("float32", func(t *testing.T) {
		cumsumLinesCase(t, s, func(i int) float32 { return float32(math.Sin(float64(i))) })
	})
	// Every Bool true: a running count would wrap at 256.
	t.Run("Bool", func(t *testing.T) { cumsumLinesCase(t, s, func(int) nd.Bool { return 1 }) })
}

func cumsumLinesCase[T nd.Elem](t *testing.T, s *cuda.Stream, value func(int) T) {
	t.Helper()
	// 4 lines of 300 along axis 0 of 300x2x2, so that a Bool line holds
	// more than 255 trues; 600 lines of 2 along axis 1.
	data := make([]T, 300*2*2)
	for i := range data {
		data[i] = value(i)
	}
	for _, axis := range []int{0, 1} {
		want := must(nd.Cumsum(pArr(t, s, data, 300, 2, 2), axis))(t)
		wantData := must(want.ToSlice())(t)
		free(t, want)
		var seen []int
		restore := nd.SetLines(1, func(dim, post, lines int) { seen = append(seen, dim, post, lines) })
		got, err := nd.Cumsum(pArr(t, s, data, 300, 2, 2), axis)
		restore()
		if err != nil {
			t.Fatal(err)
		}
		gotData := must(got.ToSlice())(t)
		free(t, got)
		if wantSeen := [][]int{{300, 4, 4}, {2, 2, 600}}[axis]; !slices.Equal(seen, wantSeen) {
			t.Errorf("axis %d: line kernels launched with (dim, post, lines) %v, want %v", axis, seen, wantSeen)
		}
		if !slices.Equal(gotData, wantData) {
			t.Fatalf("axis %d: the lines' running sums differ from the rows'\ngot  %v\nwant %v", axis, gotData[:16], wantData[:16])
		}
	}
}
