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
// process, so that a transfer starts none and allocates nothing. There is
// one fewer than the processors the pool may use: the goroutine handing the
// work out copies too.
var copyPool struct {
	once   sync.Once
	tasks  chan copyTask
	n      int
	held   atomic.Int32 // transfers under way that keep the workers spinning
	parked atomic.Int32 // workers blocked waiting for a task
}

type copyTask struct {
	dst, src  []byte
	left      *atomic.Int32
	streaming bool // with streaming stores (see streams)
}

// copyDelay, in nanoseconds, slows every part down: tests that must see
// a copy still running set it.
var copyDelay atomic.Int64

func (t copyTask) run() {
	if d := copyDelay.Load(); d > 0 {
		time.Sleep(time.Duration(d))
	}
	pipeCopy(t.dst, t.src, t.streaming)
	if t.left != nil { // nil: a wake-up call (holdCopyWorkers)
		t.left.Add(-1)
	}
}

// copyHold says whether a pipelined transfer keeps the workers spinning
// from its start to its end.
var copyHold = true

// holdCopyWorkers keeps the copy workers looking for work, instead of
// blocking, until releaseCopyWorkers, and wakes those blocked; it reports
// whether it did (copyHold), so whether to release. A pipelined transfer
// hands the workers a chunk every few hundred microseconds, and the
// scheduler wakes blocked goroutines one after another, tens of
// microseconds apart: an execution trace of a 16 MiB download on the H200
// machine showed a chunk's copy waiting on the wake-ups more than on the
// copying. Hold them only while chunks flow: they spin on every processor.
func holdCopyWorkers() bool {
	copyPool.once.Do(startCopyPool)
	if !copyHold {
		return false
	}
	copyPool.held.Add(1)
	for range copyPool.parked.Load() {
		select {
		case copyPool.tasks <- copyTask{}:
		default: // the queue is full: the workers are busy anyway
			return true
		}
	}
	return true
}

func releaseCopyWorkers() { copyPool.held.Add(-1) }

func startCopyPool() {
	copyPool.n = min(runtime.GOMAXPROCS(0), maxCopyWorkers) - 1
	// Room for every part of every chunk a pipeline has in flight, so
	// that handing out work never blocks (copyAsync).
	copyPool.tasks = make(chan copyTask, maxPipeSlots*maxCopyWorkers)
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
			copyPool.parked.Add(1)
			t = <-copyPool.tasks
			copyPool.parked.Add(-1)
		}
		t.run()
	}
}

// nextTask waits for a task without blocking the thread, while a transfer
// holds the workers and for copySpin after, yielding the processor to other
// goroutines at each turn. (Yielding every 64 turns instead, which takes the
// scheduler's lock less often, measured the same on the H200 machine:
// BenchmarkCopyPool.)
func nextTask() (copyTask, bool) {
	deadline := time.Now().Add(copySpin)
	for {
		select {
		case t := <-copyPool.tasks:
			return t, true
		default:
		}
		if copyPool.held.Load() > 0 {
			deadline = time.Now().Add(copySpin)
		} else if time.Now().After(deadline) {
			return copyTask{}, false
		}
		runtime.Gosched()
	}
}

// maxCopyWorkers bounds the goroutines copying one chunk, the caller's
// among them: past 16 the copies stop getting faster on the H200 machine
// (BenchmarkParallelCopy: 38 GB/s on 16).
const maxCopyWorkers = 16

// minCopyPart is the least a worker is given: below it, handing the work
// over costs more than it saves. (BenchmarkPipelineSplit on the H200
// machine: parts of 64 KiB beat 128 KiB and 256 KiB at 256 KiB-2 MiB, by up
// to 1.5x, and tied from 4 MiB.)
var minCopyPart = 64 << 10

// wakeWorthBytes is the size below which a copy uses only the workers still
// spinning: waking a parked one takes the scheduler tens of microseconds,
// as long as copying a few hundred KiB takes. (gocuda calibrate on the H200
// machine: staging 256 KiB, split in two, ran at 2.4 GB/s against 4.1 for
// 128 KiB copied whole, both ways.)
const wakeWorthBytes = 1 << 20

// parallelCopy copies src into dst (of equal length) with up to workers
// goroutines, this one among them, with streaming stores or not, and
// returns when all are done. left is the caller's, reused to keep the call
// free of allocations.
func parallelCopy(dst, src []byte, workers int, streaming bool, left *atomic.Int32) {
	copyPool.once.Do(startCopyPool)
	parts := min(workers, copyPool.n+1, len(src)/minCopyPart)
	if len(src) < wakeWorthBytes {
		parts = min(parts, copyPool.n-int(copyPool.parked.Load())+1)
	}
	if parts <= 1 {
		pipeCopy(dst, src, streaming)
		return
	}
	size := partSize(len(src), parts)
	lo := min((parts-1)*size, len(src))
	handOut(dst[:lo], src[:lo], size, streaming, left)
	pipeCopy(dst[lo:], src[lo:], streaming)
	awaitCopies(left)
}

// copyAsync hands the copy of src into dst (of equal length) to up to
// workers goroutines of the pool, counting its parts in left, and returns
// at once; awaitCopies waits for them. With no workers to give it to, it
// copies here.
func copyAsync(dst, src []byte, workers int, streaming bool, left *atomic.Int32) {
	copyPool.once.Do(startCopyPool)
	parts := max(min(workers, copyPool.n, len(src)/minCopyPart), 1)
	if copyPool.n == 0 {
		pipeCopy(dst, src, streaming)
		return
	}
	handOut(dst, src, partSize(len(src), parts), streaming, left)
}

// partSize is the size of each of parts parts of n bytes: whole cache
// lines, the last part taking what is left.
func partSize(n, parts int) int {
	size := (n + parts - 1) / parts
	return (size + 63) &^ 63
}

// handOut queues the copy of src into dst in parts of size bytes, adding
// them to left. A part the queue has no room for is copied here.
func handOut(dst, src []byte, size int, streaming bool, left *atomic.Int32) {
	for lo := 0; lo < len(src); lo += size {
		hi := min(lo+size, len(src))
		t := copyTask{dst: dst[lo:hi], src: src[lo:hi], left: left, streaming: streaming}
		left.Add(1)
		select {
		case copyPool.tasks <- t:
		default:
			t.run()
		}
	}
}

// awaitCopies returns once the parts counted in left are copied.
//
// The caller does not block until the others finish: it is usually locked
// to its OS thread (it holds a context current), and a locked goroutine
// that blocks or yields hands its thread's processor away and waits tens of
// microseconds to get one back, which the pipeline would pay once per
// chunk. It takes queued parts itself instead, and spins.
func awaitCopies(left *atomic.Int32) {
	var deadline time.Time
	for i := 1; left.Load() > 0; i++ {
		// A part no worker has taken yet, ours or another transfer's, is
		// better copied here than waited for.
		if runQueued() {
			continue
		}
		if i%1024 == 0 {
			// Past a millisecond a worker holding a part may be waiting
			// for a processor: give this one up now and then.
			if deadline.IsZero() {
				deadline = time.Now().Add(time.Millisecond)
			} else if time.Now().After(deadline) {
				runtime.Gosched()
			}
		}
	}
}

// runQueued copies one queued part here, if there is one, and reports
// whether it did.
func runQueued() bool {
	select {
	case t := <-copyPool.tasks:
		t.run()
		return true
	default:
		return false
	}
}
