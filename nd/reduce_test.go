package nd_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/nd"
)

// foldHost folds h over the axes (nil: all) with f, keeping them as size
// 1 where keep.
func foldHost(h host[float64], axes []int, keep bool, f func([]float64) float64) host[float64] {
	n := len(h.shape)
	fold := make([]bool, n)
	for _, a := range axes {
		fold[(a+n)%n] = true
	}
	if axes == nil {
		for i := range fold {
			fold[i] = true
		}
	}
	var outShape, keptShape []int
	for i, d := range h.shape {
		if fold[i] {
			if keep {
				outShape = append(outShape, 1)
			}
			continue
		}
		outShape = append(outShape, d)
		keptShape = append(keptShape, d)
	}
	groups := map[string][]float64{}
	each(h.shape, func(idx []int) {
		var k []int
		for i, v := range idx {
			if !fold[i] {
				k = append(k, v)
			}
		}
		key := fmt.Sprint(k)
		groups[key] = append(groups[key], h.at(idx))
	})
	out := host[float64]{data: []float64{}, shape: outShape}
	emit := func(k []int) { out.data = append(out.data, f(groups[fmt.Sprint(k)])) }
	if len(keptShape) == 0 {
		emit(nil)
	} else {
		each(keptShape, emit)
	}
	if outShape == nil {
		out.shape = []int{}
	}
	return out
}

func sum(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s
}

func mean(xs []float64) float64 { return sum(xs) / float64(len(xs)) }

// TestReductions: every reduction over every set of axes of a 3-d array,
// contiguous and transposed, with and without keepdims, against Go.
func TestReductions(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	base := free(t, must(nd.FromSlice(s, floats(24, 5, false), 2, 3, 4))(t))
	reds := []struct {
		name string
		f    func(*nd.Array[float32], nd.Axes) (*nd.Array[float32], error)
		ref  func([]float64) float64
		tol  float64
	}{
		{"Sum", nd.Sum[float32], sum, 1e-6},
		{"Mean", nd.Mean[float32], mean, 1e-6},
		{"Max", nd.Max[float32], func(xs []float64) float64 { return slices.Max(xs) }, 0},
		{"Min", nd.Min[float32], func(xs []float64) float64 { return slices.Min(xs) }, 0},
		{"Prod", nd.Prod[float32], func(xs []float64) float64 {
			p := 1.0
			for _, x := range xs {
				p *= x
			}
			return p
		}, 1e-5},
		{"Var", nd.Var[float32], func(xs []float64) float64 {
			m := mean(xs)
			v := 0.0
			for _, x := range xs {
				v += (x - m) * (x - m)
			}
			return v / float64(len(xs))
		}, 1e-5},
		{"Std", nd.Std[float32], func(xs []float64) float64 {
			m := mean(xs)
			v := 0.0
			for _, x := range xs {
				v += (x - m) * (x - m)
			}
			return math.Sqrt(v / float64(len(xs)))
		}, 1e-5},
	}
	inputs := map[string]*nd.Array[float32]{"contiguous": base, "transposed": base.T(), "reversed": must(base.Slice(1, nd.None, nd.None, -1))(t)}
	for in, a := range inputs {
		ha := toHost64(hostOf(t, a))
		for _, axes := range [][]int{nil, {0}, {1}, {2}, {-1}, {0, 1}, {1, 2}, {0, 2}, {0, 1, 2}} {
			for _, keep := range []bool{false, true} {
				x := nd.Along(axes...)
				if keep {
					x = x.KeepDims()
				}
				for _, r := range reds {
					t.Run(fmt.Sprintf("%s/%s/%v", in, r.name, x), func(t *testing.T) {
						closeTo(t, r.name, free(t, must(r.f(a, x))(t)), foldHost(ha, axes, keep, r.ref), r.tol)
					})
				}
			}
		}
	}
	t.Run("Into", func(t *testing.T) {
		dst := free(t, must(nd.Zeros[float32](s, 4, 2))(t))
		if err := nd.SumInto(dst.T(), base, nd.Along(1)); err != nil { // dst.T() is 2×4: the result's shape, strided
			t.Fatal(err)
		}
		closeTo(t, "SumInto a view", dst.T(), foldHost(toHost64(hostOf(t, base)), []int{1}, false, sum), 1e-6)
	})
	t.Run("All Any", func(t *testing.T) {
		m := free(t, must(nd.Greater(base, nd.Scalar[float32](0)))(t))
		hm := hostOf(t, free(t, must(nd.Cast[float32](m))(t)))
		all := func(xs []float64) float64 {
			for _, x := range xs {
				if x == 0 {
					return 0
				}
			}
			return 1
		}
		closeTo(t, "All", free(t, must(nd.All(m, nd.Along(1)))(t)), foldHost(toHost64(hm), []int{1}, false, all), 0)
		closeTo(t, "Any of floats", free(t, must(nd.Any(base, nd.Along(0, 2)))(t)), foldHost(toHost64(hostOf(t, base)), []int{0, 2}, false, func(xs []float64) float64 {
			for _, x := range xs {
				if x != 0 {
					return 1
				}
			}
			return 0
		}), 0)
	})
	t.Run("empty", func(t *testing.T) {
		e := free(t, must(nd.Zeros[float32](s, 3, 0))(t))
		closeTo(t, "Sum of nothing", free(t, must(nd.Sum(e, nd.Along(1)))(t)), host[float64]{[]float64{0, 0, 0}, []int{3}}, 0)
		closeTo(t, "Prod of nothing", free(t, must(nd.Prod(e, nd.Along(1)))(t)), host[float64]{[]float64{1, 1, 1}, []int{3}}, 0)
		closeTo(t, "Sum of no rows", free(t, must(nd.Sum(e, nd.Along(0)))(t)), host[float64]{[]float64{}, []int{0}}, 0)
		if _, err := nd.Max(e, nd.Along(1)); !errors.Is(err, cuda.ErrInvalidValue) {
			t.Errorf("Max of nothing: %v, want ErrInvalidValue", err)
		}
	})
}

