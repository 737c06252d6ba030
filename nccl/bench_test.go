package nccl_test

import (
	"fmt"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/nccl"
)

// BenchmarkAllReduce all-reduces (sum, in place) float32 buffers of 1 MiB
// to 1 GiB across every device, as nccl-tests and bench/pyref/torch_allreduce.py
// do: one goroutine drives all ranks in a Group. It reports NCCL's bus
// bandwidth: the algorithm's bytes/s times 2(n-1)/n, what each link moves.
func BenchmarkAllReduce(b *testing.B) {
	requireNCCL(b)
	n, err := cuda.DeviceCount()
	if err != nil || n < 2 {
		b.Skipf("needs two devices; the %s driver sees %d", cudatest.Kind(), n)
	}
	ctxs := make([]*cuda.Context, n)
	streams := make([]*cuda.Stream, n)
	for i := range n {
		ctxs[i] = must(cuda.NewContext(must(cuda.GetDevice(i))(b)))(b)
		defer ctxs[i].Close()
		streams[i] = must(ctxs[i].NewStream())(b)
		defer streams[i].Close()
	}
	comms := must(nccl.NewComms(ctxs))(b)
	defer func() {
		for _, c := range comms {
			c.Close()
		}
	}()
	for size := 1 << 20; size <= 1<<30; size *= 4 {
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			bufs := make([]*cuda.DeviceBuffer[float32], n)
			for i := range n {
				bufs[i] = must(cuda.Zeroed[float32](ctxs[i], size/4))(b)
				defer bufs[i].Free()
			}
			step := func() {
				err := nccl.Group(func() error {
					for i, c := range comms {
						if err := nccl.AllReduce(c, bufs[i], bufs[i], nccl.Sum, streams[i]); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			sync := func() {
				for _, s := range streams {
					if err := s.Synchronize(); err != nil {
						b.Fatal(err)
					}
				}
			}
			step() // warm up: NCCL connects lazily
			sync()
			b.SetBytes(int64(size))
			b.ResetTimer()
			// Queue b.N all-reduces, then wait for them all: the time is
			// the device's, as nccl-tests measures it.
			for range b.N {
				step()
			}
			sync()
			algbw := float64(size) * float64(b.N) / b.Elapsed().Seconds()
			b.ReportMetric(algbw*2*float64(n-1)/float64(n)/1e9, "busbw-GB/s")
		})
	}
}
