package cuda

import (
	"math"
	"runtime"
	"unsafe"

	"github.com/gocuda/cuda/internal/describe"
	"github.com/gocuda/cuda/internal/driver"
	"github.com/gocuda/cuda/internal/lifetime"
	"github.com/gocuda/cuda/internal/track"
)

// DevicePtr is an address in device memory (CUdeviceptr).
type DevicePtr uint64

// DeviceBuffer is a contiguous run of T elements in device memory.
//
// A buffer made by Alloc, Zeroed or FromHost owns its memory: Free releases
// it. Slice and ViewAs return buffers over part or all of the same memory
// that own nothing; they stay valid until the owner's Free, after which
// every method of every one of them returns ErrClosed. FromRaw wraps memory
// owned elsewhere.
//
// Every copy checks that source and destination lengths match. T must be
// plain data: numbers, and arrays and structs of numbers.
//
// A DeviceBuffer is safe for use by many goroutines; the device memory it
// names is not protected against concurrent copies into it. The zero
// DeviceBuffer is not usable: its methods return ErrInvalidValue.
type DeviceBuffer[T any] struct {
	mem   *allocation
	ptr   driver.DevicePtr // first element of this buffer
	n     int
	frees bool // Free releases mem: this is the allocation's own buffer, not a slice or a view
}

// allocation is one region of device memory, shared by its owner and all
// its slices and views.
type allocation struct {
	life
	base      driver.DevicePtr
	size      uintptr
	allocated bool    // gocuda allocated it; false for FromRaw and globals, whose Free marks it closed and frees nothing
	stream    *Stream // the stream it was allocated on in stream order (AllocAsync); nil for cuMemAlloc's
	graphs    graphUses
	pool      *MemPool // the pool it came from (AllocFromPool), which counts it until it is freed
	cacheable bool     // stream-ordered memory made outside a capture: its free may keep it for reuse (blockCache)
	ipc       bool     // another process's memory, opened by OpenIPC: Free closes the mapping
	users     streamUsers
	stat      *memCounter // what counts it in its context's MemoryStats; nil for memory not counted
	graphOnly bool        // a graph's alloc node's memory (GraphMemory), which exists only while the graph runs
	madeIn    *graphBuild // the capture that allocated it (AllocAsync in Stream.Capture), whose graph alone has its memory; set before it is handed out
}

// Alloc allocates a device buffer of n elements, uninitialized.
// ErrOutOfMemory if the device cannot hold it. n may be zero: an empty
// buffer holds no memory (its Ptr is 0) and every operation on it is a
// valid no-op, as CuPy's and PyTorch's empty arrays are.
func Alloc[T any](ctx *Context, n int) (*DeviceBuffer[T], error) {
	return alloc[T]("Alloc", ctx, n)
}

// Zeroed allocates a device buffer of n elements with every byte zero.
func Zeroed[T any](ctx *Context, n int) (*DeviceBuffer[T], error) {
	const op = "Zeroed"
	b, err := alloc[T](op, ctx, n)
	if err != nil {
		return nil, err
	}
	if err := b.memset(op, 1, 0, nil); err != nil {
		lifetime.CloseTemp(&err, b.Free)
		return nil, err
	}
	return b, nil
}

// FromHost allocates a device buffer holding a copy of src (empty if src
// is).
func FromHost[T any](ctx *Context, src []T) (*DeviceBuffer[T], error) {
	const op = "FromHost"
	b, err := alloc[T](op, ctx, len(src))
	if err != nil {
		return nil, err
	}
	if err := b.copyFromHost(op, src); err != nil {
		lifetime.CloseTemp(&err, b.Free)
		return nil, err
	}
	return b, nil
}

// elemBytes checks that T may live in device memory and that n of it (at
// least least) make a valid size; it returns the size in bytes. what names
// the memory in errors.
func elemBytes[T any](op, what string, n, least int) (uintptr, error) {
	if err := checkElem[T](op, false); err != nil {
		return 0, err
	}
	size := sizeOf[T]()
	switch {
	case n < least && least > 0:
		return 0, errorf(op, ErrInvalidValue, "length %d; a %s needs at least one element", n, what)
	case n < least:
		return 0, errorf(op, ErrInvalidValue, "negative length %d", n)
	case size == 0:
		return 0, errorf(op, ErrInvalidValue, "element type %T has size zero", *new(T))
	case uint64(n) > math.MaxInt64/uint64(size):
		return 0, errorf(op, ErrInvalidValue, "%d elements of %d bytes overflow", n, size)
	}
	return uintptr(n) * size, nil
}

