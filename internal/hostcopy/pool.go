// Package hostcopy copies host memory ([]byte into []byte) on a pool of
// goroutines, for the staging pipeline of package cuda: one goroutine
// copies far slower than the link moves data (docs/performance.md). It
// knows nothing of the driver; the pipeline chooses what to copy, in how
// many parts, and with which stores (streaming or not).
package hostcopy

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// pool is a set of goroutines that copy host memory in parallel. The
// goroutines live for the process, so that a transfer starts none and
// allocates nothing. There is one fewer than the processors the pool may
// use: the goroutine handing the work out copies too.
//
// A copy is a Job, put on the board whole; the workers, and the
// goroutine that put it there, claim its parts one at a time with an atomic
// add. Handing each part to a worker's queue instead (a channel each, the
// workers taking from one another's when their own was empty) started the
// parts one after another, as the spinning workers polled every queue, and
// took twice as long a chunk ("Tried and not kept" in docs/performance.md).
var pool struct {
	once      sync.Once
	workers   []worker
	n         int
	board     [BoardSlots]atomic.Pointer[Job] // copies with parts to claim
	next      atomic.Uint32                   // the slot post last offered a copy (boardStart)
	held      atomic.Int32                    // transfers under way that keep the workers spinning
	parked    atomic.Int32                    // workers blocked waiting for work
	wakes     atomic.Int64                    // wake-up calls sent to blocked workers
	parkSeq   atomic.Uint32                   // bumped by each wake, for workers parked in the kernel (futexParking)
	futexUsed atomic.Bool                     // a worker has parked in the kernel: wake there too
}

// BoardSlots is how many copies the board holds at once. It must cover the
// copies of the pipelines running at once: a pipeline has up to 16 chunks
// copying (package cuda's maxPipeSlots, whose test checks this bound), and
// several may run at once. A copy that finds the board full is made by the
// goroutine that asked for it.
const BoardSlots = 64

// worker is a worker's wake-up call and whether it is blocked on it.
type worker struct {
	wake   chan struct{}
	parked atomic.Bool
}

// Job is one copy of src into dst, cut into parts of size bytes (whole
// cache lines, the last taking what is left), or the population of dst's
// pages where src is nil (Populate, populate.go). Its owner (a StagingBuffer,
// one a chunk in flight) sets it up again for each copy once Await
// returned. Goroutines that read it from the board may still hold it then
// and claim from it: state keeps the parts and the next part to claim in
// one word, so that such a claim gets a part of the copy set up since, with
// its fields written before state, or none; never a part of the old one.
// Its zero value is ready to use; a Job must not be copied.
type Job struct {
	dst, src  []byte
	size      int
	streaming bool          // with streaming stores (pipeCopy)
	slot      int           // its place on the board, or -1
	state     atomic.Uint64 // parts << 32 | parts claimed (and failed claims)
	left      atomic.Int32  // parts not yet copied
}

// delay, in nanoseconds, slows every part down: tests that must see a copy
// still running set it (SetDelay).
var delay atomic.Int64

// partTrace, set by a benchmark with no copy under way, is told when each
// part's copy started and ended, and by whom: worker by, or -1 for the
// goroutine that asked for the copy or another transfer's.
var partTrace func(by int, start, end time.Time)

// post sets j up for the copy of src into dst (of equal length, not
// empty) in up to parts parts, or for the population of dst's pages in
// parts of j.size where src is nil (Populate), and puts it on the board. Call it only once
// j's last copy was awaited.
func (j *Job) post(dst, src []byte, parts int, streaming bool) {
	j.dst, j.src, j.streaming = dst, src, streaming
	if src != nil {
		j.size = partSize(len(src), parts)
		parts = (len(src) + j.size - 1) / j.size
	}
	j.left.Store(int32(parts))
	// On the board before its parts can be claimed: whoever finds it
	// there first claims nothing until state is stored, and the claim of
	// its last part reads slot. Each copy is offered the slot after the
	// last one's (boardStart).
	j.slot = -1
	from := int(pool.next.Add(1))
	for k := range pool.board {
		s := (from + k) % len(pool.board)
		if pool.board[s].CompareAndSwap(nil, j) {
			j.slot = s
			break
		}
	}
	j.state.Store(uint64(parts) << 32)
	if j.slot >= 0 && int(pool.parked.Load()) == pool.n {
		wake(parts)
	}
}

// claim claims the next part of j's copy, if one is left, and takes j off
// the board with the last.
func (j *Job) claim() (part int, ok bool) {
	v := j.state.Add(1)
	parts, part := int(v>>32), int(uint32(v))-1
	if part >= parts {
		return 0, false
	}
	if part == parts-1 && j.slot >= 0 {
		pool.board[j.slot].CompareAndSwap(j, nil)
	}
	return part, true
}

