package cuda

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
	"weak"

	"github.com/gocuda/cuda/internal/attach"
	"github.com/gocuda/cuda/internal/driver"
	"github.com/gocuda/cuda/internal/track"
)

// GrowableBuffer is device memory of T that grows and shrinks in place:
// its address never changes, and growing copies nothing.
// NewGrowableBuffer reserves a range of virtual addresses for up to maxLen
// elements and maps no memory (cuMemAddressReserve); Resize maps physical
// memory at the end of what is mapped as the buffer grows (cuMemCreate,
// cuMemMap, cuMemSetAccess: one piece a growth, a whole number of the
// device's allocation granularity) and unmaps whole pieces as it shrinks.
// Buffer gives a DeviceBuffer of the current length, for copies, kernel
// launches and cuBLAS.
//
// A GrowableBuffer is safe for concurrent use. The zero value is not
// usable: get one from NewGrowableBuffer.
type GrowableBuffer[T any] struct {
	mu sync.Mutex
	*vmmRange
	ctx     *Context
	granule uintptr // the device's allocation granularity
	n       int     // length in elements
	// length and capacity are n and the elements mapped as the last
	// Resize or Free left them, for Len and Cap, which take no lock: a
	// call in flight on a Buffer, which a shrink waits for holding mu,
	// may ask them.
	length, capacity atomic.Int64
	// views are the Buffers' records, to close when the buffer shrinks
	// below them or is freed; weak, so that those the program dropped
	// are forgotten.
	views   []weak.Pointer[allocation]
	freed   bool
	cleanup runtime.Cleanup
	owner   *attach.Owner // its tie to its context's Close
}

// vmmRange is a GrowableBuffer's memory, apart from it so that its cleanup
// backstop can release it.
type vmmRange struct {
	base     driver.DevicePtr
	reserved uintptr    // bytes of address space, a whole number of granules
	pieces   []vmmPiece // mapped in order from base
	mapped   uintptr    // bytes mapped: the pieces' sum
	// unreleased are pieces unmapped whose release failed: each later
	// Resize and Free tries again.
	unreleased []uint64
	// stray, where its size is not 0, is a piece mapped at strayAt whose
	// access could not be set and whose unmap then failed: not part of
	// the buffer, and unmapped again by the next growth and by Free.
	stray   vmmPiece
	strayAt driver.DevicePtr
}

// release unmaps and releases every piece and frees the addresses, with
// the context bound, ignoring failures: the backstop of a buffer dropped
// without Free.
func (r *vmmRange) release(ctx *Context) {
	for i := len(r.pieces) - 1; i >= 0; i-- {
		p := r.pieces[i]
		r.mapped -= p.size
		driver.MemUnmap(ctx.handle, r.base+driver.DevicePtr(r.mapped), p.size)
		driver.MemRelease(ctx.handle, p.handle)
		ctx.counter(MemoryDevice).grow(-int64(p.size))
	}
	r.pieces = nil
	if r.stray.size != 0 {
		driver.MemUnmap(ctx.handle, r.strayAt, r.stray.size)
		r.unreleased = append(r.unreleased, r.stray.handle)
	}
	for _, h := range r.unreleased {
		driver.MemRelease(ctx.handle, h)
	}
	driver.MemAddressFree(ctx.handle, r.base, r.reserved)
	ctx.counter(MemoryDevice).sub(0)
}

// vmmPiece is a physical allocation mapped into a GrowableBuffer.
type vmmPiece struct {
	handle uint64
	size   uintptr
}

