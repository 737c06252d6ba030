package cuda_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/nvrtc"
)

func blocks(n, block int) cuda.Dim3 { return cuda.Dim3{X: (n + block - 1) / block} }

func testVectorAdd[T int32 | float32 | float64](t *testing.T, ctx *cuda.Context, s *cuda.Stream, f *cuda.Function, n int) {
	a, b := make([]T, n), make([]T, n)
	for i := range a { // random and finite: the device rounds a sum as Go does
		a[i], b[i] = T(rand.NormFloat64()*1e4), T(rand.NormFloat64()*1e4)
	}
	da, db := must(cuda.FromHost(ctx, a))(t), must(cuda.FromHost(ctx, b))(t)
	dc := must(cuda.Alloc[T](ctx, n))(t)
	defer da.Free()
	defer db.Free()
	defer dc.Free()
	cfg := cuda.LaunchConfig{Grid: blocks(n, 256), Block: cuda.Dim3{X: 256}, Stream: s}
	if err := f.Launch(cfg, da, db, dc, uint32(n)); err != nil {
		t.Fatal(err)
	}
	got := make([]T, n)
	if err := dc.CopyToHostAsync(got, s); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if got[i] != a[i]+b[i] {
			t.Fatalf("%s, n=%d: c[%d] = %v, want %v", f.Name(), n, i, got[i], a[i]+b[i])
		}
	}
}

func TestVectorAdd(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	m := loadKernels(t, ctx)
	for _, n := range []int{1, 1000, 100003} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			testVectorAdd[float32](t, ctx, s, must(m.Function("vadd_f32"))(t), n)
			testVectorAdd[float64](t, ctx, s, must(m.Function("vadd_f64"))(t), n)
			testVectorAdd[int32](t, ctx, s, must(m.Function("vadd_s32"))(t), n)
		})
	}
}

func TestStructByValue(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	f := must(loadKernels(t, ctx).Function("affine"))(t)
	type affine struct {
		Scale  float32
		Offset int32
	}
	const n = 4099
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(i)*0.25 - 100
	}
	dx, dy := must(cuda.FromHost(ctx, x))(t), must(cuda.Alloc[float32](ctx, n))(t)
	defer dx.Free()
	defer dy.Free()
	p := affine{Scale: 1.5, Offset: -7}
	if err := f.Launch(cuda.LaunchConfig{Grid: blocks(n, 128), Block: cuda.Dim3{X: 128}, Stream: s}, p, dx, dy, uint32(n)); err != nil {
		t.Fatal(err)
	}
	y := make([]float32, n)
	dy.CopyToHostAsync(y, s)
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	for i := range y {
		if want := x[i]*p.Scale + float32(p.Offset); !closeTo(y[i], want) {
			t.Fatalf("y[%d] = %v, want %v", i, y[i], want)
		}
	}
}

