//go:build gocuda_research

package hostcopy_test

// The research benchmarks of the copy engine: the measurements behind its
// constants (MaxWorkers, minPart), which docs/performance.md quotes and
// scripts/gpu-perf.sh runs (its test binaries are built with this tag,
// scripts/gpu-build.sh). They copy to and from pinned memory, which
// package cuda allocates. Run them with -tags gocuda_research.

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/internal/hostcopy"
)

// TestMain picks the driver (a GPU's, or the fake's) for the pinned memory.
func TestMain(m *testing.M) { cudatest.Main(m) }

// arenaBytes is the least host memory a benchmark walks through, a copy's
// worth at a time, so that no cache holds what a copy reads (as package
// cuda's benchmarks do).
const arenaBytes = 256 << 20

// randomBytes returns n random bytes.
func randomBytes(n int) []byte {
	b := make([]byte, n)
	var seed [32]byte
	for i := range seed {
		seed[i] = byte(rand.Uint32())
	}
	rand.NewChaCha8(seed).Read(b)
	return b
}

// sizeName names a size in sub-benchmarks as package cuda's benchmarks do.
func sizeName(n int) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1fMiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// BenchmarkParallelCopy times the pipeline's host copy alone, between a
// pinned slot and ordinary memory the caches do not hold, by chunk size,
// goroutines and stores (streaming or not).
func BenchmarkParallelCopy(b *testing.B) {
	ctx := cudatest.Context(b)
	const slots = 3
	pin := cudatest.Must(cuda.AllocPinned[byte](ctx, slots*(16<<20)))(b)
	defer pin.Free()
	host := randomBytes(1 << 30)
	for _, dir := range []string{"down", "up"} {
		for _, n := range []int{1 << 20, 4 << 20, 16 << 20} {
			for _, workers := range []int{1, 2, 4, 8, 16} {
				for _, streaming := range []bool{false, true} {
					b.Run(fmt.Sprintf("%s/%s/workers=%d/streaming=%v", dir, sizeName(n), workers, streaming), func(b *testing.B) {
						b.SetBytes(int64(n))
						var j hostcopy.Job
						i := 0
						for b.Loop() {
							p := pin.Data()[i%slots*(16<<20):][:n]
							h := host[i%(len(host)/n)*n:][:n]
							if dir == "down" {
								j.Copy(h, p, workers, streaming)
							} else {
								j.Copy(p, h, workers, streaming)
							}
							i++
						}
					})
				}
			}
		}
	}
}

// BenchmarkCopyParts times the copy of one chunk of a small transfer
// between ordinary memory the caches do not hold and pinned memory, as the
// pipeline makes it (the copy workers held spinning, the parts handed out,
// the caller copying what is still queued), by size, least part and
// workers, with each part's start and end timed: what a part costs beyond
// its copy. Beside it, one goroutine's copy of the whole with the workers
// blocked and spinning, and, at 256 KiB, the same from memory the caches
// hold.
func BenchmarkCopyParts(b *testing.B) {
	ctx := cudatest.Context(b)
	const slot, slots = 1 << 20, 8
	pin := cudatest.Must(cuda.AllocPinned[byte](ctx, slots*slot))(b)
	defer pin.Free()
	host := randomBytes(arenaBytes)
	for _, dir := range []string{"up", "down"} {
		for _, n := range []int{64 << 10, 150 << 10, 196 << 10, 256 << 10, 512 << 10, 1 << 20} {
			pair := func(i int, hot bool) (dst, src []byte) {
				h := host[i%(len(host)/n)*n:][:n]
				if hot {
					h = host[:n]
				}
				if dir == "up" {
					return pin.Data()[:n], h // an upload of one chunk fills slot 0
				}
				return h, pin.Data()[i%slots*slot:][:n] // downloads rotate
			}
			// Every size here is below both of the pipeline's streamBelow
			// (package cuda): it copies such chunks with streaming stores.
			const streaming = true
			for _, spin := range []bool{false, true} {
				b.Run(fmt.Sprintf("%s/%s/alone/spinning=%v", dir, sizeName(n), spin), func(b *testing.B) {
					if spin && hostcopy.Hold() {
						defer hostcopy.Release()
					}
					b.SetBytes(int64(n))
					i := 0
					for b.Loop() {
						dst, src := pair(i, false)
						hostcopy.PipeCopy(dst, src, streaming)
						i++
					}
				})
			}
			for _, part := range []int{16 << 10, 32 << 10, 64 << 10} {
				seen := map[int]bool{}
				for _, workers := range []int{1, 2, 4, 8, 16} {
					parts := min(workers, n/part)
					if parts == 0 || seen[parts] {
						continue // the same copy as a sub-benchmark before
					}
					seen[parts] = true
					for _, hot := range []bool{false, true} {
						if hot && n != 256<<10 {
							continue
						}
						name := fmt.Sprintf("%s/%s/part=%s/workers=%d", dir, sizeName(n), sizeName(part), workers)
						if hot {
							name += "/hot"
						}
						b.Run(name, func(b *testing.B) {
							defer hostcopy.SetMinPart(hostcopy.SetMinPart(part))
							if hostcopy.Hold() {
								defer hostcopy.Release()
							}
							benchCopyChunk(b, n, workers, streaming, func(i int) ([]byte, []byte) { return pair(i, hot) })
						})
					}
				}
			}
		}
	}
}

// benchCopyChunk times the copy of the pairs pair gives as the pipeline
// copies a chunk (Start, then Await), reporting per chunk when its first
// and last parts started (after the call), how long a part took, and how
// many parts the caller copied itself.
func benchCopyChunk(b *testing.B, n, workers int, streaming bool, pair func(i int) (dst, src []byte)) {
	b.Helper()
	var t0 time.Time
	var first, last, took time.Duration
	var parts, byCaller, ops int
	var opFirst, opLast time.Duration
	var mu sync.Mutex // parts end in several goroutines at once
	hostcopy.TraceParts(func(by int, start, end time.Time) {
		mu.Lock()
		defer mu.Unlock()
		since := start.Sub(t0)
		if opFirst < 0 || since < opFirst {
			opFirst = since
		}
		opLast = max(opLast, since)
		took += end.Sub(start)
		parts++
		if by < 0 {
			byCaller++
		}
	})
	defer hostcopy.TraceParts(nil)
	b.SetBytes(int64(n))
	var j hostcopy.Job
	i := 0
	for b.Loop() {
		dst, src := pair(i)
		opFirst, opLast = -1, 0
		t0 = time.Now()
		j.Start(dst, src, workers, streaming)
		j.Await()
		mu.Lock()
		first += opFirst
		last += opLast
		mu.Unlock()
		ops++
		i++
	}
	if ops == 0 || parts == 0 {
		return
	}
	b.ReportMetric(float64(first.Nanoseconds())/float64(ops)/1e3, "first-start-us")
	b.ReportMetric(float64(last.Nanoseconds())/float64(ops)/1e3, "last-start-us")
	b.ReportMetric(float64(took.Nanoseconds())/float64(parts)/1e3, "part-us")
	b.ReportMetric(float64(parts)/float64(ops), "parts")
	b.ReportMetric(float64(byCaller)/float64(ops), "caller-parts")
}
