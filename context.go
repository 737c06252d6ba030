package cuda

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/gocuda/cuda/internal/driver"
	"github.com/gocuda/cuda/internal/track"
)

// Context is a device's primary context, retained. Every object made in a
// Context (streams, events, buffers) remembers it, and every driver call made
// for that object runs with the context current on the thread that makes it:
// CUDA keeps the current context per OS thread, and goroutines move between
// threads. Callers never lock threads themselves.
//
// A Context is safe for use by many goroutines. Objects of one Context are
// used together: passing a stream of one Context to a buffer of another is
// an error, even when both are of the same device.
type Context struct {
	dev    Device
	handle driver.Context

	// mu is held for reading by every call made in the context, and for
	// writing by Close, so that Close waits for calls in flight and no call
	// starts on a released context.
	mu      sync.RWMutex
	closed  bool
	cleanup runtime.Cleanup

	// legacy is set while synchronous calls may have left work in flight on
	// the context's legacy default stream (see legacyQueued).
	legacy atomic.Bool
}

// legacyQueued records that a synchronous call may have returned before its
// work on the device was done: a copy from pageable memory returns once the
// driver has staged the bytes, a device-to-device copy or a memset once
// queued on the legacy default stream. gocuda's streams are non-blocking,
// not ordered after that stream, so the next work queued on one first waits
// for it (settleLegacy). Waiting lazily, rather than after each such call,
// keeps them as fast as the driver's.
func (c *Context) legacyQueued() { c.legacy.Store(true) }

// settleLegacy waits for work synchronous calls left on the legacy default
// stream, if any. Called with c bound.
func (c *Context) settleLegacy(op string) error {
	if !c.legacy.Load() {
		return nil
	}
	return c.settleLegacyNow(op)
}

// settleLegacyNow waits for the work on c's legacy default stream, pending
// or not. Called with c bound.
func (c *Context) settleLegacyNow(op string) error {
	c.legacy.Store(false)
	if err := check(op, "cuStreamSynchronize", driver.StreamSynchronize(c.handle, 0)); err != nil {
		c.legacy.Store(true)
		return err
	}
	return nil
}

// NewContext retains dev's primary context: the one context per device that
// the CUDA runtime, and so PyTorch and CuPy, share. Close releases it.
func NewContext(dev Device) (*Context, error) {
	const op = "NewContext"
	if err := openDriver(op); err != nil {
		return nil, err
	}
	c := &Context{dev: dev}
	if err := check(op, "cuDevicePrimaryCtxRetain", driver.DevicePrimaryCtxRetain(&c.handle, dev.handle)); err != nil {
		return nil, err
	}
	track.Add(track.Context)
	c.cleanup = runtime.AddCleanup(c, func(d driver.Device) {
		driver.DevicePrimaryCtxRelease(d)
		track.Forgotten(track.Context)
	}, dev.handle)
	return c, nil
}

// Device returns the context's device.
func (c *Context) Device() Device {
	if c == nil {
		return Device{}
	}
	return c.dev
}

// Close releases the context. It waits for calls in flight in the context;
// afterwards every method of the context and of objects made in it returns
// ErrClosed. Close objects made in the context before the context itself:
// the driver destroys what they hold once the last retain of the primary
// context is released. Closing twice, or a nil Context, is a no-op.
func (c *Context) Close() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	c.cleanup.Stop()
	track.Done(track.Context)
	return check("Context.Close", "cuDevicePrimaryCtxRelease_v2", driver.DevicePrimaryCtxRelease(c.dev.handle))
}

// isClosed reports whether Close was called.
func (c *Context) isClosed() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.closed
}

// bind holds c against Close until the matching unbind and, where the
// driver backend does not bind in each call (purego), makes c current on the
// calling goroutine's OS thread, locked to it until unbind. With cgo each
// generated call binds its context itself, in the same crossing.
func (c *Context) bind(op string) error {
	if c == nil {
		return errorf(op, ErrInvalidValue, "nil *Context")
	}
	c.mu.RLock()
	if c.closed {
		c.mu.RUnlock()
		return closed(op, "the context")
	}
	if driver.BindsInCall {
		return nil
	}
	runtime.LockOSThread()
	if err := c.makeCurrent(op); err != nil {
		c.unbind()
		return err
	}
	return nil
}

// makeCurrent makes c current on the calling thread, if it is not.
func (c *Context) makeCurrent(op string) error {
	var cur driver.Context
	call, r := "cuCtxGetCurrent", driver.CtxGetCurrent(&cur)
	if r == driver.Success && cur != c.handle {
		call, r = "cuCtxSetCurrent", driver.CtxSetCurrent(c.handle)
	}
	return check(op, call, r)
}

func (c *Context) unbind() {
	if !driver.BindsInCall {
		runtime.UnlockOSThread()
	}
	c.mu.RUnlock()
}

// Synchronize waits until the device has finished all work queued in the
// context, on every stream, and returns the first error of that work.
func (c *Context) Synchronize() error {
	const op = "Context.Synchronize"
	if err := c.bind(op); err != nil {
		return err
	}
	defer c.unbind()
	pending := c.legacy.Swap(false)
	if err := check(op, "cuCtxSynchronize", driver.CtxSynchronize(c.handle)); err != nil {
		if pending {
			c.legacy.Store(true)
		}
		return err
	}
	return nil
}

// MemInfo returns the free and total device memory, in bytes.
func (c *Context) MemInfo() (free, total uint64, err error) {
	const op = "Context.MemInfo"
	if err := c.bind(op); err != nil {
		return 0, 0, err
	}
	defer c.unbind()
	var f, t uintptr
	if err := check(op, "cuMemGetInfo_v2", driver.MemGetInfo(c.handle, &f, &t)); err != nil {
		return 0, 0, err
	}
	return uint64(f), uint64(t), nil
}

// StreamPriorityRange returns the range of stream priorities: least is the
// lowest priority (usually 0) and greatest the highest (a negative number:
// lower numbers mean higher priority).
func (c *Context) StreamPriorityRange() (least, greatest int, err error) {
	const op = "Context.StreamPriorityRange"
	if err := c.bind(op); err != nil {
		return 0, 0, err
	}
	defer c.unbind()
	var l, g int32
	if err := check(op, "cuCtxGetStreamPriorityRange", driver.CtxGetStreamPriorityRange(c.handle, &l, &g)); err != nil {
		return 0, 0, err
	}
	return int(l), int(g), nil
}
