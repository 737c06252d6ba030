package compute_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/compute"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/internal/track"
)

// TestStandIn: on the fake driver, with the stand-in compiler, Add, Sum
// and SumAxis per column of float32 compute their results (the fake runs
// its C versions of the stand-in's kernels, from views aligned and not,
// columns in one pass and in chunks of rows), a kernel the fake has
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
		dx := upload(t, e.ctx, x)
		v := must(dx.Slice(tc.off, tc.n))(t)
		y := must(cuda.Alloc[float32](e.ctx, tc.n))(t)
		sum := must(cuda.Alloc[float32](e.ctx, 1))(t)
		t.Cleanup(func() { y.Free(); sum.Free() })
		if err := compute.Add(e.s, y, v, v); err != nil {
			t.Fatal(err)
		}
		if err := compute.Sum(e.s, sum, v); err != nil {
			t.Fatal(err)
		}
		for i, g := range download(t, y) {
			if g != 2*x[tc.off+i] {
				t.Fatalf("%+v: Add: element %d = %v, want %v", tc, i, g, 2*x[tc.off+i])
			}
		}
		if got := download(t, sum)[0]; got != want {
			t.Errorf("%+v: Sum = %v, want %v", tc, got, want)
		}
	}
	// Columns: in one pass, and in chunks of rows folded by a second.
	x := make([]float32, 1000)
	for i := range x {
		x[i] = float32(i%9) - 3
	}
	dx := upload(t, e.ctx, x)
	for _, sh := range []compute.Shape{{Rows: 10, Cols: 100}, {Rows: 1000, Cols: 1}, {Rows: 250, Cols: 4}} {
		cols := must(cuda.Alloc[float32](e.ctx, sh.Cols))(t)
		t.Cleanup(func() { cols.Free() })
		if err := compute.SumAxis(e.s, cols, dx, sh, compute.PerColumn); err != nil {
			t.Fatal(err)
		}
		for c, got := range download(t, cols) {
			var want float32
			for r := range sh.Rows {
				want += x[r*sh.Cols+c]
			}
			if got != want {
				t.Errorf("SumAxis %v per column: column %d = %v, want %v", sh, c, got, want)
			}
		}
	}
	z := must(cuda.Alloc[int32](e.ctx, 10))(t)
	defer z.Free()
	if err := compute.Add(e.s, z, z, z); !errors.Is(err, cuda.ErrNotSupported) {
		t.Errorf("Add of int32 on the fake: %v, want an error wrapping ErrNotSupported", err)
	}
	if err := compute.Release(e.ctx); err != nil {
		t.Fatal(err)
	}
	before := compute.Compiles()
	if err := compute.Add(e.s, must(cuda.Alloc[float32](e.ctx, 0))(t), must(cuda.Alloc[float32](e.ctx, 0))(t), must(cuda.Alloc[float32](e.ctx, 0))(t)); err != nil {
		t.Fatal(err)
	}
	if err := compute.Add(e.s, dx, dx, dx); err != nil {
		t.Fatal(err)
	}
	if n := compute.Compiles() - before; n != 0 {
		t.Errorf("the first Add after Release compiled %d kernels: the disk cache was not used", n)
	}
}

// TestFaultSweep fails each driver call that Add, Sum and SumAxis (a column
// folded in chunks of rows, then the chunks) make, one at a
// time, with each of a few codes, on their first call in a context
// (compiling or loading the kernel) and on a later one: the operation
// returns an error carrying the code and naming the call, holds nothing
// afterwards, and works when called again.
func TestFaultSweep(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	compute.UseStandIn(t)
	e := newEnv(t)
	const n = 1000
	in := make([]float32, n)
	for i := range in {
		in[i] = float32(i % 5)
	}
	x := upload(t, e.ctx, in)
	y := must(cuda.Alloc[float32](e.ctx, n))(t)
	sum := must(cuda.Alloc[float32](e.ctx, 1))(t)
	defer y.Free()
	defer sum.Free()
	ops := []struct {
		name  string
		run   func() error
		check func() error
	}{
		{"Add", func() error { return compute.Add(e.s, y, x, x) }, func() error {
			got := download(t, y)
			if i := slices.IndexFunc(got, func(v float32) bool {
				return v != 2*in[0] && v != 2*in[1] && v != 2*in[2] && v != 2*in[3] && v != 2*in[4]
			}); i >= 0 || got[n-1] != 2*in[n-1] {
				return fmt.Errorf("Add gave %v...", got[:5])
			}
			return nil
		}},
		{"Sum", func() error { return compute.Sum(e.s, sum, x) }, func() error {
			if got := download(t, sum)[0]; got != 2000 {
				return fmt.Errorf("Sum = %v, want 2000", got)
			}
			return nil
		}},
		{"SumAxis per column", func() error { return compute.SumAxis(e.s, sum, x, compute.Shape{Rows: n, Cols: 1}, compute.PerColumn) }, func() error {
			if got := download(t, sum)[0]; got != 2000 {
				return fmt.Errorf("SumAxis of one column = %v, want 2000", got)
			}
			return nil
		}},
	}
	codes := []int{2, 719, 1, 999}
	points := 0
	for _, op := range ops {
		for _, first := range []bool{true, false} {
			name := op.name + map[bool]string{true: "/first call", false: "/later call"}[first]
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
