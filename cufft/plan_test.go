package cufft_test

import (
	"errors"
	"fmt"
	"log"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cufft"
	"github.com/gocuda/cuda/internal/cudatest"
)

// dft is the reference: the unscaled discrete Fourier transform of a
// (row-major, of the given shape) along every dimension, in complex128,
// computed directly; sign -1 forward, +1 inverse.
func dft(a []complex128, shape []int, sign float64) []complex128 {
	out := append([]complex128(nil), a...)
	total := len(a)
	for d := range shape {
		n, stride := shape[d], 1
		for _, e := range shape[d+1:] {
			stride *= e
		}
		line := make([]complex128, n)
		for start := range total {
			if (start/stride)%n != 0 {
				continue
			}
			for k := range n {
				var s complex128
				for j := range n {
					s += out[start+j*stride] * cmplx.Rect(1, sign*2*math.Pi*float64(j*k%n)/float64(n))
				}
				line[k] = s
			}
			for k := range n {
				out[start+k*stride] = line[k]
			}
		}
	}
	return out
}

// relErr is ||got - want|| / ||want||.
func relErr[T complex64 | complex128](got []T, want []complex128) float64 {
	var num, den float64
	for i := range want {
		d := complex128(got[i]) - want[i]
		num += real(d)*real(d) + imag(d)*imag(d)
		den += real(want[i])*real(want[i]) + imag(want[i])*imag(want[i])
	}
	return math.Sqrt(num / max(den, 1e-300))
}

var shapes = []struct {
	shape []int
	batch int
}{{[]int{1}, 1}, {[]int{3}, 2}, {[]int{97}, 1}, {[]int{1000}, 1}, {[]int{4096}, 1}, {[]int{16, 12}, 3}, {[]int{3, 5, 7}, 2},
	{[]int{4099}, 1}, {[]int{1, 97}, 3}, {[]int{7, 1}, 2}, {[]int{1, 1, 1}, 4}, {[]int{2, 9}, 1}}

