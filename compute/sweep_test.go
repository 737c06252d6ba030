package compute_test

import (
	"errors"
	"fmt"
	"iter"
	"math"
	"slices"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/compute"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/internal/track"
)

// TestStandIn: on the fake driver, with the stand-in compiler, Add, Sum
// and SumAxis of float32 compute their results (the fake runs its C
// versions of the stand-in's kernels, from views aligned and not, rows and
// columns in each of their layouts), a kernel the fake has
// no C version of fails with ErrNotSupported instead of passing, and the
// first call after Release loads from the disk cache without compiling.
func TestStandIn(t *testing.T) {
	if cudatest.Fake(t) == nil {
		return
	}
	compute.UseStandIn(t)
	cudatest.CheckLeaks(t)
	e := newEnv(t)
	for _, tc := range []struct{ off, n int }{{0, 1000}, {1, 999}, {0, 3}, {2, 0}} {
		x := make([]float32, tc.off+tc.n)
		var want float32
		for i := range x {
			x[i] = float32(i%7) - 2
			if i >= tc.off {
				want += x[i]
			}
		}
		dx := cudatest.Upload(t, e.ctx, x)
		v := must(dx.Slice(tc.off, tc.n))(t)
		y := must(cuda.Alloc[float32](e.ctx, tc.n))(t)
		sum := must(cuda.Alloc[float32](e.ctx, 1))(t)
		t.Cleanup(func() { y.Free(); sum.Free() })
		if err := compute.Add(y, v, v, e.s); err != nil {
			t.Fatal(err)
		}
		if err := compute.Sum(sum, v, e.s); err != nil {
			t.Fatal(err)
		}
		for i, g := range cudatest.Download(t, y) {
			if g != 2*x[tc.off+i] {
				t.Fatalf("%+v: Add: element %d = %v, want %v", tc, i, g, 2*x[tc.off+i])
			}
		}
		if got := cudatest.Download(t, sum)[0]; got != want {
			t.Errorf("%+v: Sum = %v, want %v", tc, got, want)
		}
	}
	// Rows and columns in each of their layouts (layout.go; the fake has
	// 4 multiprocessors): rows by lanes, by a block, cut into chunks;
	// columns of one row or one column as rows, fewer than 32 columns in
	// one block and in several, more in one pass and in chunks of rows
	// (_cols: 128 columns or more; the stand-in has no _colsv).
	x := make([]float32, 140000)
	for i := range x {
		x[i] = float32(i%9) - 3
	}
	dx := cudatest.Upload(t, e.ctx, x)
	for _, sh := range []compute.Shape{{Rows: 10, Cols: 100}, {Rows: 1000, Cols: 1}, {Rows: 1, Cols: 1000}, {Rows: 250, Cols: 4},
		{Rows: 70000, Cols: 2}, {Rows: 1000, Cols: 140}, {Rows: 2, Cols: 70000}, {Rows: 3, Cols: 5000}, {Rows: 1, Cols: 140000}} {
		v := must(dx.Slice(0, sh.Rows*sh.Cols))(t)
		for _, axis := range []compute.Axis{compute.PerRow, compute.PerColumn} {
			outer, inner, at := alongAxis(x, sh, axis)
			out := must(cuda.Alloc[float32](e.ctx, outer))(t)
			t.Cleanup(func() { out.Free() })
			if err := compute.SumAxis(out, v, sh, axis, e.s); err != nil {
				t.Fatalf("SumAxis %v %v: %v", sh, axis, err)
			}
			for o, got := range cudatest.Download(t, out) {
				var want float32
				for k := range inner {
					want += at(o, k)
				}
				if got != want {
					t.Fatalf("SumAxis %v %v: %d = %v, want %v", sh, axis, o, got, want)
				}
			}
		}
	}
	z := must(cuda.Alloc[int32](e.ctx, 10))(t)
	defer z.Free()
	if err := compute.Add(z, z, z, e.s); !errors.Is(err, cuda.ErrNotSupported) {
		t.Errorf("Add of int32 on the fake: %v, want an error wrapping ErrNotSupported", err)
	}
	if err := compute.Release(e.ctx); err != nil {
		t.Fatal(err)
	}
	before := compute.Compiles()
	if err := compute.Add(must(cuda.Alloc[float32](e.ctx, 0))(t), must(cuda.Alloc[float32](e.ctx, 0))(t), must(cuda.Alloc[float32](e.ctx, 0))(t), e.s); err != nil {
		t.Fatal(err)
	}
	if err := compute.Add(dx, dx, dx, e.s); err != nil {
		t.Fatal(err)
	}
	if n := compute.Compiles() - before; n != 0 {
		t.Errorf("the first Add after Release compiled %d kernels: the disk cache was not used", n)
	}
}

