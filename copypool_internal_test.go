package cuda

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestParallelCopy(t *testing.T) {
	for _, n := range []int{1, minCopyPart - 1, 2 * minCopyPart, 5*minCopyPart + 17, 64 * minCopyPart} {
		for _, workers := range []int{1, 3, maxCopyWorkers} {
			t.Run(fmt.Sprintf("%d/workers=%d", n, workers), func(t *testing.T) {
				src, dst := make([]byte, n), make([]byte, n)
				for i := range src {
					src[i] = byte(rand.Uint32())
				}
				var left atomic.Int32
				parallelCopy(dst, src, workers, workers%2 == 1, &left)
				if !bytes.Equal(dst, src) {
					t.Fatal("dst differs from src")
				}
				if l := left.Load(); l != 0 {
					t.Fatalf("%d parts left after the copy returned", l)
				}
			})
		}
	}
}

// Copies handed out together, in parts of every size around minCopyPart,
// are all done, every byte, once awaited, and no count is left over.
func TestCopyAsync(t *testing.T) {
	for _, n := range []int{1, minCopyPart - 1, minCopyPart, 3*minCopyPart + 5, 17 * minCopyPart} {
		for _, workers := range []int{1, 2, maxCopyWorkers} {
			t.Run(fmt.Sprintf("%d/workers=%d", n, workers), func(t *testing.T) {
				var left [4]atomic.Int32
				src, dst := make([][]byte, len(left)), make([][]byte, len(left))
				for i := range left {
					src[i], dst[i] = make([]byte, n), make([]byte, n)
					for j := range src[i] {
						src[i][j] = byte(rand.Uint32())
					}
					copyAsync(dst[i], src[i], workers, i%2 == 0, &left[i])
				}
				for i := range left {
					awaitCopies(&left[i])
					if !bytes.Equal(dst[i], src[i]) {
						t.Fatalf("copy %d: dst differs from src", i)
					}
					if l := left[i].Load(); l != 0 {
						t.Fatalf("copy %d: %d parts left after awaitCopies returned", i, l)
					}
				}
			})
		}
	}
}

// Transfers in several goroutines share the pool; each must get its own
// bytes, whoever copies them.
func TestParallelCopyConcurrent(t *testing.T) {
	const goroutines = 8
	n := 40 * minCopyPart
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			src, dst := bytes.Repeat([]byte{byte(g + 1)}, n), make([]byte, n)
			var left atomic.Int32
			for range 20 {
				clear(dst)
				parallelCopy(dst, src, maxCopyWorkers, true, &left)
				if !bytes.Equal(dst, src) {
					errs <- fmt.Errorf("goroutine %d: dst differs from src", g)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A hold keeps every worker from blocking until it is released; then they
// block again, and spin no more.
func TestHoldCopyWorkers(t *testing.T) {
	copyPool.once.Do(startCopyPool)
	if copyPool.n == 0 {
		t.Skip("GOMAXPROCS is 1: the pool has no workers")
	}
	eventually := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !cond(); {
			if time.Now().After(deadline) {
				t.Fatalf("%s: parked %d of %d workers, held %d", what, copyPool.parked.Load(), copyPool.n, copyPool.held.Load())
			}
			time.Sleep(time.Millisecond)
		}
	}
	parked := func() bool { return int(copyPool.parked.Load()) == copyPool.n }
	eventually("idle pool", parked)
	if !holdCopyWorkers() {
		t.Fatal("holdCopyWorkers did not hold")
	}
	eventually("held pool", func() bool { return copyPool.parked.Load() == 0 })
	time.Sleep(3 * copySpin)
	if p := copyPool.parked.Load(); p != 0 {
		t.Errorf("%d workers blocked while held", p)
	}
	releaseCopyWorkers()
	if h := copyPool.held.Load(); h != 0 {
		t.Errorf("held = %d after release", h)
	}
	eventually("released pool", parked)
}

// TestSmallCopyWakesNoWorker: a copy under wakeWorthBytes, with every worker
// parked, is made by the caller alone. (From wakeWorthBytes up the parts are
// handed out, but the caller may take them all before a worker wakes: no
// assertion there.)
func TestSmallCopyWakesNoWorker(t *testing.T) {
	copyPool.once.Do(startCopyPool)
	if copyPool.n == 0 {
		t.Skip("GOMAXPROCS is 1: the pool has no workers")
	}
	for _, n := range []int{2 * minCopyPart, 4 * minCopyPart, wakeWorthBytes - 1} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			for deadline := time.Now().Add(5 * time.Second); int(copyPool.parked.Load()) != copyPool.n; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("parked %d of %d workers", copyPool.parked.Load(), copyPool.n)
				}
			}
			src, dst := make([]byte, n), make([]byte, n)
			for i := range src {
				src[i] = byte(i*13 + 1)
			}
			var left atomic.Int32
			parallelCopy(dst, src, maxCopyWorkers, true, &left)
			if !bytes.Equal(dst, src) {
				t.Fatal("data differs")
			}
			// A woken worker spins for copySpin before it parks again.
			if p := int(copyPool.parked.Load()); p < copyPool.n {
				t.Errorf("a copy of %d bytes woke %d parked workers", n, copyPool.n-p)
			}
		})
	}
}

// TestPipeCopy checks the pipeline's copy at lengths and alignments around
// the edges of its streaming part (the aligned head, the 64-byte blocks,
// the tail), both ways it can run: every byte copied, none beside.
func TestPipeCopy(t *testing.T) {
	for _, streaming := range []bool{true, false} {
		for _, n := range []int{0, 1, 63, streamCopyMin - 1, streamCopyMin, streamCopyMin + 1, streamCopyMin + 79, 100_003, 1<<20 + 5} {
			for _, off := range []int{0, 1, 8, 15, 16, 33} {
				t.Run(fmt.Sprintf("streaming=%v/%d/offset=%d", streaming, n, off), func(t *testing.T) {
					src := make([]byte, n+64)
					for i := range src {
						src[i] = byte(rand.Uint32())
					}
					mem := bytes.Repeat([]byte{0xa5}, n+128)
					dst := mem[64+off:][:n]
					pipeCopy(dst, src[off%7:][:n], streaming)
					if !bytes.Equal(dst, src[off%7:][:n]) {
						t.Fatalf("the copy differs from its source")
					}
					for i, c := range mem {
						if (i < 64+off || i >= 64+off+n) && c != 0xa5 {
							t.Fatalf("byte %d beside the destination changed to %#x", i-64-off, c)
						}
					}
				})
			}
		}
	}
}
