package cuda

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
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
				var j copyJob
				parallelCopy(dst, src, workers, workers%2 == 1, &j)
				if !bytes.Equal(dst, src) {
					t.Fatal("dst differs from src")
				}
				if l := j.left.Load(); l != 0 {
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
				var jobs [4]copyJob
				src, dst := make([][]byte, len(jobs)), make([][]byte, len(jobs))
				for i := range jobs {
					src[i], dst[i] = make([]byte, n), make([]byte, n)
					for j := range src[i] {
						src[i][j] = byte(rand.Uint32())
					}
					copyAsync(dst[i], src[i], workers, i%2 == 0, &jobs[i])
				}
				for i := range jobs {
					awaitCopies(&jobs[i])
					if !bytes.Equal(dst[i], src[i]) {
						t.Fatalf("copy %d: dst differs from src", i)
					}
					if l := jobs[i].left.Load(); l != 0 {
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
			var j copyJob
			for range 20 {
				clear(dst)
				parallelCopy(dst, src, maxCopyWorkers, true, &j)
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
			var j copyJob
			parallelCopy(dst, src, maxCopyWorkers, true, &j)
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

// boardEmpty fails t if a copy is still on the board with none under way.
func boardEmpty(t *testing.T) {
	t.Helper()
	for s := range copyPool.board {
		if j := copyPool.board[s].Load(); j != nil {
			t.Errorf("board slot %d still holds a copy (%d parts left)", s, j.left.Load())
		}
	}
}

// One job set up again and again, while the held workers claim from it
// through pointers they read from the board earlier: each copy gets its own
// bytes, and no copy writes a destination after awaitCopies returned for it
// (the memory is the caller's again then, as pinned memory is the DMA
// engine's).
func TestCopyJobReuse(t *testing.T) {
	if !holdCopyWorkers() {
		t.Skip("the copy workers are not held")
	}
	defer releaseCopyWorkers()
	const rounds = 2000
	n := 5*minCopyPart + 100
	var j copyJob
	done := make([][]byte, 0, rounds)
	for r := range rounds {
		src, dst := bytes.Repeat([]byte{byte(r + 1)}, n+r%7), make([]byte, n+r%7)
		if r%2 == 0 {
			copyAsync(dst, src, maxCopyWorkers, r%3 == 0, &j)
			awaitCopies(&j)
		} else {
			parallelCopy(dst, src, maxCopyWorkers, r%3 == 0, &j)
		}
		if !bytes.Equal(dst, src) {
			t.Fatalf("round %d: dst differs from src", r)
		}
		done = append(done, dst)
	}
	for r, dst := range done {
		for i, c := range dst {
			if c != byte(r+1) {
				t.Fatalf("round %d: byte %d changed to %#x after its copy was awaited", r, i, c)
			}
		}
	}
	boardEmpty(t)
}

// More copies at once than the board holds all complete, every byte: those
// that found it full are copied by whoever awaits them.
func TestCopyBoardFull(t *testing.T) {
	copyPool.once.Do(startCopyPool)
	if copyPool.n == 0 {
		t.Skip("GOMAXPROCS is 1: the pool has no workers")
	}
	if !holdCopyWorkers() {
		t.Skip("the copy workers are not held")
	}
	defer releaseCopyWorkers()
	// Parts that take milliseconds keep the copies on the board.
	defer SetCopyDelay(SetCopyDelay(2 * time.Millisecond))
	const copies = copyBoardSlots + 8
	jobs := make([]copyJob, copies)
	src, dst := make([][]byte, copies), make([][]byte, copies)
	for i := range jobs {
		src[i], dst[i] = bytes.Repeat([]byte{byte(i + 1)}, 3*minCopyPart), make([]byte, 3*minCopyPart)
	}
	onBoard := 0
	for i := range jobs {
		copyAsync(dst[i], src[i], 3, false, &jobs[i])
		if jobs[i].slot >= 0 {
			onBoard++
		}
	}
	if onBoard == copies {
		t.Errorf("all %d copies found room on a board of %d", copies, copyBoardSlots)
	}
	for i := range jobs {
		awaitCopies(&jobs[i])
		if !bytes.Equal(dst[i], src[i]) {
			t.Fatalf("copy %d (board slot %d): dst differs from src", i, jobs[i].slot)
		}
	}
	boardEmpty(t)
}