// TestFaultSweep fails each driver call that the operations the fake can
// run make (Add, Sum, SumAxis of a column folded in chunks of rows, then the
// chunks, and of rows, Cast, Softmax, the Examples' kernels of one's own),
// one at a time, with each of a few codes, on their first call in a
// context (compiling or loading the kernel) and on a later one: the
// operation returns an error carrying the code and naming the call, holds
// nothing afterwards, and works when called again. So too Release, and
// Context.Close closing the kernels' modules. Every exported function and
// method is in a row, or in notSwept with the reason.
func TestFaultSweep(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	compute.UseStandIn(t)
	e := newEnv(t)
	const n = 1000
	in, ones := make([]float32, n), make([]float32, n)
	for i := range in {
		in[i], ones[i] = float32(i%5), float32(i%5+1)
	}
	x, x1 := cudatest.Upload(t, e.ctx, in), cudatest.Upload(t, e.ctx, ones)
	// A buffer whose Sum cuts its one row into chunks (longer than
	// splitCols), and whose columns as 500×140 fold in chunks of rows (in
	// _cols, which the stand-in has; fewer than 128 columns are _colsv's):
	// both with partial results in the stream's scratch memory (whose
	// making TestScratchFaults sweeps).
	const bigN = 70000
	bigIn := make([]float32, bigN)
	for i := range bigIn {
		bigIn[i] = float32(i % 5)
	}
	big := cudatest.Upload(t, e.ctx, bigIn)
	bigShape := compute.Shape{Rows: 500, Cols: 140}
	colSums := must(cuda.Alloc[float32](e.ctx, bigShape.Cols))(t)
	defer colSums.Free()
	y := must(cuda.Alloc[float32](e.ctx, n))(t)
	acc := must(cuda.Zeroed[float32](e.ctx, n))(t)
	sum := must(cuda.Alloc[float32](e.ctx, 1))(t)
	sum64 := must(cuda.Alloc[float64](e.ctx, 1))(t)
	sh := compute.Shape{Rows: 10, Cols: 100}
	// Softmax's rows of 2049: a block a row, in the kernel the stand-in
	// has (rows of 10 are a thread's, staged, _staged, and rows of 100
	// held in registers by lanes of a warp, _regsE, neither of which it
	// has; their launches are the same kernel() and Launch).
	softSh := compute.Shape{Rows: 2, Cols: 2049}
	softX := make([]cuda.BFloat16, softSh.Rows*softSh.Cols)
	for i := range softX {
		softX[i] = cuda.NewBFloat16(float32(i % 5))
	}
	softIn := cudatest.Upload(t, e.ctx, softX)
	h := must(cuda.Alloc[cuda.BFloat16](e.ctx, n))(t)
	soft := must(cuda.Alloc[cuda.BFloat16](e.ctx, len(softX)))(t)
	rows := must(cuda.Alloc[cuda.BFloat16](e.ctx, sh.Rows))(t)
	for _, b := range []interface{ Free() error }{y, acc, sum, sum64, h, softIn, soft, rows} {
		defer b.Free()
	}
	axpy := must(compute.NewElementwise(compute.ElementwiseSpec{Name: "axpy", InParams: "float32 a, float32 x, float32 y", OutParams: "float32 y", Operation: "y = a * x + y"}))(t)
	sumsq := must(compute.NewReduction(compute.ReductionSpec{Name: "sumsq", InParams: "float32 x", OutParams: "float64 y", MapExpr: "x * x",
		ReduceExpr: "a + b", PostMapExpr: "y = a", Identity: "0", ReduceType: "float64"}))(t)
	var closing *cuda.Context // Context.Close's row: a context of its own each time
	ops := []struct {
		name   string
		covers []string     // the exported functions and methods it sweeps
		once   bool         // no first and later call: one case
		setup  func() error // not swept: what the operation needs before it
		run    func() error
		check  func() error
	}{
		{name: "Add", covers: []string{"Add"}, run: func() error { return compute.Add(y, x, x, e.s) }, check: func() error {
			got := cudatest.Download(t, y)
			if i := slices.IndexFunc(got, func(v float32) bool {
				return v != 2*in[0] && v != 2*in[1] && v != 2*in[2] && v != 2*in[3] && v != 2*in[4]
			}); i >= 0 || got[n-1] != 2*in[n-1] {
				return fmt.Errorf("Add gave %v...", got[:5])
			}
			return nil
		}},
		{name: "Sum", covers: []string{"Sum"}, run: func() error { return compute.Sum(sum, big, e.s) }, check: func() error {
			if got := cudatest.Download(t, sum)[0]; got != 2*bigN {
				return fmt.Errorf("Sum = %v, want %v", got, 2*bigN)
			}
			return nil
		}},
		{name: "SumAxis per column", covers: []string{"SumAxis"}, run: func() error {
			return compute.SumAxis(colSums, big, bigShape, compute.PerColumn, e.s)
		}, check: func() error {
			for c, got := range cudatest.Download(t, colSums) {
				if want := float32(c%5) * float32(bigShape.Rows); got != want {
					return fmt.Errorf("SumAxis per column: column %d = %v, want %v", c, got, want)
				}
			}
			return nil
		}},
		{name: "Cast", covers: []string{"Cast"}, run: func() error { return compute.Cast(h, x, e.s) }, check: func() error {
			for i, v := range cudatest.Download(t, h) {
				if v != cuda.NewBFloat16(in[i]) {
					return fmt.Errorf("Cast: element %d = %v, want %v", i, v, in[i])
				}
			}
			return nil
		}},
		{name: "Softmax", covers: []string{"Softmax"},
			run: func() error { return compute.Softmax(soft, softIn, softSh, e.s) }, check: func() error {
				got := cudatest.Download(t, soft)
				for r := range softSh.Rows {
					var total float64
					for _, v := range got[r*softSh.Cols : (r+1)*softSh.Cols] {
						total += float64(v.Float32())
					}
					if math.Abs(total-1) > 0.05 {
						return fmt.Errorf("Softmax: row %d sums to %v", r, total)
					}
				}
				return nil
			}},
		{name: "SumAxis per row", covers: []string{"SumAxis"}, setup: func() error { return compute.Cast(h, x, e.s) },
			run: func() error { return compute.SumAxis(rows, h, sh, compute.PerRow, e.s) }, check: func() error {
				for r, v := range cudatest.Download(t, rows) {
					if v.Float32() != 200 {
						return fmt.Errorf("SumAxis: row %d = %v, want 200", r, v)
					}
				}
				return nil
			}},
		// axpy adds x1 into acc at each call: acc is k times x1, k the same
		// for every element.
		{name: "Elementwise.Launch", covers: []string{"NewElementwise", "Elementwise.Launch"}, run: func() error { return axpy.Launch(e.s, float32(1), x1, acc) }, check: func() error {
			got := cudatest.Download(t, acc)
			k := got[0] / ones[0]
			for i, v := range got {
				if k < 1 || v != k*ones[i] {
					return fmt.Errorf("axpy: element %d = %v, want %v·%v", i, v, k, ones[i])
				}
			}
			return nil
		}},
		// LaunchN with the count the buffers have: the same kernel.
		{name: "Elementwise.LaunchN", covers: []string{"Elementwise.LaunchN"}, run: func() error { return axpy.LaunchN(e.s, acc.Len(), float32(1), x1, acc) }, check: func() error {
			got := cudatest.Download(t, acc)
			k := got[0] / ones[0]
			for i, v := range got {
				if k < 1 || v != k*ones[i] {
					return fmt.Errorf("axpy: element %d = %v, want %v·%v", i, v, k, ones[i])
				}
			}
			return nil
		}},
		{name: "Reduction.Launch", covers: []string{"NewReduction", "Reduction.Launch"}, run: func() error { return sumsq.Launch(e.s, x, sum64) }, check: func() error {
			if got := cudatest.Download(t, sum64)[0]; got != 6000 { // 200 each of 0, 1, 4, 9, 16
				return fmt.Errorf("sumsq = %v, want 6000", got)
			}
			return nil
		}},
		{name: "Release", covers: []string{"Release"}, once: true, setup: func() error { return compute.Add(y, x, x, e.s) },
			run: func() error { return compute.Release(e.ctx) }, check: func() error {
				if n := compute.ModulesKept(e.ctx); n != 0 {
					return fmt.Errorf("%d modules kept after Release", n)
				}
				return nil
			}},
		{name: "Context.Close", once: true, setup: func() error {
			var err error
			if closing, err = cuda.NewContext(cudatest.Device(t)); err != nil {
				return err
			}
			s, err := closing.NewStream()
			if err != nil {
				return err
			}
			b, err := cuda.Zeroed[float32](closing, 16)
			if err != nil {
				return err
			}
			return errors.Join(compute.Add(b, b, b, s), s.Synchronize(), b.Free(), s.Close())
		}, run: func() error { return closing.Close() }, check: func() error {
			if n := compute.ModulesKept(closing); n != 0 {
				return fmt.Errorf("%d modules kept after Close", n)
			}
			return nil
		}},
	}
	checkSweepCovers(t, func(yield func(string) bool) {
		for _, op := range ops {
			for _, name := range op.covers {
				if !yield(name) {
					return
				}
			}
		}
	})
	codes := []int{2, 719, 1, 999}
	points := 0
	for _, op := range ops {
		for _, first := range []bool{true, false} {
			name := op.name + map[bool]string{true: "/first call", false: "/later call"}[first]
			if op.once {
				if !first {
					continue
				}
				name = op.name
			}
			t.Run(name, func(t *testing.T) {
				prepare := func() {
					t.Helper()
					if err := e.s.Synchronize(); err != nil {
						t.Fatal(err)
					}
					if first {
						if err := compute.Release(e.ctx); err != nil {
							t.Fatal(err)
						}
					}
					if op.setup != nil {
						if err := op.setup(); err != nil {
							t.Fatal(err)
						}
						if err := e.s.Synchronize(); err != nil {
							t.Fatal(err)
						}
					}
				}
				var counts [2]map[string]int
				for i := range counts {
					prepare()
					f.ResetCounts()
					if err := op.run(); err != nil {
						t.Fatal(err)
					}
					counts[i] = f.Counts()
				}
				for fn, calls := range counts[0] {
					if fn == "cuCtxSetCurrent" || fn == "cuCtxGetCurrent" || counts[1][fn] != calls {
						// Made where the goroutine's OS thread needs them, or by
						// the cleanup of an object collected meanwhile: not the
						// same from run to run.
						continue
					}
					for nth := 1; nth <= calls; nth++ {
						for _, code := range codes {
							where := fmt.Sprintf("call %d of %s failing with %d", nth, fn, code)
							prepare()
							before := track.Take()
							live := f.Live("device")
							f.Fail(fn, nth, code)
							err := op.run()
							fired := f.Pending() == 0
							f.ResetFaults()
							if !fired {
								t.Errorf("%s: the operation made fewer calls of %s than without faults", where, fn)
								continue
							}
							points++
							switch {
							case err == nil:
								t.Errorf("%s: the operation succeeded: the failure was lost", where)
							case !errors.Is(err, cuda.Result(code)):
								t.Errorf("%s: error %v does not carry code %d", where, err, code)
							case code == 2 && !errors.Is(err, cuda.ErrOutOfMemory), code == 1 && !errors.Is(err, cuda.ErrInvalidValue):
								t.Errorf("%s: error %v does not wrap the code's sentinel", where, err)
							case !strings.Contains(err.Error(), fn):
								t.Errorf("%s: error %q does not name %s", where, err, fn)
							}
							if err := e.s.Synchronize(); err != nil {
								t.Fatalf("%s: the stream failed afterwards: %v", where, err)
							}
							if d := f.Live("device") - live; d != 0 {
								t.Errorf("%s: the fake holds %+d device allocations afterwards", where, d)
							}
							now := track.Take()
							for _, k := range track.Kinds() {
								// A module loaded before the failure stays in
								// the context's cache (Release closes it).
								if d := now.Live[k] - before.Live[k]; d != 0 && k != track.Module {
									t.Errorf("%s: %+d %s(s) alive afterwards", where, d, k)
								}
							}
							if err := op.run(); err != nil {
								t.Fatalf("%s: the next call failed: %v", where, err)
							}
							if err := op.check(); err != nil {
								t.Fatalf("%s: the next call: %v", where, err)
							}
						}
					}
				}
			})
		}
	}
	t.Logf("fault sweep of compute: %d injection points", points)
}

