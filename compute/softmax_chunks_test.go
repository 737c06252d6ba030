package compute_test

import (
	"fmt"
	"math"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/compute"
)

// TestSoftmaxChunksInTurn queues Softmax and LogSoftmax of a few long rows
// (cut into chunks: _stats, then _apply, its programmatic dependent on
// devices that have them) over several inputs on one stream with no wait
// between the calls, some in place, then checks every result against
// float64 on the host. Each input's rows lie around another offset, so
// that a chunk joined with another call's statistics (an _apply that read
// them before its _stats had written them, or after the next call's had)
// is far from its want.
func TestSoftmaxChunksInTurn(t *testing.T) {
	e := gpu(t)
	softmaxChunksOf[float32](t, e, 2e-6)
	softmaxChunksOf[cuda.Float16](t, e, 2e-3)
}

func softmaxChunksOf[T cuda.AnyFloat](t *testing.T, e env, tol float64) {
	t.Helper()
	for _, sh := range []compute.Shape{{Rows: 1, Cols: 65536}, {Rows: 2, Cols: 65536 + 3}} {
		t.Run(fmt.Sprintf("%T/%dx%d", *new(T), sh.Rows, sh.Cols), func(t *testing.T) {
			const calls = 6
			n := sh.Rows * sh.Cols
			xs := make([][]T, calls)
			srcs := make([]*cuda.DeviceBuffer[T], calls)
			dsts := make([]*cuda.DeviceBuffer[T], calls)
			for i := range calls {
				off := float64(i*7) - 20
				xs[i] = randoms[T](n, off-4, off+4)
				srcs[i] = must(cuda.Alloc[T](e.ctx, n))(t)
				defer srcs[i].Free()
				if err := srcs[i].CopyFromHost(xs[i]); err != nil {
					t.Fatal(err)
				}
				dsts[i] = srcs[i] // odd calls in place
				if i%2 == 0 {
					dsts[i] = must(cuda.Alloc[T](e.ctx, n))(t)
					defer dsts[i].Free()
				}
			}
			for i := range calls {
				op := compute.Softmax[T]
				if i%3 == 1 {
					op = compute.LogSoftmax[T]
				}
				if err := op(dsts[i], srcs[i], sh, e.s); err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
			}
			for i := range calls {
				got := make([]T, n)
				if err := dsts[i].CopyToHost(got); err != nil {
					t.Fatal(err)
				}
				for r := range sh.Rows {
					wants, lwants := softmaxWant(xs[i][r*sh.Cols : (r+1)*sh.Cols])
					for c := range sh.Cols {
						g, want, scale := toF(got[r*sh.Cols+c]), wants[c], math.Max(wants[c], 1e-3)
						if i%3 == 1 {
							want, scale = lwants[c], math.Max(1, math.Abs(lwants[c]))
						}
						if math.Abs(g-want) > tol*4*scale {
							t.Fatalf("call %d (log %v, in place %v): [%d,%d] = %v, want %v", i, i%3 == 1, i%2 == 1, r, c, g, want)
						}
					}
				}
			}
		})
	}
}

// TestSoftmaxClusterBits: a few long rows' chunks as the blocks of thread
// block clusters (one kernel) give the bits of the two kernels, _stats
// then _apply, for every type, both operations, rows of whole vectors
// and not, buffers at a vector's boundary and past it, and in place.
func TestSoftmaxClusterBits(t *testing.T) {
	e := gpu(t)
	clusterBitsOf[float32](t, e)
	clusterBitsOf[float64](t, e)
	clusterBitsOf[cuda.Float16](t, e)
	clusterBitsOf[cuda.BFloat16](t, e)
}

func clusterBitsOf[T cuda.AnyFloat](t *testing.T, e env) {
	t.Helper()
	needClusters(t, e)
	for _, c := range []struct {
		sh      compute.Shape
		off     int
		inPlace bool
	}{
		{compute.Shape{Rows: 1, Cols: 65536}, 0, false},
		{compute.Shape{Rows: 1, Cols: 65536}, 0, true},
		{compute.Shape{Rows: 2, Cols: 40001}, 1, false},
		{compute.Shape{Rows: 1, Cols: 32769}, 0, true},
	} {
		name := fmt.Sprintf("%T/%dx%d/off%d/inplace%v", *new(T), c.sh.Rows, c.sh.Cols, c.off, c.inPlace)
		t.Run(name, func(t *testing.T) {
			n := c.sh.Rows * c.sh.Cols
			x := randoms[T](n, -30, 30)
			if c.sh.Rows > 1 {
				x[n-5] = fromF[T](math.Inf(1)) // the last row's infinity: the join's own case
			}
			base := must(cuda.Alloc[T](e.ctx, n+c.off))(t)
			defer base.Free()
			src := must(base.Slice(c.off, n))(t)
			for _, log := range []bool{false, true} {
				op := compute.Softmax[T]
				if log {
					op = compute.LogSoftmax[T]
				}
				var got [2][]T
				for k, on := range []bool{true, false} {
					if err := src.CopyFromHost(x); err != nil {
						t.Fatal(err)
					}
					dst := src
					if !c.inPlace {
						dst = must(cuda.Alloc[T](e.ctx, n))(t)
						defer dst.Free()
					}
					compute.SetClusters(t, e.s, on)
					if err := op(dst, src, c.sh, e.s); err != nil {
						t.Fatal(err)
					}
					got[k] = make([]T, n)
					if err := dst.CopyToHost(got[k]); err != nil {
						t.Fatal(err)
					}
				}
				for i := range got[0] {
					if a, b := got[0][i], got[1][i]; a != b && (a == a || b == b) {
						t.Fatalf("log %v: [%d] = %v in clusters, %v in two kernels", log, i, a, b)
					}
				}
			}
		})
	}
}

// needClusters skips t where the device has no thread block clusters.
func needClusters(t *testing.T, e env) {
	t.Helper()
	if v, err := e.ctx.Device().Attribute(cuda.AttrClusterLaunch); err != nil || v == 0 {
		t.Skipf("%v has no thread block clusters (%v)", e.ctx.Device(), err)
	}
}
