package nd_test

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/nd"
)

// The documented promises of the package at their edges, checked as a
// reader of the docs would check them: 0-d arrays, axes of size 0 and 1,
// negative steps, views of views, broadcasting that fails, axes out of
// range, keepdims, empty reductions, ties and NaNs, integer wrapping,
// Reshape's -1, outputs that overlap their inputs, freed memory and
// closed contexts, printing, and the failed array a chain carries. The
// numbers are NumPy's, reasoned out (there is no NumPy here).

// pArr returns an array of the shape holding data, freed when the test
// ends.
func pArr[T nd.Elem](t *testing.T, s *cuda.Stream, data []T, shape ...int) *nd.Array[T] {
	t.Helper()
	if shape == nil {
		shape = []int{len(data)}
	}
	return free(t, must(nd.FromSlice(s, data, shape...))(t))
}

// pWantErr checks that err wraps sentinel and says each of words.
func pWantErr(t *testing.T, err, sentinel error, words ...string) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("got %v, want an error wrapping %v", err, sentinel)
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("error %q does not say %q", err, w)
		}
	}
}

// pHolds checks that a has the shape and holds want.
func pHolds[T nd.Elem](t *testing.T, a *nd.Array[T], shape []int, want []T) {
	t.Helper()
	pCheck(t, must(a.Reshape(a.Shape()...))(t), nil, shape, want) // a view: its Free does nothing
}

// pCheck checks that a has the shape and holds want, NaNs equal to NaNs,
// and frees it.
func pCheck[T nd.Elem](t *testing.T, a *nd.Array[T], err error, shape []int, want []T) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Free()
	if got := a.Shape(); !slices.Equal(got, shape) && !(len(got) == 0 && len(shape) == 0) {
		t.Fatalf("shape %v, want %v", got, shape)
	}
	got := must(a.ToSlice())(t)
	if len(got) != len(want) {
		t.Fatalf("elements %v, want %v", got, want)
	}
	for i := range got {
		g, w := toF64(got[i]), toF64(want[i])
		if g != w && !(math.IsNaN(g) && math.IsNaN(w)) {
			t.Fatalf("elements %v, want %v", got, want)
		}
	}
}

// TestPromiseFreedEmpty: Free closes an array whatever its size: an
// array of no elements, freed, returns errors wrapping cuda.ErrClosed from
// its reading, its Buffer and the operations given it, as one with
// elements does (before, it had no memory to find closed, and they
// succeeded).
func TestPromiseFreedEmpty(t *testing.T) {
	s := stream(t)
	a := must(nd.Zeros[float32](s, 0, 3))(t)
	if err := a.Free(); err != nil {
		t.Fatal(err)
	}
	ok := free(t, must(nd.Zeros[float32](s, 0, 3))(t))
	fi := must(nd.Zeros[int64](s, 0))(t)
	if err := fi.Free(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		err  error
	}{
		{"ToSlice", second(a.ToSlice())},
		{"Buffer", second(a.Buffer())},
		{"Copy", second(a.Copy())},
		{"Add", second(nd.Add(a, a))},
		{"Add with another", second(nd.Add(ok, a))},
		{"AddInto it", nd.AddInto(a, ok, ok)},
		{"Fill", nd.Fill(a, 1)},
		{"Sum", second(nd.Sum(a, nd.Along()))},
		{"Cumsum", second(nd.Cumsum(a, 0))},
		{"Concat", second(nd.Concat([]*nd.Array[float32]{ok, a}, 0))},
		{"Matmul", second(nd.Matmul(a, free(t, must(nd.Zeros[float32](s, 3, 2))(t))))},
		{"Matmul of an empty k", second(nd.Matmul(a.T(), a))},
		{"Max", second(nd.Max(a, nd.Along(1)))},
		{"ArgMax", second(nd.ArgMax(a, 1))},
		{"Softmax", second(nd.Softmax(a, 0))},
		{"Take", second(nd.Take(a, free(t, must(nd.FromSlice(s, []int64{0}))(t)), 1))},
		{"Take of indices", second(nd.Take(free(t, must(nd.Zeros[float32](s, 3))(t)), fi, 0))},
		{"SumInto it", nd.SumInto(a, ok, nd.Along(0).KeepDims())},
		{"CumsumInto it", nd.CumsumInto(a, ok, 0)},
		{"TakeInto it", nd.TakeInto(a, ok, free(t, must(nd.FromSlice(s, []int64{}))(t)), 0)},
		{"ConcatInto it", nd.ConcatInto(a, []*nd.Array[float32]{ok}, 0)},
		{"MatmulInto it", nd.MatmulInto(a.T(), ok.T(), free(t, must(nd.Zeros[float32](s, 0, 0))(t)))},
		{"Expr", second(nd.Lazy(a).Exp().Eval())},
		{"Span", func() error { _, _, err := a.Span(); return err }()},
	} {
		t.Run(c.name, func(t *testing.T) { pWantErr(t, c.err, cuda.ErrClosed) })
	}
	// Its views are still made, as any freed array's (their shapes are
	// the host's), and fail in turn.
	v, err := a.Reshape(3, 0)
	if err != nil {
		t.Fatalf("a view of a freed empty array: %v", err)
	}
	_, err = v.ToSlice()
	pWantErr(t, err, cuda.ErrClosed)
}

// TestPromiseClosedContext: an array whose context was closed returns
// errors wrapping cuda.ErrClosed, never panics.
func TestPromiseClosedContext(t *testing.T) {
	requireKernels(t)
	ctx := must(cuda.NewContext(cudatest.Device(t)))(t)
	s := must(ctx.NewStream())(t)
	a := must(nd.FromSlice(s, iota[float32](6), 2, 3))(t)
	e := must(nd.Zeros[float32](s, 0))(t)
	v := must(a.Slice(1, nd.None, nd.None, -1))(t)
	if err := ctx.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		err  error
	}{
		{"ToSlice", second(a.ToSlice())},
		{"Item", second(a.Item(0, 0))},
		{"view ToSlice", second(v.ToSlice())},
		{"Copy", second(a.Copy())},
		{"Zeros", second(nd.Zeros[float32](s, 2))},
		{"Add", second(nd.Add(a, v))},
		{"Sum", second(nd.Sum(a, nd.Along()))},
		{"Softmax", second(nd.Softmax(a, 0))},
		{"Fill", nd.Fill(a, 1)},
		{"empty Add", second(nd.Add(e, e))},
	} {
		t.Run(c.name, func(t *testing.T) { pWantErr(t, c.err, cuda.ErrClosed) })
	}
	if str := a.String(); !strings.Contains(str, "closed") {
		t.Errorf("String: %q, want the error of the closed context", str)
	}
	if err := a.Free(); err != nil && !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("Free after the context's Close: %v", err)
	}
}