// run copies j's part (claimed); by is as partTrace's.
func (j *Job) run(part, by int) {
	if d := delay.Load(); d > 0 {
		time.Sleep(time.Duration(d))
	}
	var start time.Time
	if partTrace != nil {
		start = time.Now()
	}
	if j.src == nil {
		j.populatePart(part)
	} else {
		lo := part * j.size
		hi := min(lo+j.size, len(j.src))
		pipeCopy(j.dst[lo:hi], j.src[lo:hi], j.streaming)
	}
	if partTrace != nil {
		partTrace(by, start, time.Now())
	}
	j.left.Add(-1)
}

// runOne copies one part of j here, if one is left to claim, and reports
// whether it did.
func (j *Job) runOne() bool {
	part, ok := j.claim()
	if ok {
		j.run(part, -1)
	}
	return ok
}

// CopyUnclaimed copies here the parts of j no one has claimed yet, and
// returns without waiting for those others copy.
func (j *Job) CopyUnclaimed() {
	for j.left.Load() > 0 && j.runOne() {
	}
}

// hold says whether a pipelined transfer keeps the workers spinning from
// its start to its end (Hold): a variable for the benchmark that compares.
var hold = true

// Hold keeps the copy workers looking for work, instead of blocking, until
// Release, and wakes those blocked; it reports whether it did, so whether
// to call Release. A pipelined transfer hands the workers a chunk every few
// hundred microseconds, and the scheduler wakes blocked goroutines one
// after another, tens of microseconds apart: an execution trace of a 16 MiB
// download on the H200 machine showed a chunk's copy waiting on the
// wake-ups more than on the copying. Hold them only while chunks flow: they
// spin on every processor.
func Hold() bool {
	pool.once.Do(start)
	if !hold {
		return false
	}
	pool.held.Add(1)
	wake(pool.n)
	return true
}

// Release ends a Hold.
func Release() { pool.held.Add(-1) }

// wake wakes up to k of the blocked copy workers; they look for work for
// spin before they block again.
func wake(k int) {
	if pool.futexUsed.Load() {
		// Bumped first: a worker that read the old value before it
		// counted itself parked returns from its wait at once.
		pool.parkSeq.Add(1)
		if pool.parked.Load() > 0 {
			n := wakeFutex(&pool.parkSeq, k)
			pool.wakes.Add(int64(n))
			if k -= n; k <= 0 {
				return
			}
		}
	}
	for i := range pool.workers {
		if k == 0 {
			return
		}
		if w := &pool.workers[i]; w.parked.Load() {
			select {
			case w.wake <- struct{}{}:
				pool.wakes.Add(1)
				k--
			default: // woken already
			}
		}
	}
}

// Awake reports whether any copy worker is looking for work, not blocked;
// if none is, it wakes them, so that a transfer made soon after finds them
// awake (StagingPipeline.WarmBelowBytes). One awake is enough: the
// pipelined transfer that follows wakes the rest and keeps them spinning.
// (Asking for most of them awake sent whole loops of small downloads to the
// driver: the woken workers came up one by one, each spinning a while
// before it blocked again, never half of them at once.)
func Awake() bool {
	pool.once.Do(start)
	if int(pool.parked.Load()) < pool.n {
		return true
	}
	wake(pool.n)
	return false
}

func start() {
	pool.n = min(runtime.GOMAXPROCS(0), MaxWorkers) - 1
	pool.workers = make([]worker, pool.n)
	for i := range pool.workers {
		pool.workers[i].wake = make(chan struct{}, 1)
		go pool.workers[i].run(i)
	}
}

// spin is how long an idle worker keeps looking for work before it blocks.
// A pipeline hands out a chunk every few hundred microseconds; waking a
// blocked worker takes the scheduler tens of microseconds, and waking
// fifteen of them, one after another, costs the pipeline a good part of a
// chunk's time.
const spin = 200 * time.Microsecond

func (w *worker) run(i int) {
	for {
		j, part, ok := nextPart()
		if !ok {
			seq := pool.parkSeq.Load()
			w.parked.Store(true)
			pool.parked.Add(1)
			// A hold that began before this worker counted itself parked
			// may not have woken it: look once more.
			if pool.held.Load() == 0 {
				if futexParking.Load() {
					parkFutex(&pool.parkSeq, seq)
				} else {
					<-w.wake
				}
			}
			pool.parked.Add(-1)
			w.parked.Store(false)
			continue
		}
		j.run(part, i)
	}
}