func alloc[T any](op string, ctx *Context, n int) (*DeviceBuffer[T], error) {
	bytes, err := elemBytes[T](op, "device buffer", n, 0)
	if err != nil || bytes == 0 {
		return empty[T](op, ctx, err)
	}
	if err := ctx.bind(op); err != nil {
		return nil, err
	}
	defer ctx.unbind()
	m, err := allocateFreed(op, ctx, bytes, MemoryDevice, func(p *driver.DevicePtr) driver.Status {
		return driver.MemAlloc(ctx.handle, p, bytes)
	})
	if err != nil {
		return nil, err
	}
	return &DeviceBuffer[T]{mem: m, ptr: m.base, n: n, frees: true}, nil
}

// allocateFreed makes an allocation of bytes in ctx (bound) with alloc,
// memory that cuMemFree releases: counted as kind in the context's
// MemoryStats and armed with the cleanup that frees it if nobody does.
func allocateFreed(op string, ctx *Context, bytes uintptr, kind MemoryKind, alloc func(*driver.DevicePtr) driver.Status) (*allocation, error) {
	m := &allocation{size: bytes, allocated: true}
	if err := check(op, alloc(&m.base)); err != nil {
		if ce := err.(*Error); ce.Err == ErrOutOfMemory {
			ce.Detail = formatBytes(bytes) + " requested"
		}
		return nil, err
	}
	base, stat := m.base, ctx.counter(kind)
	m.stat = stat
	stat.add(bytes)
	m.arm(ctx, track.DeviceBuffer, runtime.AddCleanup(m, func(ctx *Context) {
		stat.sub(bytes)
		forgotten(ctx, track.DeviceBuffer, func() { driver.MemFree(ctx.handle, base) })
	}, ctx))
	return m, nil
}

// FromRaw wraps n elements of device memory at ptr that something else owns
// (another library, or a kernel's global): the whole API works on it, and
// Free frees nothing. n may be zero, and ptr zero with it. The caller
// guarantees that the memory is valid for n elements, belongs to ctx's
// device, and outlives the buffer.
func FromRaw[T any](ctx *Context, ptr DevicePtr, n int) (*DeviceBuffer[T], error) {
	const op = "FromRaw"
	bytes, err := elemBytes[T](op, "device buffer", n, 0)
	switch {
	case err != nil:
		return nil, err
	case ctx == nil:
		return nil, errorf(op, ErrInvalidValue, "nil *Context")
	case ptr == 0 && n != 0:
		return nil, errorf(op, ErrInvalidValue, "null pointer with length %d", n)
	case n > 0 && ptr%DevicePtr(alignOf[T]()) != 0: // an empty buffer holds nothing to misalign
		return nil, errorf(op, ErrInvalidValue, "pointer %#x is not aligned for %T", uint64(ptr), *new(T))
	case bytes > 0 && uint64(ptr) > math.MaxUint64-(uint64(bytes)-1):
		// No memory wraps past the last address; the slices' and copies'
		// address arithmetic would.
		return nil, errorf(op, ErrInvalidValue, "%d bytes at %#x pass the end of the address space", bytes, uint64(ptr))
	}
	if err := ctx.hold(op); err != nil { // a zero or closed context
		return nil, err
	}
	defer ctx.life.Release()
	m := foreign(ctx, driver.DevicePtr(ptr), bytes)
	return &DeviceBuffer[T]{mem: m, ptr: m.base, n: n, frees: true}, nil
}

// empty returns a buffer of no elements in ctx, or err if it is not nil.
// The driver allocates no memory of size zero: the buffer has none, and
// its Free releases nothing.
func empty[T any](op string, ctx *Context, err error) (*DeviceBuffer[T], error) {
	if err != nil {
		return nil, err
	}
	if ctx == nil {
		return nil, errorf(op, ErrInvalidValue, "nil *Context")
	}
	if err := ctx.hold(op); err != nil {
		return nil, err
	}
	defer ctx.life.Release()
	return &DeviceBuffer[T]{mem: foreign(ctx, 0, 0), frees: true}, nil
}