// notSwept are the exported functions and methods no row of TestFaultSweep
// covers, each with the reason.
var notSwept = map[string]string{
	"Error.Error": "calls nothing", "Error.Unwrap": "calls nothing", "Axis.String": "calls nothing", "RawKernel.Name": "calls nothing",
}

// notOnFake are the operations whose kernels the fake has no C version of
// (compute/testdata/standin.ptx): their driver calls are those of Add's
// and Sum's kinds (a module loaded, a launch, the stream's scratch
// memory), swept on those. A RawKernel's source is the caller's: its
// driver calls are Elementwise.Launch's (a module loaded, a launch).
var notOnFake = []string{
	"NewRawKernel", "RawKernel.Launch", "RawKernel.Function",
	"Fill", "Iota", "Sub", "Mul", "Div", "Max", "Min", "AddScalar", "SubScalar", "MulScalar", "DivScalar", "MaxScalar", "MinScalar",
	"Axpby", "Abs", "Neg", "Relu", "Exp", "Log", "Sqrt", "Tanh", "Sigmoid", "Gelu", "Where",
	"MaxOf", "MinOf", "Mean", "MaxAxis", "MinAxis", "MeanAxis", "ArgMax", "ArgMin", "LogSoftmax", "Transpose", "Reduction.LaunchAxis",
}