// TestAxisOps: Softmax, LogSoftmax, Cumsum, ArgMax and ArgMin along each
// axis of a 3-d array and of a transposed view.
func TestAxisOps(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	data := floats(60, 7, false)
	data[17] = float32(math.NaN())
	base := free(t, must(nd.FromSlice(s, data, 3, 4, 5))(t))
	finite := free(t, must(nd.FromSlice(s, floats(60, 9, false), 3, 4, 5))(t))
	for name, a := range map[string]*nd.Array[float32]{"contiguous": finite, "transposed": finite.T()} {
		ha := toHost64(hostOf(t, a))
		for axis := -1; axis < 3; axis++ {
			t.Run(fmt.Sprintf("%s/%d", name, axis), func(t *testing.T) {
				closeTo(t, "Softmax", free(t, must(nd.Softmax(a, axis))(t)), lineMap(ha, axis, func(xs []float64) []float64 {
					m := slices.Max(xs)
					out := make([]float64, len(xs))
					s := 0.0
					for i, x := range xs {
						out[i] = math.Exp(x - m)
						s += out[i]
					}
					for i := range out {
						out[i] /= s
					}
					return out
				}), 1e-5)
				closeTo(t, "LogSoftmax", free(t, must(nd.LogSoftmax(a, axis))(t)), lineMap(ha, axis, func(xs []float64) []float64 {
					m := slices.Max(xs)
					s := 0.0
					for _, x := range xs {
						s += math.Exp(x - m)
					}
					out := make([]float64, len(xs))
					for i, x := range xs {
						out[i] = x - m - math.Log(s)
					}
					return out
				}), 1e-5)
				closeTo(t, "Cumsum", free(t, must(nd.Cumsum(a, axis))(t)), lineMap(ha, axis, func(xs []float64) []float64 {
					out := make([]float64, len(xs))
					acc := float32(0)
					for i, x := range xs {
						acc += float32(x)
						out[i] = float64(acc)
					}
					return out
				}), 1e-6)
				// Into: a contiguous dst (written by the rows' kernel
				// itself along the last axis), a transposed one, and a
				// itself (in place, through a result of its own): each
				// as the allocating form.
				want := free(t, must(nd.Softmax(a, axis))(t))
				for _, into := range []string{"contiguous", "transposed", "in place"} {
					var dst *nd.Array[float32]
					switch into {
					case "contiguous":
						dst = free(t, must(nd.Full[float32](s, 7, a.Shape()...))(t))
					case "transposed":
						dst = free(t, must(nd.Full[float32](s, 7, reversed(a.Shape())...))(t)).T()
					default:
						dst = free(t, must(a.Copy())(t))
					}
					if err := nd.SoftmaxInto(dst, dst0(into, a, dst), axis); err != nil {
						t.Fatal(into, err)
					}
					closeTo(t, "SoftmaxInto "+into, dst, toHost64(hostOf(t, want)), 0)
				}
			})
		}
	}
	hb := toHost64(hostOf(t, base))
	for axis := 0; axis < 3; axis++ {
		t.Run(fmt.Sprint("ArgMax/", axis), func(t *testing.T) {
			closeTo(t, "ArgMax", free(t, must(nd.ArgMax(base, axis))(t)), foldHost(hb, []int{axis}, false, argExtreme(func(a, b float64) bool { return a > b })), 0)
			closeTo(t, "ArgMin", free(t, must(nd.ArgMin(base.T(), axis))(t)), foldHost(toHost64(hostOf(t, base.T())), []int{axis}, false, argExtreme(func(a, b float64) bool { return a < b })), 0)
		})
	}
	one := free(t, must(nd.FromSlice(s, floats(1000, 2, false)))(t))
	closeTo(t, "ArgMax of one line", free(t, must(nd.ArgMax(one, 0))(t)), foldHost(toHost64(hostOf(t, one)), nil, false, argExtreme(func(a, b float64) bool { return a > b })), 0)
}