// foreign returns the record of memory owned elsewhere.
func foreign(ctx *Context, base driver.DevicePtr, size uintptr) *allocation {
	m := &allocation{life: life{ctx: ctx}, base: base, size: size}
	m.lt.ArmUntracked()
	return m
}

// Len returns the number of elements.
func (b *DeviceBuffer[T]) Len() int {
	if b == nil {
		return 0
	}
	return b.n
}

// ByteSize returns the size in bytes.
func (b *DeviceBuffer[T]) ByteSize() int {
	if b == nil {
		return 0
	}
	return b.n * int(sizeOf[T]())
}

// Ptr returns the device address of the first element, for kernels and
// other libraries. It is valid until the owner's Free.
func (b *DeviceBuffer[T]) Ptr() DevicePtr {
	if b == nil {
		return 0
	}
	return DevicePtr(b.ptr)
}

// Context returns the context the memory belongs to.
func (b *DeviceBuffer[T]) Context() *Context {
	if b == nil || b.mem == nil {
		return nil
	}
	return b.mem.ctx
}

// valid returns the error for a nil or zero buffer.
func (b *DeviceBuffer[T]) valid(op string) error {
	switch {
	case b == nil:
		return errorf(op, ErrInvalidValue, "nil *DeviceBuffer")
	case b.mem == nil:
		return errorf(op, ErrInvalidValue, "a zero DeviceBuffer: make one with Alloc, Zeroed, FromHost or FromRaw")
	}
	return nil
}

func (b *DeviceBuffer[T]) enter(op string) error {
	if err := b.valid(op); err != nil {
		return err
	}
	if err := b.mem.enter(op, "the device buffer"); err != nil {
		return err
	}
	if err := b.mem.settle(op); err != nil {
		b.mem.leave()
		return err
	}
	return nil
}

func (b *DeviceBuffer[T]) leave() { b.mem.leave() }

// enterWithStream enters b and s together, checking they belong together.
func (b *DeviceBuffer[T]) enterWithStream(op string, s *Stream) error {
	if err := b.valid(op); err != nil {
		return err
	}
	if err := s.valid(op); err != nil {
		return err
	}
	if s.ctx != b.mem.ctx {
		return errorf(op, ErrInvalidValue, "the stream belongs to another context than the buffer")
	}
	if err := enterWith(op, &b.mem.life, "the device buffer", &s.life, "the stream"); err != nil {
		return err
	}
	if err := s.use(op, b.mem); err != nil {
		leaveWith(&b.mem.life, &s.life)
		return err
	}
	return nil
}

func (b *DeviceBuffer[T]) leaveWithStream(s *Stream) { leaveWith(&b.mem.life, &s.life) }

func (b *DeviceBuffer[T]) lengthsMatch(op, what string, n int) error {
	if n != b.n {
		return errorf(op, ErrInvalidValue, "%s has %d elements, the device buffer %d", what, n, b.n)
	}
	return nil
}

// CopyFromHost copies src, which must have Len elements, into the buffer.
// It returns once src may be changed again. Work gocuda queued on the
// buffer before, on any stream, finishes before the copy starts. From a
// PinnedBuffer's memory or a Registered slice the device reads host memory
// directly (DMA) and the copy is done when CopyFromHost returns; from other memory the driver
// stages the bytes through its own pinned buffers and may still be moving
// the last of them: all work gocuda queues afterwards in the context (on
// any stream) is ordered after the copy, but another library's stream is
// not; synchronize the context before handing the memory to one. A src
// only partly page-locked, or over several registrations, is copied in
// pieces split at their edges (see Register), as other memory.
func (b *DeviceBuffer[T]) CopyFromHost(src []T) error {
	return b.copyFromHost("DeviceBuffer.CopyFromHost", src)
}

func (b *DeviceBuffer[T]) copyFromHost(op string, src []T) error {
	if err := b.enter(op); err != nil {
		return err
	}
	defer b.leave()
	if err := b.lengthsMatch(op, "src", len(src)); err != nil || b.n == 0 {
		return err
	}
	host := bytesOf(src)
	// Memory taken as page-locked stays so until the copy returned.
	owner := holdLocked(host)
	defer releaseLocked(owner)
	return copyHtoD(op, b.mem.ctx, b.ptr, host, owner == nil)
}

