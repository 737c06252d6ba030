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
//
// Each worker has its own queue, and takes from the others' when its own is
// empty: with one queue for all, fifteen workers spinning on it fought over
// its lock whenever parts arrived, and a part of 16 KiB, copied in 3 us,
// cost a worker about 20 us more on the H200 machine (BenchmarkPipelineGrain).
var copyPool struct {
	once    sync.Once
	workers []copyWorker
	n       int
	next    atomic.Uint32 // where handOut starts looking for a worker
	held    atomic.Int32  // transfers under way that keep the workers spinning
	parked  atomic.Int32  // workers blocked waiting for a task
	wakes   atomic.Int64  // wake-up calls sent to blocked workers
}

// copyWorker is one worker's queue and whether it is blocked on it.
type copyWorker struct {
	tasks  chan copyTask
	parked atomic.Bool
}

type copyTask struct {
	dst, src  []byte
	left      *atomic.Int32
	streaming bool // with streaming stores (see streams)
}

// copyDelay, in nanoseconds, slows every part down: tests that must see
// a copy still running set it.
var copyDelay atomic.Int64

// partTrace, set by a benchmark with no copy under way, is told when each
// part's copy started and ended, and by whom: worker by, or -1 for the
// goroutine that handed it out.
var partTrace func(by int, start, end time.Time)

// run copies t's part; by is as partTrace's.
func (t copyTask) run(by int) {
	if d := copyDelay.Load(); d > 0 {
		time.Sleep(time.Duration(d))
	}
	if partTrace != nil && t.left != nil {
		start := time.Now()
		pipeCopy(t.dst, t.src, t.streaming)
		partTrace(by, start, time.Now())
	} else {
		pipeCopy(t.dst, t.src, t.streaming)
	}
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
	wakeCopyWorkers()
	return true
}

// wakeCopyWorkers wakes the blocked copy workers; they look for work for
// copySpin before they block again.
func wakeCopyWorkers() {
	for i := range copyPool.workers {
		if w := &copyPool.workers[i]; w.parked.Load() {
			select {
			case w.tasks <- copyTask{}:
				copyPool.wakes.Add(1)
			default: // its queue is full: it is busy anyway
			}
		}
	}
}

// copyWorkersAwake reports whether any copy worker is looking for work, not
// blocked; if none is, it wakes them, so that a transfer made soon after
// finds them awake (StagingPipeline.WarmBelowBytes). One awake is enough: the
// pipelined transfer that follows wakes the rest and keeps them spinning.
// (Asking for most of them awake sent whole loops of 196 KiB downloads to
// the driver on one H200 machine: the woken workers came up one by one,
// each spinning 200 us before it blocked again, never half of them at once.)
func copyWorkersAwake() bool {
	copyPool.once.Do(startCopyPool)
	if int(copyPool.parked.Load()) < copyPool.n {
		return true
	}
	wakeCopyWorkers()
	return false
}

func releaseCopyWorkers() { copyPool.held.Add(-1) }

func startCopyPool() {
	copyPool.n = min(runtime.GOMAXPROCS(0), maxCopyWorkers) - 1
	copyPool.workers = make([]copyWorker, copyPool.n)
	for i := range copyPool.workers {
		// Room for a part of every chunk a pipeline has in flight, and a
		// wake-up call, so that handing out work seldom finds it full.
		copyPool.workers[i].tasks = make(chan copyTask, 4*maxPipeSlots)
		go copyPool.workers[i].run(i)
	}
}

// copySpin is how long an idle worker keeps looking for work before it
// blocks. A pipeline hands out a chunk every few hundred microseconds;
// waking a blocked worker takes the scheduler tens of microseconds, and
// waking fifteen of them, one after another, costs the pipeline a good part
// of a chunk's time.
var copySpin = 200 * time.Microsecond

func (w *copyWorker) run(i int) {
	for {
		t, ok := nextTask(i)
		if !ok {
			w.parked.Store(true)
			copyPool.parked.Add(1)
			t = <-w.tasks
			copyPool.parked.Add(-1)
			w.parked.Store(false)
		}
		t.run(i)
	}
}

// nextTask waits for a task for worker i, its own or else another's,
// without blocking the thread, while a transfer holds the workers and for
// copySpin after. It yields the processor to other goroutines every few
// turns: a worker that yields only every 20 us instead kept the goroutine
// that hands out the work (back from a driver call, wanting a processor)
// waiting, and transfers of 128 KiB-16 MiB ran at half the speed on the H200
// machine (BenchmarkPipelineGrain).
func nextTask(i int) (copyTask, bool) {
	deadline := time.Now().Add(copySpin)
	for turn := 1; ; turn++ {
		if t, ok := takeTask(i); ok {
			return t, true
		}
		if turn%32 != 0 {
			continue
		}
		if copyPool.held.Load() > 0 {
			deadline = time.Now().Add(copySpin)
		} else if time.Now().After(deadline) {
			return copyTask{}, false
		}
		runtime.Gosched()
	}
}

// takeTask takes a queued task, looking at worker i's queue first and then
// at the others', and reports whether there was one. Only a queue that
// holds something is locked.
func takeTask(i int) (copyTask, bool) {
	ws := copyPool.workers
	for k := range ws {
		w := &ws[(i+k)%len(ws)]
		if len(w.tasks) == 0 {
			continue
		}
		select {
		case t := <-w.tasks:
			return t, true
		default:
		}
	}
	return copyTask{}, false
}

// maxCopyWorkers bounds the goroutines copying one chunk, the caller's
// among them: past 16 the copies stop getting faster on the H200 machine
// (BenchmarkParallelCopy: 38 GB/s on 16).
const maxCopyWorkers = 16

// minCopyPart is the least a worker is given: below it, handing the work
// over costs more than it saves. (BenchmarkPipelineGrain on the H200
// machine, each worker with a queue of its own: parts of 32 KiB beat 64 KiB
// by up to 1.1x at 128 KiB-2 MiB, and tied from 4 MiB; parts of 16 KiB
// were slower at 256 KiB-1 MiB downloading.)
var minCopyPart = 32 << 10

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
// them to left, each part to the next worker not blocked (or, where every
// such queue is full, to one blocked, which wakes it). A part no queue has
// room for is copied here.
func handOut(dst, src []byte, size int, streaming bool, left *atomic.Int32) {
	for lo := 0; lo < len(src); lo += size {
		hi := min(lo+size, len(src))
		t := copyTask{dst: dst[lo:hi], src: src[lo:hi], left: left, streaming: streaming}
		left.Add(1)
		if !queueTask(t) {
			t.run(-1)
		}
	}
}

// copyOneQueue, set by a benchmark, queues every part on one queue.
var copyOneQueue bool

// queueTask queues t, preferring a worker that is not blocked, and reports
// whether a queue had room.
func queueTask(t copyTask) bool {
	ws := copyPool.workers
	if copyOneQueue {
		select {
		case ws[0].tasks <- t:
			return true
		default:
			return false
		}
	}
	start := int(copyPool.next.Add(1))
	for _, blocked := range []bool{false, true} {
		for k := range ws {
			w := &ws[(start+k)%len(ws)]
			if w.parked.Load() != blocked || len(w.tasks) == cap(w.tasks) {
				continue
			}
			select {
			case w.tasks <- t:
				return true
			default:
			}
		}
	}
	return false
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
	if len(copyPool.workers) == 0 {
		return false
	}
	t, ok := takeTask(int(copyPool.next.Load()) % len(copyPool.workers))
	if ok {
		t.run(-1)
	}
	return ok
}