func elements(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// TestC2C: forward and inverse complex transforms, single and double
// precision, out of place and in place, against the direct DFT.
func TestC2C(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	for _, sh := range shapes {
		t.Run(fmt.Sprint(sh.shape, "x", sh.batch), func(t *testing.T) {
			n := elements(sh.shape)
			x := make([]complex128, n*sh.batch)
			for i := range x {
				x[i] = complex(rand.NormFloat64(), rand.NormFloat64())
			}
			var want []complex128
			for b := range sh.batch {
				want = append(want, dft(x[b*n:(b+1)*n], sh.shape, -1)...)
			}
			// complex64
			p := must(cufft.NewPlan(s, cufft.C2C, sh.shape, sh.batch))(t)
			defer p.Close()
			x64 := make([]complex64, len(x))
			for i, v := range x {
				x64[i] = complex64(v)
			}
			in := must(cuda.FromHost(ctx, x64))(t)
			defer in.Free()
			out := must(cuda.Alloc[complex64](ctx, len(x)))(t)
			defer out.Free()
			if err := p.ExecC2C(out, in, cufft.Forward); err != nil {
				t.Fatal(err)
			}
			if e := relErr(cudatest.Download(t, out), want); e > 1e-5 {
				t.Errorf("C2C forward: relative error %.3g", e)
			}
			// In place, then back: n times the input.
			if err := p.ExecC2C(in, in, cufft.Forward); err != nil {
				t.Fatal(err)
			}
			if err := p.ExecC2C(in, in, cufft.Inverse); err != nil {
				t.Fatal(err)
			}
			scaled := make([]complex128, len(x))
			for i, v := range x64 {
				scaled[i] = complex128(v) * complex(float64(n), 0)
			}
			if e := relErr(cudatest.Download(t, in), scaled); e > 1e-5 {
				t.Errorf("C2C in place, forward then inverse: relative error %.3g from n·x", e)
			}
			// complex128
			pz := must(cufft.NewPlan(s, cufft.Z2Z, sh.shape, sh.batch))(t)
			defer pz.Close()
			zin := must(cuda.FromHost(ctx, x))(t)
			defer zin.Free()
			zout := must(cuda.Alloc[complex128](ctx, len(x)))(t)
			defer zout.Free()
			if err := pz.ExecZ2Z(zout, zin, cufft.Forward); err != nil {
				t.Fatal(err)
			}
			if e := relErr(cudatest.Download(t, zout), want); e > 1e-12 {
				t.Errorf("Z2Z forward: relative error %.3g", e)
			}
		})
	}
}

// TestRealTransforms: R2C and D2Z give the half spectrum of the direct
// DFT; C2R and Z2D of it give n times the input.
func TestRealTransforms(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	for _, sh := range shapes {
		t.Run(fmt.Sprint(sh.shape, "x", sh.batch), func(t *testing.T) {
			n, last := elements(sh.shape), sh.shape[len(sh.shape)-1]
			half := n / last * (last/2 + 1)
			x := make([]float64, n*sh.batch)
			for i := range x {
				x[i] = rand.NormFloat64()
			}
			var want []complex128
			for b := range sh.batch {
				c := make([]complex128, n)
				for i := range c {
					c[i] = complex(x[b*n+i], 0)
				}
				full := dft(c, sh.shape, -1)
				for row := range n / last {
					want = append(want, full[row*last:row*last+last/2+1]...)
				}
			}
			// Double precision.
			fwd := must(cufft.NewPlan(s, cufft.D2Z, sh.shape, sh.batch))(t)
			defer fwd.Close()
			inv := must(cufft.NewPlan(s, cufft.Z2D, sh.shape, sh.batch))(t)
			defer inv.Close()
			rin := must(cuda.FromHost(ctx, x))(t)
			defer rin.Free()
			spec := must(cuda.Alloc[complex128](ctx, half*sh.batch))(t)
			defer spec.Free()
			if err := fwd.ExecD2Z(spec, rin); err != nil {
				t.Fatal(err)
			}
			if e := relErr(cudatest.Download(t, spec), want); e > 1e-12 {
				t.Errorf("D2Z: relative error %.3g", e)
			}
			back := must(cuda.Alloc[float64](ctx, len(x)))(t)
			defer back.Free()
			if err := inv.ExecZ2D(back, spec); err != nil {
				t.Fatal(err)
			}
			for i, v := range cudatest.Download(t, back) {
				if math.Abs(v-float64(n)*x[i]) > 1e-9*float64(n) {
					t.Fatalf("Z2D(D2Z(x))[%d] = %v, want %v", i, v, float64(n)*x[i])
				}
			}
			// Single precision.
			fwd32 := must(cufft.NewPlan(s, cufft.R2C, sh.shape, sh.batch))(t)
			defer fwd32.Close()
			x32 := make([]float32, len(x))
			for i, v := range x {
				x32[i] = float32(v)
			}
			rin32 := must(cuda.FromHost(ctx, x32))(t)
			defer rin32.Free()
			spec32 := must(cuda.Alloc[complex64](ctx, half*sh.batch))(t)
			defer spec32.Free()
			if err := fwd32.ExecR2C(spec32, rin32); err != nil {
				t.Fatal(err)
			}
			if e := relErr(cudatest.Download(t, spec32), want); e > 1e-5 {
				t.Errorf("R2C: relative error %.3g", e)
			}
			inv32 := must(cufft.NewPlan(s, cufft.C2R, sh.shape, sh.batch))(t)
			defer inv32.Close()
			back32 := must(cuda.Alloc[float32](ctx, len(x)))(t)
			defer back32.Free()
			if err := inv32.ExecC2R(back32, spec32); err != nil {
				t.Fatal(err)
			}
			for i, v := range cudatest.Download(t, back32) {
				if math.Abs(float64(v)-float64(n)*x[i]) > 1e-4*float64(n) {
					t.Fatalf("C2R(R2C(x))[%d] = %v, want %v", i, v, float64(n)*x[i])
				}
			}
		})
	}
}

// TestConcurrentAndCapture: goroutines sharing a plan take turns, and an
// execution captured into a graph runs at each launch of it.
func TestConcurrentAndCapture(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	const n = 256
	p := must(cufft.NewPlan(s, cufft.C2C, []int{n}, 1))(t)
	defer p.Close()
	x := make([]complex64, n)
	for i := range x {
		x[i] = complex(float32(i%7), float32(i%3))
	}
	ref := make([]complex128, n)
	for i, v := range x {
		ref[i] = complex128(v)
	}
	want := dft(ref, []int{n}, -1)
	in := must(cuda.FromHost(ctx, x))(t)
	defer in.Free()
	outs := make([]*cuda.DeviceBuffer[complex64], 8)
	for i := range outs {
		outs[i] = must(cuda.Alloc[complex64](ctx, n))(t)
		defer outs[i].Free()
	}
	var wg sync.WaitGroup
	for i := range outs {
		wg.Go(func() {
			if err := p.ExecC2C(outs[i], in, cufft.Forward); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for i, o := range outs {
		if e := relErr(cudatest.Download(t, o), want); e > 1e-5 {
			t.Errorf("goroutine %d: relative error %.3g", i, e)
		}
	}
	g := must(s.Capture(cuda.CaptureGlobal, func() error { return p.ExecC2C(outs[0], in, cufft.Forward) }))(t)
	defer g.Close()
	e := must(g.Instantiate())(t)
	defer e.Close()
	for round := range 2 {
		if err := outs[0].Memset32(0); err != nil {
			t.Fatal(err)
		}
		if err := e.Launch(s); err != nil {
			t.Fatal(err)
		}
		if err := s.Synchronize(); err != nil {
			t.Fatal(err)
		}
		if e := relErr(cudatest.Download(t, outs[0]), want); e > 1e-5 {
			t.Errorf("graph launch %d: relative error %.3g", round, e)
		}
	}
}

// TestErrors: bad shapes, types, buffers and directions refused in words
// before cuFFT sees them; closed and zero plans.
func TestErrors(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	for _, tt := range []struct {
		name  string
		t     cufft.Type
		shape []int
		batch int
		want  string
	}{
		{"no dimensions", cufft.C2C, nil, 1, "one to three"},
		{"four dimensions", cufft.C2C, []int{2, 2, 2, 2}, 1, "one to three"},
		{"zero dimension", cufft.R2C, []int{4, 0}, 1, "dimensions of 1 or more"},
		{"batch 0", cufft.C2C, []int{8}, 0, "batch 0"},
		{"negative dimension", cufft.C2C, []int{-8}, 1, "dimensions of 1 or more"},
		{"negative batch", cufft.Z2Z, []int{8}, -1, "batch -1"},
		{"batch past int32", cufft.C2C, []int{8}, 1 << 31, "batch 2147483648"},
		{"dimension past int32", cufft.C2C, []int{1 << 31}, 1, "2^31 elements at most"},
		{"elements past int32", cufft.D2Z, []int{1 << 16, 1 << 16}, 1, "2^31 elements at most"},
		{"3-D product wrapping int64", cufft.C2C, []int{1<<31 - 1, 1<<31 - 1, 1<<31 - 1}, 1, "2^31 elements at most"},
		{"unknown type", cufft.Type(5), []int{8}, 1, "unknown transform type"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := cufft.NewPlan(s, tt.t, tt.shape, tt.batch); !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%v; want ErrInvalidValue saying %q", err, tt.want)
			}
		})
	}
	if _, err := cufft.NewPlan(nil, cufft.C2C, []int{8}, 1); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("NewPlan(nil stream): %v", err)
	}
	p := must(cufft.NewPlan(s, cufft.C2C, []int{8}, 2))(t)
	r2c := must(cufft.NewPlan(s, cufft.R2C, []int{8}, 1))(t)
	defer r2c.Close()
	c := must(cuda.Alloc[complex64](ctx, 16))(t)
	defer c.Free()
	c2 := must(cuda.Alloc[complex64](ctx, 16))(t)
	defer c2.Free()
	short := must(c.Slice(0, 8))(t)
	wide := must(cuda.Alloc[complex64](ctx, 17))(t)
	defer wide.Free()
	// Two buffers of the plan's length, one element apart.
	first, overlap := must(wide.Slice(0, 16))(t), must(wide.Slice(1, 16))(t)
	r10 := must(cuda.Alloc[float32](ctx, 10))(t) // room for R2C's 5 complex numbers
	defer r10.Free()
	r := must(r10.Slice(0, 8))(t)
	spectrum := must(cuda.ViewAs[complex64](r10))(t)
	// Each names the method as called and the parameters by their names.
	for _, tc := range []struct {
		name, want string
		err        error
	}{
		{"wrong type", "Plan.ExecR2C: invalid value: the plan is C2C: ExecR2C needs a plan of type R2C", p.ExecR2C(short, r)},
		{"short input", "Plan.ExecC2C: invalid value: src has 8 elements and dst 16", p.ExecC2C(c2, short, cufft.Forward)},
		{"bad direction", "dir is 3", p.ExecC2C(c2, c, cufft.Direction(3))},
		{"overlapping output", "dst and src overlap without being the same buffer", p.ExecC2C(overlap, first, cufft.Forward)},
		{"nil output", "dst is a nil *cuda.DeviceBuffer", p.ExecC2C(nil, c, cufft.Forward)},
		{"nil input", "src is a nil *cuda.DeviceBuffer", p.ExecC2C(c, nil, cufft.Forward)},
		{"R2C in place", "Plan.ExecR2C: invalid value: dst and src overlap: R2C transforms are out of place here", r2c.ExecR2C(spectrum, r)},
		{"zero plan", "Plan.ExecC2C: invalid value: a zero Plan", (&cufft.Plan{}).ExecC2C(c2, c, cufft.Forward)},
		{"nil plan", "Plan.ExecC2C: invalid value: nil *Plan", (*cufft.Plan)(nil).ExecC2C(c2, c, cufft.Forward)},
	} {
		if !errors.Is(tc.err, cuda.ErrInvalidValue) || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrInvalidValue saying %q", tc.name, tc.err, tc.want)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := p.ExecC2C(c2, c, cufft.Forward); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("ExecC2C on a closed plan: %v, want ErrClosed", err)
	}
	if v, err := cufft.Version(); err != nil || v.Major < 10 {
		t.Errorf("Version() = %v, %v", v, err)
	}
}

// A forward transform of a cosine: its energy lands at frequencies 1 and
// n-1.
func Example() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	defer s.Close()
	const n = 8
	p, err := cufft.NewPlan(s, cufft.C2C, []int{n}, 1)
	if err != nil {
		log.Fatal(err) // ErrNotSupported without cuFFT, naming the paths tried
	}
	defer p.Close()
	x := make([]complex64, n)
	for i := range x {
		x[i] = complex(float32(math.Cos(2*math.Pi*float64(i)/n)), 0)
	}
	buf, err := cuda.FromHost(ctx, x)
	if err != nil {
		log.Fatal(err)
	}
	defer buf.Free()
	if err := p.ExecC2C(buf, buf, cufft.Forward); err != nil { // in place
		log.Fatal(err)
	}
	if err := buf.CopyToHost(x); err != nil {
		log.Fatal(err)
	}
	for k, v := range x {
		if cmplx.Abs(complex128(v)) > 1e-3 {
			fmt.Printf("frequency %d: %.1f\n", k, real(v))
		}
	}
	// Output:
	// frequency 1: 4.0
	// frequency 7: 4.0
}

