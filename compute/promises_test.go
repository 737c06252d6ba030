package compute_test

import (
	"fmt"
	"math"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/compute"
	"github.com/gocuda/cuda/internal/cudatest"
)

// The package docs' promises at their edges, as a user reads them.

// view uploads x into a buffer of off more elements and returns the view
// of x at element off (misaligned for 16-byte vectors where off is odd).
func view[T cuda.Number](t *testing.T, ctx *cuda.Context, x []T, off int) *cuda.DeviceBuffer[T] {
	t.Helper()
	b := cudatest.Upload(t, ctx, append(make([]T, off), x...))
	t.Cleanup(func() { b.Free() })
	return must(b.Slice(off, len(x)))(t)
}

// TestPromisesRawKernelEmptyGrid: RawKernel.Launch takes cfg and args as
// cuda.Function.Launch takes them, where a grid's X of zero launches
// nothing but a bad configuration, a freed buffer or a closed stream is
// still an error ("a bad configuration is an error whatever the grid"):
// before the kernel is compiled (which an empty grid does not do), what
// needs no kernel; once it is loaded, everything.
func TestPromisesRawKernelEmptyGrid(t *testing.T) {
	requireNVRTC(t)
	other := cudatest.Context(t) // first: closed, and checked for leaks, last
	e := newEnv(t)
	k := must(compute.NewRawKernel(rowSums, "scale"))(t)
	buf := must(cuda.Zeroed[float32](e.ctx, 4))(t)
	defer buf.Free()
	freed := must(cuda.Alloc[float32](e.ctx, 4))(t)
	if err := freed.Free(); err != nil {
		t.Fatal(err)
	}
	closed := must(e.ctx.NewStream())(t)
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	otherBuf := must(cuda.Alloc[float32](other, 4))(t)
	defer otherBuf.Free()
	empty, block := cuda.Dim3{}, cuda.Dim3{X: 32}
	type launch struct {
		name     string
		cfg      cuda.LaunchConfig
		args     []any
		sentinel error
		want     string
	}
	unloaded := []launch{
		{"freed buffer", cuda.LaunchConfig{Grid: empty, Block: block, Stream: e.s}, []any{freed, float32(2), int32(4)}, cuda.ErrClosed, "argument 0"},
		{"block of no threads", cuda.LaunchConfig{Grid: empty, Block: cuda.Dim3{}, Stream: e.s}, []any{buf, float32(2), int32(4)}, cuda.ErrInvalidValue, "dimension"},
		{"negative grid Y", cuda.LaunchConfig{Grid: cuda.Dim3{Y: -1}, Block: block, Stream: e.s}, []any{buf, float32(2), int32(4)}, cuda.ErrInvalidValue, "dimension"},
		{"negative shared memory", cuda.LaunchConfig{Grid: empty, Block: block, SharedMemBytes: -1, Stream: e.s}, []any{buf, float32(2), int32(4)}, cuda.ErrInvalidValue, "shared memory"},
		{"another context's buffer", cuda.LaunchConfig{Grid: empty, Block: block, Stream: e.s}, []any{otherBuf, float32(2), int32(4)}, cuda.ErrInvalidValue, "another context"},
	}
	check := func(t *testing.T, cases []launch) {
		t.Helper()
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				cudatest.WantErr(t, "RawKernel.Launch of an empty grid", k.Launch(tc.cfg, tc.args...), tc.sentinel, tc.want)
			})
		}
	}
	before := compute.Compiles()
	t.Run("unloaded", func(t *testing.T) { check(t, unloaded) })
	// A good empty launch is nothing, and compiles nothing.
	if err := k.Launch(cuda.LaunchConfig{Grid: empty, Block: block, Stream: e.s}, buf, float32(2), int32(4)); err != nil {
		t.Errorf("an empty grid: %v", err)
	}
	if compute.Compiles() != before {
		t.Errorf("empty grids compiled %d kernels", compute.Compiles()-before)
	}
	if err := k.Launch(cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: block, Stream: e.s}, buf, float32(2), int32(4)); err != nil {
		t.Fatal(err)
	}
	t.Run("loaded", func(t *testing.T) {
		check(t, append(unloaded[1:],
			launch{"freed buffer", cuda.LaunchConfig{Grid: empty, Block: block, Stream: e.s}, []any{freed, float32(2), int32(4)}, cuda.ErrClosed, "closed"},
			launch{"closed stream", cuda.LaunchConfig{Grid: empty, Block: block, Stream: closed}, []any{buf, float32(2), int32(4)}, cuda.ErrClosed, "closed"},
		))
	})
}

