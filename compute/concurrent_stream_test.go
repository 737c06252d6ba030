package compute_test

import (
	"sync"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/compute"
	"github.com/gocuda/cuda/internal/cudatest"
)

// TestOpsConcurrentOnOneStream: a Stream is for many goroutines, so the
// operations that fold partial results (in the stream's scratch, where
// their last block folds them, or in memory of their own between two
// kernels) give each goroutine's call the bits it gives alone while
// other goroutines' calls on the same stream queue their kernels between
// its own: a few long rows of Softmax in chunks (two kernels), rows and
// columns folded by a last block, ArgMax's blocks' bests. The goroutines
// run different inputs through every operation, so a call that reads
// another's partial results shows; on the fake the interleaving that did
// (f2c5d33) showed about one run in six.
func TestOpsConcurrentOnOneStream(t *testing.T) {
	e := gpu(t)
	const goroutines, calls = 8, 24
	type op struct {
		name string
		sh   compute.Shape
		run  func(dst, src *cuda.DeviceBuffer[float32], idx *cuda.DeviceBuffer[int64]) error
	}
	ops := []op{
		{"LogSoftmax 2x40000 (chunks)", compute.Shape{Rows: 2, Cols: 40000}, func(dst, src *cuda.DeviceBuffer[float32], _ *cuda.DeviceBuffer[int64]) error {
			return compute.LogSoftmax(dst, src, compute.Shape{Rows: 2, Cols: 40000}, e.s)
		}},
		{"SumAxis rows 3x70000 (chunks)", compute.Shape{Rows: 3, Cols: 70000}, func(dst, src *cuda.DeviceBuffer[float32], _ *cuda.DeviceBuffer[int64]) error {
			d, _ := dst.Slice(0, 3)
			return compute.SumAxis(d, src, compute.Shape{Rows: 3, Cols: 70000}, compute.PerRow, e.s)
		}},
		{"MaxAxis columns 1000x100 (chunks)", compute.Shape{Rows: 1000, Cols: 100}, func(dst, src *cuda.DeviceBuffer[float32], _ *cuda.DeviceBuffer[int64]) error {
			d, _ := dst.Slice(0, 100)
			return compute.MaxAxis(d, src, compute.Shape{Rows: 1000, Cols: 100}, compute.PerColumn, e.s)
		}},
		{"ArgMax 200000", compute.Shape{Rows: 1, Cols: 200000}, func(_, src *cuda.DeviceBuffer[float32], idx *cuda.DeviceBuffer[int64]) error {
			return compute.ArgMax(idx, src, e.s)
		}},
	}
	for _, o := range ops {
		t.Run(o.name, func(t *testing.T) {
			n := o.sh.Rows * o.sh.Cols
			srcs := make([]*cuda.DeviceBuffer[float32], goroutines)
			dsts := make([]*cuda.DeviceBuffer[float32], goroutines)
			idxs := make([]*cuda.DeviceBuffer[int64], goroutines)
			wants := make([][]float32, goroutines)
			wantIdx := make([]int64, goroutines)
			for g := range goroutines {
				srcs[g] = cudatest.Upload(t, e.ctx, randoms[float32](n, float64(-10*(g+1)), float64(10*(g+1))))
				dsts[g] = must(cuda.Zeroed[float32](e.ctx, n))(t)
				idxs[g] = must(cuda.Zeroed[int64](e.ctx, 1))(t)
				t.Cleanup(func() { srcs[g].Free(); dsts[g].Free(); idxs[g].Free() })
				if err := o.run(dsts[g], srcs[g], idxs[g]); err != nil { // alone
					t.Fatal(err)
				}
				wants[g], wantIdx[g] = cudatest.Download(t, dsts[g]), cudatest.Download(t, idxs[g])[0]
			}
			errs := make([]error, goroutines)
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Go(func() {
					for range calls {
						if err := o.run(dsts[g], srcs[g], idxs[g]); err != nil {
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
				got, idx := cudatest.Download(t, dsts[g]), cudatest.Download(t, idxs[g])[0]
				for i := range got {
					if got[i] != wants[g][i] {
						t.Errorf("goroutine %d: element %d is %v beside other goroutines' calls, %v alone", g, i, got[i], wants[g][i])
						break
					}
				}
				if idx != wantIdx[g] {
					t.Errorf("goroutine %d: index %d beside other goroutines' calls, %d alone", g, idx, wantIdx[g])
				}
			}
		})
	}
}