// A cache of plans: a shape asked for again gets the plan made the first
// time.
func ExamplePlans() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	defer s.Close()
	plans, err := cufft.NewPlans(s)
	if err != nil {
		log.Fatal(err)
	}
	defer plans.Close()
	a, err := plans.Plan(cufft.C2C, []int{64, 64}, 8)
	if err != nil {
		log.Fatal(err)
	}
	b, err := plans.Plan(cufft.C2C, []int{64, 64}, 8)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(a, a == b)
	fmt.Println(plans)
	// Output:
	// cufft.Plan{C2C [64 64] ×8, cuda:0} true
	// cufft.Plans{1 plan, cuda:0}
}

// TestLarge: at 2^20 (where a direct DFT is out of reach on the CPU), a
// cosine's spectrum is n/2 at its two frequencies and nothing elsewhere,
// and the inverse of the forward transform is n times the input.
func TestLarge(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	n := 1 << 20
	if cudatest.IsFake() {
		n = 1 << 10 // the fake's DFT is direct
	}
	p := must(cufft.NewPlan(s, cufft.Z2Z, []int{n}, 1))(t)
	defer p.Close()
	x := make([]complex128, n)
	for i := range x {
		x[i] = complex(math.Cos(2*math.Pi*5*float64(i)/float64(n)), 0)
	}
	buf := must(cuda.FromHost(ctx, x))(t)
	defer buf.Free()
	if err := p.ExecZ2Z(buf, buf, cufft.Forward); err != nil {
		t.Fatal(err)
	}
	for k, v := range cudatest.Download(t, buf) {
		want := 0.0
		if k == 5 || k == n-5 {
			want = float64(n) / 2
		}
		if cmplx.Abs(v-complex(want, 0)) > 1e-6*float64(n) {
			t.Fatalf("frequency %d: %v, want %v", k, v, want)
		}
	}
	if err := p.ExecZ2Z(buf, buf, cufft.Inverse); err != nil {
		t.Fatal(err)
	}
	for i, v := range cudatest.Download(t, buf) {
		if cmplx.Abs(v-x[i]*complex(float64(n), 0)) > 1e-6*float64(n) {
			t.Fatalf("inverse of the forward at %d: %v, want %v", i, v, x[i]*complex(float64(n), 0))
		}
	}
}

