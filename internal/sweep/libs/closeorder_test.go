package libs_test

import (
	"errors"
	"testing"

	"github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cublas"
	"github.com/gocuda/cuda/cudnn"
	"github.com/gocuda/cuda/cufft"
	"github.com/gocuda/cuda/curand"
	"github.com/gocuda/cuda/cusolver"
	"github.com/gocuda/cuda/cusparse"
	"github.com/gocuda/cuda/internal/cudatest"
)

// TestLibrariesAfterContextClose: the context is closed before the
// libraries' objects made in it. The driver does not destroy a library's
// objects with the context, so its Close does (nothing is left in the
// libraries); afterwards each object's use is ErrClosed and its Close nil,
// twice. The objects of a library that is missing are passed over.
func TestLibrariesAfterContextClose(t *testing.T) {
	cudatest.CheckLeaks(t)
	ctx, err := cuda.NewContext(cudatest.Device(t))
	if err != nil {
		t.Fatal(err)
	}
	s, err := ctx.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	type object struct {
		name  string
		use   func() error // nil: none without more objects
		close func() error
	}
	var objects []object
	add := func(name string, err error, use, close func() error) {
		t.Helper()
		if errors.Is(err, cuda.ErrNotSupported) {
			t.Logf("%s: %v", name, err)
			return
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		objects = append(objects, object{name, use, close})
	}
	x, err := cuda.Zeroed[float32](ctx, 64)
	if err != nil {
		t.Fatal(err)
	}
	z, err := cuda.Zeroed[complex64](ctx, 64)
	if err != nil {
		t.Fatal(err)
	}
	b, err := cublas.New(s)
	add("cublas.Handle", err, func() error { return b.SetMathMode(cublas.DefaultMath) }, b.Close)
	d, err := cudnn.New(s)
	add("cudnn.Handle", err, func() error { return d.SetBenchmark(true) }, d.Close)
	p, err := cufft.NewPlan(s, cufft.C2C, []int{64}, 1)
	add("cufft.Plan", err, func() error { return p.ExecC2C(z, z, cufft.Forward) }, p.Close)
	c, err := cufft.NewPlans(s)
	add("cufft.Plans", err, func() error { _, err := c.Plan(cufft.C2C, []int{64}, 1); return err }, c.Close)
	g, err := curand.New(s, curand.DefaultRNG, 1)
	add("curand.Generator", err, func() error { return curand.Uniform(g, x) }, g.Close)
	sp, err := cusparse.New(s)
	add("cusparse.Handle", err, nil, sp.Close)
	so, err := cusolver.New(s)
	add("cusolver.Handle", err, nil, so.Close)
	if err := ctx.Close(); err != nil {
		t.Fatal(err)
	}
	for _, o := range objects {
		if o.use != nil {
			if err := o.use(); !errors.Is(err, cuda.ErrClosed) {
				t.Errorf("%s's use after its context's Close: %v, want ErrClosed", o.name, err)
			}
		}
		for i := range 2 {
			if err := o.close(); err != nil {
				t.Errorf("%s.Close (call %d) after its context's: %v, want nil", o.name, i+1, err)
			}
		}
	}
	if err := errors.Join(x.Free(), z.Free(), s.Close()); err != nil {
		t.Error(err)
	}
}