// checkSweepCovers fails t for an exported function or method of the
// package in no row of the sweep (covered) and neither in notSwept nor in
// notOnFake: a new one fails the sweep until it has a row, or a reason.
func checkSweepCovers(t *testing.T, covered iter.Seq[string]) {
	t.Helper()
	in := map[string]bool{}
	for name := range covered {
		in[name] = true
	}
	for _, name := range notOnFake {
		in[name] = true
	}
	for name := range notSwept {
		in[name] = true
	}
	for _, name := range exportedFuncs(t) {
		if !in[name] {
			t.Errorf("exported %s is in no row of TestFaultSweep, nor in notSwept or notOnFake", name)
		}
	}
}

// TestScratchFaults: a failure of any call that makes a stream's scratch
// memory (asking whether the stream captures, allocating, zeroing) is the
// reduction's error, naming the call, holds no memory, and the next call
// on the stream makes the scratch and computes.
func TestScratchFaults(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	compute.UseStandIn(t)
	e := newEnv(t)
	x := make([]float32, 70000) // a row cut into chunks: the scratch's; sums to 69999
	for i := range x {
		x[i] = float32(i % 3)
	}
	dx, sum := cudatest.Upload(t, e.ctx, x), must(cuda.Alloc[float32](e.ctx, 1))(t)
	defer sum.Free()
	for _, fn := range []string{"cuStreamIsCapturing", "cuMemAlloc_v2", "cuMemsetD8Async"} {
		t.Run(fn, func(t *testing.T) {
			s := must(e.ctx.NewStream())(t)
			live := f.Live("device")
			f.Fail(fn, 1, 2)
			err := compute.Sum(sum, dx, s)
			f.ResetFaults()
			if !errors.Is(err, cuda.ErrOutOfMemory) || !strings.Contains(err.Error(), fn) {
				t.Fatalf("Sum with %s failing: %v, want an error wrapping ErrOutOfMemory naming it", fn, err)
			}
			if got := f.Live("device"); got != live {
				t.Errorf("%d device allocations after the failure, want %d", got, live)
			}
			if err := compute.Sum(sum, dx, s); err != nil {
				t.Fatal(err)
			}
			if got := cudatest.Download(t, sum)[0]; got != 69999 {
				t.Errorf("Sum after the failure = %v, want 69999", got)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if got := f.Live("device"); got != live {
				t.Errorf("%d device allocations after Close, want %d: the scratch stayed", got, live)
			}
		})
	}
}