// TestPlans: a shape asked for again gets the same plan; Close closes them
// all, and the cache refuses afterwards.
func TestPlans(t *testing.T) {
	s := cudatest.Stream(t, cudatest.Context(t))
	c := must(cufft.NewPlans(s))(t)
	a := must(c.Plan(cufft.C2C, []int{64}, 2))(t)
	if b := must(c.Plan(cufft.C2C, []int{64}, 2))(t); b != a {
		t.Errorf("the same shape gave another plan")
	}
	for _, other := range []struct {
		t     cufft.Type
		shape []int
		batch int
	}{{cufft.Z2Z, []int{64}, 2}, {cufft.C2C, []int{64}, 3}, {cufft.C2C, []int{8, 8}, 2}} {
		if p := must(c.Plan(other.t, other.shape, other.batch))(t); p == a {
			t.Errorf("%v %v x%d gave the plan of C2C [64] x2", other.t, other.shape, other.batch)
		}
	}
	if c.Len() != 4 {
		t.Errorf("Len %d, want 4", c.Len())
	}
	if _, err := c.Plan(cufft.C2C, []int{0}, 1); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("a bad shape: %v", err)
	}
	// A plan of the cache closed by its user is made again, not handed
	// out closed.
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	again := must(c.Plan(cufft.C2C, []int{64}, 2))(t)
	if again == a {
		t.Errorf("the cache handed out the plan its user closed")
	}
	x := cudatest.Upload(t, s.Context(), make([]complex64, 128))
	if err := again.ExecC2C(x, x, cufft.Forward); err != nil {
		t.Errorf("the plan made again: %v", err)
	}
	a = again
	if c.Len() != 4 {
		t.Errorf("Len %d after a plan was made again, want 4", c.Len())
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := c.Plan(cufft.C2C, []int{64}, 2); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("Plan after Close: %v, want ErrClosed", err)
	}
	if err := a.ExecC2C(nil, nil, cufft.Forward); !errors.Is(err, cuda.ErrClosed) && !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("a closed cache's plan: %v", err)
	}
	var zero cufft.Plans
	if _, err := zero.Plan(cufft.C2C, []int{4}, 1); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("zero Plans: %v", err)
	}
}