func TestDynamicSharedMemory(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	f := must(loadKernels(t, ctx).Function("reverse"))(t)
	const n = 512
	v := random[int32](n)
	d := must(cuda.FromHost(ctx, v))(t)
	defer d.Free()
	if err := f.Launch(cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: n}, SharedMemBytes: n * 4, Stream: s}, d); err != nil {
		t.Fatal(err)
	}
	got := make([]int32, n)
	d.CopyToHostAsync(got, s)
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if got[i] != v[n-1-i] {
			t.Fatalf("element %d = %d, want %d", i, got[i], v[n-1-i])
		}
	}
	// More than the default 48 KiB needs the attribute raised first.
	if err := f.SetAttribute(cuda.FuncMaxDynamicSharedSize, 64<<10); err != nil {
		t.Fatalf("SetAttribute: %v", err)
	}
	if got, err := f.Attribute(cuda.FuncMaxDynamicSharedSize); err != nil || got != 64<<10 {
		t.Errorf("FuncMaxDynamicSharedSize = %d, %v", got, err)
	}
	if err := f.Launch(cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: n}, SharedMemBytes: 64 << 10, Stream: s}, d); err != nil {
		t.Errorf("launch with 64 KiB of dynamic shared memory: %v", err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
}

func TestFunctionAttributes(t *testing.T) {
	ctx := cudatest.Context(t)
	f := must(loadKernels(t, ctx).Function("saxpy"))(t)
	if v, err := f.Attribute(cuda.FuncMaxThreadsPerBlock); err != nil || v < 64 || v > 1024 {
		t.Errorf("FuncMaxThreadsPerBlock = %d, %v", v, err)
	}
	if v, err := f.Attribute(cuda.FuncNumRegs); err != nil || v < 0 {
		t.Errorf("FuncNumRegs = %d, %v", v, err)
	}
	for _, tt := range []struct {
		name  string
		attr  cuda.FunctionAttribute
		value int
		ok    bool
	}{
		{"negative dynamic shared memory", cuda.FuncMaxDynamicSharedSize, -1, false},
		{"carveout: no preference", cuda.FuncPreferredSharedCarveout, -1, true}, // CU_SHAREDMEM_CARVEOUT_DEFAULT
		{"carveout: all shared", cuda.FuncPreferredSharedCarveout, 100, true},
		{"carveout: all L1", cuda.FuncPreferredSharedCarveout, 0, true},
		{"carveout past 100 percent", cuda.FuncPreferredSharedCarveout, 101, false},
		{"carveout below -1", cuda.FuncPreferredSharedCarveout, -2, false},
		{"read-only attribute", cuda.FuncNumRegs, 8, false},
		{"no such attribute", cuda.FunctionAttribute(-1), 0, false},
		{"attribute past int32", cuda.FuncMaxDynamicSharedSize + 1<<32, 1024, false}, // 8 in the driver's int32
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := f.SetAttribute(tt.attr, tt.value)
			if tt.ok != (err == nil) || err != nil && (!errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), tt.attr.String())) {
				t.Errorf("SetAttribute(%v, %d): %v; want ok %v, or ErrInvalidValue naming the attribute", tt.attr, tt.value, err, tt.ok)
			}
		})
	}
	for _, a := range []cuda.FunctionAttribute{-1, cuda.FuncNumRegs + 1<<32} {
		if _, err := f.Attribute(a); !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), a.String()) {
			t.Errorf("Attribute(%d): %v; want ErrInvalidValue naming the attribute", a, err)
		}
	}
}

// namedFloat and namedUint are numbers of named types, which Launch
// checks as the numbers they are.
type (
	namedFloat   float32
	namedUint    uint32
	namedUintptr uintptr
)

