package cufft_test

import (
	"errors"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cufft"
	"github.com/gocuda/cuda/internal/cudatest"
)

// The docs' promises at their edges, as an outside reader of them tests
// them: closed streams and plans, freed buffers, the zero values, and
// transforms of one element.

// freed returns a buffer of n elements of ctx, freed.
func freed[T any](t *testing.T, ctx *cuda.Context, n int) *cuda.DeviceBuffer[T] {
	t.Helper()
	b := must(cuda.Alloc[T](ctx, n))(t)
	if err := b.Free(); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPromisesClosed: a plan whose stream is closed, a freed buffer (in
// or out, aligned for cuFFT or not), and a plan used after Close are
// cuda.ErrClosed, and a plan whose stream is closed still closes.
func TestPromisesClosed(t *testing.T) {
	ctx := cudatest.Context(t)
	s := must(ctx.NewStream())(t)
	c2c := must(cufft.NewPlan(s, cufft.C2C, []int{4}, 1))(t)
	r2c := must(cufft.NewPlan(s, cufft.R2C, []int{4}, 1))(t)
	c := cudatest.Upload(t, ctx, make([]complex64, 4))
	spec := cudatest.Upload(t, ctx, make([]complex64, 3))
	odd := must(cudatest.Upload(t, ctx, make([]float32, 5)).Slice(1, 4))(t) // not aligned as a complex64
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	cudatest.WantErr(t, "ExecC2C on a closed stream", c2c.ExecC2C(c, c, cufft.Forward), cuda.ErrClosed, "closed")
	cudatest.WantErr(t, "ExecR2C of an unaligned src on a closed stream", r2c.ExecR2C(spec, odd), cuda.ErrClosed, "closed")
	for _, p := range []*cufft.Plan{c2c, r2c} {
		if err := p.Close(); err != nil {
			t.Errorf("Close of a %v plan whose stream is closed: %v", p.Type(), err)
		}
		if err := p.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	}
	cudatest.WantErr(t, "ExecC2C after Close", c2c.ExecC2C(c, c, cufft.Forward), cuda.ErrClosed, "closed")

	s2 := cudatest.Stream(t, ctx)
	p := must(cufft.NewPlan(s2, cufft.C2C, []int{4}, 1))(t)
	defer p.Close()
	pr := must(cufft.NewPlan(s2, cufft.R2C, []int{4}, 1))(t)
	defer pr.Close()
	pc := must(cufft.NewPlan(s2, cufft.C2R, []int{4}, 1))(t)
	defer pc.Close()
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"ExecC2C of a freed src", p.ExecC2C(c, freed[complex64](t, ctx, 4), cufft.Forward)},
		{"ExecC2C into a freed dst", p.ExecC2C(freed[complex64](t, ctx, 4), c, cufft.Inverse)},
		{"ExecC2C in place in a freed buffer", func() error { b := freed[complex64](t, ctx, 4); return p.ExecC2C(b, b, cufft.Forward) }()},
		{"ExecR2C of a freed src", pr.ExecR2C(spec, freed[float32](t, ctx, 4))},
		{"ExecR2C into a freed dst", pr.ExecR2C(freed[complex64](t, ctx, 3), cudatest.Upload(t, ctx, make([]float32, 4)))},
		{"ExecC2R into a freed dst", pc.ExecC2R(freed[float32](t, ctx, 4), spec)},
		{"ExecC2R of a freed src", pc.ExecC2R(cudatest.Upload(t, ctx, make([]float32, 4)), freed[complex64](t, ctx, 3))},
	} {
		t.Run(tc.name, func(t *testing.T) { cudatest.WantErr(t, tc.name, tc.err, cuda.ErrClosed, "closed") })
	}
}

// TestPromisesZeroValues: the zero Plan and Plans answer what calls
// nothing, and refuse the rest with cuda.ErrInvalidValue.
func TestPromisesZeroValues(t *testing.T) {
	var p cufft.Plan
	if p.Type() != 0 || p.WorkBytes() != 0 || p.Stream() != nil {
		t.Errorf("a zero Plan's Type, WorkBytes and Stream: %v, %d, %v", p.Type(), p.WorkBytes(), p.Stream())
	}
	if shape, batch := p.Shape(); shape != nil || batch != 0 {
		t.Errorf("a zero Plan's Shape: %v, %d", shape, batch)
	}
	cudatest.WantErr(t, "Close of a zero Plan", p.Close(), cuda.ErrInvalidValue, "zero")
	cudatest.WantErr(t, "ExecZ2D of a zero Plan", p.ExecZ2D(nil, nil), cuda.ErrInvalidValue, "zero")
	var c cufft.Plans
	if c.Len() != 0 {
		t.Errorf("a zero Plans' Len: %d", c.Len())
	}
	cudatest.WantErr(t, "Close of a zero Plans", c.Close(), cuda.ErrInvalidValue, "zero")
	if _, err := cufft.NewPlans(nil); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("NewPlans(nil): %v", err)
	}
	for _, s := range []string{cufft.Type(1).String(), cufft.R2C.String()} {
		if s == "" {
			t.Errorf("Type's String is empty")
		}
	}
	var e *cufft.Error
	_ = e.Error()
	_ = (&cufft.Error{}).Error()
}

// TestPromisesOneElement: a transform of one element is the element
// itself, forward and inverse, complex and real (R2C's half spectrum of
// one element is one complex number), batched.
func TestPromisesOneElement(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	c2c := must(cufft.NewPlan(s, cufft.Z2Z, []int{1}, 3))(t)
	defer c2c.Close()
	z := cudatest.Upload(t, ctx, []complex128{1 + 2i, -3, 4i})
	if err := c2c.ExecZ2Z(z, z, cufft.Inverse); err != nil {
		t.Fatal(err)
	}
	if got := cudatest.Download(t, z); got[0] != 1+2i || got[1] != -3 || got[2] != 4i {
		t.Errorf("Z2Z of one element, in place: %v", got)
	}
	d2z := must(cufft.NewPlan(s, cufft.D2Z, []int{1, 1}, 2))(t)
	defer d2z.Close()
	x := cudatest.Upload(t, ctx, []float64{5, -7})
	spec := cudatest.Upload(t, ctx, make([]complex128, 2))
	if err := d2z.ExecD2Z(spec, x); err != nil {
		t.Fatal(err)
	}
	if got := cudatest.Download(t, spec); got[0] != 5 || got[1] != -7 {
		t.Errorf("D2Z of one element: %v", got)
	}
	z2d := must(cufft.NewPlan(s, cufft.Z2D, []int{1}, 2))(t)
	defer z2d.Close()
	back := cudatest.Upload(t, ctx, make([]float64, 2))
	if err := z2d.ExecZ2D(back, spec); err != nil {
		t.Fatal(err)
	}
	if got := cudatest.Download(t, back); got[0] != 5 || got[1] != -7 {
		t.Errorf("Z2D of one element: %v", got)
	}
}