// TestString: plans and caches say what they are, nil, zero and closed
// ones too, as package cuda's objects do.
func TestString(t *testing.T) {
	s := cudatest.Stream(t, cudatest.Context(t))
	dev := s.Context().Device().String()
	p := must(cufft.NewPlan(s, cufft.C2C, []int{64, 64}, 8))(t)
	if got, want := fmt.Sprint(p), "cufft.Plan{C2C [64 64] ×8, "+dev+"}"; got != want {
		t.Errorf("String: %q, want %q", got, want)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	c := must(cufft.NewPlans(s))(t)
	must(c.Plan(cufft.R2C, []int{16}, 1))(t)
	if got, want := c.String(), "cufft.Plans{1 plan, "+dev+"}"; got != want {
		t.Errorf("String: %q, want %q", got, want)
	}
	must(c.Plan(cufft.C2R, []int{16}, 1))(t)
	if got, want := c.String(), "cufft.Plans{2 plans, "+dev+"}"; got != want {
		t.Errorf("String: %q, want %q", got, want)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		v    fmt.Stringer
		want string
	}{
		{p, "cufft.Plan{C2C [64 64] ×8, " + dev + ", closed}"}, {new(cufft.Plan), "cufft.Plan{zero}"}, {(*cufft.Plan)(nil), "cufft.Plan(nil)"},
		{c, "cufft.Plans{0 plans, " + dev + ", closed}"}, {new(cufft.Plans), "cufft.Plans{zero}"}, {(*cufft.Plans)(nil), "cufft.Plans(nil)"},
	} {
		if got := tc.v.String(); got != tc.want {
			t.Errorf("String: %q, want %q", got, tc.want)
		}
	}
}

// TestCloseFaults: a Close the library refuses leaves the plan usable,
// and a second Close finishes. (One whose work area cannot be freed:
// TestCloseWhileCaptured.)
func TestCloseFaults(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	buf := must(cuda.Alloc[complex64](ctx, 64))(t)
	defer buf.Free()
	exec := func(p *cufft.Plan) error { return p.ExecC2C(buf, buf, cufft.Forward) }
	liveBefore := f.Live("fft")
	t.Run("cufftDestroy", func(t *testing.T) {
		p := must(cufft.NewPlan(s, cufft.C2C, []int{64}, 1))(t)
		f.Fail("cufftDestroy", 1, int(cufft.ResultInternalError))
		if err := p.Close(); !errors.Is(err, cufft.ResultInternalError) || !strings.Contains(err.Error(), "Plan.Close: cufftDestroy") {
			t.Fatalf("Close with cufftDestroy failing: %v", err)
		}
		if err := exec(p); err != nil {
			t.Errorf("ExecC2C after the failed Close: %v", err)
		}
		if err := p.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	})
	if n := f.Live("fft"); n != liveBefore {
		t.Errorf("%d cuFFT plans alive, want %d", n, liveBefore)
	}
}

// TestCloseWhileCaptured: a graph that captured an execution uses the
// plan's work area, which Close then cannot free: the plan refuses
// executions, and Close finishes once the graph is closed.
func TestCloseWhileCaptured(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	p, n := withWorkArea(t, func(n int) (*cufft.Plan, error) { return cufft.NewPlan(s, cufft.C2C, []int{n}, 1) })
	buf := must(cuda.Alloc[complex64](ctx, n))(t)
	defer buf.Free()
	g := must(s.Capture(cuda.CaptureThreadLocal, func() error { return p.ExecC2C(buf, buf, cufft.Forward) }))(t)
	err := p.Close()
	if !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "Plan.Close") || !strings.Contains(err.Error(), "graph") {
		t.Errorf("Close while a graph uses the work area: %v", err)
	}
	if err := p.ExecC2C(buf, buf, cufft.Forward); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("ExecC2C after that Close: %v, want ErrClosed", err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("Close once the graph is closed: %v", err)
	}
}