func TestLaunchErrors(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	m := loadKernels(t, ctx)
	f := must(m.Function("vadd_f32"))(t)
	a := must(cuda.Alloc[float32](ctx, 16))(t)
	defer a.Free()
	var nilBuf *cuda.DeviceBuffer[float32]
	other := cudatest.Context(t)
	so := cudatest.Stream(t, other)
	ao := must(cuda.Alloc[float32](other, 16))(t)
	defer ao.Free()
	ok := cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: 16}, Stream: s}
	tests := []struct {
		name string
		cfg  cuda.LaunchConfig
		args []any
		want string
	}{
		{"too many threads per block", cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: 2048}, Stream: s}, []any{a, a, a, uint32(16)}, "cuLaunchKernel"},
		{"zero block", cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Stream: s}, []any{a, a, a, uint32(16)}, "every dimension"},
		{"negative grid", cuda.LaunchConfig{Grid: cuda.Dim3{X: -1}, Block: cuda.Dim3{X: 16}, Stream: s}, []any{a, a, a, uint32(16)}, "grid {-1 1 1}"},
		{"zero grid with a bad argument", cuda.LaunchConfig{Block: cuda.Dim3{X: 16}, Stream: s}, []any{a, a, a, 16}, "int32 or int64"},
		{"no stream", cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: 16}}, []any{a, a, a, uint32(16)}, "no stream"},
		{"stream of another context", cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: 16}, Stream: so}, []any{a, a, a, uint32(16)}, "another context"},
		{"go int", ok, []any{a, a, a, 16}, "int32 or int64"},
		{"bool", ok, []any{a, a, a, true}, "bool"},
		{"nil buffer", ok, []any{a, nilBuf, a, uint32(16)}, "nil *DeviceBuffer"},
		{"slice", ok, []any{a, a, a, []uint32{16}}, "slice"},
		{"negative shared memory", cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: 16}, SharedMemBytes: -1, Stream: s}, []any{a, a, a, uint32(16)}, "shared memory"},
		{"2 GiB of shared memory", cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: 16}, SharedMemBytes: 1 << 31, Stream: s}, []any{a, a, a, uint32(16)}, "cuLaunchKernel"},
		{"named float type for an integer", ok, []any{a, a, a, namedFloat(16)}, "takes .u32"},
		{"struct with a Go int", ok, []any{a, a, a, struct{ N int }{16}}, "struct { N int }.N is a Go int, which has no fixed C counterpart"},
		{"array of Go uint", ok, []any{a, a, a, [1]uint{16}}, "[1]uint[0] is a Go uint"},
		{"named Go uintptr", ok, []any{a, a, a, namedUintptr(16)}, "no fixed C counterpart"},
		{"named integer type for an integer", ok, []any{a, a, a, namedUint(16)}, ""},
		{"buffer of another context", ok, []any{a, a, ao, uint32(16)}, "argument 2 is a device buffer of another context"},
		{"float for an integer", ok, []any{a, a, a, float32(16)}, "takes .u32"},
		{"integer for a pointer", ok, []any{a, a, float64(0), uint32(16)}, "takes .u64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := f.Launch(tt.cfg, tt.args...)
			if tt.want == "" {
				if err != nil {
					t.Errorf("got %v; want no error", err)
				}
				return
			}
			if !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v; want ErrInvalidValue mentioning %q", err, tt.want)
			}
		})
	}
	// The count and sizes of arguments, where the driver can describe them.
	for name, args := range map[string][]any{
		"too few":    {a, a, a},
		"wrong size": {a, a, a, int64(16)},
	} {
		err := f.Launch(ok, args...)
		if !errors.Is(err, cuda.ErrInvalidValue) {
			t.Errorf("%s: %v; want ErrInvalidValue (or, with a driver older than CUDA 12.4, nothing checked)", name, err)
		}
	}
	if err := s.Synchronize(); err != nil {
		t.Fatalf("the stream after refused launches: %v", err)
	}
	var nilFn *cuda.Function
	if err := nilFn.Launch(ok); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("nil function: %v", err)
	}
	m.Close()
	if err := f.Launch(ok, a, a, a, uint32(16)); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("launch after the module closed: %v; want ErrClosed", err)
	}
	if _, err := f.Attribute(cuda.FuncNumRegs); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("Attribute after the module closed: %v; want ErrClosed", err)
	}
}