// TestPromisesRawKernelClosedContext: a closed context's Function is
// cuda.ErrClosed.
func TestPromisesRawKernelClosedContext(t *testing.T) {
	requireNVRTC(t)
	ctx := must(cuda.NewContext(must(cuda.GetDevice(0))(t)))(t)
	if err := ctx.Close(); err != nil {
		t.Fatal(err)
	}
	k := must(compute.NewRawKernel(rowSums, "scale"))(t)
	_, err := k.Function(ctx)
	cudatest.WantErr(t, "Function in a closed context", err, cuda.ErrClosed, "")
}

// TestPromisesKeywordNames: a parameter's name is a C identifier; a C++
// keyword is none, and NewElementwise says so, naming the field, rather
// than a Launch's compile failing on it.
func TestPromisesKeywordNames(t *testing.T) {
	for _, tc := range []struct{ in, out, field string }{
		{"float32 int", "float32 y", "InParams"},
		{"float32 x", "float32 float", "OutParams"},
		{"float32 class, float32 x", "float32 y", "InParams"},
	} {
		_, err := compute.NewElementwise(compute.ElementwiseSpec{Name: "k", InParams: tc.in, OutParams: tc.out, Operation: "y = x"})
		cudatest.WantErr(t, tc.in+" -> "+tc.out, err, cuda.ErrInvalidValue, tc.field)
	}
	_, err := compute.NewElementwise(compute.ElementwiseSpec{Name: "float", InParams: "float32 x", OutParams: "float32 y", Operation: "y = x"})
	cudatest.WantErr(t, "kernel named float", err, cuda.ErrInvalidValue, "Name")
}

// TestPromisesArgBoundaries: ArgMax and ArgMin around one block's
// elements (32768) and a vector's, on views at odd offsets: the first of
// equals, the first NaN.
func TestPromisesArgBoundaries(t *testing.T) {
	e := gpu(t)
	dst := must(cuda.Alloc[int64](e.ctx, 1))(t)
	defer dst.Free()
	for _, n := range []int{1, 7, 8, 9, 32767, 32768, 32769, 65537} {
		for _, off := range []int{0, 1, 3} {
			x := make([]cuda.Float16, n)
			for i := range x {
				x[i] = cuda.NewFloat16(float32(i % 5))
			}
			// The largest twice, the last first; a NaN after both.
			x[n-1] = cuda.NewFloat16(100)
			x[n/2] = cuda.NewFloat16(100)
			src := view(t, e.ctx, x, off)
			if err := compute.ArgMax(dst, src, e.s); err != nil {
				t.Fatal(err)
			}
			if got, want := cudatest.Download(t, dst)[0], int64(n/2); got != want {
				t.Errorf("ArgMax of %d at +%d = %d, want %d", n, off, got, want)
			}
			if err := compute.ArgMin(dst, src, e.s); err != nil {
				t.Fatal(err)
			}
			if got, want := cudatest.Download(t, dst)[0], int64(0); n > 1 && got != want {
				t.Errorf("ArgMin of %d at +%d = %d, want %d", n, off, got, want)
			}
			if n > 2 {
				x[n-2] = cuda.Float16(0x7e00)
				src = view(t, e.ctx, x, off)
				for name, op := range map[string]func(*cuda.DeviceBuffer[int64], *cuda.DeviceBuffer[cuda.Float16], *cuda.Stream) error{"ArgMax": compute.ArgMax[cuda.Float16], "ArgMin": compute.ArgMin[cuda.Float16]} {
					if err := op(dst, src, e.s); err != nil {
						t.Fatal(err)
					}
					if got, want := cudatest.Download(t, dst)[0], int64(n-2); got != want {
						t.Errorf("%s of %d at +%d with a NaN at %d = %d", name, n, off, want, got)
					}
				}
			}
		}
	}
}

