package nd_test

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/curand"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/nd"
)

// TestMain runs the tests; the Examples that need generated kernels are
// skipped where none can run.
func TestMain(m *testing.M) { cudatest.MainSkipWithoutKernels(m, "^Example(Add|Sum|Lazy)$") }

func must[T any](v T, err error) func(testing.TB) T { return cudatest.Must(v, err) }

// stream returns a stream of a fresh context, closed (and checked for
// leaks) when the test ends.
func stream(t *testing.T) *cuda.Stream {
	t.Helper()
	return cudatest.Stream(t, cudatest.Contexts(t, 1)[0])
}

// requireKernels skips where generated kernels cannot run: a machine
// without NVRTC, or the fake driver without a C++ compiler to compile them
// for the host (internal/kernelhook); on the GPU machine
// (GOCUDA_REQUIRE_GPU=1) they must run.
func requireKernels(t testing.TB) {
	t.Helper()
	switch {
	case cudatest.KernelsRun():
		return
	case os.Getenv(cudatest.EnvRequireGPU) == "1":
		t.Fatal("GOCUDA_REQUIRE_GPU=1 and kernels cannot run: no NVRTC")
	case cudatest.IsFake():
		t.Skip("the fake driver runs kernels compiled for the host, and no C++ compiler is found")
	}
	t.Skip("no NVRTC: kernels cannot be compiled here")
}

// free frees a when the test ends.
func free[T nd.Elem](t testing.TB, a *nd.Array[T]) *nd.Array[T] {
	t.Helper()
	t.Cleanup(func() {
		if err := a.Free(); err != nil {
			t.Error(err)
		}
	})
	return a
}

// iota returns 0, 1, ..., n-1 as T.
func iota[T nd.Elem](n int) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = T(i)
	}
	return out
}

// host is an array on the host: its elements in row-major order and its
// shape, the reference the device's arrays are checked against.
type host[T any] struct {
	data  []T
	shape []int
}

// at returns the element at index.
func (h host[T]) at(index []int) T {
	off := 0
	for i, d := range h.shape {
		off = off*d + index[i]
	}
	return h.data[off]
}

// each calls f with every index of shape in row-major order.
func each(shape []int, f func(index []int)) {
	for _, d := range shape {
		if d == 0 {
			return
		}
	}
	idx := make([]int, len(shape))
	for {
		f(slices.Clone(idx))
		i := len(shape) - 1
		for ; i >= 0; i-- {
			idx[i]++
			if idx[i] < shape[i] {
				break
			}
			idx[i] = 0
		}
		if i < 0 {
			return
		}
	}
}

// equal checks that a holds want's elements in its shape.
func equal[T nd.Elem](t testing.TB, a *nd.Array[T], want host[T]) {
	t.Helper()
	if !slices.Equal(a.Shape(), want.shape) && !(len(a.Shape()) == 0 && len(want.shape) == 0) {
		t.Fatalf("shape %v, want %v", a.Shape(), want.shape)
	}
	got := must(a.ToSlice())(t)
	if !slices.Equal(got, want.data) {
		t.Fatalf("elements\n%v\nwant\n%v", got, want.data)
	}
}

// TestCreate: the constructors that need no kernel, their shapes, and
// what they hold.
func TestCreate(t *testing.T) {
	s := stream(t)
	for _, tt := range []struct {
		name  string
		make  func() (*nd.Array[float32], error)
		shape []int
		want  []float32
	}{
		{"zeros", func() (*nd.Array[float32], error) { return nd.Zeros[float32](s, 2, 3) }, []int{2, 3}, make([]float32, 6)},
		{"zeros 0-d", func() (*nd.Array[float32], error) { return nd.Zeros[float32](s) }, []int{}, []float32{0}},
		{"zeros empty", func() (*nd.Array[float32], error) { return nd.Zeros[float32](s, 4, 0, 2) }, []int{4, 0, 2}, []float32{}},
		{"ones", func() (*nd.Array[float32], error) { return nd.Ones[float32](s, 3) }, []int{3}, []float32{1, 1, 1}},
		{"full", func() (*nd.Array[float32], error) { return nd.Full(s, float32(-2.5), 2, 2) }, []int{2, 2}, []float32{-2.5, -2.5, -2.5, -2.5}},
		{"from slice", func() (*nd.Array[float32], error) { return nd.FromSlice(s, iota[float32](12), 3, 4) }, []int{3, 4}, iota[float32](12)},
		{"from slice 1-d", func() (*nd.Array[float32], error) { return nd.FromSlice(s, iota[float32](5)) }, []int{5}, iota[float32](5)},
		{"from slice 0-d", func() (*nd.Array[float32], error) { return nd.FromSlice(s, []float32{7}, []int{}...) }, []int{}, []float32{7}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := free(t, must(tt.make())(t))
			if a.IsView() || !a.IsContiguous() || a.Stream() != s || a.Dtype() != "float32" {
				t.Errorf("view %v, contiguous %v, stream %v, dtype %s: want an array of its own on s", a.IsView(), a.IsContiguous(), a.Stream(), a.Dtype())
			}
			equal(t, a, host[float32]{tt.want, tt.shape})
		})
	}
}