// nextPart waits for a part to copy, without blocking the thread, while a
// transfer holds the workers and for spin after. It yields the processor
// to other goroutines every few turns: a worker that yields seldom keeps
// the goroutine that hands out the work (back from a driver call, wanting
// a processor) waiting, which halved the speed of mid-size transfers
// (docs/performance.md, "Tried and not kept").
func nextPart() (*Job, int, bool) {
	deadline := time.Now().Add(spin)
	for turn := 1; ; turn++ {
		if j, part, ok := claimAny(boardStart()); ok {
			return j, part, true
		}
		if turn%32 != 0 {
			continue
		}
		if pool.held.Load() > 0 {
			deadline = time.Now().Add(spin)
		} else if time.Now().After(deadline) {
			return nil, 0, false
		}
		runtime.Gosched()
	}
}

// boardStart returns where a look at the board starts: the slot after the
// one post offered the latest copy, where round the board the oldest copy
// is, or else the empty slots before it. So the copies are claimed oldest
// first, and a pipeline's chunks reach the DMA engine in order. (Each
// worker looking from a place of its own tied; in order is the one that
// cannot starve a chunk.)
func boardStart() int { return int(pool.next.Load()) + 1 }

// claimAny claims a part of a copy on the board, looking from slot from
// on, and reports whether there was one.
func claimAny(from int) (*Job, int, bool) {
	b := &pool.board
	for k := range b {
		if j := b[(from+k)%len(b)].Load(); j != nil {
			if part, ok := j.claim(); ok {
				return j, part, true
			}
		}
	}
	return nil, 0, false
}

// MaxWorkers bounds the goroutines copying one chunk, the caller's among
// them: past 16 the copies stopped getting faster on the H200 machine
// (BenchmarkParallelCopy).
const MaxWorkers = 16

// minPart is the least a worker is given: below it, handing the work over
// costs more than it saves. (Parts of 16 KiB won on small chunks and lost
// downloading 1 MiB, parts of 64 KiB lost: docs/performance.md, "Tried and
// not kept".) A variable for the benchmarks that sweep it.
var minPart = 32 << 10

// WakeWorthBytes is the size below which a copy uses only the workers
// still spinning: waking a parked one takes the scheduler tens of
// microseconds, as long as copying a few hundred KiB takes (gocuda
// calibrate showed a small copy split over woken workers slower than
// copied whole).
const WakeWorthBytes = 1 << 20

// Copy copies src into dst (of equal length) with up to workers
// goroutines, this one among them, with streaming stores or not, and
// returns when all are done. j is the caller's, reused to keep the call
// free of allocations.
func (j *Job) Copy(dst, src []byte, workers int, streaming bool) {
	pool.once.Do(start)
	parts := min(workers, pool.n+1, len(src)/minPart)
	if len(src) < WakeWorthBytes {
		parts = min(parts, pool.n-int(pool.parked.Load())+1)
	}
	if parts <= 1 {
		pipeCopy(dst, src, streaming)
		return
	}
	j.post(dst, src, parts, streaming)
	j.Await()
}

// Start puts the copy of src into dst (of equal length) on the board, in
// up to workers parts, for the pool's workers to copy, and returns at once;
// Await waits for it. With no workers, it copies here. Call it only once
// j's last copy was awaited.
func (j *Job) Start(dst, src []byte, workers int, streaming bool) {
	pool.once.Do(start)
	if pool.n == 0 || len(src) == 0 {
		pipeCopy(dst, src, streaming)
		return
	}
	j.post(dst, src, max(min(workers, pool.n, len(src)/minPart), 1), streaming)
}

// partSize is the size of each of parts parts of n bytes: whole cache
// lines, the last part taking what is left.
func partSize(n, parts int) int {
	size := (n + parts - 1) / parts
	return (size + 63) &^ 63
}

// Await returns once j's copy is done, claiming and copying its parts no
// one has yet, then others' on the board, meanwhile.
//
// The caller does not block until the others finish: it is usually locked
// to its OS thread (it holds a context current), and a locked goroutine
// that blocks or yields hands its thread's processor away and waits tens of
// microseconds to get one back, which the pipeline would pay once per
// chunk. It copies parts itself instead, and spins.
func (j *Job) Await() {
	j.CopyUnclaimed()
	var deadline time.Time
	for i := 1; j.left.Load() > 0; i++ {
		// Another copy's part, another transfer's perhaps, is better
		// copied here than waited beside.
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

// runQueued copies here one part of a copy on the board, if there is one,
// and reports whether it did.
func runQueued() bool {
	j, part, ok := claimAny(boardStart())
	if ok {
		j.run(part, -1)
	}
	return ok
}
