package cuda

import (
	"time"
	"unsafe"

	"github.com/gocuda/cuda/internal/driver"
)

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

// CacheRepeats is how many freed sizes a stream remembers between
// synchronizes: a size freed once the list is full is never kept.
const CacheRepeats = cacheRepeats

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

// PagesMissing reports whether a page of b has no memory yet, as a
// download into b sees it (freshpages.go).
func PagesMissing(b []byte) bool {
	missing, _ := pagesMissing(b, nil)
	return missing
}

// LibraryViews returns how many contexts' modules l keeps.
func LibraryViews(l *Library) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.views)
}
