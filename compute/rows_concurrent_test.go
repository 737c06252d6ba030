package compute_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/compute"
	"github.com/gocuda/cuda/internal/cudatest"
)

// TestSoftmaxChunksConcurrent: a Stream is for many goroutines, so calls
// of a few long rows cut into chunks (two kernels: the chunks' statistics,
// then the rows from them) made by several goroutines on one stream at
// once, each on rows of its own, give each the bits the call gives alone:
// no call's second kernel reads statistics that another call's first
// kernel wrote between the two.
func TestSoftmaxChunksConcurrent(t *testing.T) {
	e := gpu(t)
	const goroutines, calls = 8, 32
	sh := compute.Shape{Rows: 2, Cols: 40000}
	srcs := make([]*cuda.DeviceBuffer[float32], goroutines)
	dsts := make([]*cuda.DeviceBuffer[float32], goroutines)
	wants := make([][]float32, goroutines)
	for g := range goroutines {
		srcs[g] = cudatest.Upload(t, e.ctx, randoms[float32](sh.Rows*sh.Cols, float64(-10*(g+1)), float64(10*(g+1))))
		dsts[g] = must(cuda.Alloc[float32](e.ctx, sh.Rows*sh.Cols))(t)
		defer srcs[g].Free()
		defer dsts[g].Free()
		if err := compute.LogSoftmax(dsts[g], srcs[g], sh, e.s); err != nil {
			t.Fatal(err)
		}
		wants[g] = cudatest.Download(t, dsts[g])
	}
	var wg sync.WaitGroup
	errs := make([]error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for range calls {
				if err := compute.LogSoftmax(dsts[g], srcs[g], sh, e.s); err != nil {
					errs[g] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for g := range goroutines {
		if errs[g] != nil {
			t.Fatalf("goroutine %d: %v", g, errs[g])
		}
		if got := cudatest.Download(t, dsts[g]); !slices.Equal(got, wants[g]) {
			i := 0
			for i < len(got) && got[i] == wants[g][i] {
				i++
			}
			t.Errorf("goroutine %d: %s", g, fmt.Sprintf("element %d is %v after calls beside other goroutines', %v alone", i, got[i], wants[g][i]))
		}
	}
}