// TestLaunchTypesFromPTX: for a module loaded from PTX, each argument's
// kind is checked against the type on the kernel's .entry line.
func TestLaunchTypesFromPTX(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	m := loadKernels(t, ctx)
	saxpy := must(m.Function("saxpy"))(t) // (.f32 a, .u64 x, .u64 y, .u32 n)
	x := must(cuda.Alloc[float32](ctx, 4))(t)
	defer x.Free()
	cfg := cuda.LaunchConfigFor(4, s)
	for name, args := range map[string][]any{
		"uint32 for .f32":    {uint32(2), x, x, uint32(4)},
		"float32 for .u32":   {float32(2), x, x, float32(4)},
		"DevicePtr for .f32": {cuda.DevicePtr(0), x, x, uint32(4)},
	} {
		if err := saxpy.Launch(cfg, args...); !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "kernel saxpy takes") {
			t.Errorf("%s: %v; want ErrInvalidValue naming the parameter's type", name, err)
		}
	}
	// Any integer of the width for an integer parameter (C's int is .u32
	// in PTX), a DevicePtr for a pointer.
	if err := saxpy.Launch(cfg, float32(2), x.Ptr(), x, int32(4)); err != nil {
		t.Errorf("saxpy with int32 for .u32 and a DevicePtr for .u64: %v", err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
}

// TestLaunchParamFailures: a failure reading a kernel's parameters fails
// that launch, names the call, and is not kept: the next launch reads them
// again and checks as before. Where nothing can describe the kernel, a
// launch with too few arguments reads zeros, never beyond the arguments.
func TestLaunchParamFailures(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	a := must(cuda.Alloc[float32](ctx, 16))(t)
	defer a.Free()
	ok := cuda.LaunchConfigFor(16, s)
	for _, tt := range []struct {
		name   string
		faults [][2]any // function, code: each fails its next call
		want   string   // in the first launch's error
	}{
		{"count fails", [][2]any{{"cuFuncGetParamCount", 999}}, "cuFuncGetParamCount"},
		{"info fails", [][2]any{{"cuFuncGetParamInfo", 999}}, "cuFuncGetParamInfo"},
		{"info says invalid value at 0", [][2]any{{"cuFuncGetParamInfo", 1}}, "cuFuncGetParamInfo"},
		{"old driver, info fails", [][2]any{{"cuFuncGetParamCount", 801}, {"cuFuncGetParamInfo", 1}}, "cuFuncGetParamInfo"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fn := must(loadKernels(t, ctx).Function("vadd_f32"))(t)
			for _, fault := range tt.faults {
				f.Fail(fault[0].(string), 1, fault[1].(int))
			}
			if err := fn.Launch(ok, a, a, a, uint32(16)); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("first launch: %v; want an error mentioning %q", err, tt.want)
			}
			if err := fn.Launch(ok, a, a, a, uint32(16)); err != nil {
				t.Fatalf("second launch: %v; a failure must not be kept", err)
			}
			if err := fn.Launch(ok, a, a, a); !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "takes 4 arguments") {
				t.Errorf("too few arguments after the failure: %v; checking must stay on", err)
			}
		})
	}
	// cubinKernel is vadd_f32 as from a cubin (no PTX to read its
	// parameters from) on a driver without cuFuncGetParamCount.
	cubinKernel := func(t *testing.T) *cuda.Function {
		t.Helper()
		m := loadKernels(t, ctx)
		cuda.ForgetPTX(m)
		fn := must(m.Function("vadd_f32"))(t)
		f.Fail("cuFuncGetParamCount", 1, 801)
		return fn
	}
	t.Run("cubin on a driver without cuFuncGetParamCount", func(t *testing.T) {
		fn := cubinKernel(t)
		if err := fn.Launch(ok, a, a, a); !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "takes 4 arguments") {
			t.Errorf("too few arguments, the count read parameter by parameter: %v", err)
		}
	})
	t.Run("nothing describes the kernel", func(t *testing.T) {
		fn := cubinKernel(t)
		f.Fail("cuFuncGetParamInfo", 1, 801)
		// vadd_f32 reads four parameters; with none given it must read
		// zeros (n = 0: nothing to do), not memory past the arguments.
		if err := fn.Launch(ok); err != nil {
			t.Fatalf("launch with the count unknown: %v", err)
		}
		if err := s.Synchronize(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestModuleErrors(t *testing.T) {
	ctx := cudatest.Context(t)
	_, err := ctx.LoadModule([]byte("this is not PTX"))
	var ce *cuda.Error
	if !errors.Is(err, cuda.ErrInvalidValue) || !errors.As(err, &ce) || ce.Call != "cuModuleLoadDataEx" {
		t.Fatalf("malformed PTX: %v; want ErrInvalidValue from cuModuleLoadDataEx", err)
	}
	if !strings.Contains(err.Error(), "JIT log") {
		t.Errorf("malformed PTX: %v; want the JIT log in the error", err)
	}
	t.Log(err)
	if _, err := ctx.LoadModule(nil); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("empty image: %v", err)
	}
	if _, err := ctx.LoadModule([]byte("x"), cuda.JITOptimizationLevel(9)); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("optimization level 9: %v", err)
	}
	m := loadKernels(t, ctx)
	if _, err := m.Function("no_such_kernel"); !errors.Is(err, cuda.Result(500)) || !strings.Contains(err.Error(), "no_such_kernel") {
		t.Errorf("unknown kernel: %v; want CUDA_ERROR_NOT_FOUND naming it", err)
	}
	// The same source twice gives two modules: closing one leaves the other.
	m2 := loadKernels(t, ctx)
	m.Close()
	if _, err := m2.Function("empty"); err != nil {
		t.Errorf("second module after the first closed: %v", err)
	}
	if _, err := m.Function("empty"); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("closed module: %v", err)
	}
	if m.Close() != nil {
		t.Error("second Close failed")
	}
	withOpts, err := ctx.LoadModule(must(os.ReadFile("testdata/kernels.ptx"))(t), cuda.JITOptimizationLevel(3), cuda.JITMaxRegisters(64), cuda.JITLineInfo())
	if err != nil {
		t.Fatalf("LoadModule with JIT options: %v", err)
	}
	withOpts.Close()
}