// copyHtoD makes the synchronous copy of host to the device at d, in ctx,
// bound. From ordinary memory (pageable) the copy may return before the
// last bytes land: work gocuda queues afterwards in the context is then
// ordered after it (Context.legacyQueue).
func copyHtoD(op string, ctx *Context, d driver.DevicePtr, host []byte, pageable bool) error {
	err := check(op, memcpyHtoD(ctx, d, host))
	if err == nil && pageable {
		ctx.legacyQueue()
	}
	return err
}

// CopyToHost copies the buffer into dst, which must have Len elements. It
// returns when the copy is done. It first waits for the work gocuda queued
// on the buffer on any stream (a kernel's, a copy's), so dst holds its
// result; see the package overview's Ordering.
func (b *DeviceBuffer[T]) CopyToHost(dst []T) error {
	return b.copyToHost("DeviceBuffer.CopyToHost", dst)
}

// ToHost returns a new slice holding the buffer's elements, copied as
// CopyToHost copies them (after the work gocuda queued on the buffer):
//
//	out, err := buf.ToHost()
func (b *DeviceBuffer[T]) ToHost() ([]T, error) {
	const op = "DeviceBuffer.ToHost"
	if err := b.valid(op); err != nil {
		return nil, err
	}
	out := make([]T, b.n)
	if err := b.copyToHost(op, out); err != nil {
		return nil, err
	}
	return out, nil
}

func (b *DeviceBuffer[T]) copyToHost(op string, dst []T) error {
	if err := b.enter(op); err != nil {
		return err
	}
	defer b.leave()
	if err := b.lengthsMatch(op, "dst", len(dst)); err != nil || b.n == 0 {
		return err
	}
	return check(op, memcpyDtoH(b.mem.ctx, bytesOf(dst), b.ptr))
}

// CopyFromDevice copies src, which must have Len elements and belong to the
// same context, into the buffer. The two may not overlap. Work gocuda
// queued on either before, on any stream, finishes before the copy starts.
// Like CopyFromHost from ordinary memory, it may return before the copy is
// done; work gocuda queues afterwards in the context is ordered after it.
func (b *DeviceBuffer[T]) CopyFromDevice(src *DeviceBuffer[T]) error {
	const op = "DeviceBuffer.CopyFromDevice"
	if err := b.checkCopy(op, src); err != nil {
		return err
	}
	if err := enterWith(op, &b.mem.life, "the device buffer", &src.mem.life, "the source buffer"); err != nil {
		return err
	}
	defer leaveWith(&b.mem.life, &src.mem.life)
	if err := checkOverlap(op, b.ptr, src.ptr, uintptr(b.ByteSize())); err != nil || b.n == 0 {
		return err
	}
	if err := b.mem.settle(op); err != nil {
		return err
	}
	if err := src.mem.settle(op); err != nil {
		return err
	}
	if err := check(op, driver.MemcpyDtoD(b.mem.ctx.handle, b.ptr, src.ptr, uintptr(b.ByteSize()))); err != nil {
		return err
	}
	b.mem.ctx.legacyQueue()
	return nil
}

// CopyFromDeviceAsync queues a copy of src into the buffer on s.
func (b *DeviceBuffer[T]) CopyFromDeviceAsync(src *DeviceBuffer[T], s *Stream) error {
	const op = "DeviceBuffer.CopyFromDeviceAsync"
	if err := s.valid(op); err != nil {
		return err
	}
	if err := b.checkCopy(op, src); err != nil {
		return err
	}
	if s.ctx != b.mem.ctx {
		return errorf(op, ErrInvalidValue, "the stream belongs to another context than the buffer")
	}
	held, err := holdAll(op, []heldLife{{&b.mem.life, "the device buffer"}, {&src.mem.life, "the source buffer"}, {&s.life, "the stream"}})
	if err != nil {
		return err
	}
	defer releaseAll(held)
	if err := checkOverlap(op, b.ptr, src.ptr, uintptr(b.ByteSize())); err != nil {
		return err
	}
	if err := s.use(op, b.mem, src.mem); err != nil {
		return err
	}
	if err := b.mem.ctx.bind(op); err != nil {
		return err
	}
	defer b.mem.ctx.unbind()
	if b.n == 0 {
		return nil
	}
	if err := s.willQueue(op); err != nil {
		return err
	}
	return check(op, driver.MemcpyDtoDAsync(b.mem.ctx.handle, b.ptr, src.ptr, uintptr(b.ByteSize()), s.handle))
}

