package cuda

import (
	"math"
	"time"
	"unsafe"

	"github.com/gocuda/cuda/internal/driver"
)

// SetCopyHold sets whether a pipelined transfer keeps the copy workers
// spinning from start to end; it returns the previous value.
func SetCopyHold(on bool) bool {
	old := copyHold
	copyHold = on
	return old
}

// SetCopyDelay makes every part the copy workers copy take d longer; it
// returns the previous delay.
func SetCopyDelay(d time.Duration) time.Duration {
	return time.Duration(copyDelay.Swap(int64(d)))
}

// SetPipeSplit sets the least number of chunks a pipelined transfer is cut
// into (1 to 16), and SetMinCopyPart the least a copy worker is given; each
// returns the previous value. Call them with no transfer under way.
func SetPipeSplit(n int) int {
	old := pipeSplit
	pipeSplit = n
	return old
}

func SetMinCopyPart(n int) int {
	old := minCopyPart
	minCopyPart = n
	return old
}

// CopyWorkers returns the number of copy workers, how many of them are
// blocked waiting for work, and how many wake-up calls blocked ones have
// been sent so far.
func CopyWorkers() (n, parked int, wakes int64) {
	copyPool.once.Do(startCopyPool)
	return copyPool.n, int(copyPool.parked.Load()), copyPool.wakes.Load()
}

// HoldCopyWorkers keeps the copy workers looking for work until the
// function it returns is called.
func HoldCopyWorkers() (release func()) {
	if !holdCopyWorkers() {
		return func() {}
	}
	return releaseCopyWorkers
}

// SetPipeGrain sets the least chunk a pipelined transfer is cut into, the
// least number of chunks and the least copy part, and returns a function
// that puts them back. Call it with no transfer under way.
func SetPipeGrain(minChunk, split, part int) (restore func()) {
	oldChunk, oldSplit, oldPart := minPipeChunk, pipeSplit, minCopyPart
	minPipeChunk, pipeSplit, minCopyPart = minChunk, split, part
	return func() { minPipeChunk, pipeSplit, minCopyPart = oldChunk, oldSplit, oldPart }
}

// SetRotateDownloads sets whether each pipelined download starts its slots
// where the last one's ended, and returns a function that puts it back.
func SetRotateDownloads(on bool) (restore func()) {
	old := rotateDownloads
	rotateDownloads = on
	return func() { rotateDownloads = old }
}

// DownloadOffset returns where, in sb's pinned memory, the next pipelined
// download's slots start. (A function, not a method: the zero-value and
// fault sweeps walk every exported method.)
func DownloadOffset(sb *StagingBuffer) int { return sb.rot }

// TracePipeline has every pipelined transfer report the time of each of its
// steps since the transfer's start, by step name ("copied", "landed",
// "queued", "done") and chunk; nil stops it. Call it with no transfer under
// way.
func TracePipeline(f func(step string, chunk int, since time.Duration)) {
	if f == nil {
		pipeTrace = nil
		return
	}
	var start time.Time
	names := [...]string{stepHeld: "held", stepCopied: "copied", stepLanded: "landed", stepQueued: "queued", stepDone: "done"}
	pipeTrace = func(step pipeStep, chunk int) {
		now := time.Now()
		if step == stepStart {
			start = now
			return
		}
		f(names[step], chunk, now.Sub(start))
	}
}

// ParallelCopy is the staging pipeline's copy of src into dst on up to
// workers goroutines.
func ParallelCopy(dst, src []byte, workers int, streaming bool) {
	var j copyJob
	parallelCopy(dst, src, workers, streaming, &j)
}

// CopyChunk is the staging pipeline's copy of one chunk: src into dst in
// parts handed to up to workers copy workers, then the parts still queued
// copied here, returning once every part is done.
func CopyChunk(dst, src []byte, workers int, streaming bool) {
	var j copyJob
	copyAsync(dst, src, workers, streaming, &j)
	awaitCopies(&j)
}

// PipeCopy is one goroutine's copy of a part, as a copy worker makes it.
func PipeCopy(dst, src []byte, streaming bool) { pipeCopy(dst, src, streaming) }

// TraceCopyParts has every part the copy workers or their caller copy
// report when it started and ended and who copied it (a worker's number,
// or -1 for the caller); nil stops it. Call it with no copy under way.
func TraceCopyParts(f func(by int, start, end time.Time)) { partTrace = f }

// IsCurrent reports whether c is the current context of the calling
// goroutine's OS thread; call it with the thread locked.
func IsCurrent(c *Context) bool {
	var cur driver.Context
	return driver.CtxGetCurrent(&cur).OK() && cur == c.handle
}