// TestFullTypes: Full and Ones of every element type hold the value's
// bits (memsets of 1, 2, 4 bytes; 8-byte values with equal halves).
func TestFullTypes(t *testing.T) {
	s := stream(t)
	check := func(t *testing.T, got, want any) {
		t.Helper()
		if !slicesEqualAny(got, want) {
			t.Errorf("got %v, want %v", got, want)
		}
	}
	check(t, must(free(t, must(nd.Ones[int8](s, 3))(t)).ToSlice())(t), []int8{1, 1, 1})
	check(t, must(free(t, must(nd.Full(s, cuda.NewFloat16(1.5), 2))(t)).ToSlice())(t), []cuda.Float16{cuda.NewFloat16(1.5), cuda.NewFloat16(1.5)})
	check(t, must(free(t, must(nd.Ones[cuda.BFloat16](s, 2))(t)).ToSlice())(t), []cuda.BFloat16{cuda.NewBFloat16(1), cuda.NewBFloat16(1)})
	check(t, must(free(t, must(nd.Full(s, uint32(0xdeadbeef), 2))(t)).ToSlice())(t), []uint32{0xdeadbeef, 0xdeadbeef})
	check(t, must(free(t, must(nd.Full(s, int64(-1), 2))(t)).ToSlice())(t), []int64{-1, -1})
	check(t, must(free(t, must(nd.Full(s, nd.Bool(1), 2))(t)).ToSlice())(t), []nd.Bool{1, 1})
}

