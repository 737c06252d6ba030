package nd_test

import (
	"math"
	"slices"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/curand"
	"github.com/gocuda/cuda/nd"
)

// TestViewsMore: Meshgrid and the Diag of a matrix are views, read back
// as NumPy has them.
func TestViewsMore(t *testing.T) {
	s := stream(t)
	x := free(t, must(nd.FromSlice(s, []float32{1, 2, 3}))(t))
	y := free(t, must(nd.FromSlice(s, []float32{10, 20}))(t))
	g := must(nd.Meshgrid(x, y))(t)
	equal(t, g[0], host[float32]{[]float32{1, 1, 2, 2, 3, 3}, []int{3, 2}})
	equal(t, g[1], host[float32]{[]float32{10, 20, 10, 20, 10, 20}, []int{3, 2}})
	m := free(t, must(nd.FromSlice(s, iota[float32](12), 3, 4))(t))
	equal(t, must(nd.Diag(m))(t), host[float32]{[]float32{0, 5, 10}, []int{3}})
	equal(t, must(nd.Diag(m.T()))(t), host[float32]{[]float32{0, 5, 10}, []int{3}})
	equal(t, must(nd.Diag(must(m.Slice(1, nd.None, nd.None, -1))(t)))(t), host[float32]{[]float32{3, 6, 9}, []int{3}})
}

// TestMore: IsClose and AllClose, Diff, Norm, Tile, Repeat, Diag of a
// vector and RandInt, against Go.
func TestMore(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	a := free(t, must(nd.FromSlice(s, []float64{1, 2, math.NaN(), math.Inf(1), 1e-9, 100}))(t))
	b := free(t, must(nd.FromSlice(s, []float64{1 + 1e-9, 2.1, math.NaN(), math.Inf(1), 0, 100.00001}))(t))
	closeTo(t, "IsClose", free(t, must(nd.IsClose(a, b, 1e-5, 1e-8))(t)), host[float64]{[]float64{1, 0, 0, 1, 1, 1}, []int{6}}, 0)
	if ok := must(nd.AllClose(a, a, 1e-5, 1e-8))(t); ok {
		t.Error("AllClose of an array with a NaN and itself is true, want false (NaN is close to nothing)")
	}
	m := free(t, must(nd.FromSlice(s, []float32{1, 4, 9, 16, 25, 36}, 2, 3))(t))
	closeTo(t, "Diff", free(t, must(nd.Diff(m, 1))(t)), host[float64]{[]float64{3, 5, 9, 11}, []int{2, 2}}, 0)
	closeTo(t, "Diff axis 0", free(t, must(nd.Diff(m.T(), 1))(t)), host[float64]{[]float64{15, 21, 27}, []int{3, 1}}, 0)
	closeTo(t, "Norm", free(t, must(nd.Norm(m, nd.Along(1)))(t)), host[float64]{[]float64{math.Sqrt(1 + 16 + 81), math.Sqrt(256 + 625 + 1296)}, []int{2}}, 1e-6)
	small := free(t, must(nd.FromSlice(s, []int32{1, 2, 3, 4}, 2, 2))(t))
	closeTo(t, "Tile", free(t, must(nd.Tile(small, 2, 3))(t)), host[float64]{[]float64{
		1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4, 1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4}, []int{4, 6}}, 0)
	closeTo(t, "Tile more reps", free(t, must(nd.Tile(small, 2, 1, 1))(t)), host[float64]{[]float64{1, 2, 3, 4, 1, 2, 3, 4}, []int{2, 2, 2}}, 0)
	closeTo(t, "Repeat", free(t, must(nd.Repeat(small.T(), 2, 0))(t)), host[float64]{[]float64{1, 3, 1, 3, 2, 4, 2, 4}, []int{4, 2}}, 0)
	closeTo(t, "Diag of a vector", free(t, must(nd.Diag(must(small.Reshape(-1))(t)))(t)), host[float64]{[]float64{
		1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 3, 0, 0, 0, 0, 4}, []int{4, 4}}, 0)
	gen := must(curand.New(s, curand.DefaultRNG, 3))(t)
	defer gen.Close()
	r := free(t, must(nd.RandInt[int64](gen, -3, 4, 10000))(t))
	seen := map[int64]bool{}
	for _, v := range must(r.ToSlice())(t) {
		if v < -3 || v >= 4 {
			t.Fatalf("RandInt gave %d, out of [-3, 4)", v)
		}
		seen[v] = true
	}
	if len(seen) != 7 {
		t.Errorf("RandInt gave %v: want every value of [-3, 4)", slices.Sorted(func(yield func(int64) bool) {
			for v := range seen {
				if !yield(v) {
					return
				}
			}
		}))
	}
}

// TestIsCloseInfinities: an infinity is close only to itself, as IsClose's
// doc and NumPy's isclose say, whatever the tolerances: with rtol > 0 the
// tolerance of an infinite b is infinite, and IsClose(1, +Inf) and
// IsClose(+Inf, -Inf) were true.
func TestIsCloseInfinities(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	inf := math.Inf(1)
	for _, c := range []struct {
		name       string
		a, b       float64
		rtol, atol float64
		want       bool
	}{
		{"1 and +Inf", 1, inf, 1e-5, 1e-8, false},
		{"+Inf and 1", inf, 1, 1e-5, 1e-8, false},
		{"+Inf and -Inf", inf, -inf, 1e-5, 1e-8, false},
		{"-Inf and +Inf", -inf, inf, 1e-5, 1e-8, false},
		{"-Inf and 0 with atol Inf", -inf, 0, 0, inf, false},
		{"+Inf and +Inf", inf, inf, 1e-5, 1e-8, true},
		{"-Inf and -Inf", -inf, -inf, 0, 0, true},
		{"1 and 1.5 with atol Inf", 1, 1.5, 0, inf, true},
		{"1 and 1+1e-9", 1, 1 + 1e-9, 1e-5, 1e-8, true},
		{"NaN and NaN", math.NaN(), math.NaN(), 1, inf, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			check := func(name string, got bool) {
				t.Helper()
				if got != c.want {
					t.Errorf("%s(%v, %v, rtol %v, atol %v) = %v, want %v", name, c.a, c.b, c.rtol, c.atol, got, c.want)
				}
			}
			a64 := free(t, must(nd.FromSlice(s, []float64{c.a}))(t))
			b64 := free(t, must(nd.FromSlice(s, []float64{c.b}))(t))
			check("IsClose[float64]", must(free(t, must(nd.IsClose(a64, b64, c.rtol, c.atol))(t)).Item(0))(t) != 0)
			a32 := free(t, must(nd.FromSlice(s, []float32{float32(c.a)}))(t))
			b32 := free(t, must(nd.FromSlice(s, []float32{float32(c.b)}))(t))
			check("AllClose[float32]", must(nd.AllClose(a32, b32, c.rtol, c.atol))(t))
			a16 := free(t, must(nd.FromSlice(s, []cuda.Float16{cuda.NewFloat16(float32(c.a))}))(t))
			b16 := free(t, must(nd.FromSlice(s, []cuda.Float16{cuda.NewFloat16(float32(c.b))}))(t))
			check("AllClose[Float16]", must(nd.AllClose(a16, b16, c.rtol, c.atol))(t))
		})
	}
}