// bits returns halves' bits (Float16 prints its value).
func bits(h []cuda.Float16) []uint16 {
	out := make([]uint16, len(h))
	for i, v := range h {
		out[i] = uint16(v)
	}
	return out
}

// dst0 is the input of an Into test: dst itself where the test is in
// place, else a.
func dst0(into string, a, dst *nd.Array[float32]) *nd.Array[float32] {
	if into == "in place" {
		return dst
	}
	return a
}

func reversed(s []int) []int {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}

// argExtreme is NumPy's argmax (better: a > b) or argmin: the first of
// equals, the first NaN.
func argExtreme(better func(a, b float64) bool) func([]float64) float64 {
	return func(xs []float64) float64 {
		best := 0
		for i, x := range xs {
			if math.IsNaN(xs[best]) {
				break
			}
			if math.IsNaN(x) || better(x, xs[best]) {
				best = i
			}
		}
		return float64(best)
	}
}

// lineMap applies f to each line of h along axis.
func lineMap(h host[float64], axis int, f func([]float64) []float64) host[float64] {
	n := len(h.shape)
	axis = (axis + n) % n
	out := host[float64]{data: make([]float64, len(h.data)), shape: h.shape}
	strides := make([]int, n)
	st := 1
	for i := n - 1; i >= 0; i-- {
		strides[i] = st
		st *= h.shape[i]
	}
	rest := slices.Clone(h.shape)
	rest[axis] = 1
	each(rest, func(idx []int) {
		off := 0
		for i, v := range idx {
			off += v * strides[i]
		}
		var line []float64
		for k := range h.shape[axis] {
			line = append(line, h.data[off+k*strides[axis]])
		}
		for k, v := range f(line) {
			out.data[off+k*strides[axis]] = v
		}
	})
	return out
}