// TestPlansCloseWhileCaptured: a cache whose Close fails stays usable: the
// plan its Close left unusable (its work area used by a graph) is out of
// the cache, made again when asked for, and closed by the next Close.
func TestPlansCloseWhileCaptured(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	c := must(cufft.NewPlans(s))(t)
	defer c.Close()
	p, n := withWorkArea(t, func(n int) (*cufft.Plan, error) { return c.Plan(cufft.C2C, []int{n}, 1) })
	buf := must(cuda.Alloc[complex64](ctx, n))(t)
	defer buf.Free()
	g := must(s.Capture(cuda.CaptureThreadLocal, func() error { return p.ExecC2C(buf, buf, cufft.Forward) }))(t)
	if err := c.Close(); !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "Plans.Close") {
		t.Errorf("Plans.Close while a graph uses a plan's work area: %v", err)
	}
	again := must(c.Plan(cufft.C2C, []int{n}, 1))(t)
	if again == p {
		t.Errorf("the cache gave out the plan its Close left unusable")
	}
	if err := again.ExecC2C(buf, buf, cufft.Forward); err != nil {
		t.Errorf("a plan of the cache after its failed Close: %v", err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Plans.Close: %v", err)
	}
	for _, p := range []*cufft.Plan{p, again} {
		if err := p.ExecC2C(buf, buf, cufft.Forward); !errors.Is(err, cuda.ErrClosed) || !strings.Contains(err.Error(), "the plan is closed") {
			t.Errorf("a plan of the cache after its Close: %v", err)
		}
	}
}

