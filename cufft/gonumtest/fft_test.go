package gonumtest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cufft"
	"github.com/gocuda/cuda/internal/cudatest"
	"gonum.org/v1/gonum/dsp/fourier"
)

func TestMain(m *testing.M) { cudatest.Main(m) }

// TestAgainstGonum: cuFFT's forward and inverse transforms, complex128
// and float64, equal gonum's to within rounding, at 1, 3, 97, 1000, 4096
// and (where the device computes them, not the fake's direct DFT) 2^20.
// gonum's Coefficients is the unscaled forward transform and Sequence the
// unscaled inverse, cuFFT's convention.
func TestAgainstGonum(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	sizes := []int{1, 3, 97, 1000, 4096}
	if !cudatest.IsFake() {
		sizes = append(sizes, 1<<20, 3*5*7*11*13*17)
	}
	for _, n := range sizes {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			x := make([]complex128, n)
			for i := range x {
				x[i] = complex(rand.NormFloat64(), rand.NormFloat64())
			}
			ref := fourier.NewCmplxFFT(n)
			for _, dir := range []cufft.Direction{cufft.Forward, cufft.Inverse} {
				var want []complex128
				if dir == cufft.Forward {
					want = ref.Coefficients(nil, x)
				} else {
					want = ref.Sequence(nil, x)
				}
				p, err := cufft.NewPlan(s, cufft.Z2Z, []int{n}, 1)
				if err != nil {
					t.Fatal(err)
				}
				defer p.Close()
				buf, err := cuda.FromHost(ctx, x)
				if err != nil {
					t.Fatal(err)
				}
				defer buf.Free()
				if err := p.ExecZ2Z(buf, buf, dir); err != nil {
					t.Fatal(err)
				}
				got := make([]complex128, n)
				if err := buf.CopyToHost(got); err != nil {
					t.Fatal(err)
				}
				if e := relErr(got, want); e > 1e-12 {
					t.Errorf("direction %d: relative error %.3g from gonum's", dir, e)
				}
			}
			// The real forward transform: the first n/2+1 coefficients.
			r := make([]float64, n)
			for i := range r {
				r[i] = rand.NormFloat64()
			}
			want := fourier.NewFFT(n).Coefficients(nil, r)
			p, err := cufft.NewPlan(s, cufft.D2Z, []int{n}, 1)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			in, err := cuda.FromHost(ctx, r)
			if err != nil {
				t.Fatal(err)
			}
			defer in.Free()
			out, err := cuda.Alloc[complex128](ctx, n/2+1)
			if err != nil {
				t.Fatal(err)
			}
			defer out.Free()
			if err := p.ExecD2Z(out, in); err != nil {
				t.Fatal(err)
			}
			got := make([]complex128, n/2+1)
			if err := out.CopyToHost(got); err != nil {
				t.Fatal(err)
			}
			if e := relErr(got, want); e > 1e-12 {
				t.Errorf("D2Z: relative error %.3g from gonum's", e)
			}
		})
	}
}

func relErr(got, want []complex128) float64 {
	var num, den float64
	for i := range want {
		d := got[i] - want[i]
		num += real(d)*real(d) + imag(d)*imag(d)
		den += real(want[i])*real(want[i]) + imag(want[i])*imag(want[i])
	}
	return math.Sqrt(num / max(den, 1e-300))
}
