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