// checkCopy validates a copy of src into b on the device.
func (b *DeviceBuffer[T]) checkCopy(op string, src *DeviceBuffer[T]) error {
	if err := b.valid(op); err != nil {
		return err
	}
	if err := src.valid(op); err != nil {
		return err
	}
	if src.mem.ctx != b.mem.ctx {
		return errorf(op, ErrInvalidValue, "the buffers belong to different contexts")
	}
	return b.lengthsMatch(op, "src", src.n)
}

// checkOverlap refuses a copy between two buffers of n bytes at a and b
// that share memory. Compared by address, not by allocation: two records
// may name the same memory (a GrowableBuffer's Buffers, FromRaw over a
// buffer). Call it only with both buffers' lives held: the address of a
// buffer freed meanwhile may already belong to the other one, and the
// copy must then fail with ErrClosed, not as an overlap.
func checkOverlap(op string, a, b driver.DevicePtr, n uintptr) error {
	lo, hi := a, b
	if hi < lo {
		lo, hi = hi, lo
	}
	if n > 0 && uint64(hi-lo) < uint64(n) {
		return errorf(op, ErrInvalidValue, "source and destination overlap")
	}
	return nil
}

// CopyFromHostAsync queues a copy of src, which must have Len elements, into
// the buffer on s and returns at once. Ordinary Go memory in src stays
// pinned (alive and unmoved) until s is synchronized; do not change it
// before. Memory of a PinnedBuffer or a Registered slice needs no pin: its
// Free or Close waits for the copy.
func (b *DeviceBuffer[T]) CopyFromHostAsync(src []T, s *Stream) error {
	const op = "DeviceBuffer.CopyFromHostAsync"
	if err := b.enterWithStream(op, s); err != nil {
		return err
	}
	defer b.leaveWithStream(s)
	if err := b.lengthsMatch(op, "src", len(src)); err != nil || b.n == 0 {
		return err
	}
	return queueOnLocked(op, s, bytesOf(src), func() error {
		return s.enqueue(op, unsafe.SliceData(src), func() driver.Status {
			return memcpyHtoDAsync(s, b.ptr, bytesOf(src))
		})
	})
}

// CopyToHostAsync queues a copy of the buffer into dst, which must have Len
// elements, on s and returns at once. Read dst only after s is
// synchronized; until then ordinary Go memory in dst stays pinned. A
// PinnedBuffer's or Registered slice's Free or Close waits for the copy.
func (b *DeviceBuffer[T]) CopyToHostAsync(dst []T, s *Stream) error {
	const op = "DeviceBuffer.CopyToHostAsync"
	if err := b.enterWithStream(op, s); err != nil {
		return err
	}
	defer b.leaveWithStream(s)
	if err := b.lengthsMatch(op, "dst", len(dst)); err != nil || b.n == 0 {
		return err
	}
	return queueOnLocked(op, s, bytesOf(dst), func() error {
		return s.enqueue(op, unsafe.SliceData(dst), func() driver.Status {
			return memcpyDtoHAsync(s, bytesOf(dst), b.ptr)
		})
	})
}

// Slice returns a buffer over n elements starting at element off. It owns
// nothing: its Free is a no-op, and after the owner's Free its methods
// return ErrClosed.
func (b *DeviceBuffer[T]) Slice(off, n int) (*DeviceBuffer[T], error) {
	const op = "DeviceBuffer.Slice"
	if err := b.valid(op); err != nil {
		return nil, err
	}
	// Held live: Slice and ViewAs bind nothing, yet a buffer of a closed
	// context is ErrClosed as its other methods say.
	if err := b.mem.holdLive(op, "the device buffer"); err != nil {
		return nil, err
	}
	defer b.mem.release()
	switch {
	case off < 0 || n < 0:
		return nil, errorf(op, ErrInvalidValue, "offset %d and length %d: both must be zero or more", off, n)
	case off > b.n || n > b.n-off:
		return nil, errorf(op, ErrInvalidValue, "elements %d to %d (offset %d, length %d) are out of range of a buffer of %d", off, uint64(off)+uint64(n), off, n, b.n)
	}
	return &DeviceBuffer[T]{mem: b.mem, ptr: b.ptr + driver.DevicePtr(uintptr(off)*sizeOf[T]()), n: n}, nil
}