// TestPromiseShapes: 0-d arrays, axes of size 0 and 1, negative steps
// and views of views, each against NumPy's answer.
func TestPromiseShapes(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	nan := float32(math.NaN())
	m := pArr(t, s, iota[float32](12), 3, 4) // [[0 1 2 3] [4 5 6 7] [8 9 10 11]]
	z := pArr(t, s, []float32{}, 0, 3)
	zero := pArr(t, s, []float32{2.5}, []int{}...)
	one := pArr(t, s, []float32{1, 2, 3}, 1, 3)
	for _, c := range []struct {
		name string
		run  func(t *testing.T)
	}{
		// 0-d.
		{"0-d Add", func(t *testing.T) { x, err := nd.Add(zero, zero); pCheck(t, x, err, nil, []float32{5}) }},
		{"0-d + row", func(t *testing.T) {
			x, err := nd.Add(zero, one)
			pCheck(t, x, err, []int{1, 3}, []float32{3.5, 4.5, 5.5})
		}},
		{"0-d Sum", func(t *testing.T) { x, err := nd.Sum(zero, nd.Along()); pCheck(t, x, err, nil, []float32{2.5}) }},
		{"0-d Sum keepdims", func(t *testing.T) {
			x, err := nd.Sum(zero, nd.Along().KeepDims())
			pCheck(t, x, err, nil, []float32{2.5})
		}},
		{"0-d Max", func(t *testing.T) { x, err := nd.Max(zero, nd.Along()); pCheck(t, x, err, nil, []float32{2.5}) }},
		{"0-d Sum axis 0", func(t *testing.T) {
			_, err := nd.Sum(zero, nd.Along(0))
			pWantErr(t, err, cuda.ErrInvalidValue, "axis 0", "0 dimensions")
		}},
		{"0-d Item", func(t *testing.T) {
			if v := must(zero.Item())(t); v != 2.5 {
				t.Fatalf("Item %v", v)
			}
			_, err := zero.Item(0)
			pWantErr(t, err, cuda.ErrInvalidValue)
		}},
		{"0-d Reshape -1", func(t *testing.T) { x, err := zero.Reshape(-1); pCheck(t, x, err, []int{1}, []float32{2.5}) }},
		{"0-d Reshape 1,1", func(t *testing.T) { x, err := zero.Reshape(1, 1); pCheck(t, x, err, []int{1, 1}, []float32{2.5}) }},
		{"0-d T", func(t *testing.T) { pCheck(t, zero.T(), nil, nil, []float32{2.5}) }},
		{"0-d Unsqueeze -1", func(t *testing.T) { x, err := zero.Unsqueeze(-1); pCheck(t, x, err, []int{1}, []float32{2.5}) }},
		{"0-d Squeeze", func(t *testing.T) { x, err := zero.Squeeze(); pCheck(t, x, err, nil, []float32{2.5}) }},
		{"0-d BroadcastTo", func(t *testing.T) {
			x, err := zero.BroadcastTo(2, 2)
			pCheck(t, x, err, []int{2, 2}, []float32{2.5, 2.5, 2.5, 2.5})
		}},
		{"0-d Copy", func(t *testing.T) { x, err := zero.Copy(); pCheck(t, x, err, nil, []float32{2.5}) }},
		{"0-d Softmax", func(t *testing.T) { _, err := nd.Softmax(zero, 0); pWantErr(t, err, cuda.ErrInvalidValue, "axis 0") }},
		{"0-d ArgMax", func(t *testing.T) { _, err := nd.ArgMax(zero, 0); pWantErr(t, err, cuda.ErrInvalidValue, "axis 0") }},
		{"0-d Concat", func(t *testing.T) {
			_, err := nd.Concat([]*nd.Array[float32]{zero, zero}, 0)
			pWantErr(t, err, cuda.ErrInvalidValue, "axis 0")
		}},
		{"0-d Stack", func(t *testing.T) {
			x, err := nd.Stack([]*nd.Array[float32]{zero, zero}, 0)
			pCheck(t, x, err, []int{2}, []float32{2.5, 2.5})
		}},
		{"0-d Matmul", func(t *testing.T) { _, err := nd.Matmul(zero, one); pWantErr(t, err, cuda.ErrInvalidValue, "0-d") }},
		{"0-d Tile", func(t *testing.T) { x, err := nd.Tile(zero, 3); pCheck(t, x, err, []int{3}, []float32{2.5, 2.5, 2.5}) }},
		{"0-d Diff", func(t *testing.T) { _, err := nd.Diff(zero, 0); pWantErr(t, err, cuda.ErrInvalidValue) }},
		{"0-d Lazy", func(t *testing.T) {
			x, err := nd.Lazy(zero).Mul(nd.Const[float32](2)).Eval()
			pCheck(t, x, err, nil, []float32{5})
		}},
		// Axes of size 0.
		{"empty Add broadcast", func(t *testing.T) {
			x, err := nd.Add(z, pArr(t, s, []float32{1, 2, 3}))
			pCheck(t, x, err, []int{0, 3}, []float32{})
		}},
		{"empty Add 1 with 0", func(t *testing.T) {
			x, err := nd.Add(one.T(), z.T())
			pCheck(t, x, err, []int{3, 0}, []float32{})
		}},
		{"empty Sum all", func(t *testing.T) { x, err := nd.Sum(z, nd.Along()); pCheck(t, x, err, nil, []float32{0}) }},
		{"empty Sum axis 0", func(t *testing.T) { x, err := nd.Sum(z, nd.Along(0)); pCheck(t, x, err, []int{3}, []float32{0, 0, 0}) }},
		{"empty Sum axis 1", func(t *testing.T) { x, err := nd.Sum(z, nd.Along(1)); pCheck(t, x, err, []int{0}, []float32{}) }},
		{"empty Sum keepdims", func(t *testing.T) {
			x, err := nd.Sum(z, nd.Along(0).KeepDims())
			pCheck(t, x, err, []int{1, 3}, []float32{0, 0, 0})
		}},
		{"empty Prod", func(t *testing.T) { x, err := nd.Prod(z, nd.Along(0)); pCheck(t, x, err, []int{3}, []float32{1, 1, 1}) }},
		{"empty Mean", func(t *testing.T) { x, err := nd.Mean(z, nd.Along()); pCheck(t, x, err, nil, []float32{nan}) }},
		{"empty Var", func(t *testing.T) {
			x, err := nd.Var(z, nd.Along(0))
			pCheck(t, x, err, []int{3}, []float32{nan, nan, nan})
		}},
		{"empty Std", func(t *testing.T) { x, err := nd.Std(z, nd.Along()); pCheck(t, x, err, nil, []float32{nan}) }},
		{"empty Norm", func(t *testing.T) { x, err := nd.Norm(z, nd.Along()); pCheck(t, x, err, nil, []float32{0}) }},
		{"empty All", func(t *testing.T) { x, err := nd.All(z, nd.Along()); pCheck(t, x, err, nil, []nd.Bool{1}) }},
		{"empty Any", func(t *testing.T) { x, err := nd.Any(z, nd.Along()); pCheck(t, x, err, nil, []nd.Bool{0}) }},
		{"empty Max", func(t *testing.T) {
			_, err := nd.Max(z, nd.Along())
			pWantErr(t, err, cuda.ErrInvalidValue, "[0 3]", "empty")
		}},
		{"empty Min axis 0", func(t *testing.T) { _, err := nd.Min(z, nd.Along(0)); pWantErr(t, err, cuda.ErrInvalidValue, "empty") }},
		{"empty Max axis 1", func(t *testing.T) { x, err := nd.Max(z, nd.Along(1)); pCheck(t, x, err, []int{0}, []float32{}) }},
		{"empty ArgMax axis 1", func(t *testing.T) { x, err := nd.ArgMax(z, 1); pCheck(t, x, err, []int{0}, []int64{}) }},
		{"empty ArgMax axis 0", func(t *testing.T) { _, err := nd.ArgMax(z, 0); pWantErr(t, err, cuda.ErrInvalidValue, "empty") }},
		{"empty Softmax", func(t *testing.T) { x, err := nd.Softmax(z, 0); pCheck(t, x, err, []int{0, 3}, []float32{}) }},
		{"empty Cumsum", func(t *testing.T) { x, err := nd.Cumsum(z, 0); pCheck(t, x, err, []int{0, 3}, []float32{}) }},
		{"empty Concat", func(t *testing.T) {
			x, err := nd.Concat([]*nd.Array[float32]{z, must(m.Slice(1, 1, nd.None, 1))(t), z}, 0)
			pCheck(t, x, err, []int{3, 3}, []float32{1, 2, 3, 5, 6, 7, 9, 10, 11})
			x, err = nd.Concat([]*nd.Array[float32]{z, z}, 0)
			pCheck(t, x, err, []int{0, 3}, []float32{})
		}},
		{"empty Take", func(t *testing.T) {
			x, err := nd.Take(m, pArr(t, s, []int64{}), 1)
			pCheck(t, x, err, []int{3, 0}, []float32{})
		}},
		{"Take from an empty axis", func(t *testing.T) {
			x, err := nd.Take(z, pArr(t, s, []int64{0, -1}), 0)
			pCheck(t, x, err, []int{2, 3}, make([]float32, 6))
		}},
		{"empty Matmul", func(t *testing.T) {
			x, err := nd.Matmul(z, pArr(t, s, iota[float32](6), 3, 2))
			pCheck(t, x, err, []int{0, 2}, []float32{})
		}},
		{"Matmul of an empty inner axis", func(t *testing.T) {
			x, err := nd.Matmul(z.T(), z)
			pCheck(t, x, err, []int{3, 3}, make([]float32, 9))
		}},
		{"empty Diff", func(t *testing.T) { x, err := nd.Diff(z, 0); pCheck(t, x, err, []int{0, 3}, []float32{}) }},
		{"empty Reshape -1", func(t *testing.T) { x, err := z.Reshape(-1, 3); pCheck(t, x, err, []int{0, 3}, []float32{}) }},
		{"empty Reshape -1 0", func(t *testing.T) { _, err := z.Reshape(-1, 0); pWantErr(t, err, cuda.ErrInvalidValue) }},
		{"empty Linspace", func(t *testing.T) {
			x, err := nd.Linspace[float32](s, 0, 1, 0)
			pCheck(t, x, err, []int{0}, []float32{})
		}},
		{"empty Arange", func(t *testing.T) { x, err := nd.Arange[float32](s, 3, 0, 1); pCheck(t, x, err, []int{0}, []float32{}) }},
		{"empty Eye", func(t *testing.T) { x, err := nd.Eye[float32](s, 0, 3); pCheck(t, x, err, []int{0, 3}, []float32{}) }},
		{"empty Diag", func(t *testing.T) {
			x, err := nd.Diag(pArr(t, s, []float32{}))
			pCheck(t, x, err, []int{0, 0}, []float32{})
		}},
		{"Repeat 0", func(t *testing.T) { x, err := nd.Repeat(one, 0, 1); pCheck(t, x, err, []int{1, 0}, []float32{}) }},
		{"Tile 0", func(t *testing.T) { x, err := nd.Tile(one, 2, 0); pCheck(t, x, err, []int{2, 0}, []float32{}) }},
		// Axes of size 1.
		{"size-1 Sum", func(t *testing.T) {
			x, err := nd.Sum(one, nd.Along(0))
			pCheck(t, x, err, []int{3}, []float32{1, 2, 3})
		}},
		{"size-1 Softmax", func(t *testing.T) { x, err := nd.Softmax(one, 0); pCheck(t, x, err, []int{1, 3}, []float32{1, 1, 1}) }},
		{"size-1 Cumsum", func(t *testing.T) { x, err := nd.Cumsum(one, 0); pCheck(t, x, err, []int{1, 3}, []float32{1, 2, 3}) }},
		{"size-1 ArgMax", func(t *testing.T) { x, err := nd.ArgMax(one, 0); pCheck(t, x, err, []int{3}, []int64{0, 0, 0}) }},
		{"size-1 Matmul", func(t *testing.T) {
			x, err := nd.Matmul(one.T(), one)
			pCheck(t, x, err, []int{3, 3}, []float32{1, 2, 3, 2, 4, 6, 3, 6, 9})
		}},
		{"size-1 Squeeze", func(t *testing.T) {
			_, err := one.Squeeze(1)
			pWantErr(t, err, cuda.ErrInvalidValue, "size 1")
		}},
		// Negative steps and views of views.
		{"reversed rows", func(t *testing.T) {
			x, err := m.Slice(0, nd.None, nd.None, -1)
			pCheck(t, x, err, []int{3, 4}, []float32{8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3})
		}},
		{"view of a view", func(t *testing.T) {
			r := must(m.Slice(1, nd.None, nd.None, -1))(t) // columns 3 2 1 0
			v := must(r.Slice(1, 1, nd.None, 2))(t)        // columns 2 0
			w := must(v.Slice(0, -1, 0, -2))(t)            // rows 2, then not 0 (stop excluded)
			pCheck(t, w, nil, []int{1, 2}, []float32{10, 8})
			x, err := nd.Add(w, w)
			pCheck(t, x, err, []int{1, 2}, []float32{20, 16})
		}},
		{"reversed Sum", func(t *testing.T) {
			r := must(m.Slice(1, nd.None, nd.None, -2))(t) // columns 3 1
			x, err := nd.Sum(r, nd.Along(1))
			pCheck(t, x, err, []int{3}, []float32{4, 12, 20})
		}},
		{"reversed Cumsum", func(t *testing.T) {
			r := must(must(m.Index(0, 1))(t).Slice(0, nd.None, nd.None, -1))(t) // 7 6 5 4
			x, err := nd.Cumsum(r, 0)
			pCheck(t, x, err, []int{4}, []float32{7, 13, 18, 22})
		}},
		{"reversed ArgMax", func(t *testing.T) {
			r := must(m.Slice(0, nd.None, nd.None, -1))(t)
			x, err := nd.ArgMax(r, 0)
			pCheck(t, x, err, []int{4}, []int64{0, 0, 0, 0})
		}},
		{"reversed Matmul", func(t *testing.T) {
			r := must(m.Slice(0, nd.None, nd.None, -1))(t) // rows 2 1 0
			v := pArr(t, s, []float32{1, 0, 0, 0}, 4, 1)   // the first column
			x, err := nd.Matmul(r, v)
			pCheck(t, x, err, []int{3, 1}, []float32{8, 4, 0})
		}},
		{"reversed Take", func(t *testing.T) {
			r := must(m.Slice(1, nd.None, nd.None, -1))(t)
			x, err := nd.Take(r, pArr(t, s, []int64{0, -1}), 1)
			pCheck(t, x, err, []int{3, 2}, []float32{3, 0, 7, 4, 11, 8})
		}},
		{"reversed Concat", func(t *testing.T) {
			r := must(m.Slice(0, nd.None, nd.None, -1))(t)
			x, err := nd.Concat([]*nd.Array[float32]{r, must(m.Slice(0, 0, 1, 1))(t)}, 0)
			pCheck(t, x, err, []int{4, 4}, []float32{8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3, 0, 1, 2, 3})
		}},
		{"reversed Reshape", func(t *testing.T) {
			r := must(m.Slice(1, nd.None, nd.None, -1))(t)
			x, err := r.Reshape(-1)
			pCheck(t, x, err, []int{12}, []float32{3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8})
		}},
		{"transposed Reshape", func(t *testing.T) {
			x, err := m.T().Reshape(2, -1)
			pCheck(t, x, err, []int{2, 6}, []float32{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11})
		}},
		{"Reshape two -1", func(t *testing.T) {
			_, err := m.Reshape(-1, -1)
			pWantErr(t, err, cuda.ErrInvalidValue, "more than one -1")
		}},
		{"Reshape -1 not dividing", func(t *testing.T) { _, err := m.Reshape(-1, 5); pWantErr(t, err, cuda.ErrInvalidValue, "12") }},
		{"Reshape -2", func(t *testing.T) { _, err := m.Reshape(-2, -6); pWantErr(t, err, cuda.ErrInvalidValue, "negative") }},
		{"Diag of a reversed view", func(t *testing.T) {
			r := must(m.Slice(0, nd.None, nd.None, -1))(t)
			x, err := nd.Diag(r)
			pCheck(t, x, err, []int{3}, []float32{8, 5, 2})
		}},
		{"negative axes", func(t *testing.T) {
			x, err := nd.Cumsum(m, -2)
			pCheck(t, x, err, []int{3, 4}, []float32{0, 1, 2, 3, 4, 6, 8, 10, 12, 15, 18, 21})
			i, err := nd.ArgMin(m, -2)
			pCheck(t, i, err, []int{4}, []int64{0, 0, 0, 0})
			x, err = nd.Softmax(pArr(t, s, []float32{0, 0, 0, 0}, 2, 2), -2)
			pCheck(t, x, err, []int{2, 2}, []float32{0.5, 0.5, 0.5, 0.5})
			x, err = nd.Stack([]*nd.Array[float32]{one, one}, -1)
			pCheck(t, x, err, []int{1, 3, 2}, []float32{1, 1, 2, 2, 3, 3})
			x, err = m.Permute(-1, 0)
			pCheck(t, x, err, []int{4, 3}, []float32{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11})
			x, err = nd.Take(m, pArr(t, s, []int64{-1}), -1)
			pCheck(t, x, err, []int{3, 1}, []float32{3, 7, 11})
			x, err = nd.Concat([]*nd.Array[float32]{one, one}, -1)
			pCheck(t, x, err, []int{1, 6}, []float32{1, 2, 3, 1, 2, 3})
		}},
		{"Expand keeps -1", func(t *testing.T) {
			x, err := one.Expand(2, -1, -1)
			pCheck(t, x, err, []int{2, 1, 3}, []float32{1, 2, 3, 1, 2, 3})
		}},
		{"Into a strided dst along an axis", func(t *testing.T) {
			dst := pArr(t, s, make([]float32, 12), 4, 3)
			if err := nd.CumsumInto(dst.T(), m, 0); err != nil {
				t.Fatal(err)
			}
			pHolds(t, dst, []int{4, 3}, []float32{0, 4, 12, 1, 6, 15, 2, 8, 18, 3, 10, 21})
			if err := nd.SumInto(must(dst.Slice(0, 0, 1, 1))(t), m.T(), nd.Along(0).KeepDims()); err != nil {
				t.Fatal(err)
			}
			pHolds(t, dst, []int{4, 3}, []float32{6, 22, 38, 1, 6, 15, 2, 8, 18, 3, 10, 21})
		}},
		{"Split negative", func(t *testing.T) {
			parts, err := nd.Split(m, []int{-3, 3}, 1)
			if err != nil {
				t.Fatal(err)
			}
			pCheck(t, parts[0], nil, []int{3, 1}, []float32{0, 4, 8})
			pCheck(t, parts[1], nil, []int{3, 2}, []float32{1, 2, 5, 6, 9, 10})
			pCheck(t, parts[2], nil, []int{3, 1}, []float32{3, 7, 11})
		}},
	} {
		t.Run(c.name, c.run)
	}
}