func TestGlobal(t *testing.T) {
	ctx := cudatest.Context(t)
	m := loadKernels(t, ctx)
	table, err := cuda.Global[uint32](m, "table")
	if err != nil {
		t.Fatal(err)
	}
	if table.Len() != 4 {
		t.Fatalf("table has %d elements, want 4", table.Len())
	}
	want := []uint32{1, 2, 3, 4}
	if err := table.CopyFromHost(want); err != nil {
		t.Fatal(err)
	}
	got := make([]uint32, 4)
	if err := table.CopyToHost(got); err != nil || !equal(got, want) {
		t.Fatalf("global round trip: %v, %v", got, err)
	}
	if _, err := cuda.Global[[3]uint32](m, "table"); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("Global of a type that does not divide it: %v", err)
	}
	if _, err := cuda.Global[uint32](m, "nope"); !errors.Is(err, cuda.Result(500)) {
		t.Errorf("unknown global: %v", err)
	}
	m.Close()
	if err := table.CopyToHost(got); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("global after the module closed: %v; want ErrClosed", err)
	}
}

// TestModulesLoadConcurrently loads modules on many goroutines at once,
// each finding its global and function: loading is goroutine-safe. (On the
// fake, whose PTX parser once kept state for the whole process, a global
// was then sometimes not found: TestHammer caught it in CI.)
func TestModulesLoadConcurrently(t *testing.T) {
	ctx := cudatest.Context(t)
	ptx, err := os.ReadFile("testdata/kernels.ptx")
	if err != nil {
		t.Fatal(err)
	}
	goroutines, loads := 16, 200 // the fake's race showed within a few hundred
	if !cudatest.IsFake() {
		loads = 10 // the driver's JIT takes milliseconds a load
	}
	errs := make(chan error, goroutines)
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range loads {
				m, err := ctx.LoadModule(ptx)
				if err != nil {
					errs <- err
					return
				}
				_, gerr := cuda.Global[uint32](m, "table")
				_, ferr := m.Function("vadd_s32")
				if err := errors.Join(gerr, ferr, m.Close()); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestKernelFault: a kernel that writes out of bounds is reported at the
// next synchronize as CUDA_ERROR_ILLEGAL_ADDRESS, not a hang. The fault
// ruins the context, so it runs in a child process.
func TestKernelFault(t *testing.T) {
	if !cudatest.InChild(t) {
		cudatest.RunChild(t)
		return
	}
	ctx := must(cuda.NewContext(cudatest.Device(t)))(t)
	s := must(ctx.NewStream())(t)
	m := loadKernels(t, ctx)
	d := must(cuda.Alloc[int32](ctx, 16))(t)
	if err := must(m.Function("oob_write"))(t).Launch(cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: 1}, Stream: s}, d); err != nil {
		t.Fatalf("launch: %v", err)
	}
	err := s.Synchronize()
	if !errors.Is(err, cuda.Result(700)) || !strings.Contains(err.Error(), "CUDA_ERROR_ILLEGAL_ADDRESS") {
		t.Fatalf("Synchronize after an out-of-bounds write: %v; want CUDA_ERROR_ILLEGAL_ADDRESS", err)
	}
	t.Log(err)
}

