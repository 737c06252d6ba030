package cuda

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// copyPool is a set of goroutines that copy host memory in parallel for the
// staging pipeline: one goroutine's copy runs at about 6 GB/s on the H200
// machine, far below the link's 55 GB/s. The goroutines live for the
// process, so that a transfer starts none and allocates nothing.
var copyPool struct {
	once  sync.Once
	tasks chan copyTask
	n     int
}

type copyTask struct {
	dst, src []byte
	left     *atomic.Int32
}

func startCopyPool() {
	copyPool.n = min(runtime.GOMAXPROCS(0), maxCopyWorkers)
	copyPool.tasks = make(chan copyTask, 4*copyPool.n)
	for range copyPool.n {
		go copyWorker()
	}
}

// copySpin is how long an idle worker keeps looking for work before it
// blocks. A pipeline hands out a chunk every few hundred microseconds;
// waking a blocked worker takes the scheduler tens of microseconds, and
// waking fifteen of them, one after another, costs the pipeline a good part
// of a chunk's time.
var copySpin = 200 * time.Microsecond

func copyWorker() {
	for {
		t, ok := nextTask()
		if !ok {
			t = <-copyPool.tasks
		}
		copy(t.dst, t.src)
		t.left.Add(-1)
	}
}

// nextTask waits up to copySpin for a task without blocking the thread,
// yielding the processor to other goroutines while it waits.
func nextTask() (copyTask, bool) {
	deadline := time.Now().Add(copySpin)
	for {
		select {
		case t := <-copyPool.tasks:
			return t, true
		default:
		}
		if time.Now().After(deadline) {
			return copyTask{}, false
		}
		runtime.Gosched()
	}
}

// maxCopyWorkers bounds the pool: past 16 goroutines the copies of one chunk
// stop getting faster on the H200 machine (DESIGN.md: 38 GB/s on 16).
const maxCopyWorkers = 16

// minCopyPart is the least a worker is given: below it, handing the work
// over costs more than it saves.
const minCopyPart = 128 << 10

// parallelCopy copies src into dst (of equal length) with up to workers
// goroutines of the pool, this one among them, and returns when all are
// done. left is the caller's, reused to keep the call free of allocations.
//
// The caller spins, briefly, instead of blocking until the others finish:
// it is usually locked to its OS thread (it holds a context current), and
// waking a locked goroutine that blocked costs tens of microseconds, which
// the pipeline pays once per chunk.
func parallelCopy(dst, src []byte, workers int, left *atomic.Int32) {
	copyPool.once.Do(startCopyPool)
	parts := min(workers, copyPool.n, len(src)/minCopyPart)
	if parts <= 1 {
		copy(dst, src)
		return
	}
	size := (len(src) + parts - 1) / parts
	size = (size + 63) &^ 63 // whole cache lines
	left.Store(int32(parts - 1))
	for i := range parts - 1 {
		lo, hi := min(i*size, len(src)), min((i+1)*size, len(src))
		copyPool.tasks <- copyTask{dst: dst[lo:hi], src: src[lo:hi], left: left}
	}
	lo := min((parts-1)*size, len(src))
	copy(dst[lo:], src[lo:]) // the last part on this goroutine
	for spins := 0; left.Load() > 0; spins++ {
		if spins > 1000 {
			runtime.Gosched() // the others may need this thread's P
		}
	}
}