// NewGrowableBuffer reserves addresses for up to maxLen elements of T on
// ctx's device, with none mapped: its length is 0 until Resize.
// Reserving costs no memory, so maxLen may exceed the device's memory;
// ErrNotSupported where the driver has no virtual memory management.
func NewGrowableBuffer[T any](ctx *Context, maxLen int) (*GrowableBuffer[T], error) {
	const op = "NewGrowableBuffer"
	if err := checkElem[T](op, false); err != nil {
		return nil, err
	}
	elem := sizeOf[T]()
	if maxLen <= 0 || elem == 0 || uint64(maxLen) > math.MaxInt64/uint64(elem) {
		return nil, errorf(op, ErrInvalidValue, "maximum length %d of %d-byte elements: want from 1 element to 2^63 bytes", maxLen, elem)
	}
	if err := ctx.bind(op); err != nil {
		return nil, err
	}
	defer ctx.unbind()
	g := &GrowableBuffer[T]{ctx: ctx, vmmRange: &vmmRange{}}
	prop := ctx.vmmProp()
	var granule uintptr
	if err := check(op, driver.MemGetAllocationGranularity(ctx.handle, &granule, unsafe.Pointer(&prop), driver.MemAllocationGranularityRecommended)); err != nil {
		return nil, vmmErr(err)
	}
	if granule == 0 {
		return nil, errorf(op, ErrNotSupported, "the driver reports an allocation granularity of 0 bytes")
	}
	if uintptr(maxLen)*elem > math.MaxInt64-(granule-1) {
		return nil, errorf(op, ErrInvalidValue, "maximum length %d of %d-byte elements: over 2^63 bytes once rounded up to the granularity, %s", maxLen, elem, formatBytes(granule))
	}
	g.granule = granule
	g.reserved = roundUp(uintptr(maxLen)*elem, granule)
	if err := check(op, driver.MemAddressReserve(ctx.handle, &g.base, g.reserved, 0, 0, 0)); err != nil {
		err.(*Error).Detail = "reserving " + formatBytes(g.reserved) + " of addresses"
		return nil, vmmErr(err)
	}
	r := g.vmmRange
	g.owner = attach.NewOwner(ctx, g, (*GrowableBuffer[T]).Free, func() error {
		return boundErr(ctx, func() error { r.release(ctx); return nil })
	})
	track.Add(track.DeviceBuffer)
	ctx.counter(MemoryDevice).add(0)
	g.cleanup = runtime.AddCleanup(g, func(o *attach.Owner) { forgottenOwned(track.DeviceBuffer, o) }, g.owner)
	// Registered once whole: the context's Close may free it at once.
	if g.owner.Register() != nil { // the context is closing: nothing is mapped yet
		err := check(op, driver.MemAddressFree(ctx.handle, g.base, g.reserved))
		ctx.counter(MemoryDevice).sub(0)
		g.done()
		return nil, errors.Join(closed(op, "the context"), err)
	}
	return g, nil
}

// vmmProp describes pinned device memory of c's device.
func (c *Context) vmmProp() driver.MemAllocationProp {
	return driver.MemAllocationProp{Type: driver.MemAllocationTypePinned, LocType: driver.MemLocationTypeDevice, LocID: int32(c.dev.ordinal)}
}

// vmmErr says what is missing when the driver has no virtual memory calls.
func vmmErr(err error) error {
	if e := err.(*Error); e.Code == Result(driver.ResultMissingSymbol) {
		e.Detail = join(e.Detail, "virtual memory management needs a CUDA 10.2 driver or later")
	}
	return err
}

func roundUp(n, to uintptr) uintptr { return (n + to - 1) / to * to }

// Len returns the length in elements. While a Resize is under way it
// returns the length before it.
func (g *GrowableBuffer[T]) Len() int {
	if g == nil {
		return 0
	}
	return int(g.length.Load())
}

// Cap returns the elements the mapped memory holds: Resize up to Cap maps
// nothing. While a Resize is under way it returns the capacity before it.
func (g *GrowableBuffer[T]) Cap() int {
	if g == nil {
		return 0
	}
	return int(g.capacity.Load())
}

// publish makes Len and Cap report the length and the memory mapped; called
// with mu held, once a Resize or Free is done.
func (g *GrowableBuffer[T]) publish() {
	g.length.Store(int64(g.n))
	g.capacity.Store(int64(g.mapped / sizeOf[T]()))
}

// MaxLen returns the most elements the reserved addresses hold.
func (g *GrowableBuffer[T]) MaxLen() int {
	if g == nil || g.vmmRange == nil || sizeOf[T]() == 0 {
		return 0
	}
	return int(g.reserved / sizeOf[T]())
}

// Ptr returns the buffer's device address, the same from NewGrowableBuffer
// to Free.
func (g *GrowableBuffer[T]) Ptr() DevicePtr {
	if g == nil || g.vmmRange == nil {
		return 0
	}
	return DevicePtr(g.base)
}

func (g *GrowableBuffer[T]) valid(op string) error {
	switch {
	case g == nil:
		return errorf(op, ErrInvalidValue, "nil *GrowableBuffer")
	case g.ctx == nil:
		return errorf(op, ErrInvalidValue, "a zero GrowableBuffer: get one with NewGrowableBuffer")
	case g.freed:
		return closed(op, "the growable buffer")
	}
	return nil
}