// TestLaunchAllocs: a launch allocates nothing of its own.
func TestLaunchAllocs(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	m := loadKernels(t, ctx)
	empty := must(m.Function("empty"))(t)
	cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: 1}, Stream: s}
	empty.Launch(cfg)
	if n := testing.AllocsPerRun(100, func() { empty.Launch(cfg) }); n != 0 && !raceEnabled {
		t.Errorf("%v allocations per launch of an empty kernel; want 0", n)
	}
	vadd := must(m.Function("vadd_f32"))(t)
	a := must(cuda.Alloc[float32](ctx, 16))(t)
	defer a.Free()
	args := []any{a, a, a, uint32(16)} // boxed once, by the caller
	vadd.Launch(cfg, args...)
	if n := testing.AllocsPerRun(100, func() { vadd.Launch(cfg, args...) }); n != 0 && !raceEnabled {
		t.Errorf("%v allocations per launch with four arguments; want 0", n)
	}
	s.Synchronize()
}

func TestNilModuleAndStaging(t *testing.T) {
	var m *cuda.Module
	var sb *cuda.StagingBuffer
	if m.Close() != nil || sb.Close() != nil || sb.Capacity() != 0 {
		t.Error("nil Close or Capacity")
	}
	wantErrors(t, cuda.ErrInvalidValue, map[string]error{
		"Module.Function":    second(m.Function("x")),
		"Global":             second(cuda.Global[float32](m, "x")),
		"Calibrate":          second(sb.Calibrate(nil, nil)),
		"Calibrate nil ctx":  second((&cuda.StagingBuffer{}).Calibrate(nil, nil)),
		"Reserve nil ctx":    (&cuda.StagingBuffer{}).Reserve(nil, 1),
		"NewStagingBuffer":   second(cuda.NewStagingBuffer(nil, 1)),
		"Register nil ctx":   second(cuda.Register(nil, []byte{1})),
		"LoadModule nil ctx": second((*cuda.Context)(nil).LoadModule([]byte("x"))),
	})
}

func TestLaunchConfigFor(t *testing.T) {
	for _, tt := range []struct{ n, grid int }{{1, 1}, {255, 1}, {256, 1}, {257, 2}, {1 << 20, 4096}, {1<<20 + 1, 4097}, {0, 0}, {-5, 0},
		{math.MaxInt, math.MaxInt/cuda.LinearBlock + 1}, {math.MaxInt - 255, math.MaxInt / cuda.LinearBlock}} {
		cfg := cuda.LaunchConfigFor(tt.n, nil)
		if cfg.Grid.X != tt.grid || cfg.Block.X != cuda.LinearBlock || cfg.Grid.X < tt.n/cuda.LinearBlock {
			t.Errorf("LaunchConfigFor(%d): grid %v, block %v; want %d blocks of %d covering every element", tt.n, cfg.Grid, cfg.Block, tt.grid, cuda.LinearBlock)
		}
	}
	// The tail is computed: n not a multiple of the block.
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	m := loadKernels(t, ctx)
	vadd := must(m.Function("vadd_f32"))(t)
	const n = 1000
	// Finite values: random bits can be a NaN, which equals nothing.
	h := make([]float32, n)
	for i := range h {
		h[i] = float32(i%97) + 0.25
	}
	a := must(cuda.FromHost(ctx, h))(t)
	defer a.Free()
	c := must(cuda.Zeroed[float32](ctx, n))(t)
	defer c.Free()
	if err := vadd.Launch(cuda.LaunchConfigFor(n, s), a, a, c, uint32(n)); err != nil {
		t.Fatal(err)
	}
	in, out := make([]float32, n), make([]float32, n)
	if err := a.CopyToHostAsync(in, s); err != nil {
		t.Fatal(err)
	}
	if err := c.CopyToHostAsync(out, s); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if out[n-1] != in[n-1]+in[n-1] {
		t.Errorf("last element %v, want %v: the tail was dropped", out[n-1], in[n-1]+in[n-1])
	}
}

