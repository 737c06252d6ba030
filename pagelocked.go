package cuda

import (
	"cmp"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"
	"weak"

	"github.com/gocuda/cuda/internal/driver"
	"github.com/gocuda/cuda/internal/lifetime"
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
	// owner is the life of the PinnedBuffer or Registered that locked the
	// memory, which a copy relying on the lock holds (holdLocked); weak,
	// so that the list keeps no object from its cleanup backstop.
	owner weak.Pointer[life]
	// uses is the streams with copies queued on the memory, which its
	// release waits for.
	uses *lockedUses
}

// lockedUses is the streams that queued an asynchronous copy on one
// page-locked range since its owner last waited for them. Releasing the
// memory (cuMemHostUnregister, cuMemFreeHost) under a DMA still queued
// faults the context of the copy (CUDA_ERROR_LAUNCH_FAILED on an H100,
// every later call failing): Registered.Close and PinnedBuffer.Free drain
// first. Lock order: drainMu, then mu, then the stream's pins and the
// driver (a copy queues with mu held, so that a drain cannot miss it).
type lockedUses struct {
	// drainMu is held for a whole drain: a second release waits for
	// the first's streams (else it could unlock the memory first).
	drainMu sync.Mutex
	mu      sync.Mutex
	// streams are weak, as streamUsers' are: a forgotten stream's
	// cleanup waits for its work.
	streams []weak.Pointer[Stream]
	// draining refuses new copies from the drain until the memory is
	// released and forgotten (or the release failed: reopen).
	draining bool
}

// drain refuses new asynchronous copies on the memory (ErrClosed) and
// waits for each stream that queued one: a closed stream was synchronized
// by its Close. On an error it reopens and returns it, named op. A nil u
// (memory of no bytes) has nothing to wait for.
func (u *lockedUses) drain(op string) error {
	if u == nil {
		return nil
	}
	u.drainMu.Lock()
	defer u.drainMu.Unlock()
	u.mu.Lock()
	u.draining = true
	streams := u.streams
	u.streams = nil
	u.mu.Unlock()
	for i, w := range streams {
		s := w.Value()
		if s == nil {
			continue
		}
		if err := s.Synchronize(); err != nil && !errors.Is(err, ErrClosed) {
			u.reopen(streams[i:])
			var e *Error
			if errors.As(err, &e) {
				c := *e
				c.Op, c.Detail = op, join("waiting for a stream with a copy queued on the memory", c.Detail)
				err = &c
			}
			return err
		}
	}
	return nil
}

// reopen takes copies again after a release that failed, with streams
// still to wait for.
func (u *lockedUses) reopen(streams []weak.Pointer[Stream]) {
	if u == nil {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.draining = false
	u.streams = append(streams, u.streams...)
}

// add records s, under u.mu, forgetting streams closed or collected
// since.
func (u *lockedUses) add(s *Stream) {
	if slices.Contains(u.streams, s.self) {
		return
	}
	u.streams = append(slices.DeleteFunc(u.streams, gone), s.self)
}

// queueOnLocked runs queue, which queues an asynchronous copy of host on
// s, with every page-locked range of host held (its mu, in one order)
// until queue returned and recorded s, so that a release of that memory
// waits for the copy. A range being released refuses the
// copy with ErrClosed: the driver may still take the memory as
// page-locked, and unlock it under the DMA.
func queueOnLocked(op string, s *Stream, host []byte, queue func() error) error {
	r := hostLocks.ranges.Load()
	if len(host) == 0 || r == nil {
		return queue()
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(host)))
	hi := lo + uintptr(len(host))
	var one [1]*lockedUses
	held := one[:0]
	for _, l := range *r {
		if l.start < hi && lo < l.end && l.uses != nil {
			held = append(held, l.uses)
		}
	}
	if len(held) > 1 {
		slices.SortFunc(held, func(a, b *lockedUses) int {
			return cmp.Compare(uintptr(unsafe.Pointer(a)), uintptr(unsafe.Pointer(b)))
		})
	}
	for i, u := range held {
		u.mu.Lock()
		if u.draining {
			for _, v := range held[:i+1] {
				v.mu.Unlock()
			}
			return errorf(op, ErrClosed, "the host memory's page lock is being released (Registered.Close or PinnedBuffer.Free under way)")
		}
	}
	err := queue()
	// A copy that failed may have queued some of its pieces; one refused
	// in a capture queued nothing (and a capturing stream cannot be
	// synchronized).
	record := err == nil || !s.Capturing()
	for _, u := range held {
		if record {
			u.add(s)
		}
		u.mu.Unlock()
	}
	return err
}