// TestGather: Take along each axis with negative and out-of-range
// indices, Concat, Stack and Split.
func TestGather(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	a := free(t, must(nd.FromSlice(s, iota[float32](24), 2, 3, 4))(t))
	ha := toHost64(hostOf(t, a))
	idx := free(t, must(nd.FromSlice(s, []int64{1, -1, 0, 7, 1, 1}, 3, 2))(t))
	for i := 0; i < 6; i++ {
		// Each axis in Take's 32-bit arithmetic, then in its 64-bit form
		// (of results of 2^31 elements or more).
		axis, form := i%3, []string{"", "/64-bit"}[i/3]
		t.Run(fmt.Sprint("Take/", axis, form), func(t *testing.T) {
			if form != "" {
				defer nd.SetTakeSmall(-1)()
			}
			got := free(t, must(nd.Take(a.T(), idx, axis))(t))
			ht := toHost64(hostOf(t, a.T()))
			shape := slices.Concat(ht.shape[:axis], []int{3, 2}, ht.shape[axis+1:])
			want := host[float64]{shape: shape}
			each(shape, func(i []int) {
				k := []int64{1, -1, 0, 7, 1, 1}[i[axis]*2+i[axis+1]]
				d := int64(ht.shape[axis])
				if k < 0 {
					k += d
				}
				if k < 0 || k >= d {
					want.data = append(want.data, 0)
					return
				}
				src := slices.Concat(i[:axis], []int{int(k)}, i[axis+2:])
				want.data = append(want.data, ht.at(src))
			})
			closeTo(t, "Take", got, want, 0)
		})
	}
	t.Run("Concat", func(t *testing.T) {
		b := free(t, must(nd.FromSlice(s, iota[float32](6), 2, 3, 1))(t))
		got := free(t, must(nd.Concat([]*nd.Array[float32]{a, b, a}, -1))(t))
		want := host[float64]{shape: []int{2, 3, 9}}
		each(want.shape, func(i []int) {
			switch k := i[2]; {
			case k < 4:
				want.data = append(want.data, ha.at([]int{i[0], i[1], k}))
			case k == 4:
				want.data = append(want.data, float64(i[0]*3+i[1]))
			default:
				want.data = append(want.data, ha.at([]int{i[0], i[1], k - 5}))
			}
		})
		closeTo(t, "Concat", got, want, 0)
		if _, err := nd.Concat([]*nd.Array[float32]{a, a.T()}, 0); !errors.Is(err, cuda.ErrInvalidValue) {
			t.Errorf("Concat of disagreeing shapes: %v", err)
		}
	})
	// Contiguous arrays join in one kernel for each 8 of them (empty ones
	// aside: 10 with one empty are two kernels), copying bits, a float16
	// NaN keeping its payload and signal, as Go joins them.
	t.Run("Concat at once", func(t *testing.T) {
		for _, k := range []int{1, 2, 3, 9, 10} {
			t.Run(fmt.Sprint(k, " arrays"), func(t *testing.T) {
				var parts []*nd.Array[cuda.Float16]
				want := make([][]cuda.Float16, 3) // each row of the result
				for j := range k {
					cols := j%3 + 1
					if j == 1 {
						cols = 0 // an empty one
					}
					data := make([]cuda.Float16, 3*cols)
					for x := range data {
						data[x] = cuda.Float16(0x7c01 + j*16 + x) // signaling NaNs, each its own payload
						if x%2 == 1 {
							data[x] = cuda.NewFloat16(float32(j*100 + x))
						}
					}
					parts = append(parts, free(t, must(nd.FromSlice(s, data, 3, cols))(t)))
					for r := range 3 {
						want[r] = append(want[r], data[r*cols:(r+1)*cols]...)
					}
				}
				joined := free(t, must(nd.Concat(parts, 1))(t))
				if got, flat := hostOf(t, joined), slices.Concat(want...); !slices.Equal(got.data, flat) {
					t.Errorf("Concat of %d arrays: bits\n%x\nwant\n%x", k, bits(got.data), bits(flat))
				}
				// A copy of halves copies bits too, from a view at an
				// offset (a slice of the span) and a transposed one.
				rows := must(joined.Slice(0, 1, 3, 1))(t)
				if got := hostOf(t, free(t, must(rows.Copy())(t))); !slices.Equal(got.data, slices.Concat(want[1:]...)) {
					t.Errorf("Copy of rows 1 and 2: bits\n%x\nwant\n%x", bits(got.data), bits(slices.Concat(want[1:]...)))
				}
				back := free(t, must(free(t, must(joined.T().Copy())(t)).T().Copy())(t))
				if got := hostOf(t, back); !slices.Equal(got.data, slices.Concat(want...)) {
					t.Errorf("Copy of a transposed copy: bits\n%x\nwant\n%x", bits(got.data), bits(slices.Concat(want...)))
				}
			})
		}
	})
	t.Run("Stack Split", func(t *testing.T) {
		st := free(t, must(nd.Stack([]*nd.Array[float32]{a, a}, 1))(t))
		if !slices.Equal(st.Shape(), []int{2, 2, 3, 4}) {
			t.Fatalf("Stack: shape %v", st.Shape())
		}
		parts := must(nd.Split(st, []int{1}, 1))(t)
		if len(parts) != 2 {
			t.Fatalf("Split: %d parts", len(parts))
		}
		for _, p := range parts {
			closeTo(t, "Split", must(p.Squeeze(1))(t), ha, 0)
		}
	})
}

