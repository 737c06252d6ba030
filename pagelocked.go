package cuda

import (
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"
)

// hostLocks records the page-locked host memory gocuda holds (PinnedBuffers
// and Registered slices), so that transfers from it skip staging: the device
// reads it directly. Every transfer of ordinary memory asks, so readers
// take no lock: writers, rare, replace the list.
var hostLocks struct {
	mu     sync.Mutex // serializes writers
	ranges atomic.Pointer[[]lockedRange]
}

// lockedRange is memory page-locked in ctx. Once ctx is closed gocuda no
// longer knows whether the driver still holds it locked (it does until the
// primary context's last release, which another Context may hold back), so
// it counts as ordinary memory: a transfer of ordinary memory is ordered
// and staged as locked memory needs none to be, never the reverse.
type lockedRange struct {
	start, end uintptr
	ctx        *Context
}

func addLocked(ctx *Context, p unsafe.Pointer, n uintptr) {
	hostLocks.mu.Lock()
	defer hostLocks.mu.Unlock()
	var old []lockedRange
	if r := hostLocks.ranges.Load(); r != nil {
		old = *r
	}
	ranges := append(slices.Clip(old), lockedRange{uintptr(p), uintptr(p) + n, ctx})
	hostLocks.ranges.Store(&ranges)
}

// removeLocked forgets the memory at p that ctx page-locked (where ctx was
// closed, other memory may have been locked at its address since).
func removeLocked(ctx *Context, p unsafe.Pointer) {
	hostLocks.mu.Lock()
	defer hostLocks.mu.Unlock()
	r := hostLocks.ranges.Load()
	if r == nil {
		return
	}
	ranges := slices.DeleteFunc(slices.Clone(*r), func(l lockedRange) bool { return l.start == uintptr(p) && l.ctx == ctx })
	hostLocks.ranges.Store(&ranges)
}

// pageLocked reports whether all of b lies in memory gocuda page-locked,
// in a context still open.
func pageLocked(b []byte) bool {
	r := hostLocks.ranges.Load()
	if len(b) == 0 || r == nil {
		return false
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	hi := lo + uintptr(len(b))
	for _, l := range *r {
		if lo >= l.start && hi <= l.end && !l.ctx.isClosed() {
			return true
		}
	}
	return false
}
