package compute_test

import (
	"errors"
	"fmt"
	"math"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/compute"
	"github.com/gocuda/cuda/internal/cudatest"
)

// TestSoftmaxChunksScratch: a few long rows cut into chunks (LogSoftmax
// and Softmax of 1 and 7 rows of 40,000, past splitCols) keep their
// chunks' statistics in the stream's scratch memory: no stream-ordered
// allocation (the fake fails the next cuMemAllocAsync, and the call
// computes all the same), the same bits a second time, and within
// float64's reference.
func TestSoftmaxChunksScratch(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	e := gpu(t)
	for _, rows := range []int{1, 7} {
		sh := compute.Shape{Rows: rows, Cols: 40000}
		x := randoms[cuda.Float16](rows*sh.Cols, -20, 20)
		src := cudatest.Upload(t, e.ctx, x)
		dst := must(cuda.Alloc[cuda.Float16](e.ctx, len(x)))(t)
		for _, logarithm := range []bool{false, true} {
			op := compute.Softmax[cuda.Float16]
			if logarithm {
				op = compute.LogSoftmax[cuda.Float16]
			}
			if err := op(dst, src, sh, e.s); err != nil { // compiled, the scratch made
				t.Fatal(err)
			}
			f.Fail("cuMemAllocAsync", 1, 2) // CUDA_ERROR_OUT_OF_MEMORY
			err := op(dst, src, sh, e.s)
			f.ResetFaults()
			if err != nil {
				t.Fatalf("%v (log %v) with stream-ordered allocations failing: %v", sh, logarithm, err)
			}
			got := twiceBits(t, fmt.Sprintf("%v (log %v)", sh, logarithm), dst, func() error { return op(dst, src, sh, e.s) })
			for r := range rows {
				wants, lwants := softmaxWant(x[r*sh.Cols : (r+1)*sh.Cols])
				for c := range sh.Cols {
					g, w := toF(got[r*sh.Cols+c]), wants[c]
					if logarithm {
						w = lwants[c]
					}
					if math.Abs(g-w) > 8e-3*math.Max(1, math.Abs(w)) {
						t.Fatalf("%v (log %v): [%d,%d] = %v, want %v", sh, logarithm, r, c, g, w)
					}
				}
			}
		}
		dst.Free()
	}
	// In a graph capture the statistics are stream-ordered memory of the
	// graph's own (the scratch is not the replays'): the capture
	// allocates.
	sh := compute.Shape{Rows: 1, Cols: 40000}
	x := must(cuda.Zeroed[cuda.Float16](e.ctx, sh.Cols))(t)
	defer x.Free()
	g, err := e.s.Capture(cuda.CaptureGlobal, func() error {
		f.Fail("cuMemAllocAsync", 1, 2)
		defer f.ResetFaults()
		return compute.LogSoftmax(x, x, sh, e.s)
	})
	if err == nil {
		g.Close()
	}
	if !errors.Is(err, cuda.ErrOutOfMemory) {
		t.Errorf("LogSoftmax %v in a capture with stream-ordered allocations failing: %v, want ErrOutOfMemory", sh, err)
	}
}

// TestSoftmaxChunksAllocs: a call of a few long rows cut into chunks
// makes no more allocations than one of the kernel that stages rows: the
// chunks' kernels' names are made once, not at every call, and their
// statistics take the stream's scratch, no buffer.
func TestSoftmaxChunksAllocs(t *testing.T) {
	e := gpu(t)
	x := must(cuda.Zeroed[float32](e.ctx, 40000))(t)
	defer x.Free()
	allocs := func(sh compute.Shape) float64 {
		t.Helper()
		if err := compute.LogSoftmax(x, x, sh, e.s); err != nil { // compiled
			t.Fatal(err)
		}
		return testing.AllocsPerRun(20, func() {
			if err := compute.LogSoftmax(x, x, sh, e.s); err != nil {
				t.Fatal(err)
			}
		})
	}
	staged, chunks := allocs(compute.Shape{Rows: 4000, Cols: 10}), allocs(compute.Shape{Rows: 1, Cols: 40000})
	if chunks > staged {
		t.Errorf("LogSoftmax of a row in chunks: %v allocations a call, of staged rows %v", chunks, staged)
	}
	t.Logf("allocations a call: staged %v, chunks %v", staged, chunks)
}