// ViewAs returns a buffer over the same bytes as b with element type U,
// owning nothing (as Slice). b's byte size must be a multiple of U's size,
// and U may not be zero-sized, nor hold a bool.
func ViewAs[U, T any](b *DeviceBuffer[T]) (*DeviceBuffer[U], error) {
	const op = "ViewAs"
	if err := checkElem[U](op, true); err != nil {
		return nil, err
	}
	if err := b.valid(op); err != nil {
		return nil, err
	}
	// Held live: Slice and ViewAs bind nothing, yet a buffer of a closed
	// context is ErrClosed as its other methods say.
	if err := b.mem.holdLive(op, "the device buffer"); err != nil {
		return nil, err
	}
	defer b.mem.release()
	size, bytes := sizeOf[U](), uintptr(b.ByteSize())
	switch {
	case size == 0:
		return nil, errorf(op, ErrInvalidValue, "element type %T has size zero", *new(U))
	case bytes%size != 0:
		return nil, errorf(op, ErrInvalidValue, "%d bytes are not a whole number of %d-byte %T", bytes, size, *new(U))
	case bytes > 0 && uintptr(b.ptr)%alignOf[U]() != 0: // an empty view holds nothing to misalign
		return nil, errorf(op, ErrInvalidValue, "address %#x is not aligned for %T", uint64(b.ptr), *new(U))
	}
	return &DeviceBuffer[U]{mem: b.mem, ptr: b.ptr, n: int(bytes / size)}, nil
}

// Memset8 sets every byte of the buffer to v, after the work gocuda queued
// on the buffer on any stream (as CopyFromHost).
func (b *DeviceBuffer[T]) Memset8(v uint8) error {
	return b.memset("DeviceBuffer.Memset8", 1, uint32(v), nil)
}

// Memset16 sets every 16-bit word of the buffer to v. The byte size must be
// a multiple of 2.
func (b *DeviceBuffer[T]) Memset16(v uint16) error {
	return b.memset("DeviceBuffer.Memset16", 2, uint32(v), nil)
}

// Memset32 sets every 32-bit word of the buffer to v, such as the bits of a
// float32. The byte size must be a multiple of 4.
func (b *DeviceBuffer[T]) Memset32(v uint32) error {
	return b.memset("DeviceBuffer.Memset32", 4, v, nil)
}

// Memset8Async queues Memset8 on s.
func (b *DeviceBuffer[T]) Memset8Async(v uint8, s *Stream) error {
	return b.memsetOn("DeviceBuffer.Memset8Async", 1, uint32(v), s)
}

// Memset16Async queues Memset16 on s.
func (b *DeviceBuffer[T]) Memset16Async(v uint16, s *Stream) error {
	return b.memsetOn("DeviceBuffer.Memset16Async", 2, uint32(v), s)
}

// Memset32Async queues Memset32 on s.
func (b *DeviceBuffer[T]) Memset32Async(v uint32, s *Stream) error {
	return b.memsetOn("DeviceBuffer.Memset32Async", 4, v, s)
}

func (b *DeviceBuffer[T]) memsetOn(op string, width int, v uint32, s *Stream) error {
	if err := s.valid(op); err != nil {
		return err
	}
	return b.memset(op, width, v, s)
}

