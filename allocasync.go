package cuda

import (
	"errors"
	"runtime"

	"github.com/gocuda/cuda/internal/driver"
	"github.com/gocuda/cuda/internal/track"
)

// AllocAsync allocates a device buffer of n elements, uninitialized, in
// stream order on s, from the device's memory pool: the allocation is a
// step of s's work, so work queued on s after this call may use the
// buffer, and Free releases it as a later step of s, returning at once.
// Freed memory goes back to the pool for the next AllocAsync instead of to
// the driver, so that allocating and freeing inside a loop costs about a
// microsecond instead of a cuMemAlloc and a device-wide synchronization.
//
// A loop's repeated sizes cost less still: when a buffer is freed on a
// stream where a buffer of the same byte size was freed since the stream
// was last synchronized, the stream keeps its memory for its next
// stream-ordered allocation of that size from the same pool, which then
// makes no driver call (reusing it later on the same stream, as the pool
// would). What a stream keeps (at most 16 buffers) goes back to the pool
// when the stream or its context is synchronized, when the stream is
// closed or begins a capture, when its context or a pool of the context is
// closed, and when a stream-ordered allocation finds the device out of
// memory; until then the pool's Stats count it as used. Inside a capture
// nothing is kept or reused: the capture's allocations are the graph's.
//
// As in CUDA, the first use of the buffer on another stream is the caller's
// duty to order: record an event on s after AllocAsync and have the other
// stream WaitEvent it first. Its release needs no such care: Free and FreeOn
// order it after the work queued on the buffer through gocuda on every
// stream (an event recorded on each stream of the context with such work not
// known finished, which the freeing stream waits for; a stream of another
// context is synchronized), so that no kernel or copy of another stream runs
// on memory the pool has handed out again. Work queued through a raw
// DevicePtr is not seen; a free while a stream with such work is capturing a
// graph is ErrInvalidValue, the buffer still usable (free it after the
// capture). The buffer's synchronous calls (CopyFromHost, CopyToHost, Memset8
// and the like), which run outside every stream, first wait for the work
// queued on s. n may be zero (an empty buffer, as Alloc's); ErrOutOfMemory
// if the pool cannot grow to hold it.
func AllocAsync[T any](s *Stream, n int) (*DeviceBuffer[T], error) {
	const op = "AllocAsync"
	if err := s.valid(op); err != nil {
		return nil, err
	}
	return allocOrdered[T](op, s, nil, n, func(ptr *driver.DevicePtr, bytes uintptr) driver.Status {
		return driver.MemAllocAsync(s.ctx.handle, ptr, bytes, s.handle)
	})
}

// allocOrdered makes a stream-ordered buffer of n elements on s, allocated
// by alloc, from pool (nil: the device's default pool), which counts it
// until it is freed, by Free or by the cleanup of a buffer nobody freed.
func allocOrdered[T any](op string, s *Stream, pool *MemPool, n int, alloc func(*driver.DevicePtr, uintptr) driver.Status) (*DeviceBuffer[T], error) {
	bytes, err := elemBytes[T](op, "device buffer", n, 0)
	if err != nil {
		return nil, err
	}
	// Held first: an empty buffer of a closed stream is refused too.
	if err := s.hold(op, "the stream"); err != nil {
		return nil, err
	}
	defer s.release()
	if bytes == 0 {
		return empty[T](op, s.ctx, nil)
	}
	ctx := s.ctx
	// The allocation and its own buffer in one object: a small call that
	// allocates its result makes a buffer each time. The buffer refers to
	// the allocation, so that the two become unreachable together, and the
	// cleanup on the allocation runs when it did apart.
	x := &orderedBuffer[T]{}
	m := &x.m
	m.size, m.allocated, m.stream, m.pool = bytes, true, s, pool
	// Memory freed on s before is reused without a driver call: the
	// allocation needs no context bound then, only held.
	if err := ctx.hold(op); err != nil {
		return nil, err
	}
	base, ok := s.cache.take(pool, bytes)
	ctx.life.Release()
	if ok {
		m.base, m.cacheable = base, true
	} else if err := m.allocate(op, s, alloc); err != nil {
		return nil, err
	}
	m.stat = ctx.counter(MemoryStreamOrdered)
	if pool != nil {
		m.stat = ctx.counter(MemoryPool)
	}
	m.stat.add(bytes)
	m.armOrdered()
	x.b = DeviceBuffer[T]{mem: m, ptr: m.base, n: n, frees: true}
	return &x.b, nil
}