// TestPromiseNumbers: ties, NaNs, integer wrapping and division, Cast's
// rounding and truth values, each as the docs and NumPy say.
func TestPromiseNumbers(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	// long returns n values of v with w at the indices given.
	long := func(n int, v, w float32, at ...int) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = v
		}
		for _, i := range at {
			out[i] = w
		}
		return out
	}
	for _, c := range []struct {
		name string
		run  func(t *testing.T)
	}{
		// ArgMax and ArgMin: the first of equals, or the first NaN.
		{"ArgMax ties", func(t *testing.T) {
			x, err := nd.ArgMax(pArr(t, s, []float32{1, 3, 3, 2}), 0)
			pCheck(t, x, err, nil, []int64{1})
		}},
		{"ArgMin ties", func(t *testing.T) {
			x, err := nd.ArgMin(pArr(t, s, []float32{2, 1, 3, 1}), 0)
			pCheck(t, x, err, nil, []int64{1})
		}},
		{"ArgMax ties rows", func(t *testing.T) {
			x, err := nd.ArgMax(pArr(t, s, []float32{1, 3, 3, 2, 5, 5, 5, 5}, 2, 4), 1)
			pCheck(t, x, err, []int{2}, []int64{1, 0})
		}},
		{"ArgMax ties columns", func(t *testing.T) {
			x, err := nd.ArgMax(pArr(t, s, []float32{1, 7, 3, 7, 3, 0}, 3, 2), 0)
			pCheck(t, x, err, []int{2}, []int64{1, 0})
		}},
		{"ArgMax NaN", func(t *testing.T) {
			x, err := nd.ArgMax(pArr(t, s, []float32{1, nan, inf, nan}), 0)
			pCheck(t, x, err, nil, []int64{1})
		}},
		{"ArgMin NaN rows", func(t *testing.T) {
			x, err := nd.ArgMin(pArr(t, s, []float32{-inf, 1, nan, nan, 0, 0}, 2, 3), 1)
			pCheck(t, x, err, []int{2}, []int64{2, 0})
		}},
		{"ArgMax ties long", func(t *testing.T) {
			x, err := nd.ArgMax(pArr(t, s, long(100003, 0, 5, 70001, 1234, 99999)), 0)
			pCheck(t, x, err, nil, []int64{1234})
		}},
		{"ArgMax all equal long", func(t *testing.T) {
			x, err := nd.ArgMax(pArr(t, s, long(100003, 2, 2)), 0)
			pCheck(t, x, err, nil, []int64{0})
		}},
		{"ArgMin ties long", func(t *testing.T) {
			x, err := nd.ArgMin(pArr(t, s, long(65537, 0, -1, 65536, 40000)), -1)
			pCheck(t, x, err, nil, []int64{40000})
		}},
		{"ArgMax NaN long", func(t *testing.T) {
			x, err := nd.ArgMax(pArr(t, s, long(100003, 0, nan, 99000, 50001)), 0)
			pCheck(t, x, err, nil, []int64{50001})
		}},
		{"ArgMax halves ties long", func(t *testing.T) {
			h := make([]cuda.Float16, 5000)
			h[4000], h[17] = cuda.NewFloat16(1), cuda.NewFloat16(1)
			x, err := nd.ArgMax(pArr(t, s, h), 0)
			pCheck(t, x, err, nil, []int64{17})
		}},
		{"ArgMax int ties long", func(t *testing.T) {
			h := make([]int32, 5000)
			h[4000], h[17], h[4999] = 9, 9, 9
			x, err := nd.ArgMax(pArr(t, s, h), 0)
			pCheck(t, x, err, nil, []int64{17})
		}},
		// Max and Min: a NaN if there is one, on every path.
		{"Max NaN", func(t *testing.T) {
			x, err := nd.Max(pArr(t, s, []float32{1, nan, 3}), nd.Along())
			pCheck(t, x, err, nil, []float32{nan})
		}},
		{"Max NaN long", func(t *testing.T) {
			x, err := nd.Max(pArr(t, s, long(100003, 1, nan, 77777)), nd.Along())
			pCheck(t, x, err, nil, []float32{nan})
		}},
		{"Min NaN rows", func(t *testing.T) {
			x, err := nd.Min(pArr(t, s, long(3000, 1, nan, 2999), 3, 1000), nd.Along(1))
			pCheck(t, x, err, []int{3}, []float32{1, 1, nan})
		}},
		{"Max NaN columns", func(t *testing.T) {
			x, err := nd.Max(pArr(t, s, long(3000, 1, nan, 1), 1000, 3), nd.Along(0))
			pCheck(t, x, err, []int{3}, []float32{1, nan, 1})
		}},
		{"Max NaN middle", func(t *testing.T) {
			x, err := nd.Max(pArr(t, s, long(2*500*3, 1, nan, 3*250+2), 2, 500, 3), nd.Along(1))
			pCheck(t, x, err, []int{2, 3}, []float32{1, 1, nan, 1, 1, 1})
		}},
		{"Max NaN first", func(t *testing.T) {
			x, err := nd.Max(pArr(t, s, []float32{nan, 1, 3}), nd.Along())
			pCheck(t, x, err, nil, []float32{nan})
		}},
		{"Min NaN last", func(t *testing.T) {
			x, err := nd.Min(pArr(t, s, []float32{1, -inf, nan}), nd.Along())
			pCheck(t, x, err, nil, []float32{nan})
		}},
		{"Maximum NaN", func(t *testing.T) {
			a := pArr(t, s, []float32{nan, 1, nan})
			b := pArr(t, s, []float32{1, nan, nan})
			x, err := nd.Maximum(a, b)
			pCheck(t, x, err, []int{3}, []float32{nan, nan, nan})
			x, err = nd.Minimum(a, b)
			pCheck(t, x, err, []int{3}, []float32{nan, nan, nan})
		}},
		{"Relu Sign Clip NaN", func(t *testing.T) {
			a := pArr(t, s, []float32{nan, -2, float32(math.Copysign(0, -1)), 3})
			x, err := nd.Relu(a)
			pCheck(t, x, err, []int{4}, []float32{nan, 0, 0, 3})
			x, err = nd.Sign(a)
			pCheck(t, x, err, []int{4}, []float32{nan, -1, 0, 1})
			x, err = nd.Clip(a, -1, 1)
			pCheck(t, x, err, []int{4}, []float32{nan, -1, 0, 1})
			x, err = nd.Clip(a, 1, -1) // lo > hi: hi everywhere, as NumPy's
			pCheck(t, x, err, []int{4}, []float32{nan, -1, -1, -1})
		}},
		{"Equal IsClose NaN", func(t *testing.T) {
			a := pArr(t, s, []float32{nan, inf, 1})
			x, err := nd.Equal(a, a)
			pCheck(t, x, err, []int{3}, []nd.Bool{0, 1, 1})
			x, err = nd.IsClose(a, a, 1e-5, 1e-8)
			pCheck(t, x, err, []int{3}, []nd.Bool{0, 1, 1})
			x, err = nd.IsNaN(a)
			pCheck(t, x, err, []int{3}, []nd.Bool{1, 0, 0})
		}},
		{"Sum NaN", func(t *testing.T) {
			x, err := nd.Sum(pArr(t, s, []float32{1, nan, 2}), nd.Along())
			pCheck(t, x, err, nil, []float32{nan})
		}},
		// Integers wrap; division truncates, by zero gives 0, and the
		// most negative value divided by -1 is itself.
		{"int8 Add wraps", func(t *testing.T) {
			x, err := nd.Add(pArr(t, s, []int8{127, -128}), pArr(t, s, []int8{1, -1}))
			pCheck(t, x, err, []int{2}, []int8{-128, 127})
		}},
		{"int8 Mul wraps", func(t *testing.T) {
			x, err := nd.Mul(pArr(t, s, []int8{64, -128}), nd.Scalar[int8](2))
			pCheck(t, x, err, []int{2}, []int8{-128, 0})
		}},
		{"int32 Div", func(t *testing.T) {
			a := pArr(t, s, []int32{7, -7, 7, math.MinInt32, 5, 0})
			b := pArr(t, s, []int32{2, 2, 0, -1, -1, 0})
			x, err := nd.Div(a, b)
			pCheck(t, x, err, []int{6}, []int32{3, -3, 0, math.MinInt32, -5, 0})
		}},
		{"int64 Div", func(t *testing.T) {
			a := pArr(t, s, []int64{math.MinInt64, -9, 9})
			b := pArr(t, s, []int64{-1, 0, -4})
			x, err := nd.Div(a, b)
			pCheck(t, x, err, []int{3}, []int64{math.MinInt64, 0, -2})
		}},
		{"int8 Div", func(t *testing.T) {
			x, err := nd.Div(pArr(t, s, []int8{-128, -128, 100}), pArr(t, s, []int8{-1, 0, -3}))
			pCheck(t, x, err, []int{3}, []int8{-128, 0, -33})
		}},
		{"uint Div", func(t *testing.T) {
			x, err := nd.Div(pArr(t, s, []uint32{7, 7, math.MaxUint32}), pArr(t, s, []uint32{2, 0, math.MaxUint32}))
			pCheck(t, x, err, []int{3}, []uint32{3, 0, 1})
		}},
		{"Lazy int Div", func(t *testing.T) {
			x, err := nd.Lazy(pArr(t, s, []int16{math.MinInt16, 5})).Div(nd.Lazy(pArr(t, s, []int16{-1, 0}))).Eval()
			pCheck(t, x, err, []int{2}, []int16{math.MinInt16, 0})
		}},
		{"Neg Abs wrap", func(t *testing.T) {
			a := pArr(t, s, []int8{-128, -5, 5})
			x, err := nd.Neg(a)
			pCheck(t, x, err, []int{3}, []int8{-128, 5, -5})
			x, err = nd.Abs(a)
			pCheck(t, x, err, []int{3}, []int8{-128, 5, 5})
			u, err := nd.Neg(pArr(t, s, []uint8{1, 0, 255}))
			pCheck(t, u, err, []int{3}, []uint8{255, 0, 1})
		}},
		{"int Pow", func(t *testing.T) {
			a := pArr(t, s, []int32{2, 2, -1, 1, 0, 3, -2})
			b := pArr(t, s, []int32{10, -1, -3, -5, 0, 0, 3})
			x, err := nd.Pow(a, b)
			pCheck(t, x, err, []int{7}, []int32{1024, 0, -1, 1, 1, 1, -8})
			y, err := nd.Pow(pArr(t, s, []int8{2, 3}), pArr(t, s, []int8{7, 5}))
			pCheck(t, y, err, []int{2}, []int8{-128, -13}) // 128 and 243 wrap
		}},
		{"int8 Sum wraps to T", func(t *testing.T) {
			x, err := nd.Sum(pArr(t, s, []int8{100, 100, -56}), nd.Along())
			pCheck(t, x, err, nil, []int8{-112})
			x, err = nd.Sum(pArr(t, s, []int8{100, 100, 100, -100}), nd.Along()) // 200 in 64 bits, then -56
			pCheck(t, x, err, nil, []int8{-56})
		}},
		{"uint8 Cumsum wraps", func(t *testing.T) {
			x, err := nd.Cumsum(pArr(t, s, []uint8{200, 100, 1}), 0)
			pCheck(t, x, err, []int{3}, []uint8{200, 44, 45})
		}},
		{"uint64 Sum", func(t *testing.T) {
			x, err := nd.Sum(pArr(t, s, []uint64{math.MaxUint64, 2}), nd.Along())
			pCheck(t, x, err, nil, []uint64{1})
		}},
		{"int Prod", func(t *testing.T) {
			x, err := nd.Prod(pArr(t, s, []int16{256, 256, 3}), nd.Along())
			pCheck(t, x, err, nil, []int16{0})
		}},
		{"Bool Sum Prod Cumsum", func(t *testing.T) {
			b := make([]nd.Bool, 300)
			for i := range b {
				b[i] = 1
			}
			x, err := nd.Sum(pArr(t, s, b), nd.Along())
			pCheck(t, x, err, nil, []nd.Bool{1})
			x, err = nd.Prod(pArr(t, s, []nd.Bool{2, 2, 0}), nd.Along())
			pCheck(t, x, err, nil, []nd.Bool{0})
			x, err = nd.Prod(pArr(t, s, []nd.Bool{2, 2}), nd.Along())
			pCheck(t, x, err, nil, []nd.Bool{1})
			x, err = nd.Cumsum(pArr(t, s, []nd.Bool{0, 2, 0}), 0)
			pCheck(t, x, err, []int{3}, []nd.Bool{0, 1, 1})
		}},
		// Add and Mul of Bools: a logical or and and, as NumPy's and as
		// Sum's and Prod's folds, fused or not; uint8's the bytes', the
		// same C type, after Bool's kernels of the same shape.
		{"Bool Add Mul", func(t *testing.T) {
			a, b := pArr(t, s, []nd.Bool{1, 1, 0, 2}), pArr(t, s, []nd.Bool{1, 0, 0, 2})
			x, err := nd.Add(a, b)
			pCheck(t, x, err, []int{4}, []nd.Bool{1, 1, 0, 1})
			x, err = nd.Mul(a, b)
			pCheck(t, x, err, []int{4}, []nd.Bool{1, 0, 0, 1})
			x, err = nd.Lazy(a).Add(nd.Lazy(b)).Mul(nd.Lazy(a)).Eval()
			pCheck(t, x, err, []int{4}, []nd.Bool{1, 1, 0, 1})
			u, v := pArr(t, s, []uint8{1, 1, 0, 2}), pArr(t, s, []uint8{1, 0, 0, 2})
			y, err := nd.Add(u, v)
			pCheck(t, y, err, []int{4}, []uint8{2, 1, 0, 4})
			y, err = nd.Lazy(u).Add(nd.Lazy(v)).Mul(nd.Lazy(u)).Eval()
			pCheck(t, y, err, []int{4}, []uint8{2, 1, 0, 8})
		}},
		// Cast: halves rounded to nearest, ties to even; to and from Bool
		// as truth values.
		{"Cast float16 ties", func(t *testing.T) {
			negZero := float32(math.Copysign(0, -1))
			a := pArr(t, s, []float32{1 + 1.0/2048, 1 + 3.0/2048, 65520, negZero})
			x, err := nd.Cast[cuda.Float16](a)
			want := []cuda.Float16{cuda.NewFloat16(1), cuda.NewFloat16(1 + 4.0/2048), cuda.NewFloat16(float32(math.Inf(1))), cuda.NewFloat16(negZero)}
			pCheck(t, x, err, []int{4}, want)
		}},
		{"Cast bfloat16 ties", func(t *testing.T) {
			a := pArr(t, s, []float32{1 + 1.0/256, 1 + 3.0/256})
			x, err := nd.Cast[cuda.BFloat16](a)
			pCheck(t, x, err, []int{2}, []cuda.BFloat16{cuda.NewBFloat16(1), cuda.NewBFloat16(1 + 4.0/256)})
		}},
		{"Cast truncates", func(t *testing.T) {
			x, err := nd.Cast[int32](pArr(t, s, []float32{2.9, -2.9, 0.5, -0.5}))
			pCheck(t, x, err, []int{4}, []int32{2, -2, 0, 0})
		}},
		{"Cast to Bool", func(t *testing.T) {
			x, err := nd.Cast[nd.Bool](pArr(t, s, []float32{0.5, nan, 0, float32(math.Copysign(0, -1))}))
			pCheck(t, x, err, []int{4}, []nd.Bool{1, 1, 0, 0})
			y, err := nd.Cast[nd.Bool](pArr(t, s, []int16{256, 0, -1}))
			pCheck(t, y, err, []int{3}, []nd.Bool{1, 0, 1})
		}},
		{"Cast from Bool", func(t *testing.T) {
			x, err := nd.Cast[float32](pArr(t, s, []nd.Bool{2, 0, 1}))
			pCheck(t, x, err, []int{3}, []float32{1, 0, 1})
		}},
		{"All Any of nonzero", func(t *testing.T) {
			a := pArr(t, s, []float32{0.5, nan, -1, 0}, 2, 2)
			x, err := nd.All(a, nd.Along(1))
			pCheck(t, x, err, []int{2}, []nd.Bool{1, 0})
			x, err = nd.Any(a, nd.Along(0).KeepDims())
			pCheck(t, x, err, []int{1, 2}, []nd.Bool{1, 1})
		}},
		{"Where nonzero mask", func(t *testing.T) {
			x, err := nd.Where(pArr(t, s, []nd.Bool{2, 0, 255}), pArr(t, s, []float32{1, 2, 3}), nd.Scalar[float32](-1))
			pCheck(t, x, err, []int{3}, []float32{1, -1, 3})
		}},
		{"Round halves to even", func(t *testing.T) {
			x, err := nd.Round(pArr(t, s, []float32{0.5, 1.5, 2.5, -0.5, -1.5}))
			pCheck(t, x, err, []int{5}, []float32{0, 2, 2, 0, -2})
		}},
		{"Mean Var Std", func(t *testing.T) {
			a := pArr(t, s, []float32{1, 2, 3, 4, 5, 6}, 2, 3)
			x, err := nd.Var(a, nd.Along(1).KeepDims())
			pCheck(t, x, err, []int{2, 1}, []float32{2.0 / 3, 2.0 / 3})
			x, err = nd.Mean(a, nd.Along(-2))
			pCheck(t, x, err, []int{3}, []float32{2.5, 3.5, 4.5})
		}},
		{"Softmax of -inf and +inf", func(t *testing.T) {
			x, err := nd.Softmax(pArr(t, s, []float32{0, -inf, 0}), 0)
			pCheck(t, x, err, []int{3}, []float32{0.5, 0, 0.5})
		}},
		{"LogSoftmax", func(t *testing.T) {
			x, err := nd.LogSoftmax(pArr(t, s, []float32{0, 0}), -1)
			pCheck(t, x, err, []int{2}, []float32{float32(-math.Ln2), float32(-math.Ln2)})
		}},
		{"Arange negative step", func(t *testing.T) {
			x, err := nd.Arange[int32](s, 5, 0, -2)
			pCheck(t, x, err, []int{3}, []int32{5, 3, 1})
		}},
		{"Linspace int floors", func(t *testing.T) {
			// NumPy 2: np.linspace(-10, 0, 4, dtype=int) is [-10, -7, -4, 0]
			// (rounded down), not the truncation -6 and -3.
			x, err := nd.Linspace[int32](s, -10, 0, 4)
			pCheck(t, x, err, []int{4}, []int32{-10, -7, -4, 0})
			x, err = nd.Linspace[int32](s, 0, 10, 4)
			pCheck(t, x, err, []int{4}, []int32{0, 3, 6, 10})
			x, err = nd.Linspace[int32](s, 0.5, -0.5, 1)
			pCheck(t, x, err, []int{1}, []int32{0})
			_, err = nd.Linspace[uint8](s, -0.5, 3, 2) // floor(-0.5) is -1, not a uint8
			pWantErr(t, err, cuda.ErrInvalidValue, "uint8")
		}},
		{"Linspace one", func(t *testing.T) {
			x, err := nd.Linspace[float32](s, 3, 9, 1)
			pCheck(t, x, err, []int{1}, []float32{3})
		}},
		{"Take negative and out of range", func(t *testing.T) {
			x, err := nd.Take(pArr(t, s, []float32{10, 20, 30}), pArr(t, s, []int64{-1, -3, 3, -4, 0}, 5), 0)
			pCheck(t, x, err, []int{5}, []float32{30, 10, 0, 0, 10})
		}},
		{"Take 0-d index", func(t *testing.T) {
			m := pArr(t, s, iota[float32](6), 2, 3)
			x, err := nd.Take(m, pArr(t, s, []int64{-1}, []int{}...), 1)
			pCheck(t, x, err, []int{2}, []float32{2, 5})
		}},
	} {
		t.Run(c.name, c.run)
	}
}