func slicesEqualAny(a, b any) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// TestViews: every view of a 3-d array (and views of views) holds what the
// same view of the host's copy holds, read back through the view's span.
func TestViews(t *testing.T) {
	s := stream(t)
	data := iota[int32](2 * 3 * 4)
	a := free(t, must(nd.FromSlice(s, data, 2, 3, 4))(t))
	ref := host[int32]{data, []int{2, 3, 4}}
	// refView computes a view's elements on the host from a function of
	// the view's index to a's.
	refView := func(shape []int, from func([]int) []int) host[int32] {
		var out []int32
		each(shape, func(idx []int) { out = append(out, ref.at(from(idx))) })
		if out == nil {
			out = []int32{}
		}
		return host[int32]{out, shape}
	}
	for _, tt := range []struct {
		name string
		view func() (*nd.Array[int32], error)
		want host[int32]
	}{
		{"T", func() (*nd.Array[int32], error) { return a.T(), nil },
			refView([]int{4, 3, 2}, func(i []int) []int { return []int{i[2], i[1], i[0]} })},
		{"permute", func() (*nd.Array[int32], error) { return a.Permute(1, 2, 0) },
			refView([]int{3, 4, 2}, func(i []int) []int { return []int{i[2], i[0], i[1]} })},
		{"slice step", func() (*nd.Array[int32], error) { return a.Slice(2, 1, nd.None, 2) },
			refView([]int{2, 3, 2}, func(i []int) []int { return []int{i[0], i[1], 1 + 2*i[2]} })},
		{"slice reversed", func() (*nd.Array[int32], error) { return a.Slice(1, nd.None, nd.None, -1) },
			refView([]int{2, 3, 4}, func(i []int) []int { return []int{i[0], 2 - i[1], i[2]} })},
		{"slice empty", func() (*nd.Array[int32], error) { return a.Slice(0, 1, 1, 1) },
			host[int32]{[]int32{}, []int{0, 3, 4}}},
		{"index", func() (*nd.Array[int32], error) { return a.Index(1, -1) },
			refView([]int{2, 4}, func(i []int) []int { return []int{i[0], 2, i[1]} })},
		{"at", func() (*nd.Array[int32], error) { return a.At(1, 2, 3) },
			host[int32]{[]int32{23}, []int{}}},
		{"reshape view", func() (*nd.Array[int32], error) { return a.Reshape(6, -1) },
			host[int32]{data, []int{6, 4}}},
		{"broadcast", func() (*nd.Array[int32], error) {
			r := must(a.Index(0, 0))(t)
			r = must(r.Index(0, 0))(t)
			return r.BroadcastTo(3, 4)
		}, refView([]int{3, 4}, func(i []int) []int { return []int{0, 0, i[1]} })},
		{"expand", func() (*nd.Array[int32], error) {
			r := must(a.Slice(2, 0, 1, 1))(t)
			return r.Expand(-1, -1, 5)
		}, refView([]int{2, 3, 5}, func(i []int) []int { return []int{i[0], i[1], 0} })},
		{"unsqueeze squeeze", func() (*nd.Array[int32], error) {
			r := must(a.Unsqueeze(1))(t)
			if !slices.Equal(r.Shape(), []int{2, 1, 3, 4}) {
				t.Errorf("Unsqueeze(1): shape %v", r.Shape())
			}
			return r.Squeeze()
		}, ref},
		{"view of view", func() (*nd.Array[int32], error) {
			r := must(a.Slice(2, nd.None, nd.None, -1))(t)
			r = r.T()
			return r.Slice(0, 1, 3, 1)
		}, refView([]int{2, 3, 2}, func(i []int) []int { return []int{i[2], i[1], 3 - (1 + i[0])} })},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := must(tt.view())(t)
			if !v.IsView() {
				t.Error("IsView is false")
			}
			if err := v.Free(); err != nil {
				t.Errorf("a view's Free: %v", err)
			}
			equal(t, v, tt.want)
		})
	}
}

// TestItemAndString: Item reads one element; String prints as NumPy's repr
// with the type and shape.
func TestItemAndString(t *testing.T) {
	s := stream(t)
	a := free(t, must(nd.FromSlice(s, iota[float32](6), 2, 3))(t))
	if v := must(a.Item(1, -1))(t); v != 5 {
		t.Errorf("Item(1, -1) = %v, want 5", v)
	}
	if _, err := a.Item(2, 0); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("Item(2, 0): %v, want ErrInvalidValue", err)
	}
	want := "nd.Array[float32]([[0., 1., 2.],\n                   [3., 4., 5.]], shape=(2, 3), dtype=float32)"
	if got := a.String(); got != want {
		t.Errorf("String:\n%s\nwant\n%s", got, want)
	}
	m := free(t, must(nd.FromSlice(s, []nd.Bool{1, 0}))(t))
	if got, want := m.String(), "nd.Array[bool]([ true, false], shape=(2,), dtype=bool)"; got != want {
		t.Errorf("String of a mask: %s, want %s", got, want)
	}
	var zero nd.Array[float32]
	if got := zero.String(); got != "nd.Array[float32](invalid)" {
		t.Errorf("zero Array: %s", got)
	}
}

// TestFreeClosesViews: the owner's Free closes its views; Free twice, on a
// view, on a Scalar or on nil does nothing.
func TestFreeClosesViews(t *testing.T) {
	s := stream(t)
	a := must(nd.FromSlice(s, iota[float32](6), 2, 3))(t)
	v := a.T()
	if err := a.Free(); err != nil {
		t.Fatal(err)
	}
	if _, err := v.ToSlice(); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("a view after its base's Free: %v, want ErrClosed", err)
	}
	if _, err := a.ToSlice(); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("an array after its Free: %v, want ErrClosed", err)
	}
	for _, f := range []func() error{a.Free, v.Free, nd.Scalar[float32](1).Free, (*nd.Array[float32])(nil).Free} {
		if err := f(); err != nil {
			t.Errorf("Free: %v", err)
		}
	}
}