// TestPromisesIntegerEdges: integer operations wrap as Go's do, division
// by zero is 0 and the most negative by -1 itself, on views at odd
// offsets (every element one by one) and aligned ones.
func TestPromisesIntegerEdges(t *testing.T) {
	e := gpu(t)
	x := []int8{-128, -1, 0, 1, 127, -128, 5, -7, 100, -100, 127, -128, 3, 2, 1, 0, -1, -128, 127}
	y := []int8{-1, 0, -1, 0, -1, 0, 2, 3, 27, -29, 1, -128, -1, -1, 127, 7, -128, 1, 127}
	for _, off := range []int{0, 1} {
		t.Run(fmt.Sprint("+", off), func(t *testing.T) {
			dx, dy := view(t, e.ctx, x, off), view(t, e.ctx, y, off)
			dst := view(t, e.ctx, make([]int8, len(x)), off)
			for _, op := range []struct {
				name string
				run  func() error
				ref  func(a, b int8) int8
			}{
				{"Add", func() error { return compute.Add(dst, dx, dy, e.s) }, func(a, b int8) int8 { return a + b }},
				{"Sub", func() error { return compute.Sub(dst, dx, dy, e.s) }, func(a, b int8) int8 { return a - b }},
				{"Mul", func() error { return compute.Mul(dst, dx, dy, e.s) }, func(a, b int8) int8 { return a * b }},
				{"Div", func() error { return compute.Div(dst, dx, dy, e.s) }, func(a, b int8) int8 {
					if b == 0 {
						return 0
					}
					return a / b
				}},
				{"Neg", func() error { return compute.Neg(dst, dx, e.s) }, func(a, _ int8) int8 { return -a }},
				{"Abs", func() error { return compute.Abs(dst, dx, e.s) }, func(a, _ int8) int8 {
					if a < 0 {
						return -a
					}
					return a
				}},
				{"Relu", func() error { return compute.Relu(dst, dx, e.s) }, func(a, _ int8) int8 { return max(a, 0) }},
				{"DivScalar -1", func() error { return compute.DivScalar(dst, dx, -1, e.s) }, func(a, _ int8) int8 { return -a }},
				{"DivScalar 0", func() error { return compute.DivScalar(dst, dx, 0, e.s) }, func(a, _ int8) int8 { return 0 }},
				{"Axpby", func() error {
					if err := dst.CopyFromDeviceAsync(dy, e.s); err != nil {
						return err
					}
					return compute.Axpby(3, dx, -2, dst, e.s)
				}, func(a, b int8) int8 { return 3*a + -2*b }},
			} {
				if err := op.run(); err != nil {
					t.Fatalf("%s: %v", op.name, err)
				}
				got := cudatest.Download(t, dst)
				for i := range got {
					if want := op.ref(x[i], y[i]); got[i] != want {
						t.Errorf("%s: element %d of %d, %d: %d, want %d", op.name, i, x[i], y[i], got[i], want)
					}
				}
			}
			// Sums wrap in the element type; Max and Min of the extremes.
			one := must(cuda.Alloc[int8](e.ctx, 1))(t)
			defer one.Free()
			var sum int8
			for _, v := range x {
				sum += v
			}
			for _, r := range []struct {
				name string
				op   func(dst, src *cuda.DeviceBuffer[int8], s *cuda.Stream) error
				want int8
			}{{"Sum", compute.Sum[int8], sum}, {"MaxOf", compute.MaxOf[int8], 127}, {"MinOf", compute.MinOf[int8], -128}} {
				if err := r.op(one, dx, e.s); err != nil {
					t.Fatal(err)
				}
				if got := cudatest.Download(t, one)[0]; got != r.want {
					t.Errorf("%s = %d, want %d", r.name, got, r.want)
				}
			}
		})
	}
}

// TestPromisesHalfMeans: Float16 and BFloat16 are summed in float32, so
// that a mean of values whose sum a half cannot hold is right.
func TestPromisesHalfMeans(t *testing.T) {
	e := gpu(t)
	for _, n := range []int{1, 9, 1023, 1025, 4097} {
		for _, off := range []int{0, 1} {
			x := make([]cuda.Float16, n)
			for i := range x {
				x[i] = cuda.NewFloat16(60000)
			}
			src := view(t, e.ctx, x, off)
			dst := must(cuda.Alloc[cuda.Float16](e.ctx, 1))(t)
			if err := compute.Mean(dst, src, e.s); err != nil {
				t.Fatal(err)
			}
			if got := cudatest.Download(t, dst)[0]; got != x[0] {
				t.Errorf("Mean of %d × 60000 at +%d = %v", n, off, got.Float32())
			}
			rows := must(cuda.Alloc[cuda.Float16](e.ctx, 1))(t)
			if err := compute.MeanAxis(rows, src, compute.Shape{Rows: 1, Cols: n}, compute.PerRow, e.s); err != nil {
				t.Fatal(err)
			}
			if got := cudatest.Download(t, rows)[0]; got != x[0] {
				t.Errorf("MeanAxis of a row of %d × 60000 at +%d = %v", n, off, got.Float32())
			}
			cols := must(cuda.Alloc[cuda.Float16](e.ctx, 1))(t)
			if err := compute.MeanAxis(cols, src, compute.Shape{Rows: n, Cols: 1}, compute.PerColumn, e.s); err != nil {
				t.Fatal(err)
			}
			if got := cudatest.Download(t, cols)[0]; got != x[0] {
				t.Errorf("MeanAxis of a column of %d × 60000 at +%d = %v", n, off, got.Float32())
			}
			dst.Free()
			rows.Free()
			cols.Free()
		}
	}
}