// TestMiddleFold: a block of axes in the middle of a contiguous array
// folds in place (nd/middle.go), mid in one chunk or in several whose
// partial results fold in order (few columns: 2×3000×3), or (only axes of
// one element before the block) as the columns of a matrix: every fold,
// at shapes that take one chunk and many, against Go (TestMiddleShapes
// covers every type and layout).
func TestMiddleFold(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	for _, shape := range [][]int{{2, 1000, 3}, {3, 5, 7}, {2, 3, 40, 5}, {1, 2049, 2}, {2, 3000, 3}, {1, 3, 700, 2}} {
		n := 1
		for _, d := range shape {
			n *= d
		}
		data := floats(n, float64(n), false)
		data[n/3] = float32(math.NaN())
		a := free(t, must(nd.FromSlice(s, data, shape...))(t))
		ha := toHost64(hostOf(t, a))
		axes := []int{1}
		if len(shape) == 4 {
			axes = []int{1, 2}
		}
		for _, r := range []struct {
			name string
			f    func(*nd.Array[float32], nd.Axes) (*nd.Array[float32], error)
			ref  func([]float64) float64
			tol  float64
		}{
			{"Sum", nd.Sum[float32], sum, 1e-5},
			{"Mean", nd.Mean[float32], mean, 1e-5},
			{"Max", nd.Max[float32], func(xs []float64) float64 {
				for _, x := range xs {
					if math.IsNaN(x) {
						return x
					}
				}
				return slices.Max(xs)
			}, 0},
			{"Min", nd.Min[float32], func(xs []float64) float64 {
				for _, x := range xs {
					if math.IsNaN(x) {
						return x
					}
				}
				return slices.Min(xs)
			}, 0},
		} {
			t.Run(fmt.Sprint(shape, r.name), func(t *testing.T) {
				closeTo(t, r.name, free(t, must(r.f(a, nd.Along(axes...)))(t)), foldHost(ha, axes, false, r.ref), r.tol)
				closeTo(t, r.name+" keepdims", free(t, must(r.f(a, nd.Along(axes...).KeepDims()))(t)), foldHost(ha, axes, true, r.ref), r.tol)
			})
		}
		ints := free(t, must(nd.Cast[int32](free(t, must(nd.Where(free(t, must(nd.IsNaN(a))(t)), nd.Scalar[float32](0), a))(t))))(t))
		hi := toHostAny(hostOf(t, ints))
		closeTo(t, fmt.Sprint(shape, " Sum of int32"), free(t, must(nd.Sum(ints, nd.Along(axes...)))(t)), foldHost(hi, axes, false, sum), 0)
		closeTo(t, fmt.Sprint(shape, " Any"), free(t, must(nd.Any(ints, nd.Along(axes...)))(t)), foldHost(hi, axes, false, func(xs []float64) float64 {
			for _, x := range xs {
				if x != 0 {
					return 1
				}
			}
			return 0
		}), 0)
	}
}