// TestFromBuffer: an array over a buffer is a view of it: it does not
// free it, and sees what is written to it.
func TestFromBuffer(t *testing.T) {
	ctx := cudatest.Contexts(t, 1)[0]
	s := cudatest.Stream(t, ctx)
	buf := cudatest.Upload(t, ctx, iota[float64](6))
	a := must(nd.FromBuffer(s, buf, 3, 2))(t)
	if !a.IsView() {
		t.Error("IsView is false")
	}
	if err := a.Free(); err != nil {
		t.Fatal(err)
	}
	if err := buf.CopyFromHost([]float64{5, 4, 3, 2, 1, 0}); err != nil {
		t.Fatal(err)
	}
	equal(t, a.T(), host[float64]{[]float64{5, 3, 1, 4, 2, 0}, []int{2, 3}})
	b := must(a.Buffer())(t)
	if b.Len() != 6 || b.Ptr() != buf.Ptr() {
		t.Errorf("Buffer: %v, want buf's memory", b)
	}
	if _, err := a.T().Buffer(); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("Buffer of a transposed view: %v, want ErrInvalidValue", err)
	}
}

// TestErrors: bad arguments are errors that wrap cuda.ErrInvalidValue and
// say what was wrong; nothing panics.
func TestErrors(t *testing.T) {
	s := stream(t)
	a := free(t, must(nd.Zeros[float32](s, 2, 3))(t))
	var zero nd.Array[float32]
	var nilArr *nd.Array[float32]
	ctx2 := cudatest.Contexts(t, 1)[0]
	other := cudatest.Upload(t, ctx2, []float32{1, 2})
	for _, tt := range []struct {
		name, want string
		err        error
	}{
		{"nil stream", "s is a nil *cuda.Stream", second(nd.Zeros[float32](nil, 2))},
		{"negative dim", "negative", second(nd.Zeros[float32](s, 2, -1))},
		{"from slice count", "5 elements given for shape [2 3] of 6", second(nd.FromSlice(s, make([]float32, 5), 2, 3))},
		{"from buffer context", "buf belongs to another context than s", second(nd.FromBuffer(s, other))},
		{"from buffer size", "shape [3] has 3 elements, and buf 2", func() error {
			_, err := nd.FromBuffer(cudatest.Stream(t, ctx2), other, 3)
			return err
		}()},
		{"reshape size", "", second(a.Reshape(4, 2))},
		{"permute", "", second(a.Permute(0, 0))},
		{"slice step", "step 0", second(a.Slice(0, 0, 1, 0))},
		{"index", "", second(a.Index(0, 2))},
		{"axis", "", second(a.Index(2, 0))},
		{"broadcast", "", second(a.BroadcastTo(3, 3))},
		{"squeeze", "", second(a.Squeeze(0))},
		{"zero array", "a is a zero Array", second(zero.Reshape(1))},
		{"nil array", "a is a nil *Array", second(nilArr.ToSlice())},
		{"scalar buffer", "a Scalar has no device memory", second(nd.Scalar[float32](1).Buffer())},
		{"scalars only", "every operand is a Scalar", second(nd.Add(nd.Scalar[float32](1), nd.Scalar[float32](2)))},
		{"add shapes", "cannot be broadcast together", second(nd.Add(a, a.T()))},
		{"into shape", "dst has shape [1 3], and the operands broadcast to [2 3]", nd.AddInto(must(a.Slice(0, 0, 1, 1))(t), a, a)},
		{"into scalar", "dst is a Scalar, which cannot be written", nd.AddInto(nd.Scalar[float32](0), a, a)},
		{"compare op", `cmp is "<>"`, nd.CompareInto(free(t, must(nd.Zeros[nd.Bool](s, 2, 3))(t)), a, a, "<>")},
		{"arange step", "the step must be nonzero", second(nd.Arange[float32](s, 0, 1, 0))},
		{"linspace num", "num is -1", second(nd.Linspace[float32](s, 0, 1, -1))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(tt.err, cuda.ErrInvalidValue) || !strings.Contains(tt.err.Error(), tt.want) || !strings.HasPrefix(tt.err.Error(), "nd: ") {
				t.Errorf("got %v; want an nd error wrapping ErrInvalidValue saying %q", tt.err, tt.want)
			}
		})
	}
}

