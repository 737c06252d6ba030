//go:build gocuda_research && linux

package cuda_test

import (
	"fmt"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

// BenchmarkRegisterFresh asks whether a download into a fresh slice could
// skip the staging slots: page-lock the slice itself (cuMemHostRegister,
// in chunks registered by several goroutines at once), let the DMA write
// it, and unlock it. Staged, a fresh slice pays the kernel's zeroing of its
// pages and a copy out of the slots beside the DMA; registered, it pays
// the zeroing (pinning faults the pages in) and the driver's pinning and
// mapping instead of the copy. Each of 5 rounds maps fresh memory
// (huge pages advised where fresh), registers it in workers chunks,
// downloads into it and unregisters it; the metrics are the phases'
// medians in GB/s and the whole's median and slowest. touched: the same
// mapping every round, its pages already in memory, the pinning's own cost.
func BenchmarkRegisterFresh(b *testing.B) {
	ctx := cudatest.Context(b)
	for _, n := range []int{16 << 20, 64 << 20, 256 << 20} {
		dev := must(cuda.Alloc[byte](ctx, n))(b)
		src := random[byte](n)
		must(0, dev.CopyFromHost(src))(b)
		for _, fresh := range []bool{true, false} {
			for _, workers := range []int{1, 4, 16} {
				mem := "touched"
				if fresh {
					mem = "fresh"
				}
				b.Run(fmt.Sprintf("%s/%s/workers=%d", sizeName(n), mem, workers), func(b *testing.B) {
					var kept []byte
					if !fresh {
						kept = mapHuge(b, n)
						clear(kept)
						b.Cleanup(func() { syscall.Munmap(kept) })
					}
					var reg, dma, unreg, whole []time.Duration
					for range b.N {
						for range 5 {
							host := kept
							if fresh {
								host = mapHuge(b, n)
							}
							t0 := time.Now()
							rs := registerChunks(b, ctx, host, workers)
							t1 := time.Now()
							err := dev.CopyToHost(host)
							t2 := time.Now()
							closeChunks(b, rs) // before any Fatal: a registration left open outlives the mapping
							t3 := time.Now()
							if err != nil {
								b.Fatal(err)
							}
							reg, dma, unreg, whole = append(reg, t1.Sub(t0)), append(dma, t2.Sub(t1)), append(unreg, t3.Sub(t2)), append(whole, t3.Sub(t0))
							if host[n-1] != src[n-1] || host[0] != src[0] {
								b.Fatal("the download left the wrong bytes")
							}
							if fresh {
								syscall.Munmap(host)
							}
						}
					}
					gbs := func(d []time.Duration, at float64) float64 {
						slices.Sort(d)
						return float64(n) / d[int(at*float64(len(d)-1))].Seconds() / 1e9
					}
					b.ReportMetric(gbs(reg, 0.5), "register-GB/s")
					b.ReportMetric(gbs(dma, 0.5), "dma-GB/s")
					b.ReportMetric(gbs(unreg, 0.5), "unregister-GB/s")
					b.ReportMetric(gbs(whole, 0.5), "median-GB/s")
					b.ReportMetric(gbs(whole, 1), "slowest-GB/s")
				})
			}
		}
		must(0, dev.Free())(b)
	}
}

// mapHuge maps n bytes of fresh anonymous memory advised to be huge pages.
func mapHuge(b *testing.B, n int) []byte {
	b.Helper()
	m, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		b.Fatal("mmap:", err)
	}
	if err := syscall.Madvise(m, syscall.MADV_HUGEPAGE); err != nil {
		b.Log("madvise(MADV_HUGEPAGE):", err)
	}
	return m
}

// registerChunks registers host in workers chunks, one goroutine each.
func registerChunks(b *testing.B, ctx *cuda.Context, host []byte, workers int) []*cuda.Registered[byte] {
	b.Helper()
	rs := make([]*cuda.Registered[byte], workers)
	errs := make([]error, workers)
	part := (len(host) + workers - 1) / workers
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := min(w*part, len(host)), min((w+1)*part, len(host))
		wg.Go(func() { rs[w], errs[w] = cuda.Register(ctx, host[lo:hi]) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			closeChunks(b, slices.DeleteFunc(rs, func(r *cuda.Registered[byte]) bool { return r == nil }))
			b.Fatal(err)
		}
	}
	return rs
}

// closeChunks unregisters what registerChunks registered, in parallel.
func closeChunks(b *testing.B, rs []*cuda.Registered[byte]) {
	b.Helper()
	errs := make([]error, len(rs))
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Go(func() { errs[i] = r.Close() })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
}