// TestIntoOverlap: the Into forms of the reductions, ArgMax, Take and Concat
// given a dst that shares memory with their input (a row of a matrix
// written with its rows' sums, shifted so that one line's result lands
// on another line's elements) give what a dst apart gives, as NumPy's
// out= does: before, the folds wrote results over elements still to be
// read (SumInto of rows [0 0 0 0 0 9], [0 1 0 0 0 0] into the second row
// gave [9 10]).
func TestIntoOverlap(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	data := []float32{0, 0, 0, 0, 0, 9, 0, 1, 0, 0, 0, 0}
	// part is the view of a's memory from element at, of the shape.
	part := func(t *testing.T, a *nd.Array[float32], at int, shape ...int) *nd.Array[float32] {
		t.Helper()
		flat := must(a.Reshape(-1))(t)
		return must(must(flat.Slice(0, at, at+size(shape), 1))(t).Reshape(shape...))(t)
	}
	for _, c := range []struct {
		name  string
		shape []int
		at    int   // dst's first element in a
		dst   []int // dst's shape
		f     func(dst, a *nd.Array[float32]) error
		want  []float32
	}{
		{"SumInto rows", []int{2, 6}, 6, []int{2}, func(d, a *nd.Array[float32]) error { return nd.SumInto(d, a, nd.Along(1)) }, f32(9, 1)},
		{"SumInto rows backwards", []int{2, 6}, 1, []int{2}, func(d, a *nd.Array[float32]) error { return nd.SumInto(d, a, nd.Along(-1)) }, f32(9, 1)},
		{"MaxInto rows", []int{2, 6}, 6, []int{2}, func(d, a *nd.Array[float32]) error { return nd.MaxInto(d, a, nd.Along(1)) }, f32(9, 1)},
		{"MinInto rows keepdims", []int{2, 6}, 6, []int{2, 1}, func(d, a *nd.Array[float32]) error {
			return nd.MinInto(d, a, nd.Along(1).KeepDims())
		}, f32(0, 0)},
		{"ProdInto rows", []int{2, 6}, 6, []int{2}, func(d, a *nd.Array[float32]) error { return nd.ProdInto(d, a, nd.Along(1)) }, f32(0, 0)},
		{"MeanInto rows", []int{2, 6}, 6, []int{2}, func(d, a *nd.Array[float32]) error { return nd.MeanInto(d, a, nd.Along(1)) }, f32(1.5, 1.0/6)},
		{"SumInto columns", []int{6, 2}, 1, []int{2}, func(d, a *nd.Array[float32]) error { return nd.SumInto(d, a, nd.Along(0)) }, f32(0, 10)},
		{"SumInto columns backwards", []int{6, 2}, 0, []int{2}, func(d, a *nd.Array[float32]) error { return nd.SumInto(d, a, nd.Along(0)) }, f32(0, 10)},
		{"SumInto a middle axis", []int{2, 3, 2}, 2, []int{2, 2}, func(d, a *nd.Array[float32]) error { return nd.SumInto(d, a, nd.Along(1)) }, f32(0, 9, 0, 1)},
		{"SumInto all", []int{2, 6}, 5, nil, func(d, a *nd.Array[float32]) error { return nd.SumInto(d, a, nd.Along()) }, f32(10)},
		{"VarInto rows", []int{2, 6}, 6, []int{2}, func(d, a *nd.Array[float32]) error { return nd.VarInto(d, a, nd.Along(1)) }, f32(11.25, 5.0/36)},
		{"ConcatInto itself, halves swapped", []int{12}, 0, []int{12}, func(d, a *nd.Array[float32]) error {
			hi, err := a.Slice(0, 6, nd.None, 1)
			if err != nil {
				return err
			}
			lo, err := a.Slice(0, 0, 6, 1)
			if err != nil {
				return err
			}
			return nd.ConcatInto(d, []*nd.Array[float32]{hi, lo}, 0)
		}, f32(0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9)},
		{"ConcatInto a shifted view, reversed parts", []int{12}, 1, []int{10}, func(d, a *nd.Array[float32]) error {
			p, err := a.Slice(0, 11, 6, -1)
			if err != nil {
				return err
			}
			q, err := a.Slice(0, 5, 0, -1)
			if err != nil {
				return err
			}
			return nd.ConcatInto(d, []*nd.Array[float32]{p, q}, 0)
		}, f32(0, 0, 0, 0, 1, 9, 0, 0, 0, 0)},
		{"TakeInto itself reversed", []int{12}, 0, []int{12}, func(d, a *nd.Array[float32]) error {
			idx, err := nd.Arange[int64](a.Stream(), 11, -1, -1)
			if err != nil {
				return err
			}
			defer idx.Free()
			return nd.TakeInto(d, a, idx, 0)
		}, f32(0, 0, 0, 0, 1, 0, 9, 0, 0, 0, 0, 0)},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := free(t, must(nd.FromSlice(s, data, c.shape...))(t))
			d := part(t, a, c.at, c.dst...)
			if err := c.f(d, a); err != nil {
				t.Fatal(err)
			}
			closeTo(t, c.name, d, toHost64(host[float32]{c.want, c.dst}), 1e-6)
		})
	}
	// ArgMax's int64 result over the int64 elements it searches, in both
	// directions.
	for _, at := range []int{6, 1} {
		t.Run(fmt.Sprint("ArgMaxInto rows at ", at), func(t *testing.T) {
			a := free(t, must(nd.FromSlice(s, []int64{0, 0, 0, 0, 0, 9, 0, 1, 0, 0, 0, 0}, 2, 6))(t))
			d := must(must(must(a.Reshape(-1))(t).Slice(0, at, at+2, 1))(t).Reshape(2))(t)
			if err := nd.ArgMaxInto(d, a, 1); err != nil {
				t.Fatal(err)
			}
			equal(t, d, host[int64]{[]int64{5, 1}, []int{2}})
		})
	}
}