// memset fills the buffer with v, width bytes at a time, on s, or
// synchronously when s is nil.
func (b *DeviceBuffer[T]) memset(op string, width int, v uint32, s *Stream) error {
	var err error
	if s == nil {
		err = b.enter(op)
	} else {
		err = b.enterWithStream(op, s)
	}
	if err != nil {
		return err
	}
	if s == nil {
		defer b.leave()
	} else {
		defer b.leaveWithStream(s)
	}
	bytes := b.ByteSize()
	if bytes == 0 {
		return nil // no word to set, aligned or not
	}
	if bytes%width != 0 || uintptr(b.ptr)%uintptr(width) != 0 {
		return errorf(op, ErrInvalidValue, "a buffer of %d bytes at %#x is not made of aligned %d-byte words", bytes, uint64(b.ptr), width)
	}
	n := uintptr(bytes / width)
	if s == nil {
		var err error
		switch width {
		case 1:
			err = check(op, driver.MemsetD8(b.mem.ctx.handle, b.ptr, uint8(v), n))
		case 2:
			err = check(op, driver.MemsetD16(b.mem.ctx.handle, b.ptr, uint16(v), n))
		default:
			err = check(op, driver.MemsetD32(b.mem.ctx.handle, b.ptr, v, n))
		}
		if err == nil {
			b.mem.ctx.legacyQueue()
		}
		return err
	}
	if err := s.willQueue(op); err != nil {
		return err
	}
	switch {
	case width == 1:
		return check(op, driver.MemsetD8Async(b.mem.ctx.handle, b.ptr, uint8(v), n, s.handle))
	case width == 2:
		return check(op, driver.MemsetD16Async(b.mem.ctx.handle, b.ptr, uint16(v), n, s.handle))
	default:
		return check(op, driver.MemsetD32Async(b.mem.ctx.handle, b.ptr, v, n, s.handle))
	}
}

// Free releases the buffer's device memory, if it owns it (a buffer from
// Alloc, Zeroed or FromHost); a FromRaw buffer's Free frees nothing. Every
// slice and view of it becomes closed. Free on a slice or view, on a nil
// buffer, or a second time, does nothing. Free waits for calls in flight on
// the buffer, not for queued stream work: synchronize streams that use it
// first. A buffer from AllocAsync is the exception: Free queues its release
// on the stream it was allocated on, after the work queued there and the
// work other streams queued on the buffer, and returns (see AllocAsync). If
// the driver refuses, the buffer stays usable and Free may be called again.
func (b *DeviceBuffer[T]) Free() error {
	const op = "DeviceBuffer.Free"
	m, err := b.freeable(op)
	if m == nil || err != nil {
		return err
	}
	return m.free(op)
}

// freeable returns the allocation Free releases, or nil where it releases
// nothing: a nil buffer, a slice or a view.
func (b *DeviceBuffer[T]) freeable(op string) (*allocation, error) {
	if b == nil {
		return nil, nil
	}
	if err := b.valid(op); err != nil {
		return nil, err
	}
	if !b.frees {
		return nil, nil
	}
	return b.mem, nil
}

// free releases the allocation: the driver's memory if gocuda allocated it.
func (m *allocation) free(op string) error {
	if !m.allocated {
		// The graphs' use is checked inside Close, once the calls in
		// flight are done and new ones refused, as freeWith does: checked
		// before, a graph could take the buffer between the check and the
		// close (a GrowableBuffer's Buffer, whose memory a shrink then
		// unmaps under the graph).
		_, err := m.lt.Close(func() (bool, error) {
			if err := m.graphs.inUse(op, "the device buffer"); err != nil {
				return false, err
			}
			return true, nil
		})
		return err
	}
	if m.stream != nil {
		return m.freeOrdered(op, m.stream)
	}
	if m.ipc {
		return m.freeWith(op, func() error { return closeIPC(op, m.ctx, m.base) })
	}
	return m.freeWith(op, func() error { return check(op, driver.MemFree(m.ctx.handle, m.base)) })
}

// freeWith closes m, freeing its memory with free once no call holds it and
// no graph uses it.
func (m *allocation) freeWith(op string, free func() error) error {
	return m.close(op, "the device buffer", func() error {
		if err := m.graphs.inUse(op, "the device buffer"); err != nil {
			return err
		}
		return free()
	}, m.freed)
}

func formatBytes(n uintptr) string { return describe.Bytes(int64(n)) }

// Memory is device memory that Stream.Do holds for other libraries: every
// *DeviceBuffer[T] is one, whatever T. Kernel launches take it too, and a
// graph's nodes; a *GraphMemory is one only for its graph's nodes.
type Memory interface {
	deviceMemory() (driver.DevicePtr, *allocation)
	deviceBytes() uintptr
}

func (b *DeviceBuffer[T]) deviceMemory() (driver.DevicePtr, *allocation) {
	if b == nil {
		return 0, nil
	}
	return b.ptr, b.mem
}

func (b *DeviceBuffer[T]) deviceBytes() uintptr { return uintptr(b.ByteSize()) }