// QueryRaw calls cuStreamQuery on s directly, with none of Query's locks
// and checks: the driver call and the crossing alone. With bound, the call
// binds s's context itself (the cgo shim does; purego ignores it).
func QueryRaw(s *Stream, bound bool) int {
	ctx := driver.Context(0)
	if bound {
		ctx = s.ctx.handle
	}
	return int(driver.StreamQuery(ctx, s.handle).Code)
}

// CopyRaw is CopyFromHost (up) or CopyToHost of d and h as the bare driver
// call, with none of gocuda's locks and checks; call it with d's context
// current on a locked thread (Context.Do).
func CopyRaw(d *DeviceBuffer[byte], h []byte, up bool) int {
	if up {
		return int(driver.MemcpyHtoD(d.mem.ctx.handle, d.ptr, unsafe.Pointer(&h[0]), uintptr(len(h))).Code)
	}
	return int(driver.MemcpyDtoH(d.mem.ctx.handle, unsafe.Pointer(&h[0]), d.ptr, uintptr(len(h))).Code)
}

// ForgetPTX makes m as a module loaded from a cubin: nothing known of its
// kernels' parameters from PTX.
func ForgetPTX(m *Module) { m.params = nil }

// SetIOShape sets the slots and chunk size of ReadFrom's pipeline for
// readers at offsets, or (sequential) for readers read in order and
// writers, returning the old ones.
func SetIOShape(sequential bool, slots, chunk int) (int, int) {
	sh := &ioAtOffsets
	if sequential {
		sh = &ioSequential
	}
	old := *sh
	*sh = ioShape{slots: slots, chunk: chunk}
	return old.slots, old.chunk
}

// SetCopyStreaming makes the staging pipeline's copies use streaming
// stores at every size (on) or at none, and returns a function that puts
// the sizes back. Call it with no transfer under way.
func SetCopyStreaming(on bool) (restore func()) {
	old := streamBelow
	for d := range streamBelow {
		streamBelow[d] = 0
		if on {
			streamBelow[d] = math.MaxInt
		}
	}
	return func() { streamBelow = old }
}

// CacheRepeats is how many freed sizes a stream remembers between
// synchronizes: a size freed once the list is full is never kept.
const CacheRepeats = cacheRepeats

// Streams reports whether the pipeline copies a transfer of n bytes in
// direction d with streaming stores.
func Streams(d Direction, n int) bool { return streams(d, n) }

// StreamUsers returns how many streams b's memory records as its users.
func StreamUsers[T any](b *DeviceBuffer[T]) int {
	b.mem.users.mu.Lock()
	defer b.mem.users.mu.Unlock()
	return len(b.mem.users.s)
}

// SetCalibrateScale makes Calibrate walk through arena bytes at least and
// time runs of run each; it returns a function that restores the defaults.
func SetCalibrateScale(arena int, run time.Duration) (restore func()) {
	oldArena, oldRun := calibrateArena.Swap(int64(arena)), calibrateRun.Swap(int64(run))
	return func() {
		calibrateArena.Store(oldArena)
		calibrateRun.Store(oldRun)
	}
}

// CloseConditionKernel unloads the context's set-condition kernel, which
// it otherwise keeps until Context.Close: for the fault sweep's counts.
func CloseConditionKernel(c *Context) { c.closeCondKernel() }

// RawCapture captures n launches of f, a kernel without parameters, on s
// with the driver's calls alone, none of Launch's checks or holds, and
// destroys the graph: the floor under Stream.Capture of the same launches
// from Go (BenchmarkGraphCaptureRaw).
func RawCapture(s *Stream, f *Function, n int) error {
	const op = "RawCapture"
	if err := s.ctx.bind(op); err != nil {
		return err
	}
	defer s.ctx.unbind()
	if err := check(op, driver.StreamBeginCapture(s.ctx.handle, s.handle, int32(CaptureGlobal))); err != nil {
		return err
	}
	var first driver.Status
	for range n {
		if r := driver.LaunchKernel(s.ctx.handle, f.handle, 1, 1, 1, 1, 1, 1, 0, s.handle, nil, nil); !r.OK() && first.OK() {
			first = r
		}
	}
	var g driver.Graph
	end := driver.StreamEndCapture(s.ctx.handle, s.handle, &g)
	if g != 0 {
		driver.GraphDestroy(s.ctx.handle, g)
	}
	if err := check(op, first); err != nil {
		return err
	}
	return check(op, end)
}