func second[T any](_ T, err error) error { return err }

// TestBroadcastViewReadOnly: a view with an axis of stride 0 (BroadcastTo,
// Expand) is refused as every kind of output, before anything is written
// (threads writing one element many times would race), and stays usable
// as an input.
func TestBroadcastViewReadOnly(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	base := free(t, must(nd.FromSlice(s, []float32{1, 2, 3}, 1, 3))(t))
	v := must(base.BroadcastTo(2, 3))(t)
	e := must(must(base.Reshape(3, 1))(t).Expand(-1, 4))(t)
	a := free(t, must(nd.FromSlice(s, iota[float32](6), 2, 3))(t))
	col := must(free(t, must(nd.Zeros[float32](s, 1, 1))(t)).BroadcastTo(2, 1))(t)
	mask := free(t, must(nd.Full(s, nd.Bool(1), 2, 3))(t))
	idx := free(t, must(nd.FromSlice(s, []int64{0, 1, 2}, 3))(t))
	for _, tt := range []struct {
		name string
		err  error
	}{
		{"AddInto", nd.AddInto(v, a, a)},
		{"AddInto expanded", nd.AddInto(e, free(t, must(nd.Zeros[float32](s, 3, 4))(t)), nd.Scalar[float32](1))},
		{"Fill", nd.Fill(v, 7)},
		{"CopyInto", nd.CopyInto(v, a)},
		{"CastInto", nd.CastInto(v, a)},
		{"WhereInto", nd.WhereInto(v, mask, a, a)},
		{"EvalInto", nd.Lazy(a).Add(nd.Lazy(a)).EvalInto(v)},
		{"SumInto", nd.SumInto(col, a, nd.Along(1).KeepDims())},
		{"SoftmaxInto", nd.SoftmaxInto(v, a, 1)},
		{"CumsumInto", nd.CumsumInto(v, a, 1)},
		{"TakeInto", nd.TakeInto(v, a, idx, 1)},
		{"ConcatInto", nd.ConcatInto(v, []*nd.Array[float32]{must(a.Slice(0, 0, 1, 1))(t), must(a.Slice(0, 1, 2, 1))(t)}, 0)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(tt.err, cuda.ErrInvalidValue) || !strings.Contains(tt.err.Error(), "broadcast view") {
				t.Errorf("got %v; want an error wrapping ErrInvalidValue naming the broadcast view", tt.err)
			}
		})
	}
	equal(t, base, host[float32]{shape: []int{1, 3}, data: []float32{1, 2, 3}})
	// As an input it reads as broadcast.
	sum := free(t, must(nd.Add(v, a))(t))
	equal(t, sum, host[float32]{shape: []int{2, 3}, data: []float32{1, 3, 5, 4, 6, 8}})
	// A stride-0 axis of size 1 repeats nothing: writable.
	one := must(free(t, must(nd.Zeros[float32](s, 1))(t)).BroadcastTo(1, 1))(t)
	if err := nd.Fill(one, 2); err != nil {
		t.Errorf("Fill of a broadcast view of one element: %v", err)
	}
}

// TestFailedChain: an operation's error comes with an array that carries
// it; the operations given that array fail at once with errors that wrap
// the first, so a chain checks once.
func TestFailedChain(t *testing.T) {
	s := stream(t)
	a := free(t, must(nd.Zeros[float32](s, 2, 3))(t))
	h, err1 := nd.Add(a, a.T()) // shapes disagree
	if err1 == nil || h == nil {
		t.Fatalf("Add of disagreeing shapes: %v, %v", h, err1)
	}
	v := h.T()
	r, _ := v.Reshape(-1)
	y, err := nd.Sum(r, nd.Along())
	if !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), err1.Error()) {
		t.Errorf("the chain's error: %v, want one wrapping %v", err, err1)
	}
	if !strings.Contains(y.String(), "failed: ") || y.Free() != nil || y.Size() != 0 {
		t.Errorf("a failed array: %s", y)
	}
	var e *nd.Error
	if !errors.As(err, &e) || e.Op != "Sum" {
		t.Errorf("errors.As: %#v", e)
	}
}