// withWorkArea returns the first plan plan makes, of a one-dimensional C2C
// of n elements, that has a work area, and n: cuFFT needs none for small
// powers of two (the fake none below 64 elements), and one for long
// transforms and for sizes of large prime factors. Plans without one are
// closed (a Plans that made them then finds them closed, as Close does).
func withWorkArea(t *testing.T, plan func(n int) (*cufft.Plan, error)) (*cufft.Plan, int) {
	t.Helper()
	for _, n := range []int{64, 1009, 3 * 5 * 7 * 11 * 13 * 17, 1 << 22} {
		p := must(plan(n))(t)
		if p.WorkBytes() > 0 {
			return p, n
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
	}
	t.Skip("no plan tried has a work area")
	return nil, 0
}

// TestUnalignedBuffers: transforms of buffers that start one element into
// their allocations (DeviceBuffer.Slice) give what buffers of their own
// give, in place and out of place, and write nothing around them: cuFFT
// refuses a real buffer not aligned as a complex number (R2C from a float32
// slice one element in: CUFFT_INVALID_VALUE on the H100), and the package
// takes any element-aligned buffer.
func TestUnalignedBuffers(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	r := rand.New(rand.NewPCG(21, 22))
	for _, sh := range []struct {
		shape []int
		batch int
	}{{[]int{8}, 1}, {[]int{97}, 3}, {[]int{64, 64}, 2}} {
		t.Run(fmt.Sprint(sh.shape, "x", sh.batch), func(t *testing.T) {
			n := elements(sh.shape) * sh.batch
			half := n / sh.shape[len(sh.shape)-1] * (sh.shape[len(sh.shape)-1]/2 + 1)
			x := make([]complex64, n)
			re := make([]float32, n)
			for i := range x {
				x[i] = complex(float32(r.NormFloat64()), float32(r.NormFloat64()))
				re[i] = float32(r.NormFloat64())
			}
			c2c := must(cufft.NewPlan(s, cufft.C2C, sh.shape, sh.batch))(t)
			defer c2c.Close()
			r2c := must(cufft.NewPlan(s, cufft.R2C, sh.shape, sh.batch))(t)
			defer r2c.Close()
			// Aligned: the reference.
			want := must(cuda.Alloc[complex64](ctx, n))(t)
			defer want.Free()
			if err := c2c.ExecC2C(want, cudatest.Upload(t, ctx, x), cufft.Forward); err != nil {
				t.Fatal(err)
			}
			wantHalf := must(cuda.Alloc[complex64](ctx, half))(t)
			defer wantHalf.Free()
			if err := r2c.ExecR2C(wantHalf, cudatest.Upload(t, ctx, re)); err != nil {
				t.Fatal(err)
			}
			// One element in: out of place, then in place.
			in, out := offsetCopy(t, ctx, x), offsetCopy(t, ctx, make([]complex64, n))
			if err := c2c.ExecC2C(must(out.Slice(1, n))(t), must(in.Slice(1, n))(t), cufft.Forward); err != nil {
				t.Fatal(err)
			}
			checkOffset(t, "C2C out of place", cudatest.Download(t, out), cudatest.Download(t, want))
			if err := c2c.ExecC2C(must(in.Slice(1, n))(t), must(in.Slice(1, n))(t), cufft.Forward); err != nil {
				t.Fatal(err)
			}
			checkOffset(t, "C2C in place", cudatest.Download(t, in), cudatest.Download(t, want))
			rin, hout := offsetCopy(t, ctx, re), offsetCopy(t, ctx, make([]complex64, half))
			if err := r2c.ExecR2C(must(hout.Slice(1, half))(t), must(rin.Slice(1, n))(t)); err != nil {
				t.Fatal(err)
			}
			checkOffset(t, "R2C", cudatest.Download(t, hout), cudatest.Download(t, wantHalf))
			// C2R into a real buffer one element in; cuFFT uses its input
			// as scratch, so each call gets a copy of the spectrum.
			c2r := must(cufft.NewPlan(s, cufft.C2R, sh.shape, sh.batch))(t)
			defer c2r.Close()
			spectrum := cudatest.Download(t, wantHalf)
			wantReal := must(cuda.Alloc[float32](ctx, n))(t)
			defer wantReal.Free()
			if err := c2r.ExecC2R(wantReal, cudatest.Upload(t, ctx, spectrum)); err != nil {
				t.Fatal(err)
			}
			rout := offsetCopy(t, ctx, make([]float32, n))
			if err := c2r.ExecC2R(must(rout.Slice(1, n))(t), cudatest.Upload(t, ctx, spectrum)); err != nil {
				t.Fatal(err)
			}
			checkOffset(t, "C2R", asComplex64(cudatest.Download(t, rout)), asComplex64(cudatest.Download(t, wantReal)))
			// D2Z from a float64 buffer one element in.
			d2z := must(cufft.NewPlan(s, cufft.D2Z, sh.shape, sh.batch))(t)
			defer d2z.Close()
			re64 := make([]float64, n)
			for i, v := range re {
				re64[i] = float64(v)
			}
			wantZ := must(cuda.Alloc[complex128](ctx, half))(t)
			defer wantZ.Free()
			if err := d2z.ExecD2Z(wantZ, cudatest.Upload(t, ctx, re64)); err != nil {
				t.Fatal(err)
			}
			rin64, zout := offsetCopy(t, ctx, re64), offsetCopy(t, ctx, make([]complex128, half))
			if err := d2z.ExecD2Z(must(zout.Slice(1, half))(t), must(rin64.Slice(1, n))(t)); err != nil {
				t.Fatal(err)
			}
			checkOffset(t, "D2Z", asComplex64(cudatest.Download(t, zout)), asComplex64(cudatest.Download(t, wantZ)))
		})
	}
}

// offsetCopy uploads v one element into a buffer of len(v)+2 zeros.
func offsetCopy[T any](t *testing.T, ctx *cuda.Context, v []T) *cuda.DeviceBuffer[T] {
	t.Helper()
	return cudatest.Upload(t, ctx, append(append(make([]T, 1, len(v)+2), v...), *new(T)))
}

// asComplex64 returns v's elements as complex64s, for checkOffset.
func asComplex64[T float32 | complex128](v []T) []complex64 {
	out := make([]complex64, len(v))
	for i, x := range v {
		switch x := any(x).(type) {
		case float32:
			out[i] = complex(x, 0)
		case complex128:
			out[i] = complex64(x)
		}
	}
	return out
}

// checkOffset checks that got is want one element in, with zeros around.
func checkOffset(t *testing.T, name string, got, want []complex64) {
	t.Helper()
	if got[0] != 0 || got[len(got)-1] != 0 {
		t.Errorf("%s: the elements around the buffer changed: %v and %v", name, got[0], got[len(got)-1])
	}
	for i, w := range want {
		if g := got[i+1]; cmplx.Abs(complex128(g-w)) > 1e-4*(1+cmplx.Abs(complex128(w))) {
			t.Fatalf("%s: element %d is %v, want %v (as from a buffer of its own)", name, i, g, w)
		}
	}
}