// Resize makes the length n, from 0 to MaxLen. Growing past Cap maps one
// new piece of memory, whose contents are undefined; the elements below
// the old length keep theirs. Shrinking unmaps the pieces wholly past n,
// once the context's work has finished, and closes the Buffers longer
// than n (their later use is ErrClosed); a Buffer a graph still uses
// makes it fail first, with nothing changed. A later failure (of the
// driver) leaves the length as it was, or shorter where memory behind it
// was unmapped already, and Resize may be called again.
func (g *GrowableBuffer[T]) Resize(n int) error {
	const op = "GrowableBuffer.Resize"
	if g == nil {
		return g.valid(op)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.valid(op); err != nil {
		return err
	}
	// A Resize within the memory mapped calls no driver function: a closed
	// context is refused here, before views are closed for a shrink.
	if err := g.ctx.open(op); err != nil {
		return err
	}
	defer g.publish() // whatever the outcome: a failure may shorten it
	if n < 0 || n > g.MaxLen() {
		return errorf(op, ErrInvalidValue, "length %d: want 0 to %d, the addresses reserved", n, g.MaxLen())
	}
	need := roundUp(uintptr(n)*sizeOf[T](), g.granule)
	switch {
	case need > g.mapped:
		if err := g.mapPiece(op, need-g.mapped); err != nil {
			return err
		}
	case n < g.n:
		if err := g.shrink(op, n, need); err != nil {
			return err
		}
	}
	g.n = n
	return nil
}

// mapPiece maps size more bytes at the end of what is mapped, undoing
// what it did when a step fails.
func (g *GrowableBuffer[T]) mapPiece(op string, size uintptr) (err error) {
	ctx := g.ctx
	if err := ctx.bind(op); err != nil {
		return err
	}
	defer ctx.unbind()
	if err := g.unmapStray(op); err != nil {
		return err
	}
	prop := ctx.vmmProp()
	var h uint64
	if err := check(op, driver.MemCreate(ctx.handle, &h, size, unsafe.Pointer(&prop), 0)); err != nil {
		err.(*Error).Detail = fmt.Sprintf("growing by %s (%s mapped)", formatBytes(size), formatBytes(g.mapped))
		return err
	}
	at := g.base + driver.DevicePtr(g.mapped)
	if err := check(op, driver.MemMap(ctx.handle, at, size, 0, h, 0)); err != nil {
		g.unreleased = append(g.unreleased, h) // released here or, failing, by a later shrink or Free
		g.release(op)
		return err
	}
	access := driver.MemAccessDesc{LocType: driver.MemLocationTypeDevice, LocID: int32(ctx.dev.ordinal), Flags: driver.MemAccessProtReadWrite}
	if err := check(op, driver.MemSetAccess(ctx.handle, at, size, unsafe.Pointer(&access), 1)); err != nil {
		// Still mapped, the piece would block the next growth's map at
		// its address and Free's release of the addresses for good:
		// kept as stray, it is unmapped again by the next growth or Free.
		g.stray, g.strayAt = vmmPiece{h, size}, at
		g.unmapStray(op) // failing, it stays stray
		return err
	}
	g.pieces = append(g.pieces, vmmPiece{h, size})
	g.mapped += size
	ctx.counter(MemoryDevice).grow(int64(size))
	return nil
}

// shrink closes the views longer than n, then unmaps the pieces wholly
// past need bytes. Where it fails part way, the length is cut to what
// stays mapped, so that no Buffer made later reaches past it.
func (g *GrowableBuffer[T]) shrink(op string, n int, need uintptr) error {
	defer func() { g.n = min(g.n, int(g.mapped/sizeOf[T]())) }()
	var long []*allocation
	for _, v := range g.liveViews() {
		if v.size > uintptr(n)*sizeOf[T]() {
			if err := v.graphs.inUse(op, "a Buffer of the growable buffer"); err != nil {
				return err
			}
			long = append(long, v)
		}
	}
	for _, v := range long {
		if err := v.free(op); err != nil {
			return err
		}
	}
	if len(g.pieces) == 0 || g.mapped-g.pieces[len(g.pieces)-1].size < need {
		return nil // every piece holds some of the n elements
	}
	// The device may still be copying into the memory, or running a
	// kernel on it: unmapping waits for nothing.
	if err := g.ctx.Synchronize(); err != nil {
		return err
	}
	return g.unmapDownTo(op, need)
}

// unmapDownTo unmaps and releases the last pieces while the rest hold
// need bytes; a failure leaves the pieces not yet unmapped.
func (g *GrowableBuffer[T]) unmapDownTo(op string, need uintptr) error {
	ctx := g.ctx
	if err := ctx.bind(op); err != nil {
		return err
	}
	defer ctx.unbind()
	for len(g.pieces) > 0 {
		last := g.pieces[len(g.pieces)-1]
		if g.mapped-last.size < need {
			break
		}
		at := g.base + driver.DevicePtr(g.mapped-last.size)
		if err := check(op, driver.MemUnmap(ctx.handle, at, last.size)); err != nil {
			return err
		}
		g.pieces = g.pieces[:len(g.pieces)-1]
		g.mapped -= last.size
		ctx.counter(MemoryDevice).grow(-int64(last.size))
		// Unmapped, the piece is only a handle: a failed release is
		// tried again later.
		g.unreleased = append(g.unreleased, last.handle)
		if err := g.release(op); err != nil {
			return err
		}
	}
	return nil
}

// unmapStray unmaps the stray piece, if any, and releases it, with the
// context bound.
func (g *GrowableBuffer[T]) unmapStray(op string) error {
	if g.stray.size == 0 {
		return nil
	}
	if err := check(op, driver.MemUnmap(g.ctx.handle, g.strayAt, g.stray.size)); err != nil {
		return err
	}
	g.unreleased = append(g.unreleased, g.stray.handle)
	g.stray = vmmPiece{}
	return g.release(op)
}

// release releases the pieces unmapped, with the context bound; those it
// cannot stay for the next try.
func (g *GrowableBuffer[T]) release(op string) error {
	for len(g.unreleased) > 0 {
		h := g.unreleased[len(g.unreleased)-1]
		if err := check(op, driver.MemRelease(g.ctx.handle, h)); err != nil {
			return err
		}
		g.unreleased = g.unreleased[:len(g.unreleased)-1]
	}
	return nil
}

// liveViews drops the views closed since (by their Free) or collected,
// and returns the rest.
func (g *GrowableBuffer[T]) liveViews() []*allocation {
	var live []*allocation
	kept := g.views[:0]
	for _, w := range g.views {
		if v := w.Value(); v != nil && !v.lt.IsClosed() {
			kept = append(kept, w)
			live = append(live, v)
		}
	}
	clear(g.views[len(kept):])
	g.views = kept
	return live
}

// Buffer returns a DeviceBuffer of the buffer's current length at its
// address, for copies, launches and cuBLAS. It owns nothing: its Free
// frees nothing. It stays valid while the buffer grows (its length does
// not: call Buffer again for the new one) and is closed by a Resize below
// its length, or by Free.
func (g *GrowableBuffer[T]) Buffer() (*DeviceBuffer[T], error) {
	const op = "GrowableBuffer.Buffer"
	if g == nil {
		return nil, g.valid(op)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.valid(op); err != nil {
		return nil, err
	}
	if err := g.ctx.open(op); err != nil { // Buffer binds nothing
		return nil, err
	}
	base := g.base
	if g.n == 0 {
		base = 0 // an empty buffer's address, as Alloc's
	}
	mem := foreign(g.ctx, base, uintptr(g.n)*sizeOf[T]())
	g.liveViews()
	g.views = append(g.views, weak.Make(mem))
	return &DeviceBuffer[T]{mem: mem, ptr: base, n: g.n}, nil
}

// Free closes every Buffer (waiting for calls in flight), waits for the
// context's work, unmaps and releases the memory and the addresses. A
// Buffer a graph still uses makes it fail, the buffer usable; so does a
// failed driver call, after which Free may be called again. Freeing twice,
// or a nil GrowableBuffer, is a no-op.
func (g *GrowableBuffer[T]) Free() error {
	if g == nil {
		return nil
	}
	const op = "GrowableBuffer.Free"
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.freed {
		return nil
	}
	if err := g.valid(op); err != nil {
		return err
	}
	defer g.publish()
	if g.ctx.isClosed() {
		// Context.Close frees the buffers of its context, unless one was
		// made while it ran: nothing can be released without the context
		// now.
		g.done()
		return nil
	}
	views := g.liveViews()
	for _, v := range views { // before anything is unmapped
		if err := v.graphs.inUse(op, "a Buffer of the growable buffer"); err != nil {
			return err
		}
	}
	if err := g.shrink(op, 0, 0); err != nil {
		return err
	}
	for _, v := range views { // the empty ones, which shrink leaves
		if err := v.free(op); err != nil {
			return err
		}
	}
	g.n = 0
	ctx := g.ctx
	if err := ctx.bind(op); err != nil {
		return err
	}
	defer ctx.unbind()
	if err := g.unmapStray(op); err != nil {
		return err
	}
	if err := g.release(op); err != nil {
		return err
	}
	if err := check(op, driver.MemAddressFree(ctx.handle, g.base, g.reserved)); err != nil {
		return err
	}
	ctx.counter(MemoryDevice).sub(0)
	g.done()
	return nil
}

// done marks g freed and its backstop disarmed.
func (g *GrowableBuffer[T]) done() {
	g.cleanup.Stop()
	track.Done(track.DeviceBuffer)
	g.freed = true
	g.owner.Closed()
}