// TestPromiseErrors: shapes that do not broadcast (the error prints
// both), axes out of range (negative ones counted from the end), keepdims,
// and the words of the errors.
func TestPromiseErrors(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	a := pArr(t, s, iota[float32](6), 2, 3)
	b := pArr(t, s, iota[float32](4), 4)
	c := pArr(t, s, iota[float32](24), 2, 3, 4)
	idx := pArr(t, s, []int64{0})
	mask := pArr(t, s, []nd.Bool{1, 0, 1, 1}, 4)
	both := []string{"[2 3]", "[4]"}
	for _, tt := range []struct {
		name  string
		err   error
		words []string
	}{
		{"Add", second(nd.Add(a, b)), both},
		{"Add reversed", second(nd.Add(b, a)), both},
		{"Where", second(nd.Where(mask, a, a)), both},
		{"Lazy", second(nd.Lazy(a).Mul(nd.Lazy(b)).Eval()), both},
		{"AddInto operands", nd.AddInto(a, a, b), both},
		{"AddInto dst", nd.AddInto(must(a.Slice(1, 0, 2, 1))(t), a, a), []string{"[2 2]", "[2 3]"}},
		{"CopyInto", nd.CopyInto(a, b), []string{"[4]", "[2 3]"}},
		{"BroadcastTo", second(a.BroadcastTo(4, 3, 2)), []string{"[2 3]", "[4 3 2]"}},
		{"Matmul", second(nd.Matmul(a, a)), []string{"[2 3]", "(3)", "(2)"}},
		{"Matmul batch", second(nd.Matmul(c, pArr(t, s, iota[float32](60), 5, 4, 3))), []string{"[2 3 4]", "[5 4 3]"}},
		{"Concat", second(nd.Concat([]*nd.Array[float32]{a, a.T()}, 0)), []string{"[3 2]", "[2 3]"}},
		{"Stack", second(nd.Stack([]*nd.Array[float32]{a, a.T()}, 0)), []string{"[3 2]", "[2 3]"}},
		{"Sum axis", second(nd.Sum(a, nd.Along(2))), []string{"axis 2", "2 dimensions"}},
		{"Sum negative axis", second(nd.Sum(a, nd.Along(-3))), []string{"axis -3", "2 dimensions"}},
		{"Sum axis twice", second(nd.Sum(a, nd.Along(1, -1))), []string{"twice"}},
		{"Softmax axis", second(nd.Softmax(a, -3)), []string{"axis -3"}},
		{"Cumsum axis", second(nd.Cumsum(a, 2)), []string{"axis 2"}},
		{"ArgMax axis", second(nd.ArgMax(a, 5)), []string{"axis 5"}},
		{"Take axis", second(nd.Take(a, idx, -3)), []string{"axis -3"}},
		{"Concat axis", second(nd.Concat([]*nd.Array[float32]{a, a}, 2)), []string{"axis 2"}},
		{"Stack axis", second(nd.Stack([]*nd.Array[float32]{a, a}, 3)), []string{"axis 3"}},
		{"Stack negative axis", second(nd.Stack([]*nd.Array[float32]{a, a}, -4)), []string{"axis -4"}},
		{"Split axis", second(nd.Split(a, []int{1}, 2)), []string{"axis 2"}},
		{"Repeat axis", second(nd.Repeat(a, 2, -3)), []string{"axis -3"}},
		{"Diff axis", second(nd.Diff(a, 2)), []string{"axis 2"}},
		{"Index axis", second(a.Index(-3, 0)), []string{"axis -3"}},
		{"Index", second(a.Index(1, 3)), []string{"index 3"}},
		{"Slice axis", second(a.Slice(2, 0, 1, 1)), []string{"axis 2"}},
		{"Permute", second(a.Permute(0, -2)), []string{"[0 -2]"}},
		{"Unsqueeze", second(a.Unsqueeze(-4)), []string{"axis -4"}},
		{"Squeeze", second(a.Squeeze(2)), []string{"axis 2"}},
		{"At", second(a.At(0, 3)), []string{"[0 3]"}},
		{"Item count", second(a.Item(0)), []string{"[0]"}},
		{"Expand front -1", second(a.Expand(-1, 2, 3)), []string{"negative"}},
		{"Tile negative", second(nd.Tile(a, -1)), []string{"-1"}},
		{"Repeat negative", second(nd.Repeat(a, -1, 0)), []string{"-1"}},
		{"Diag 3-d", second(nd.Diag(c)), []string{"[2 3 4]"}},
		{"Meshgrid 2-d", second(nd.Meshgrid(a)), []string{"[2 3]"}},
		{"Linspace negative", second(nd.Linspace[float32](s, 0, 1, -2)), []string{"-2"}},
		{"Arange NaN", second(nd.Arange[float32](s, 0, float64(math.NaN()), 1)), []string{"NaN"}},
		{"Arange int out of range", second(nd.Arange[int8](s, 0, 200, 1)), []string{"int8"}},
		{"Concat none", second(nd.Concat[float32](nil, 0)), []string{"no arrays"}},
		{"Stack none", second(nd.Stack[float32](nil, 0)), []string{"no arrays"}},
		{"MatmulInto shape", nd.MatmulInto(a, a, a.T()), []string{"[2 3]", "[2 2]"}},
		{"SumInto shape", nd.SumInto(a, a, nd.Along(0)), []string{"[2 3]", "[3]"}},
		{"VarInto shape", nd.VarInto(a, a, nd.Along(0)), []string{"[2 3]", "[3]"}},
		{"TakeInto shape", nd.TakeInto(a, a, idx, 0), []string{"[2 3]", "[1 3]"}},
		{"SoftmaxInto shape", nd.SoftmaxInto(a.T(), a, 0), []string{"[3 2]", "[2 3]"}},
		{"ConcatInto shape", nd.ConcatInto(a, []*nd.Array[float32]{a, a}, 0), []string{"[2 3]", "[4 3]"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pWantErr(t, tt.err, cuda.ErrInvalidValue, tt.words...)
			if !strings.HasPrefix(tt.err.Error(), "nd: ") {
				t.Errorf("%q is not an nd error", tt.err)
			}
		})
	}
	// keepdims: the folded axes kept with size 1, negative ones too, so
	// that the result broadcasts against the input.
	for _, tt := range []struct {
		x     nd.Axes
		shape []int
		str   string
	}{
		{nd.Along(-1).KeepDims(), []int{2, 3, 1}, "axis=(-1), keepdims"},
		{nd.Along(0, 2).KeepDims(), []int{1, 3, 1}, "axis=(0, 2), keepdims"},
		{nd.Along().KeepDims(), []int{1, 1, 1}, "axis=None, keepdims"},
		{nd.Axes{}.KeepDims(), []int{1, 1, 1}, "axis=None, keepdims"},
		{nd.Along(-2), []int{2, 4}, "axis=(-2)"},
		{nd.Axes{}, nil, "axis=None"},
	} {
		t.Run("keepdims "+tt.str, func(t *testing.T) {
			if got := tt.x.String(); got != tt.str {
				t.Errorf("String %q, want %q", got, tt.str)
			}
			sum, err := nd.Sum(c, tt.x)
			if err != nil {
				t.Fatal(err)
			}
			defer sum.Free()
			if !slices.Equal(sum.Shape(), tt.shape) && !(len(tt.shape) == 0 && len(sum.Shape()) == 0) {
				t.Fatalf("shape %v, want %v", sum.Shape(), tt.shape)
			}
			if len(tt.shape) == 3 {
				d, err := nd.Sub(c, sum)
				if err != nil {
					t.Fatal(err)
				}
				d.Free()
			}
		})
	}
}