// TestBoolFolds: Sum, Prod and Cumsum of Bools are truth values (NumPy's
// add and multiply of bools: or, and), not bytes that wrap: before, the
// Sum of 256 trues was false, the Prod of eight trues of byte 2 false,
// and the Cumsum false from its 256th element.
func TestBoolFolds(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	trues := slices.Repeat([]nd.Bool{1}, 256)
	twos := slices.Repeat([]nd.Bool{2}, 8)
	for _, c := range []struct {
		name string
		data []nd.Bool
		f    func(a *nd.Array[nd.Bool]) (*nd.Array[nd.Bool], error)
		want nd.Bool
	}{
		{"Sum of 256 trues", trues, func(a *nd.Array[nd.Bool]) (*nd.Array[nd.Bool], error) { return nd.Sum(a, nd.Along()) }, 1},
		{"Sum of none", nil, func(a *nd.Array[nd.Bool]) (*nd.Array[nd.Bool], error) { return nd.Sum(a, nd.Along()) }, 0},
		{"Sum of falses", make([]nd.Bool, 300), func(a *nd.Array[nd.Bool]) (*nd.Array[nd.Bool], error) { return nd.Sum(a, nd.Along(0)) }, 0},
		{"Prod of 2s", twos, func(a *nd.Array[nd.Bool]) (*nd.Array[nd.Bool], error) { return nd.Prod(a, nd.Along()) }, 1},
		{"Prod of none", nil, func(a *nd.Array[nd.Bool]) (*nd.Array[nd.Bool], error) { return nd.Prod(a, nd.Along()) }, 1},
		{"Prod with a false", append(slices.Clone(twos), 0), func(a *nd.Array[nd.Bool]) (*nd.Array[nd.Bool], error) { return nd.Prod(a, nd.Along(-1)) }, 0},
		{"Cumsum's last of 256 trues", trues, func(a *nd.Array[nd.Bool]) (*nd.Array[nd.Bool], error) {
			c, err := nd.Cumsum(a, 0)
			if err != nil {
				return nil, err
			}
			defer c.Free()
			return must(c.Slice(0, -1, nd.None, 1))(t).Copy()
		}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := free(t, must(nd.FromSlice(s, c.data))(t))
			got := free(t, must(c.f(a))(t))
			v := must(got.ToSlice())(t)
			if len(v) != 1 || (v[0] != 0) != (c.want != 0) {
				t.Fatalf("got %v, want %v", v, c.want)
			}
			if v[0] > 1 {
				t.Fatalf("got the byte %d, want 0 or 1", v[0])
			}
		})
	}
	// The Into forms, into a row of a matrix of Bools.
	m := free(t, must(nd.FromSlice(s, slices.Concat(trues, trues), 2, 256))(t))
	d := free(t, must(nd.Zeros[nd.Bool](s, 2))(t))
	if err := nd.SumInto(d, m, nd.Along(1)); err != nil {
		t.Fatal(err)
	}
	equal(t, d, host[nd.Bool]{[]nd.Bool{1, 1}, []int{2}})
	c := free(t, must(nd.Zeros[nd.Bool](s, 2, 256))(t))
	if err := nd.CumsumInto(c, m, 1); err != nil {
		t.Fatal(err)
	}
	equal(t, c, host[nd.Bool]{slices.Concat(trues, trues), []int{2, 256}})
}

