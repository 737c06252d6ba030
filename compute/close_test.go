package compute_test

import (
	"errors"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/compute"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/internal/track"
)

// Celsius is a type defined on float32: its buffers are float32's to every
// operation (cuda.Number admits it).
type Celsius float32

// TestNamedElementType: buffers of a type defined on float32 go through
// Add, Sum, Cast and an Elementwise's Launch (a Celsius scalar too) as
// float32's, on float32's kernels.
func TestNamedElementType(t *testing.T) {
	if !cudatest.IsFake() {
		requireNVRTC(t)
	}
	e := newEnv(t)
	in := []Celsius{1.5, -2.25, 3, 0.5, 100, -7.75, 0, 12.125, 4, 1}
	x := cudatest.Upload(t, e.ctx, in)
	y := must(cuda.Alloc[Celsius](e.ctx, len(in)))(t)
	defer y.Free()
	if err := compute.Add(y, x, x, e.s); err != nil {
		t.Fatal(err)
	}
	for i, v := range cudatest.Download(t, y) {
		if v != 2*in[i] {
			t.Fatalf("Add: element %d = %v, want %v", i, v, 2*in[i])
		}
	}
	sum := must(cuda.Alloc[Celsius](e.ctx, 1))(t)
	defer sum.Free()
	if err := compute.Sum(sum, x, e.s); err != nil {
		t.Fatal(err)
	}
	var want Celsius
	for _, v := range in {
		want += v
	}
	if got := cudatest.Download(t, sum)[0]; got != want {
		t.Errorf("Sum = %v, want %v", got, want)
	}
	bf := must(cuda.Alloc[cuda.BFloat16](e.ctx, len(in)))(t)
	defer bf.Free()
	if err := compute.Cast(bf, x, e.s); err != nil {
		t.Fatal(err)
	}
	for i, v := range cudatest.Download(t, bf) {
		if w := cuda.NewBFloat16(float32(in[i])); v != w {
			t.Fatalf("Cast: element %d = %v, want %v", i, v, w)
		}
	}
	axpy := must(compute.NewElementwise(compute.ElementwiseSpec{Name: "axpy", InParams: "float32 a, float32 x, float32 y", OutParams: "float32 y", Operation: "y = a * x + y"}))(t)
	if err := axpy.Launch(e.s, Celsius(3), x, y); err != nil { // y = 3x + 2x
		t.Fatal(err)
	}
	for i, v := range cudatest.Download(t, y) {
		if v != 5*in[i] {
			t.Fatalf("axpy of Celsius: element %d = %v, want %v", i, v, 5*in[i])
		}
	}
	if err := axpy.Launch(e.s, Celsius(3), bf, y); err == nil || !strings.Contains(err.Error(), "x is declared float32, and a buffer of bfloat16") {
		t.Errorf("axpy of a BFloat16 x: %v", err)
	}
}

// TestCloseReleases: a context that ran operations and kernels of its own,
// closed without Release, leaves no module open (nor anything else:
// cudatest.Context checks); Release after Close has nothing to do.
func TestCloseReleases(t *testing.T) {
	if !cudatest.IsFake() {
		requireNVRTC(t)
	}
	cudatest.CheckLeaks(t)
	before := track.Take().Live[track.Module]
	ctx := must(cuda.NewContext(cudatest.Device(t)))(t)
	s := must(ctx.NewStream())(t)
	x := must(cuda.FromHost(ctx, []float32{1, 2, 3, 4}))(t)
	y := must(cuda.Zeroed[float32](ctx, 4))(t)
	sum := must(cuda.Alloc[float32](ctx, 1))(t)
	one := must(cuda.Alloc[float64](ctx, 1))(t)
	sumsq := must(compute.NewReduction(compute.ReductionSpec{Name: "sumsq", InParams: "float32 x", OutParams: "float64 y", MapExpr: "x * x",
		ReduceExpr: "a + b", PostMapExpr: "y = a", Identity: "0", ReduceType: "float64"}))(t)
	for _, err := range []error{compute.Add(y, x, x, s), compute.Sum(sum, x, s), sumsq.Launch(s, x, one)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := compute.ModulesKept(ctx); n != 3 {
		t.Errorf("%d modules kept in the context, want 3 (Add's, Sum's, sumsq's)", n)
	}
	for _, err := range []error{s.Synchronize(), x.Free(), y.Free(), sum.Free(), one.Free(), s.Close(), ctx.Close()} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := compute.ModulesKept(ctx); n != 0 {
		t.Errorf("after Close, %d modules kept", n)
	}
	if n := track.Take().Live[track.Module] - before; n != 0 {
		t.Errorf("after Close, %d modules open", n)
	}
	if err := compute.Release(ctx); err != nil {
		t.Errorf("Release after Close: %v", err)
	}
}

// TestCloseModuleFails: where closing a kernel's module fails, so does the
// context's Close, naming compute's part and the driver's call, and the
// context stays open; the next Close closes the module and the context.
func TestCloseModuleFails(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	compute.UseStandIn(t)
	cudatest.CheckLeaks(t)
	ctx := must(cuda.NewContext(cudatest.Device(t)))(t)
	s := must(ctx.NewStream())(t)
	x := must(cuda.Zeroed[float32](ctx, 16))(t)
	if err := compute.Add(x, x, x, s); err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{s.Synchronize(), s.Close(), x.Free()} {
		if err != nil {
			t.Fatal(err)
		}
	}
	f.Fail("cuModuleUnload", 1, 999)
	err := ctx.Close()
	switch {
	case err == nil:
		t.Fatal("Close succeeded with the module's unload failing")
	case !errors.Is(err, cuda.Result(999)) || !strings.Contains(err.Error(), "compute: Context.Close") || !strings.Contains(err.Error(), "cuModuleUnload"):
		t.Errorf("Close: %v; want code 999, naming compute's part and cuModuleUnload", err)
	}
	if n := compute.ModulesKept(ctx); n != 1 {
		t.Errorf("after the failed Close, %d modules kept, want the one that failed", n)
	}
	// The context is still open: it runs what it ran.
	y := must(cuda.Zeroed[float32](ctx, 16))(t)
	s = must(ctx.NewStream())(t)
	if err := compute.Add(y, y, y, s); err != nil {
		t.Errorf("Add after the failed Close: %v", err)
	}
	for _, err := range []error{s.Synchronize(), s.Close(), y.Free()} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := ctx.Close(); err != nil {
		t.Fatalf("the second Close: %v", err)
	}
	if n := compute.ModulesKept(ctx); n != 0 {
		t.Errorf("after the second Close, %d modules kept", n)
	}
}