// TestPromiseOverlap: an Into whose output shares memory with its inputs
// reads them as if from a copy (NumPy's out=), whatever the operation.
func TestPromiseOverlap(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	// fresh returns the 3×4 matrix 0 ... 11, freed when the test ends.
	fresh := func(t *testing.T) *nd.Array[float32] {
		t.Helper()
		return pArr(t, s, iota[float32](12), 3, 4)
	}
	for _, c := range []struct {
		name string
		run  func(t *testing.T)
	}{
		{"CopyInto reversed", func(t *testing.T) {
			a := fresh(t)
			if err := nd.CopyInto(a, must(a.Slice(1, nd.None, nd.None, -1))(t)); err != nil {
				t.Fatal(err)
			}
			pHolds(t, a, []int{3, 4}, []float32{3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8})
		}},
		{"CopyInto transposed", func(t *testing.T) {
			a := pArr(t, s, iota[float32](9), 3, 3)
			if err := nd.CopyInto(a, a.T()); err != nil {
				t.Fatal(err)
			}
			pHolds(t, a, []int{3, 3}, []float32{0, 3, 6, 1, 4, 7, 2, 5, 8})
		}},
		{"AddInto shifted", func(t *testing.T) {
			a := pArr(t, s, iota[float32](6))
			if err := nd.AddInto(must(a.Slice(0, 1, nd.None, 1))(t), must(a.Slice(0, 0, -1, 1))(t), nd.Scalar[float32](10)); err != nil {
				t.Fatal(err)
			}
			pHolds(t, a, []int{6}, []float32{0, 10, 11, 12, 13, 14})
		}},
		{"EvalInto reversed", func(t *testing.T) {
			a := pArr(t, s, iota[float32](5))
			r := must(a.Slice(0, nd.None, nd.None, -1))(t)
			if err := nd.Lazy(a).Mul(nd.Const[float32](10)).Add(nd.Lazy(r)).EvalInto(a); err != nil {
				t.Fatal(err)
			}
			pHolds(t, a, []int{5}, []float32{4, 13, 22, 31, 40})
		}},
		{"WhereInto", func(t *testing.T) {
			a := pArr(t, s, iota[float32](4))
			m := pArr(t, s, []nd.Bool{1, 0, 1, 0})
			if err := nd.WhereInto(a, m, must(a.Slice(0, nd.None, nd.None, -1))(t), a); err != nil {
				t.Fatal(err)
			}
			pHolds(t, a, []int{4}, []float32{3, 1, 1, 3})
		}},
		{"CumsumInto axis 0", func(t *testing.T) {
			a := fresh(t)
			if err := nd.CumsumInto(a, a, 0); err != nil {
				t.Fatal(err)
			}
			pHolds(t, a, []int{3, 4}, []float32{0, 1, 2, 3, 4, 6, 8, 10, 12, 15, 18, 21})
		}},
		{"CumsumInto reversed", func(t *testing.T) {
			a := pArr(t, s, iota[float32](4))
			if err := nd.CumsumInto(a, must(a.Slice(0, nd.None, nd.None, -1))(t), 0); err != nil {
				t.Fatal(err)
			}
			pHolds(t, a, []int{4}, []float32{3, 5, 6, 6})
		}},
		{"SoftmaxInto in place", func(t *testing.T) {
			a := pArr(t, s, []float32{0, 0, 5, 5}, 2, 2)
			if err := nd.SoftmaxInto(a, a, -1); err != nil {
				t.Fatal(err)
			}
			pHolds(t, a, []int{2, 2}, []float32{0.5, 0.5, 0.5, 0.5})
		}},
		{"SumInto a row", func(t *testing.T) {
			a := fresh(t)
			if err := nd.SumInto(must(a.Index(0, 0))(t), a, nd.Along(0)); err != nil {
				t.Fatal(err)
			}
			pHolds(t, a, []int{3, 4}, []float32{12, 15, 18, 21, 4, 5, 6, 7, 8, 9, 10, 11})
		}},
		{"MaxInto a column", func(t *testing.T) {
			a := fresh(t)
			if err := nd.MaxInto(must(a.Index(1, 3))(t), a, nd.Along(1)); err != nil {
				t.Fatal(err)
			}
			pHolds(t, a, []int{3, 4}, []float32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
			if err := nd.MaxInto(must(a.Index(1, 0))(t), a, nd.Along(1)); err != nil {
				t.Fatal(err)
			}
			pHolds(t, a, []int{3, 4}, []float32{3, 1, 2, 3, 7, 5, 6, 7, 11, 9, 10, 11})
		}},
		{"VarInto a row", func(t *testing.T) {
			a := pArr(t, s, []float32{1, 2, 3, 5}, 2, 2)
			if err := nd.VarInto(must(a.Index(0, 1))(t), a, nd.Along(0)); err != nil {
				t.Fatal(err)
			}
			pHolds(t, a, []int{2, 2}, []float32{1, 2, 1, 2.25})
		}},
		{"ArgMaxInto its own column", func(t *testing.T) {
			a := pArr(t, s, []int64{5, 9, 1, 0, 2, 7}, 2, 3)
			if err := nd.ArgMaxInto(must(a.Index(1, 0))(t), a, 1); err != nil {
				t.Fatal(err)
			}
			pHolds(t, a, []int{2, 3}, []int64{1, 9, 1, 2, 2, 7})
		}},
		{"TakeInto permuted rows", func(t *testing.T) {
			a := fresh(t)
			if err := nd.TakeInto(a, a, pArr(t, s, []int64{2, 0, 1}), 0); err != nil {
				t.Fatal(err)
			}
			pHolds(t, a, []int{3, 4}, []float32{8, 9, 10, 11, 0, 1, 2, 3, 4, 5, 6, 7})
		}},
		{"ConcatInto swapped", func(t *testing.T) {
			a := fresh(t)
			parts := []*nd.Array[float32]{must(a.Slice(0, 1, nd.None, 1))(t), must(a.Slice(0, 0, 1, 1))(t)}
			if err := nd.ConcatInto(a, parts, 0); err != nil {
				t.Fatal(err)
			}
			pHolds(t, a, []int{3, 4}, []float32{4, 5, 6, 7, 8, 9, 10, 11, 0, 1, 2, 3})
		}},
		{"MatmulInto in place", func(t *testing.T) {
			a := pArr(t, s, []float32{1, 2, 3, 4}, 2, 2)
			if err := nd.MatmulInto(a, a, a); err != nil {
				t.Fatal(err)
			}
			pHolds(t, a, []int{2, 2}, []float32{7, 10, 15, 22})
		}},
		{"MatmulInto transposed", func(t *testing.T) {
			a := pArr(t, s, []float32{1, 2, 3, 4}, 2, 2)
			if err := nd.MatmulInto(a.T(), a, a); err != nil {
				t.Fatal(err)
			}
			pHolds(t, a, []int{2, 2}, []float32{7, 15, 10, 22})
		}},
	} {
		t.Run(c.name, c.run)
	}
}

// TestPromiseSticky: an operation given a failed array fails at once with
// an error that wraps the first (errors.Is reaches it), runs nothing, and
// returns a failed array in turn; the failed array reads, frees and
// prints as failed.
func TestPromiseSticky(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	a := pArr(t, s, iota[float32](6), 2, 3)
	idx := pArr(t, s, []int64{0})
	mask := pArr(t, s, []nd.Bool{1, 0, 1}, 3)
	bad, first := nd.Add(a, a.T())
	if first == nil {
		t.Fatal("Add of (2, 3) and (3, 2) did not fail")
	}
	dst := pArr(t, s, make([]float32, 6), 2, 3)
	badMask, _ := nd.Greater(bad, a)
	badIdx, _ := nd.Cast[int64](bad)
	for _, c := range []struct {
		name string
		err  error
	}{
		{"Add a", second(nd.Add(bad, a))},
		{"Add b", second(nd.Add(a, bad))},
		{"AddInto operand", nd.AddInto(dst, a, bad)},
		{"AddInto dst", nd.AddInto(bad, a, a)},
		{"Exp", second(nd.Exp(bad))},
		{"Cast", second(nd.Cast[int32](bad))},
		{"Where mask", second(nd.Where(badMask, a, a))},
		{"Where", second(nd.Where(mask, a, bad))},
		{"Clip", second(nd.Clip(bad, 0, 1))},
		{"IsClose", second(nd.IsClose(a, bad, 0, 0))},
		{"AllClose", second(nd.AllClose(bad, a, 0, 0))},
		{"Sum", second(nd.Sum(bad, nd.Along()))},
		{"SumInto dst", nd.SumInto(bad, a, nd.Along())},
		{"Var", second(nd.Var(bad, nd.Along()))},
		{"Norm", second(nd.Norm(bad, nd.Along()))},
		{"All", second(nd.All(bad, nd.Along()))},
		{"Softmax", second(nd.Softmax(bad, 0))},
		{"Cumsum", second(nd.Cumsum(bad, 0))},
		{"ArgMax", second(nd.ArgMax(bad, 0))},
		{"Take", second(nd.Take(bad, idx, 0))},
		{"Take indices", second(nd.Take(a, badIdx, 0))},
		{"Concat", second(nd.Concat([]*nd.Array[float32]{a, a, bad}, 0))},
		{"Stack", second(nd.Stack([]*nd.Array[float32]{a, bad}, 0))},
		{"Split", second(nd.Split(bad, []int{1}, 0))},
		{"Tile", second(nd.Tile(bad, 2))},
		{"Repeat", second(nd.Repeat(bad, 2, 0))},
		{"Diff", second(nd.Diff(bad, 0))},
		{"Diag", second(nd.Diag(bad))},
		{"Meshgrid", second(nd.Meshgrid(idx, badIdx))},
		{"Matmul", second(nd.Matmul(a, bad))},
		{"MatmulInto", nd.MatmulInto(bad, a, a.T())},
		{"Lazy", second(nd.Lazy(a).Add(nd.Lazy(bad)).Eval())},
		{"EvalInto", nd.Lazy(a).EvalInto(bad)},
		{"CopyInto", nd.CopyInto(dst, bad)},
		{"Fill", nd.Fill(bad, 1)},
		{"Reshape", second(bad.Reshape(-1))},
		{"Slice", second(bad.Slice(0, 0, 1, 1))},
		{"T then Copy", second(bad.T().Copy())},
		{"Contiguous", second(bad.Contiguous())},
		{"BroadcastTo", second(bad.BroadcastTo(2, 2, 3))},
		{"Item", second(bad.Item())},
		{"ToSlice", second(bad.ToSlice())},
		{"Buffer", second(bad.Buffer())},
		{"Span", func() error { _, _, err := bad.Span(); return err }()},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !errors.Is(c.err, first) {
				t.Fatalf("got %v, want an error wrapping the first, %v", c.err, first)
			}
			var e *nd.Error
			if !errors.As(c.err, &e) {
				t.Fatalf("%v is not an *nd.Error", c.err)
			}
		})
	}
	// A chain: each step's result carries the first error on.
	x, _ := nd.Exp(bad)
	y, _ := nd.Sum(x, nd.Along(0))
	z, err := nd.Softmax(y, -1)
	if !errors.Is(err, first) || !strings.Contains(z.String(), "failed") || z.Free() != nil || z.Size() != 0 {
		t.Errorf("the chain: %v, %s", err, z)
	}
}

