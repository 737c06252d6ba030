package cuda

import (
	"sync"

	"github.com/gocuda/cuda/internal/attach"
	"github.com/gocuda/cuda/internal/driver"
)

// A stream's scratch is device memory that gocuda's other packages use
// inside one call on the stream, between its kernels: compute's
// reductions keep their blocks' partial results there, and counters that
// tell the last block to finish that it folds them, so that a reduction
// is one launch with no stream-ordered allocation. Work on one stream runs
// in order, so one kernel never overlaps another; but a Stream is for many
// goroutines, and another goroutine's call may queue its kernels between
// two of a call's, so only a single launch may keep anything in the
// scratch (a call of two kernels that pass data through memory uses the
// sequence memory below, or brings memory of its own). A user of the scratch leaves its counters as it
// found them (zero). It is allocated and
// zeroed on first use, and freed with the stream (Close, or the stream's
// cleanup). A stream that captures a graph has none to give: a replay of
// the graph may run beside the stream's later work (on another stream), so
// the captured kernels must have memory of their own.
//
// Past the scratch lies the stream's sequence memory, for a call of
// several kernels that pass data from one to the next (Softmax's few long
// rows: their chunks' statistics, then the rows). Such a call queues its
// kernels holding seq, which every other user of the sequence memory on
// the stream holds too, so that no other call's kernels that use it are
// queued between them: the stream's order does the rest, and the call
// needs no stream-ordered allocation.
//
// Locks: seq is taken first, before any lock of the stream or of its
// context, and held while its holder queues its kernels (which take
// those); mu is a leaf (the allocation and free under it are driver
// calls).
type streamScratch struct {
	seq  sync.Mutex
	mu   sync.Mutex
	base driver.DevicePtr // 0: none yet, or freed
}

const (
	// scratchBytes is the size of every stream's scratch, when it has
	// one.
	scratchBytes = 1 << 20
	// sequenceBytes is the size of its sequence memory, after it.
	sequenceBytes = 64 << 10
)

func init() {
	attach.StreamScratch = streamScratchOf
	attach.StreamSequence = streamSequence
}

// streamSequence runs queue with s's sequence memory (0 while s captures
// a graph), holding s's seq.
func streamSequence(v any, queue func(addr uintptr, size int) error) error {
	s, _ := v.(*Stream)
	if s == nil || s.scratch == nil { // not a stream, nil or zero
		_, _, err := streamScratchOf(v) // the error that says which
		return err
	}
	s.scratch.seq.Lock()
	defer s.scratch.seq.Unlock()
	addr, _, err := streamScratchOf(v)
	if err != nil {
		return err
	}
	if addr == 0 {
		return queue(0, 0)
	}
	return queue(addr+scratchBytes, sequenceBytes)
}

// streamScratchOf returns s's scratch (allocated and zeroed the first
// time), or 0 while s captures (the driver is asked: a stream joined to
// another's capture by an event captures too).
func streamScratchOf(v any) (uintptr, int, error) {
	const op = "Stream.scratch"
	s, ok := v.(*Stream)
	if !ok || s == nil {
		return 0, 0, errorf(op, ErrInvalidValue, "not a *cuda.Stream: %T", v)
	}
	if err := s.enter(op); err != nil {
		return 0, 0, err
	}
	defer s.leave()
	var status int32
	if err := check(op, driver.StreamIsCapturing(s.ctx.handle, s.handle, &status)); err != nil {
		return 0, 0, err
	}
	if status != 0 {
		return 0, 0, nil
	}
	sc := s.scratch
	if sc == nil {
		return 0, 0, errorf(op, ErrInvalidValue, "the stream has no scratch")
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.base == 0 {
		var p driver.DevicePtr
		if err := check(op, driver.MemAlloc(s.ctx.handle, &p, scratchBytes+sequenceBytes)); err != nil {
			return 0, 0, err
		}
		// Zeroed on s itself: a memset without a stream is the legacy
		// default stream's, which gocuda's streams (non-blocking) do not
		// wait for, so the first kernel could read the counters first.
		if err := check(op, driver.MemsetD8Async(s.ctx.handle, p, 0, scratchBytes+sequenceBytes, s.handle)); err != nil {
			driver.MemFree(s.ctx.handle, p)
			return 0, 0, err
		}
		sc.base = p
	}
	return uintptr(sc.base), scratchBytes, nil
}

// free frees the scratch, if there is one, with its context bound and
// the stream's work finished.
func (sc *streamScratch) free(ctx driver.Context) error {
	if sc == nil {
		return nil
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.base == 0 {
		return nil
	}
	if r := driver.MemFree(ctx, sc.base); r.Code != driver.Success {
		return check("Stream.Close", r)
	}
	sc.base = 0
	return nil
}

// forget lets go of a scratch its context took with it.
func (sc *streamScratch) forget() {
	if sc == nil {
		return
	}
	sc.mu.Lock()
	sc.base = 0
	sc.mu.Unlock()
}