// TestRandom: Uniform and Normal draw from the generator's sequence, as
// curand does into a buffer, on the generator's stream.
func TestRandom(t *testing.T) {
	s := stream(t)
	g := must(curand.New(s, curand.DefaultRNG, 7))(t)
	defer g.Close()
	u := free(t, must(nd.Uniform[float32](g, 3, 1000))(t))
	if u.Stream() != s || !slices.Equal(u.Shape(), []int{3, 1000}) {
		t.Fatalf("Uniform: %v on %v", u.Shape(), u.Stream())
	}
	for _, v := range must(u.ToSlice())(t) {
		if !(v > 0 && v <= 1) {
			t.Fatalf("Uniform gave %v", v)
		}
	}
	n := free(t, must(nd.Normal(g, 10.0, 2, 5001))(t))
	xs := must(n.ToSlice())(t)
	m := 0.0
	for _, v := range xs {
		m += v
	}
	if m /= float64(len(xs)); math.Abs(m-10) > 0.3 {
		t.Errorf("Normal's mean is %v, want about 10", m)
	}
	if _, err := nd.Normal[float32](nil, 0, 1, 2); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("nil generator: %v", err)
	}
	if _, err := nd.Normal(g, float32(0), -1, 2); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("negative stddev: %v", err)
	}
}

// TestStringSummary: a large array prints as NumPy elides it, reading only
// what it shows; views print what they see.
func TestStringSummary(t *testing.T) {
	s := stream(t)
	a := free(t, must(nd.FromSlice(s, iota[int32](2000)))(t))
	if got, want := a.String(), "nd.Array[int32]([   0,    1,    2, ..., 1997, 1998, 1999],\n                shape=(2000,), dtype=int32)"; got != want {
		t.Errorf("1-d:\n%s\nwant\n%s", got, want)
	}
	m := must(a.Reshape(40, 50))(t)
	want := `nd.Array[int32]([[   0,    1,    2, ...,   47,   48,   49],
                 [  50,   51,   52, ...,   97,   98,   99],
                 [ 100,  101,  102, ...,  147,  148,  149],
                 ...,
                 [1850, 1851, 1852, ..., 1897, 1898, 1899],
                 [1900, 1901, 1902, ..., 1947, 1948, 1949],
                 [1950, 1951, 1952, ..., 1997, 1998, 1999]],
                shape=(40, 50), dtype=int32)`
	if got := m.String(); got != want {
		t.Errorf("2-d:\n%s\nwant\n%s", got, want)
	}
	// The transpose, strided: the same elements, read one by one.
	want = `nd.Array[int32]([[   0,   50,  100, ..., 1850, 1900, 1950],
                 [   1,   51,  101, ..., 1851, 1901, 1951],
                 [   2,   52,  102, ..., 1852, 1902, 1952],
                 ...,
                 [  47,   97,  147, ..., 1897, 1947, 1997],
                 [  48,   98,  148, ..., 1898, 1948, 1998],
                 [  49,   99,  149, ..., 1899, 1949, 1999]],
                shape=(50, 40), dtype=int32)`
	if got := m.T().String(); got != want {
		t.Errorf("transposed:\n%s\nwant\n%s", got, want)
	}
	r := must(m.Slice(1, nd.None, nd.None, -1))(t)
	if got := r.String(); !strings.HasPrefix(got, "nd.Array[int32]([[  49,   48,   47, ...,    2,    1,    0],") {
		t.Errorf("reversed:\n%s", got)
	}
}

