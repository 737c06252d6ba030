package compute_test

import (
	"fmt"
	"math"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/compute"
	"github.com/gocuda/cuda/internal/cudatest"
)

// TestViews runs kernels on views that start at every offset into their
// buffers (so that some are aligned for 16-byte accesses and some not)
// and end anywhere: the results are right, and the elements around each
// view are as they were (a wide store does not spill out of its view).
func TestViews(t *testing.T) {
	e := gpu(t)
	const n, pad = 1001, 16
	a, b := randoms[float32](n+pad, -100, 100), randoms[float32](n+pad, -100, 100)
	da, db := cudatest.Upload(t, e.ctx, a), cudatest.Upload(t, e.ctx, b)
	sentinel := float32(-12345)
	for _, tc := range []struct{ offA, offB, offDst, n int }{
		{0, 0, 0, n}, {0, 0, 0, n - 3}, {1, 0, 0, n}, {0, 0, 1, n}, {4, 8, 12, n}, {4, 8, 12, n - 1}, {3, 5, 7, 1}, {2, 2, 2, 30},
	} {
		t.Run(fmt.Sprintf("%+v", tc), func(t *testing.T) {
			va := must(da.Slice(tc.offA, tc.n))(t)
			vb := must(db.Slice(tc.offB, tc.n))(t)
			fill := make([]float32, tc.n+pad)
			for i := range fill {
				fill[i] = sentinel
			}
			dst := cudatest.Upload(t, e.ctx, fill)
			vd := must(dst.Slice(tc.offDst, tc.n))(t)
			if err := compute.Add(vd, va, vb, e.s); err != nil {
				t.Fatal(err)
			}
			got := cudatest.Download(t, dst)
			for i, g := range got {
				want := sentinel
				if j := i - tc.offDst; j >= 0 && j < tc.n {
					want = a[tc.offA+j] + b[tc.offB+j]
				}
				if g != want {
					t.Fatalf("Add: element %d of the buffer = %v, want %v", i, g, want)
				}
			}

			// A cast to a narrower type: 4 float32 to 4 bfloat16 at a time.
			half := cudatest.Upload(t, e.ctx, make([]cuda.BFloat16, tc.n+pad))
			vh := must(half.Slice(tc.offDst, tc.n))(t)
			if err := compute.Cast(vh, va, e.s); err != nil {
				t.Fatal(err)
			}
			for i, g := range cudatest.Download(t, half) {
				want := cuda.BFloat16(0)
				if j := i - tc.offDst; j >= 0 && j < tc.n {
					want = cuda.NewBFloat16(a[tc.offA+j])
				}
				if g != want {
					t.Fatalf("Cast: element %d of the buffer = %#x, want %#x", i, g, want)
				}
			}

			// A reduction of a view.
			sum := must(cuda.Alloc[float64](e.ctx, 1))(t)
			defer sum.Free()
			a64 := make([]float64, tc.n)
			var ref float64
			for j := range a64 {
				a64[j] = float64(a[tc.offA+j])
				ref += a64[j]
			}
			d64 := cudatest.Upload(t, e.ctx, append(make([]float64, tc.offA), a64...))
			v64 := must(d64.Slice(tc.offA, tc.n))(t)
			if err := compute.Sum(sum, v64, e.s); err != nil {
				t.Fatal(err)
			}
			if got := cudatest.Download(t, sum)[0]; math.Abs(got-ref) > 1e-9*math.Max(1, math.Abs(ref)) {
				t.Fatalf("Sum of a view = %v, want %v", got, ref)
			}
		})
	}
	// Bytes: 16 to a wide store.
	bytes := cudatest.Upload(t, e.ctx, make([]uint8, 100))
	for _, off := range []int{0, 1, 15, 16, 17} {
		for _, m := range []int{1, 15, 16, 17, 50} {
			if err := bytes.Memset8(0); err != nil {
				t.Fatal(err)
			}
			v := must(bytes.Slice(off, m))(t)
			if err := compute.Fill(v, 7, e.s); err != nil {
				t.Fatal(err)
			}
			for i, g := range cudatest.Download(t, bytes) {
				want := uint8(0)
				if i >= off && i < off+m {
					want = 7
				}
				if g != want {
					t.Fatalf("Fill of [%d, %d): byte %d = %d, want %d", off, off+m, i, g, want)
				}
			}
		}
	}
}