// addLocked records the n bytes at p, page-locked in ctx by the object
// whose life is owner. Call it once owner is armed: holdLocked may hold it
// from then on (a hold of a life not yet armed would race with Arm).
func addLocked(ctx *Context, owner *life, p unsafe.Pointer, n uintptr, uses *lockedUses) {
	hostLocks.mu.Lock()
	defer hostLocks.mu.Unlock()
	var old []lockedRange
	if r := hostLocks.ranges.Load(); r != nil {
		old = *r
	}
	ranges := append(slices.Clip(old), lockedRange{start: uintptr(p), end: uintptr(p) + n, ctx: ctx, owner: weak.Make(owner), uses: uses})
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

// holdLocked reports whether all of b lies in memory gocuda page-locked,
// in a context still open, by returning the life of the PinnedBuffer or
// Registered that locked it, held with its context until releaseLocked;
// nil where b is ordinary memory (or its owner is closing). A copy that
// relies on the answer (taking the memory as page-locked: no staging, no
// ordering after a copy the driver may finish late) holds the owner until
// the driver's copy returned, so that neither the owner's Close nor its
// context's unlocks the memory between the look and the copy: the driver
// would then take it as ordinary memory, stage it and possibly finish the
// copy after the call returned, while the caller, told the memory was
// page-locked, ordered nothing after it (the work queued next overtook the
// copy: TestCopyFromRegisteredRacesUnregister).
func holdLocked(b []byte) *life {
	r := hostLocks.ranges.Load()
	if len(b) == 0 || r == nil {
		return nil
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	hi := lo + uintptr(len(b))
	for _, l := range *r {
		if lo < l.start || hi > l.end {
			continue
		}
		owner := l.owner.Value()
		if owner == nil || owner.lt.Hold() != lifetime.Held {
			continue // collected, or closing: ordinary memory now
		}
		if l.ctx.life.Hold() != lifetime.Held {
			owner.release()
			continue
		}
		return owner
	}
	return nil
}

// releaseLocked releases what holdLocked held; nil releases nothing.
func releaseLocked(owner *life) {
	if owner != nil {
		owner.ctx.life.Release()
		owner.release()
	}
}

// eachLockedPiece calls copy for each piece of host, in order, with the
// piece's offset and length, and returns the first status that is not OK
// (later pieces are then not copied), else the last. The pieces are cut
// at the edges of the page-locked ranges gocuda knows, so each lies
// wholly inside one or wholly outside all: the driver refuses a host range
// locked only in part or spanning several registrations (on the H100,
// CopyToHost over four adjacent Registered slices answered
// CUDA_ERROR_INVALID_VALUE; whole, it worked). Most copies are one piece:
// finding so takes no lock and no memory. Ranges of closed contexts cut
// too: the driver may still hold their memory locked (see lockedRange),
// and a needless cut only costs a call. An empty host makes no call.
func eachLockedPiece(host []byte, copy func(off, n uintptr) driver.Status) driver.Status {
	var ranges []lockedRange
	if r := hostLocks.ranges.Load(); r != nil {
		ranges = *r
	}
	return lockedPieces(uintptr(unsafe.Pointer(unsafe.SliceData(host))), uintptr(len(host)), ranges, copy)
}

// lockedPieces is eachLockedPiece for the n bytes at lo and the ranges.
func lockedPieces(lo, n uintptr, ranges []lockedRange, copy func(off, n uintptr) driver.Status) driver.Status {
	var st driver.Status
	hi := lo + n
	for at := lo; at < hi; {
		// The piece ends at the first edge of a range past at.
		end := hi
		for _, l := range ranges {
			if l.start > at && l.start < end {
				end = l.start
			}
			if l.end > at && l.end < end {
				end = l.end
			}
		}
		if st = copy(at-lo, end-at); !st.OK() {
			return st
		}
		at = end
	}
	return st
}

// memcpyHtoD is driver.MemcpyHtoD of host to d in ctx, cut into pieces by
// eachLockedPiece.
func memcpyHtoD(ctx *Context, d driver.DevicePtr, host []byte) driver.Status {
	p := hostPtr(host)
	return eachLockedPiece(host, func(off, n uintptr) driver.Status {
		return driver.MemcpyHtoD(ctx.handle, d+driver.DevicePtr(off), unsafe.Add(p, off), n)
	})
}

// memcpyDtoH is driver.MemcpyDtoH of d to host in ctx, cut into pieces by
// eachLockedPiece.
func memcpyDtoH(ctx *Context, host []byte, d driver.DevicePtr) driver.Status {
	p := hostPtr(host)
	return eachLockedPiece(host, func(off, n uintptr) driver.Status {
		return driver.MemcpyDtoH(ctx.handle, unsafe.Add(p, off), d+driver.DevicePtr(off), n)
	})
}

// memcpyHtoDAsync is driver.MemcpyHtoDAsync of host to d on s, cut into
// pieces by eachLockedPiece and queued in order.
func memcpyHtoDAsync(s *Stream, d driver.DevicePtr, host []byte) driver.Status {
	p := hostPtr(host)
	return eachLockedPiece(host, func(off, n uintptr) driver.Status {
		return driver.MemcpyHtoDAsync(s.ctx.handle, d+driver.DevicePtr(off), unsafe.Add(p, off), n, s.handle)
	})
}

// memcpyDtoHAsync is driver.MemcpyDtoHAsync of d to host on s, cut into
// pieces by eachLockedPiece and queued in order.
func memcpyDtoHAsync(s *Stream, host []byte, d driver.DevicePtr) driver.Status {
	p := hostPtr(host)
	return eachLockedPiece(host, func(off, n uintptr) driver.Status {
		return driver.MemcpyDtoHAsync(s.ctx.handle, unsafe.Add(p, off), d+driver.DevicePtr(off), n, s.handle)
	})
}