// TestFakeRunsOnlyItsKernels: the fake driver runs C versions of the kernels
// in testdata/kernels.ptx, matched by name and by their text. A kernel of
// the same name with another body, or any other kernel, must not load as a
// function the fake would "run" by doing something else.
func TestFakeRunsOnlyItsKernels(t *testing.T) {
	if cudatest.Fake(t) == nil {
		return // ran in a child process against the fake
	}
	ctx := cudatest.Context(t)
	ptx := string(must(os.ReadFile("testdata/kernels.ptx"))(t))
	changed := strings.Replace(ptx, "add.f32 f3, f1, f2;", "sub.f32 f3, f1, f2;", 1)
	if changed == ptx {
		t.Fatal("testdata/kernels.ptx has no vadd_f32 body to change")
	}
	changed += "\n.visible .entry mine()\n{\n\tret;\n}\n"
	mod := must(ctx.LoadModule([]byte(changed)))(t)
	defer mod.Close()
	for _, name := range []string{"vadd_f32", "mine"} {
		if _, err := mod.Function(name); !errors.Is(err, cuda.ErrNotSupported) {
			t.Errorf("Function(%q) on the fake: %v; want ErrNotSupported: the fake has no C version of it", name, err)
		}
	}
	if _, err := mod.Function("vadd_f64"); err != nil {
		t.Errorf("Function(vadd_f64), unchanged: %v", err)
	}
}