// TestPromisesCastEdges: Cast rounds to the halves bit for bit as
// cuda.NewFloat16 and cuda.NewBFloat16 of the float32, at their extremes.
func TestPromisesCastEdges(t *testing.T) {
	e := gpu(t)
	f := []float32{65504, 65519, 65520, -65520, 1e-8, -1e-8, 5.96e-8, 2.98e-8, 2.99e-8, float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), math.Float32frombits(0x7f800001), math.Float32frombits(0xffc00123), 3.4028235e38, float32(math.Copysign(0, -1)), 1.17549435e-38, 1e-45}
	for _, off := range []int{0, 1} {
		src := view(t, e.ctx, f, off)
		h := view(t, e.ctx, make([]cuda.Float16, len(f)), off)
		b := view(t, e.ctx, make([]cuda.BFloat16, len(f)), off)
		if err := compute.Cast(h, src, e.s); err != nil {
			t.Fatal(err)
		}
		if err := compute.Cast(b, src, e.s); err != nil {
			t.Fatal(err)
		}
		gh, gb := cudatest.Download(t, h), cudatest.Download(t, b)
		for i, v := range f {
			if gh[i] != cuda.NewFloat16(v) {
				t.Errorf("+%d: Cast of %v (%#x) to Float16 = %#x, want %#x", off, v, math.Float32bits(v), gh[i], cuda.NewFloat16(v))
			}
			if gb[i] != cuda.NewBFloat16(v) {
				t.Errorf("+%d: Cast of %v (%#x) to BFloat16 = %#x, want %#x", off, v, math.Float32bits(v), gb[i], cuda.NewBFloat16(v))
			}
		}
		// And back, and from one half to the other.
		back := view(t, e.ctx, make([]float32, len(f)), off)
		if err := compute.Cast(back, h, e.s); err != nil {
			t.Fatal(err)
		}
		for i, g := range cudatest.Download(t, back) {
			if math.Float32bits(g) != math.Float32bits(gh[i].Float32()) {
				t.Errorf("+%d: Cast of Float16 %#x to float32 = %#x, want %#x", off, gh[i], math.Float32bits(g), math.Float32bits(gh[i].Float32()))
			}
		}
		hb := view(t, e.ctx, make([]cuda.BFloat16, len(f)), off)
		if err := compute.Cast(hb, h, e.s); err != nil {
			t.Fatal(err)
		}
		for i, g := range cudatest.Download(t, hb) {
			if want := cuda.NewBFloat16(gh[i].Float32()); g != want {
				t.Errorf("+%d: Cast of Float16 %#x to BFloat16 = %#x, want %#x", off, gh[i], g, want)
			}
		}
	}
}

// TestPromisesWhereMask: any nonzero mask byte picks a, on a mask at an
// odd offset and one aligned.
func TestPromisesWhereMask(t *testing.T) {
	e := gpu(t)
	for _, n := range []int{1, 15, 16, 17, 1025} {
		for _, off := range []int{0, 1, 3} {
			mask := make([]uint8, n)
			a, b := make([]float32, n), make([]float32, n)
			for i := range mask {
				mask[i] = []uint8{0, 1, 2, 255, 128}[i%5]
				a[i], b[i] = float32(i), -float32(i)-1
			}
			dm, da, db := view(t, e.ctx, mask, off), view(t, e.ctx, a, 0), view(t, e.ctx, b, 0)
			dst := must(cuda.Alloc[float32](e.ctx, n))(t)
			if err := compute.Where(dst, dm, da, db, e.s); err != nil {
				t.Fatal(err)
			}
			for i, g := range cudatest.Download(t, dst) {
				want := b[i]
				if mask[i] != 0 {
					want = a[i]
				}
				if g != want {
					t.Fatalf("Where of %d, mask at +%d: element %d (mask %d) = %v, want %v", n, off, i, mask[i], g, want)
				}
			}
			dst.Free()
		}
	}
}