// orderedBuffer is a stream-ordered allocation with its buffer.
type orderedBuffer[T any] struct {
	m allocation
	b DeviceBuffer[T]
}

// allocate gets m's memory from the driver with alloc, on s. When the
// device is out of memory and the streams of the context keep freed memory
// for reuse, that memory goes back to its pools, and alloc is tried once
// more.
func (m *allocation) allocate(op string, s *Stream, alloc func(*driver.DevicePtr, uintptr) driver.Status) error {
	ctx := s.ctx
	if err := ctx.bind(op); err != nil {
		return err
	}
	defer ctx.unbind()
	if err := s.willQueue(op); err != nil {
		return err
	}
	st := alloc(&m.base, m.size)
	if st.Code == driver.ErrorOutOfMemory {
		if n, err := ctx.flushAll(op); n > 0 && err == nil {
			st = alloc(&m.base, m.size)
		}
	}
	if err := check(op, st); err != nil {
		if ce := err.(*Error); ce.Err == ErrOutOfMemory {
			ce.Detail = formatBytes(m.size) + " requested"
		}
		return err
	}
	// Read after the allocation: a capture begun before it took it.
	if cs := s.captureOf(); cs != nil {
		m.madeIn = cs
		cs.allocated(m)
	} else {
		m.cacheable = true
	}
	if m.pool != nil {
		m.pool.outstanding.Add(1)
	}
	return nil
}

// armOrdered arms a stream-ordered allocation just made, with the cleanup
// that frees it if nobody does.
func (m *allocation) armOrdered() {
	// A function of no closure, its data the argument: AddCleanup makes
	// a box for the argument and a closure of its own whatever it is
	// given, and a closure of ours would be a third allocation.
	ctx := m.stream.ctx
	m.arm(ctx, track.DeviceBuffer, runtime.AddCleanup(m, releaseOrdered, orderedRelease{ctx, m.base, m.pool, m.stat, m.size}))
}

// orderedRelease is what the cleanup of stream-ordered memory nobody freed
// needs of it.
type orderedRelease struct {
	ctx  *Context
	base driver.DevicePtr
	pool *MemPool
	stat *memCounter
	size uintptr
}

// releaseOrdered is the cleanup of stream-ordered memory nobody freed.
func releaseOrdered(r orderedRelease) {
	r.stat.sub(r.size)
	// Forgotten: no Go code can queue work on it any more, but work
	// queued before may still run, and cuMemFree of stream-ordered
	// memory does not wait for it.
	forgotten(r.ctx, track.DeviceBuffer, func() {
		driver.CtxSynchronize(r.ctx.handle)
		driver.MemFree(r.ctx.handle, r.base)
	})
	r.pool.uncount() // its pool may now close
}

// FreeOn releases a buffer from AllocAsync in stream order on s instead of
// on the stream it was allocated on: after the work queued on s, and after
// the work queued on the buffer through gocuda on other streams, the one it
// was allocated on among them (see AllocAsync). It returns at once; s may
// keep the memory for its own next allocation of the size (see AllocAsync).
// As Free, it does nothing on a nil buffer, a slice or a view, or a buffer
// already freed; a buffer from Alloc is ErrInvalidValue (free it with Free).
func (b *DeviceBuffer[T]) FreeOn(s *Stream) error {
	const op = "DeviceBuffer.FreeOn"
	m, err := b.freeable(op)
	if m == nil || err != nil {
		return err
	}
	if m.stream == nil && m.size != 0 {
		return errorf(op, ErrInvalidValue, "the buffer was not allocated in stream order (AllocAsync): free it with Free")
	}
	if m.lt.IsClosed() {
		return nil // freed already: nothing to queue, whatever s is
	}
	if err := s.valid(op); err != nil {
		return err
	}
	if m.size == 0 {
		return m.free(op) // an empty buffer: nothing to queue
	}
	return m.freeOrdered(op, s)
}