// TestPromiseStickyRunsNothing: an operation given a failed array calls
// no driver function (counted by the fake driver): it neither allocates
// nor launches.
func TestPromiseStickyRunsNothing(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	s := stream(t)
	a := pArr(t, s, iota[float32](6), 2, 3)
	idx := pArr(t, s, []int64{0})
	bad, _ := nd.Add(a, a.T())
	before := f.Calls()
	for _, err := range []error{
		second(nd.Add(a, bad)),
		second(nd.Matmul(bad, a)),
		second(nd.Concat([]*nd.Array[float32]{a, bad}, 0)),
		second(nd.Sum(bad, nd.Along())),
		second(nd.Softmax(bad, -1)),
		second(nd.Take(bad, idx, 0)),
		second(bad.Copy()),
		nd.CopyInto(a, bad),
	} {
		if err == nil {
			t.Error("an operation given a failed array succeeded")
		}
	}
	if n := f.Calls() - before; n != 0 {
		t.Errorf("operations given a failed array called the driver %d time(s)", n)
	}
}

// TestPromiseString: String prints as NumPy's repr, with the shape and
// the type: 0-d and empty arrays, halves, and large arrays elided, where a
// view prints as its contiguous copy does (the summary reads a view's
// elements by its strides).
func TestPromiseString(t *testing.T) {
	requireKernels(t) // a view's Copy
	s := stream(t)
	half := func(xs ...float32) []cuda.Float16 {
		out := make([]cuda.Float16, len(xs))
		for i, x := range xs {
			out[i] = cuda.NewFloat16(x)
		}
		return out
	}
	for _, tt := range []struct {
		name, want string
		a          interface{ String() string }
	}{
		{"0-d", "nd.Array[float32](2.5, shape=(), dtype=float32)", pArr(t, s, []float32{2.5}, []int{}...)},
		{"0-d int", "nd.Array[int64](-7, shape=(), dtype=int64)", pArr(t, s, []int64{-7}, []int{}...)},
		{"0-d bool", "nd.Array[bool](true, shape=(), dtype=bool)", pArr(t, s, []nd.Bool{3}, []int{}...)},
		{"0-d view", "nd.Array[float32](5., shape=(), dtype=float32)", must(pArr(t, s, iota[float32](6), 2, 3).At(-1, -1))(t)},
		{"empty", "nd.Array[float32]([], shape=(0, 3), dtype=float32)", pArr(t, s, []float32{}, 0, 3)},
		{"empty 1-d", "nd.Array[uint8]([], shape=(0,), dtype=uint8)", pArr(t, s, []uint8{})},
		{"empty view", "nd.Array[float32]([], shape=(2, 0), dtype=float32)", must(pArr(t, s, iota[float32](6), 2, 3).Slice(1, 2, 0, 1))(t)},
		{"float16", "nd.Array[float16]([ 0.3333,  1.    , -2.    ], shape=(3,), dtype=float16)", pArr(t, s, half(1.0/3, 1, -2))},
		{"float16 0-d", "nd.Array[float16](0.3333, shape=(), dtype=float16)", pArr(t, s, half(1.0/3), []int{}...)},
		{"float16 inf nan", "nd.Array[float16]([ inf, -inf,  nan,   1.], shape=(4,), dtype=float16)",
			pArr(t, s, half(float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1))},
		{"bfloat16", "nd.Array[bfloat16]([1. , 2.5], shape=(2,), dtype=bfloat16)", pArr(t, s, []cuda.BFloat16{cuda.NewBFloat16(1), cuda.NewBFloat16(2.5)})},
		{"float64 exponents", "nd.Array[float64]([1.e-05, 1.e+00, 1.e+05], shape=(3,), dtype=float64)", pArr(t, s, []float64{1e-5, 1, 1e5})},
		{"zero", "nd.Array[float32](invalid)", &nd.Array[float32]{}},
		{"nil", "nd.Array[float32](invalid)", (*nd.Array[float32])(nil)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.a.String(); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
	// Large arrays, summarized: a view prints as its copy.
	x := pArr(t, s, iota[int32](2*3*400), 2, 3, 400)
	h := make([]cuda.Float16, 2000)
	for i := range h {
		h[i] = cuda.NewFloat16(float32(i) / 4)
	}
	y := pArr(t, s, h, 40, 50)
	b := make([]nd.Bool, 3000)
	for i := range b {
		b[i] = nd.Bool(i % 3)
	}
	bools := pArr(t, s, b, 3000)
	same := func(t *testing.T, name string, view, copied string) {
		t.Helper()
		if view != copied {
			t.Errorf("%s prints\n%s\nits copy\n%s", name, view, copied)
		}
		if !strings.Contains(view, "...") {
			t.Errorf("%s is not summarized:\n%s", name, view)
		}
	}
	for _, c := range []struct {
		name string
		v    *nd.Array[int32]
	}{
		{"reversed", must(x.Slice(2, nd.None, nd.None, -1))(t)},
		{"transposed", x.T()},
		{"permuted", must(x.Permute(2, 0, 1))(t)},
		{"stepped", must(must(x.Slice(2, 1, nd.None, 2))(t).Slice(0, nd.None, nd.None, -1))(t)},
		{"broadcast", must(must(x.At(1, 2, 3))(t).BroadcastTo(4, 400))(t)},
		{"reversed twice", must(must(x.Slice(2, nd.None, nd.None, -1))(t).Slice(1, nd.None, nd.None, -1))(t)},
	} {
		t.Run("summary "+c.name, func(t *testing.T) {
			cp := must(c.v.Copy())(t)
			defer cp.Free()
			same(t, c.name, c.v.String(), cp.String())
		})
	}
	t.Run("summary float16 transposed", func(t *testing.T) {
		cp := must(y.T().Copy())(t)
		defer cp.Free()
		same(t, "float16", y.T().String(), cp.String())
	})
	t.Run("summary bool reversed", func(t *testing.T) {
		v := must(bools.Slice(0, nd.None, nd.None, -1))(t)
		cp := must(v.Copy())(t)
		defer cp.Free()
		same(t, "bool", v.String(), cp.String())
		if !strings.HasPrefix(v.String(), "nd.Array[bool]([ true,  true, false, ...,  true,  true, false],") {
			t.Errorf("bool:\n%s", v)
		}
	})
	t.Run("summary of freed memory", func(t *testing.T) {
		a := must(nd.Zeros[float32](s, 3000))(t)
		v := must(a.Slice(0, nd.None, nd.None, -2))(t)
		if err := a.Free(); err != nil {
			t.Fatal(err)
		}
		for _, str := range []string{a.String(), v.String()} {
			if !strings.Contains(str, "closed") || !strings.HasPrefix(str, "nd.Array[float32](<") {
				t.Errorf("a freed array prints %q", str)
			}
		}
	})
}

// TestPromiseScalarViews: a Scalar's views (BroadcastTo, Reshape,
// Slice) have shapes of any size: they read and print as that many
// elements, each its value, and the operations that need device memory
// refuse them in words.
func TestPromiseScalarViews(t *testing.T) {
	sc := nd.Scalar[float32](2)
	b := must(sc.BroadcastTo(3))(t)
	pCheck(t, b, nil, []int{3}, []float32{2, 2, 2})
	pCheck(t, must(sc.BroadcastTo(2, 0))(t), nil, []int{2, 0}, []float32{})
	pCheck(t, must(sc.Reshape(1, 1))(t), nil, []int{1, 1}, []float32{2})
	pCheck(t, must(must(sc.Reshape(1))(t).Slice(0, 1, nd.None, 1))(t), nil, []int{0}, []float32{})
	if v := must(b.Item(-1))(t); v != 2 {
		t.Errorf("Item: %v", v)
	}
	if got, want := b.String(), "nd.Array[float32]([2., 2., 2.], shape=(3,), dtype=float32)"; got != want {
		t.Errorf("String:\n%s\nwant\n%s", got, want)
	}
	big := must(sc.BroadcastTo(2000, 3))(t)
	if got := big.String(); !strings.HasPrefix(got, "nd.Array[float32]([[2., 2., 2.],") || !strings.Contains(got, "...,") || !strings.HasSuffix(got, "shape=(2000, 3), dtype=float32)") {
		t.Errorf("a large broadcast Scalar prints\n%s", got)
	}
	_, err := nd.Matmul(b, b)
	pWantErr(t, err, cuda.ErrInvalidValue, "a is a Scalar")
	_, err = nd.Diag(b)
	pWantErr(t, err, cuda.ErrInvalidValue, "a is a Scalar")
}

// TestPromiseFromFreedBuffer: FromBuffer of a freed buffer is an error
// wrapping cuda.ErrClosed, as any call given freed memory, not an array
// that fails later.
func TestPromiseFromFreedBuffer(t *testing.T) {
	ctxs := cudatest.Contexts(t, 1)
	if ctxs == nil {
		return
	}
	s := cudatest.Stream(t, ctxs[0])
	for _, data := range [][]float32{{1, 2, 3}, {}} {
		buf := cudatest.Upload(t, ctxs[0], data)
		if err := buf.Free(); err != nil {
			t.Fatal(err)
		}
		a, err := nd.FromBuffer(s, buf)
		pWantErr(t, err, cuda.ErrClosed)
		if !strings.Contains(a.String(), "failed") {
			t.Errorf("FromBuffer's failed array prints %s", a)
		}
	}
}
