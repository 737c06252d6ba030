package cuda

import (
	"runtime"
	"unsafe"

	"github.com/gocuda/cuda/internal/driver"
	"github.com/gocuda/cuda/internal/lifetime"
	"github.com/gocuda/cuda/internal/track"
)

// PinnedBuffer is page-locked host memory holding n elements of T, exposed
// as an ordinary slice. The device reads and writes it directly (DMA), so
// copies between it and device memory run at the link's speed and may be
// asynchronous without pinning anything. It is portable: usable with every
// context.
//
// Page-locking is slow (about 1 ms per MiB measured on the H200 machine) and
// takes memory from the operating system's pageable pool: allocate once and
// reuse.
type PinnedBuffer[T any] struct {
	life
	p    unsafe.Pointer
	data []T
	stat *memCounter // what counts it in its context's MemoryStats; nil for an empty buffer
	uses *lockedUses // the streams with copies queued on it; nil for an empty buffer
}

// AllocPinned allocates page-locked host memory for n elements, zeroed.
// n may be zero: the buffer then holds no memory and its Data is empty.
func AllocPinned[T any](ctx *Context, n int) (*PinnedBuffer[T], error) {
	const op = "AllocPinned"
	bytes, err := elemBytes[T](op, "pinned buffer", n, 0)
	if err != nil {
		return nil, err
	}
	if err := ctx.bind(op); err != nil {
		return nil, err
	}
	defer ctx.unbind()
	b := &PinnedBuffer[T]{}
	if bytes == 0 {
		b.ctx, b.data = ctx, []T{}
		b.lt.ArmUntracked()
		return b, nil
	}
	if err := check(op, driver.MemHostAlloc(ctx.handle, &b.p, bytes, driver.MemHostAllocPortable)); err != nil {
		return nil, err
	}
	b.data = unsafe.Slice((*T)(b.p), n)
	clear(b.data)
	p, stat, uses := b.p, ctx.counter(MemoryPinned), new(lockedUses)
	b.stat, b.uses = stat, uses
	stat.add(bytes)
	b.arm(ctx, track.PinnedBuffer, runtime.AddCleanup(b, func(ctx *Context) {
		stat.sub(bytes)
		uses.drain("cleanup")
		forgotten(ctx, track.PinnedBuffer, func() { driver.MemFreeHost(ctx.handle, p) })
		removeLocked(ctx, p)
	}, ctx))
	addLocked(ctx, &b.life, b.p, bytes, uses) // once armed: copies may hold it from now on
	return b, nil
}

// Data returns the buffer's memory as a slice, or nil after Free or once
// the context it was allocated in is closed (the driver frees the memory
// with the primary context, at its last release, which gocuda does not
// see: another Context of the device may hold it back). The slice must
// not be used after either.
func (b *PinnedBuffer[T]) Data() []T {
	if b == nil || b.status() != lifetime.Held || b.ctx.isClosed() {
		return nil
	}
	return b.data
}

// Len returns the number of elements.
func (b *PinnedBuffer[T]) Len() int {
	if b == nil {
		return 0
	}
	return len(b.data)
}

// Free releases the memory, once the streams with an asynchronous copy
// queued on it (CopyFromHostAsync, CopyToHostAsync) reached it; such a
// copy queued while Free runs is refused with ErrClosed. Freeing twice,
// or a nil buffer, does nothing; if the driver refuses, the buffer stays
// usable and Free may be called again.
func (b *PinnedBuffer[T]) Free() error {
	if b == nil {
		return nil
	}
	const op = "PinnedBuffer.Free"
	if err := b.uses.drain(op); err != nil {
		return stillOpen(err, "the pinned buffer")
	}
	err := b.close(op, "the pinned buffer", func() error {
		if b.p == nil {
			return nil // empty: nothing was allocated
		}
		return check(op, driver.MemFreeHost(b.ctx.handle, b.p))
	}, func() {
		removeLocked(b.ctx, b.p)
		b.stat.sub(uintptr(len(b.data)) * sizeOf[T]())
	})
	if err != nil {
		b.uses.reopen(nil)
	}
	return err
}

// Registered is ordinary Go memory page-locked in place, so the device
// reads and writes it directly, as a PinnedBuffer's. Registering costs
// about 10 ms per 256 MiB on the H200 machine (unregistering half that):
// worth it for a slice transferred again and again, not for one transfer.
type Registered[T any] struct {
	life
	p      unsafe.Pointer
	n      int
	pinner *runtime.Pinner
	uses   *lockedUses // the streams with copies queued on the memory
}

// Register page-locks s's memory until Close. Until then s must stay
// reachable and is kept from moving; copies to and from s (or any sub-slice)
// go straight to the DMA engine. A copy over more than one registration, or
// over registered and ordinary memory, is split at their edges into one
// driver copy a piece (the driver refuses a host range that crosses one),
// queued in order: the registered pieces move by DMA, the others as
// ordinary memory does. Registering memory that overlaps memory already
// registered is an error.
func Register[T any](ctx *Context, s []T) (*Registered[T], error) {
	const op = "Register"
	bytes, err := elemBytes[T](op, "registered slice", len(s), 1)
	if err != nil {
		return nil, err
	}
	if err := ctx.bind(op); err != nil {
		return nil, err
	}
	defer ctx.unbind()
	r := &Registered[T]{p: hostPtr(s), n: len(s), pinner: new(runtime.Pinner), uses: new(lockedUses)}
	r.pinner.Pin(unsafe.SliceData(s))
	if res := driver.MemHostRegister(ctx.handle, r.p, bytes, driver.MemHostRegisterPortable); !res.OK() {
		r.pinner.Unpin()
		err := check(op, res).(*Error)
		if res.Code == driver.ErrorHostMemoryAlreadyRegistered {
			err.Err, err.Detail = ErrInvalidValue, "the memory overlaps memory already registered or page-locked"
		}
		return nil, err
	}
	p, pinner, uses := r.p, r.pinner, r.uses
	r.arm(ctx, track.Registered, runtime.AddCleanup(r, func(ctx *Context) {
		uses.drain("cleanup")
		forgotten(ctx, track.Registered, func() { driver.MemHostUnregister(ctx.handle, p) })
		removeLocked(ctx, p)
		pinner.Unpin()
	}, ctx))
	addLocked(ctx, &r.life, r.p, bytes, uses) // once armed: copies may hold it from now on
	return r, nil
}

// Len returns the number of elements registered.
func (r *Registered[T]) Len() int {
	if r == nil {
		return 0
	}
	return r.n
}

// Close unregisters the memory, once the streams with an asynchronous
// copy queued on it (CopyFromHostAsync, CopyToHostAsync) reached it; such
// a copy queued while Close runs is refused with ErrClosed. Closing twice,
// or a nil Registered, does nothing; if the driver refuses, the memory
// stays registered and pinned, and Close may be called again.
func (r *Registered[T]) Close() error {
	if r == nil {
		return nil
	}
	const op = "Registered.Close"
	if err := r.uses.drain(op); err != nil {
		return stillOpen(err, "the registered memory")
	}
	err := r.close(op, "the registered memory", func() error {
		return check(op, driver.MemHostUnregister(r.ctx.handle, r.p))
	}, func() {
		removeLocked(r.ctx, r.p)
		r.pinner.Unpin()
	})
	if err != nil {
		r.uses.reopen(nil)
	}
	return err
}
