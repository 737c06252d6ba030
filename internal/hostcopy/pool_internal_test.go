package hostcopy

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"
)

func TestCopy(t *testing.T) {
	for _, n := range []int{1, minPart - 1, 2 * minPart, 5*minPart + 17, 64 * minPart} {
		for _, workers := range []int{1, 3, MaxWorkers} {
			t.Run(fmt.Sprintf("%d/workers=%d", n, workers), func(t *testing.T) {
				src, dst := make([]byte, n), make([]byte, n)
				for i := range src {
					src[i] = byte(rand.Uint32())
				}
				var j Job
				j.Copy(dst, src, workers, workers%2 == 1)
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

// Copies handed out together, in parts of every size around minPart,
// are all done, every byte, once awaited, and no count is left over.
func TestStart(t *testing.T) {
	for _, n := range []int{1, minPart - 1, minPart, 3*minPart + 5, 17 * minPart} {
		for _, workers := range []int{1, 2, MaxWorkers} {
			t.Run(fmt.Sprintf("%d/workers=%d", n, workers), func(t *testing.T) {
				var jobs [4]Job
				src, dst := make([][]byte, len(jobs)), make([][]byte, len(jobs))
				for i := range jobs {
					src[i], dst[i] = make([]byte, n), make([]byte, n)
					for j := range src[i] {
						src[i][j] = byte(rand.Uint32())
					}
					jobs[i].Start(dst[i], src[i], workers, i%2 == 0)
				}
				for i := range jobs {
					jobs[i].Await()
					if !bytes.Equal(dst[i], src[i]) {
						t.Fatalf("copy %d: dst differs from src", i)
					}
					if l := jobs[i].left.Load(); l != 0 {
						t.Fatalf("copy %d: %d parts left after Await returned", i, l)
					}
				}
			})
		}
	}
}

// Transfers in several goroutines share the pool; each must get its own
// bytes, whoever copies them.
func TestCopyConcurrent(t *testing.T) {
	const goroutines = 8
	n := 40 * minPart
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			src, dst := bytes.Repeat([]byte{byte(g + 1)}, n), make([]byte, n)
			var j Job
			for range 20 {
				clear(dst)
				j.Copy(dst, src, MaxWorkers, true)
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
// block again, and spin no more: parked on channels, and in the kernel
// (futexParking, Linux; last, since workers parked there stay woken there
// too).
func TestHold(t *testing.T) {
	pool.once.Do(start)
	if pool.n == 0 {
		t.Skip("GOMAXPROCS is 1: the pool has no workers")
	}
	for _, futex := range []bool{false, true} {
		t.Run(fmt.Sprintf("futex=%v", futex), func(t *testing.T) {
			if futex {
				if runtime.GOOS != "linux" {
					t.Skip("futex parking is Linux's")
				}
				pool.futexUsed.Store(true)
				futexParking.Store(true)
				defer futexParking.Store(false)
			}
			eventually := func(what string, cond func() bool) {
				t.Helper()
				for deadline := time.Now().Add(5 * time.Second); !cond(); {
					if time.Now().After(deadline) {
						t.Fatalf("%s: parked %d of %d workers, held %d", what, pool.parked.Load(), pool.n, pool.held.Load())
					}
					time.Sleep(time.Millisecond)
				}
			}
			parked := func() bool { return int(pool.parked.Load()) == pool.n }
			eventually("idle pool", parked)
			if futex {
				// The workers parked on channels before: around once more,
				// so that they park in the kernel.
				Hold()
				eventually("held pool", func() bool { return pool.parked.Load() == 0 })
				Release()
				eventually("idle pool", parked)
			}
			if !Hold() {
				t.Fatal("Hold did not hold")
			}
			eventually("held pool", func() bool { return pool.parked.Load() == 0 })
			time.Sleep(3 * spin)
			if p := pool.parked.Load(); p != 0 {
				t.Errorf("%d workers blocked while held", p)
			}
			Release()
			if h := pool.held.Load(); h != 0 {
				t.Errorf("held = %d after release", h)
			}
			eventually("released pool", parked)
			// A copy put on the board with every worker parked wakes
			// them, and is done.
			src, dst := make([]byte, 64*minPart), make([]byte, 64*minPart)
			for i := range src {
				src[i] = byte(i)
			}
			var j Job
			j.Start(dst, src, MaxWorkers, false)
			j.Await()
			if !bytes.Equal(dst, src) {
				t.Fatal("dst differs from src")
			}
		})
	}
}

// TestSmallCopyWakesNoWorker: a copy under WakeWorthBytes, with every worker
// parked, is made by the caller alone. (From WakeWorthBytes up the parts are
// handed out, but the caller may take them all before a worker wakes: no
// assertion there.)
func TestSmallCopyWakesNoWorker(t *testing.T) {
	pool.once.Do(start)
	if pool.n == 0 {
		t.Skip("GOMAXPROCS is 1: the pool has no workers")
	}
	for _, n := range []int{2 * minPart, 4 * minPart, WakeWorthBytes - 1} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			for deadline := time.Now().Add(5 * time.Second); int(pool.parked.Load()) != pool.n; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("parked %d of %d workers", pool.parked.Load(), pool.n)
				}
			}
			src, dst := make([]byte, n), make([]byte, n)
			for i := range src {
				src[i] = byte(i*13 + 1)
			}
			// Counted as wake-up calls sent, not as workers up: a worker
			// parked in the kernel (TestHold's futex rows leave them
			// there) may return from its wait on a signal, and one
			// parked on a channel may find a token left from a wake-up
			// that raced its last look for work. Neither is this copy's.
			wakes := pool.wakes.Load()
			var j Job
			j.Copy(dst, src, MaxWorkers, true)
			if !bytes.Equal(dst, src) {
				t.Fatal("data differs")
			}
			if w := pool.wakes.Load() - wakes; w != 0 {
				t.Errorf("a copy of %d bytes sent %d wake-up calls to parked workers", n, w)
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
	for s := range pool.board {
		if j := pool.board[s].Load(); j != nil {
			t.Errorf("board slot %d still holds a copy (%d parts left)", s, j.left.Load())
		}
	}
}

// One job set up again and again, while the held workers claim from it
// through pointers they read from the board earlier: each copy gets its own
// bytes, and no copy writes a destination after Await returned for it
// (the memory is the caller's again then, as pinned memory is the DMA
// engine's).
func TestCopyJobReuse(t *testing.T) {
	if !Hold() {
		t.Skip("the copy workers are not held")
	}
	defer Release()
	const rounds = 2000
	n := 5*minPart + 100
	var j Job
	done := make([][]byte, 0, rounds)
	for r := range rounds {
		src, dst := bytes.Repeat([]byte{byte(r + 1)}, n+r%7), make([]byte, n+r%7)
		if r%2 == 0 {
			j.Start(dst, src, MaxWorkers, r%3 == 0)
			j.Await()
		} else {
			j.Copy(dst, src, MaxWorkers, r%3 == 0)
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
	pool.once.Do(start)
	if pool.n == 0 {
		t.Skip("GOMAXPROCS is 1: the pool has no workers")
	}
	if !Hold() {
		t.Skip("the copy workers are not held")
	}
	defer Release()
	// Parts that take milliseconds keep the copies on the board.
	defer SetDelay(SetDelay(2 * time.Millisecond))
	const copies = BoardSlots + 8
	jobs := make([]Job, copies)
	src, dst := make([][]byte, copies), make([][]byte, copies)
	for i := range jobs {
		src[i], dst[i] = bytes.Repeat([]byte{byte(i + 1)}, 3*minPart), make([]byte, 3*minPart)
	}
	onBoard := 0
	for i := range jobs {
		jobs[i].Start(dst[i], src[i], 3, false)
		if jobs[i].slot >= 0 {
			onBoard++
		}
	}
	if onBoard == copies {
		t.Errorf("all %d copies found room on a board of %d", copies, BoardSlots)
	}
	for i := range jobs {
		jobs[i].Await()
		if !bytes.Equal(dst[i], src[i]) {
			t.Fatalf("copy %d (board slot %d): dst differs from src", i, jobs[i].slot)
		}
	}
	boardEmpty(t)
}