// TestRandIntRange: RandInt's bounds must be values of T, as NumPy's
// randint's (before, [-5, 5) of uint8 and [0, 300) of uint8 were made,
// converting out of range floats, undefined); bounds within T make its
// values, to its ends.
func TestRandIntRange(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	g := must(curand.New(s, curand.DefaultRNG, 11))(t)
	defer g.Close()
	for _, c := range []struct {
		name string
		err  error
		ok   bool
	}{
		{"uint8 [-5, 5)", freedErr(nd.RandInt[uint8](g, -5, 5, 4)), false},
		{"uint8 [0, 300)", freedErr(nd.RandInt[uint8](g, 0, 300, 4)), false},
		{"int8 [-129, 0)", freedErr(nd.RandInt[int8](g, -129, 0, 4)), false},
		{"uint64 [-1, 1)", freedErr(nd.RandInt[uint64](g, -1, 1, 4)), false},
		{"int32 [0, 1<<31+1)", freedErr(nd.RandInt[int32](g, 0, 1<<31+1, 4)), false},
		{"uint8 [0, 256)", freedErr(nd.RandInt[uint8](g, 0, 256, 4)), true},
		{"int8 [-128, 128)", freedErr(nd.RandInt[int8](g, -128, 128, 4)), true},
		{"int64 [MinInt64, MaxInt64)", freedErr(nd.RandInt[int64](g, math.MinInt64, math.MaxInt64, 4)), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			switch {
			case c.ok && c.err != nil:
				t.Errorf("got %v, want no error", c.err)
			case !c.ok && (!errors.Is(c.err, cuda.ErrInvalidValue) || !strings.Contains(c.err.Error(), "is not within the values of")):
				t.Errorf("got %v, want ErrInvalidValue saying [lo, hi) is not within T", c.err)
			}
		})
	}
	// The ends of int8's range come.
	r := free(t, must(nd.RandInt[int8](g, -128, 128, 20000))(t))
	lo, hi := false, false
	for _, v := range must(r.ToSlice())(t) {
		lo, hi = lo || v == -128, hi || v == 127
	}
	if !lo || !hi {
		t.Errorf("RandInt[int8](-128, 128) over 20000 values: -128 seen %v, 127 seen %v", lo, hi)
	}
}

// freedErr returns an operation's error, its result freed.
func freedErr[T nd.Elem](a *nd.Array[T], err error) error {
	if err == nil {
		err = a.Free()
	}
	return err
}

// TestUseAfterFree: after an array's Free, what its doc says returns an
// error wrapping cuda.ErrClosed does, for the array, a view made before
// the Free and one made after: its operations (elementwise, fused,
// reductions, along an axis, gathers, into it), its reading and Buffer.
func TestUseAfterFree(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	ok := free(t, must(nd.Zeros[float32](s, 2, 3))(t))
	a := must(nd.FromSlice(s, iota[float32](6), 2, 3))(t)
	before := must(a.Slice(0, 0, 1, 1))(t)
	if err := a.Free(); err != nil {
		t.Fatal(err)
	}
	after := must(a.Slice(0, 0, 1, 1))(t) // made: its shape is the host's
	idx := free(t, must(nd.FromSlice(s, []int64{0}))(t))
	for name, x := range map[string]*nd.Array[float32]{"the array": a, "a view made before": before, "a view made after": after} {
		for _, c := range []struct {
			name string
			err  error
		}{
			{"ToSlice", second(x.ToSlice())},
			{"Item", second(x.Item(0, 0))},
			{"Buffer", second(x.Buffer())},
			{"Copy", second(x.Copy())},
			{"Add", second(nd.Add(x, x))},
			{"Add with another", second(nd.Add(ok, x))},
			{"Lazy", second(nd.Lazy(x).Exp().Eval())},
			{"Sum", second(nd.Sum(x, nd.Along()))},
			{"Max of rows", second(nd.Max(x, nd.Along(1)))},
			{"Softmax", second(nd.Softmax(x, -1))},
			{"ArgMax", second(nd.ArgMax(x, 0))},
			{"Take", second(nd.Take(x, idx, 1))},
			{"Concat", second(nd.Concat([]*nd.Array[float32]{x, x}, 0))},
			{"Fill", nd.Fill(x, 1)},
			{"AddInto it", nd.AddInto(x, x, nd.Scalar[float32](1))},
		} {
			t.Run(name+"/"+c.name, func(t *testing.T) {
				if !errors.Is(c.err, cuda.ErrClosed) {
					t.Errorf("got %v, want an error wrapping ErrClosed", c.err)
				}
			})
		}
		if str := x.String(); !strings.Contains(str, "closed") {
			t.Errorf("%s prints %q, want the error of its closed memory", name, str)
		}
	}
}