// TestLoadModuleImages: the driver takes a cubin or fatbin with no length
// and reads what its headers say, so an image shorter than they say is
// refused before the driver could read past it; a whole cubin (emptyCubin)
// reaches the driver, which on a GPU loads and launches it.
func TestLoadModuleImages(t *testing.T) {
	ctx := cudatest.Context(t)
	cubin := emptyCubin(t, ctx)
	le := func(b []byte, at int, v uint64, n int) []byte {
		b = append([]byte(nil), b...)
		for i := range n {
			b[at+i] = byte(v >> (8 * i))
		}
		return b
	}
	fatbin := func(headerSize, fatSize uint64, payload int) []byte {
		b := le(make([]byte, 16+payload), 0, 0xBA55ED50, 4)
		b = le(b, 4, 1, 2)
		b = le(b, 6, headerSize, 2)
		return le(b, 8, fatSize, 8)
	}
	const shoff, shentsize = 0x28, 64 // ELF64: the section headers' offset, an entry's size
	secOff := int(uint64(cubin[shoff]) | uint64(cubin[shoff+1])<<8)
	for _, tt := range []struct {
		name  string
		image []byte
		want  string // in gocuda's own error; "" for an image that reaches the driver
	}{
		{"ELF magic only", []byte("\x7fELF"), "ELF header"},
		{"ELF header cut short", cubin[:63], "ELF header"},
		{"cubin missing its last byte", cubin[:len(cubin)-1], "truncated"},
		{"cubin cut in half", cubin[:len(cubin)/2], "truncated"},
		{"section past the end", le(cubin, secOff+2*shentsize+0x20, 1<<20, 8), "truncated"},
		{"section size wrapping around", le(cubin, secOff+2*shentsize+0x20, math.MaxUint64, 8), "truncated"},
		{"section table past the end", le(cubin, shoff, math.MaxUint64-10, 8), "truncated"},
		{"big-endian ELF", le(cubin, 5, 2, 1), "little-endian"},
		{"ELF of no class", le(cubin, 4, 7, 1), "class"},
		{"fatbin magic only", fatbin(16, 0, 0)[:4], "fatbin header"},
		{"fatbin shorter than it says", fatbin(16, 100, 99), "truncated"},
		{"fatbin size wrapping around", fatbin(16, math.MaxUint64-8, 8), "truncated"},
		{"fatbin header too small", fatbin(8, 0, 8), "header"},
		{"fatbin wrapper", le(make([]byte, 24), 0, 0x466243B1, 4), "wrapper"},
		{"whole cubin", cubin, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ctx.LoadModule(tt.image)
			var ce *cuda.Error
			if tt.want != "" {
				if !errors.Is(err, cuda.ErrInvalidValue) || !errors.As(err, &ce) || ce.Call != "" || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("LoadModule: %v; want gocuda's ErrInvalidValue mentioning %q, before any driver call", err, tt.want)
				}
				if _, err := cuda.LoadLibrary(tt.image); !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("LoadLibrary: %v; want ErrInvalidValue mentioning %q", err, tt.want)
				}
				return
			}
			if cudatest.IsFake() {
				// The fake runs no device code, but the driver was asked.
				if !errors.As(err, &ce) || ce.Call != "cuModuleLoadDataEx" {
					t.Fatalf("LoadModule: %v; want the fake driver's refusal", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			s := cudatest.Stream(t, ctx)
			if err := must(m.Function("empty"))(t).Launch(cuda.LaunchConfigFor(1, s)); err != nil {
				t.Fatal(err)
			}
			if err := s.Synchronize(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// emptyCubin compiles extern "C" __global__ void empty() {} with NVRTC to
// a cubin for the context's device (for sm_80 on the fake, which runs no
// device code). It skips where NVRTC is missing, except on the GPU machine
// (GOCUDA_REQUIRE_GPU=1), where it must be there.
func emptyCubin(t *testing.T, ctx *cuda.Context) []byte {
	t.Helper()
	arch := ""
	if cudatest.IsFake() {
		arch = "sm_80"
	}
	out, err := nvrtc.Compile(ctx, `extern "C" __global__ void empty() {}`, nvrtc.Options{Arch: arch})
	if errors.Is(err, cuda.ErrNotSupported) && os.Getenv(cudatest.EnvRequireGPU) != "1" {
		t.Skipf("no NVRTC to compile a cubin with: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return out.Image
}

// TestModuleNames: a kernel or global is named in full, and one the
// module lacks is an error saying so.
func TestModuleNames(t *testing.T) {
	ctx := cudatest.Context(t)
	m := loadKernels(t, ctx)
	for _, tt := range []struct {
		name   string
		lookup func() error
		want   string
		code   cuda.Result // the driver's, 0 for gocuda's own error
	}{
		{"kernel name with a NUL", func() error { _, err := m.Function("vadd_f32\x00junk"); return err }, "NUL", 0},
		{"global name with a NUL", func() error { _, err := cuda.Global[uint32](m, "table\x00junk"); return err }, "NUL", 0},
		{"missing kernel", func() error { _, err := m.Function("no_such_kernel"); return err }, `no kernel named "no_such_kernel"`, 500},
		{"empty kernel name", func() error { _, err := m.Function(""); return err }, `no kernel named "": the name is empty`, 0},
		{"empty global name", func() error { _, err := cuda.Global[uint32](m, ""); return err }, `no global named "": the name is empty`, 0},
		{"missing global", func() error { _, err := cuda.Global[uint32](m, "nope"); return err }, `no global named "nope"`, 500},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.lookup()
			if !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), tt.want) || (tt.code != 0 && !errors.Is(err, tt.code)) {
				t.Errorf("got %v; want ErrInvalidValue (and code %d) mentioning %q", err, tt.code, tt.want)
			}
		})
	}
}

// TestPTXTextLaunchIgnores: the driver reads PTX up to its first NUL,
// and skips comments; so does what Launch learns of a kernel's parameters
// from the text. An entry after the NUL or in a comment, never loaded,
// says nothing of the kernel loaded under its name (here on a driver that
// cannot describe the kernel, where the PTX text is all Launch knows).
func TestPTXTextLaunchIgnores(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	ptx := must(os.ReadFile("testdata/kernels.ptx"))(t)
	const other = ".visible .entry saxpy(.param .u32 n)\n{\n}\n"
	x := must(cuda.Alloc[float32](ctx, 4))(t)
	defer x.Free()
	for _, tt := range []struct{ name, after string }{
		{"after the NUL", "\x00\n" + other},
		{"in a line comment", "\n// " + other},
		{"in a block comment", "\n/* " + other + " */\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			image := append(append([]byte(nil), ptx...), tt.after...)
			m := must(ctx.LoadModule(image))(t)
			defer m.Close()
			saxpy := must(m.Function("saxpy"))(t)
			f.Fail("cuFuncGetParamCount", 1, 801)
			if err := saxpy.Launch(cuda.LaunchConfigFor(4, s), float32(2), x, x, uint32(4)); err != nil {
				t.Fatalf("saxpy as loaded: %v", err)
			}
			if err := s.Synchronize(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