// TestLongAxes: the reductions and the operations along an axis over
// shapes with long and odd axes (4099, 97, 1 and 0 elements; the random
// shapes of the property tests stay below 8), over every axis and pair
// of axes, contiguous and transposed, float32 and int32, against Go.
func TestLongAxes(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	for _, shape := range [][]int{{3, 4099}, {4099, 3}, {97, 5, 41}, {1, 4099, 1}, {2, 0, 97}} {
		n := size(shape)
		data := make([]float32, n)
		ints := make([]int32, n)
		for i := range data {
			ints[i] = int32((i*7919)%201) - 100
			data[i] = float32(ints[i]) / 8
		}
		base := free(t, must(nd.FromSlice(s, data, shape...))(t))
		ibase := free(t, must(nd.FromSlice(s, ints, shape...))(t))
		for _, view := range []string{"contiguous", "transposed"} {
			a, ia := base, ibase
			if view == "transposed" {
				a, ia = base.T(), ibase.T()
			}
			ha, hi := toHost64(hostOf(t, a)), toHostAny(hostOf(t, ia))
			rank := len(shape)
			var axesSets [][]int
			for i := range rank {
				axesSets = append(axesSets, []int{i})
				for j := i + 1; j < rank; j++ {
					axesSets = append(axesSets, []int{j - rank, i})
				}
			}
			for _, axes := range axesSets {
				t.Run(fmt.Sprint(shape, view, axes), func(t *testing.T) {
					empty := false
					for _, ax := range axes {
						empty = empty || ha.shape[(ax+rank)%rank] == 0
					}
					closeTo(t, "Sum", free(t, must(nd.Sum(a, nd.Along(axes...)))(t)), foldHost(ha, axes, false, sum), 1e-6)
					closeTo(t, "Sum of int32", free(t, must(nd.Sum(ia, nd.Along(axes...).KeepDims()))(t)), foldHost(hi, axes, true, sum), 0)
					closeTo(t, "Mean", free(t, must(nd.Mean(a, nd.Along(axes...)))(t)), foldHost(ha, axes, false, mean), 1e-5)
					if !empty {
						closeTo(t, "Max", free(t, must(nd.Max(a, nd.Along(axes...)))(t)), foldHost(ha, axes, false, slices.Max[[]float64]), 0)
						closeTo(t, "Min of int32", free(t, must(nd.Min(ia, nd.Along(axes...)))(t)), foldHost(hi, axes, false, slices.Min[[]float64]), 0)
					}
				})
			}
			for axis := -rank; axis < rank; axis++ {
				t.Run(fmt.Sprint(shape, view, " along ", axis), func(t *testing.T) {
					closeTo(t, "Cumsum of int32", free(t, must(nd.Cumsum(ia, axis))(t)), lineMap(hi, axis, func(xs []float64) []float64 {
						out, acc := make([]float64, len(xs)), 0.0
						for i, x := range xs {
							acc += x
							out[i] = acc
						}
						return out
					}), 0)
					closeTo(t, "Softmax", free(t, must(nd.Softmax(a, axis))(t)), lineMap(ha, axis, func(xs []float64) []float64 {
						out := make([]float64, len(xs))
						if len(xs) == 0 {
							return out
						}
						m, sum := slices.Max(xs), 0.0
						for i, x := range xs {
							out[i] = math.Exp(x - m)
							sum += out[i]
						}
						for i := range out {
							out[i] /= sum
						}
						return out
					}), 1e-5)
					if ha.shape[(axis+rank)%rank] > 0 {
						closeTo(t, "ArgMax", free(t, must(nd.ArgMax(a, axis))(t)), foldHost(ha, []int{axis}, false, argExtreme(func(a, b float64) bool { return a > b })), 0)
						closeTo(t, "ArgMin of int32", free(t, must(nd.ArgMin(ia, axis))(t)), foldHost(hi, []int{axis}, false, argExtreme(func(a, b float64) bool { return a < b })), 0)
					}
				})
			}
		}
	}
}