// freeOrdered queues the release of stream-ordered memory on s. When s is
// the stream the memory came from and it is closed, its work is done: the
// memory is released at once, after the context's work (cuMemFree does not
// wait for it).
func (m *allocation) freeOrdered(op string, s *Stream) error {
	if err := s.hold(op, "the stream"); err != nil {
		if s != m.stream || !errors.Is(err, ErrClosed) {
			return err
		}
		return m.freeWith(op, func() error {
			// The context's synchronize waits for its streams; a stream
			// of another context that used the memory (a peer copy's)
			// is waited for on its own.
			var small [pruneAt]*Stream
			for _, o := range m.busyElsewhere(nil, small[:0]) {
				if o.ctx != m.ctx {
					if err := o.drainIfOpen(op); err != nil {
						return err
					}
				}
			}
			if err := check(op, driver.CtxSynchronize(m.ctx.handle)); err != nil {
				return err
			}
			return check(op, driver.MemFree(m.ctx.handle, m.base))
		})
	}
	defer s.release()
	if s.ctx != m.ctx {
		return errorf(op, ErrInvalidValue, "the stream belongs to another context than the buffer")
	}
	// A capture's free is a free node of the graph, which frees only the
	// graph's own memory (the driver refuses another's); and the graph's
	// own memory exists only while the graph runs, so only its capture
	// frees it.
	if cs := s.captureOf(); cs != nil && !cs.owns(m) {
		return errorf(op, ErrInvalidValue, "the stream is capturing a graph (Stream.Capture), which can free only memory allocated in the capture: free the buffer, allocated before, outside the capture")
	}
	if cs := m.stream.captureOf(); cs != nil && s.captureOf() != cs && cs.owns(m) {
		return errorf(op, ErrInvalidValue, "the buffer was allocated in a capture under way (Stream.Capture) and is the graph's: free it in the capture, on the capturing stream or one joined to it")
	}
	// Other streams' work on the memory is ordered before the free (or
	// before s reuses it): waitOn, once no call holds m and none can. A
	// capture's own memory has no uses outside the capture.
	inCapture := s.captureOf() != nil
	if m.cacheable {
		// Kept for s's next allocation of its size, if the cache takes it
		// (no driver call, no context bound, unless another stream's work
		// must be waited for); otherwise freed below.
		kept := false
		_, err := m.lt.Close(func() (bool, error) {
			if err := m.graphs.inUse(op, "the device buffer"); err != nil {
				return false, err
			}
			var small [pruneAt]*Stream
			if busy := m.busyElsewhere(s, small[:0]); len(busy) > 0 {
				if err := s.ctx.bind(op); err != nil {
					return false, err
				}
				err := s.waitOn(op, busy)
				s.ctx.unbind()
				if err != nil {
					return false, err
				}
			}
			kept = s.cache.put(cachedBlock{base: m.base, size: m.size, pool: m.pool})
			return kept, nil
		})
		if kept {
			m.stat.sub(m.size) // the stream's now, not a buffer's
		}
		if kept || err != nil {
			return err
		}
	}
	return m.freeWith(op, func() error {
		if !inCapture {
			var small [pruneAt]*Stream
			if err := s.waitOn(op, m.busyElsewhere(s, small[:0])); err != nil {
				return err
			}
		}
		if err := s.willQueue(op); err != nil {
			return err
		}
		return check(op, driver.MemFreeAsync(m.ctx.handle, m.base, s.handle))
	})
}

// freed tells the pool an allocation came from, if any, and the context's
// MemoryStats that it is gone.
func (m *allocation) freed() {
	m.pool.uncount()
	m.users.forget()
	m.stat.sub(m.size)
}

// drainIfOpen waits for the work queued on s through gocuda, unless s is
// closed (its work is then done). Called with s's context bound.
func (s *Stream) drainIfOpen(op string) error {
	if err := s.hold(op, "the stream"); err != nil {
		if errors.Is(err, ErrClosed) {
			return nil
		}
		return err
	}
	defer s.release()
	if err := s.capturing(op, "a synchronous call on a buffer allocated or used on it would wait for the captured work"); err != nil {
		return err
	}
	return s.drain(op)
}
