package cuda

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/gocuda/cuda/internal/capturegate"
	"github.com/gocuda/cuda/internal/driver"
	"github.com/gocuda/cuda/internal/lifetime"
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
// an error, even when both are of the same device. The zero Context is not
// usable: its methods return ErrInvalidValue.
type Context struct {
	// life is held by every call made in the context (bind) and closed by
	// Close, which waits for calls in flight; no call starts on a released
	// context.
	life   lifetime.Life
	dev    Device
	handle driver.Context

	// legacyQueued counts the synchronous calls that may have left work in
	// flight on the context's legacy default stream, each counted after the
	// driver call returned; legacySettled is the count of those a finished
	// synchronize of that stream has seen done (see legacyQueue).
	legacyQueued, legacySettled atomic.Uint64

	// io is the staging buffer ReadFrom and WriteTo use when given none,
	// kept between calls so that they do not page-lock memory each time;
	// nil while a call has it (a call beside it makes one of its own).
	// ioCalls counts those calls under way, which Close waits for before
	// it frees io; ioClosing refuses new ones meanwhile. ioMu guards the
	// three and is a leaf: nothing else is locked while it is held.
	ioMu      sync.Mutex
	ioDone    sync.Cond // on ioMu: ioCalls fell to 0
	io        *StagingBuffer
	ioCalls   int
	ioClosing bool

	// caches are the block caches of the context's open streams (see
	// blockCache, which says how its locks nest); cacheMu guards the map.
	cacheMu sync.Mutex
	caches  map[*blockCache]struct{}

	// cond is the set-condition kernel of conditional graph nodes.
	cond condKernel

	// mem counts the memory of the context's buffers (MemoryStats).
	mem [memoryKinds]memCounter

	// releases are what other packages release before the context closes
	// (compute's kernels: internal/attach). closeMu is held by Close, the
	// first lock it takes.
	releases contextReleases
	closeMu  sync.Mutex

	// doing is the count of Do calls under way on handle (interop.go's
	// doing), found once: a Do then costs no map lookup.
	doing atomic.Pointer[atomic.Int32]

	// cc is the device's compute capability, major<<16 | minor, plus one;
	// 0 until a launch that needs it asked the driver (computeCapability):
	// each programmatic dependent launch checks it.
	cc atomic.Int32
}

// computeCapability returns the compute capability of the context's
// device, asked of the driver once.
func (c *Context) computeCapability() (Version, error) {
	if v := c.cc.Load(); v > 0 {
		return Version{Major: int(v-1) >> 16, Minor: int(v-1) & 0xffff}, nil
	}
	v, err := c.dev.ComputeCapability()
	if err != nil {
		return Version{}, err
	}
	c.cc.Store(int32(v.Major<<16|v.Minor) + 1)
	return v, nil
}

// legacyQueue records that a synchronous call, just returned, may have left
// its work on the device unfinished: a copy from pageable memory returns
// once the driver has staged the bytes, a device-to-device copy or a memset
// once queued on the legacy default stream. gocuda's streams are
// non-blocking, not ordered after that stream, so the next work queued on
// one first waits for it (settleLegacy). Waiting lazily, rather than after
// each such call, keeps them as fast as the driver's.
//
// The count is taken after the call returns, and a settle reads it before
// its synchronize starts: a settle that saw count q covers every call
// counted up to q, whichever goroutine made it, and a goroutine's own later
// settle always sees its own calls. (A flag cleared by one goroutine while
// another's work was still running would not.)
func (c *Context) legacyQueue() { c.legacyQueued.Add(1) }

// settleLegacy waits for the work synchronous calls left on the legacy
// default stream, if any is not yet known finished. Called with c bound.
func (c *Context) settleLegacy(op string) error {
	q := c.legacyQueued.Load()
	if c.legacySettled.Load() >= q {
		return nil
	}
	if err := check(op, driver.StreamSynchronize(c.handle, 0)); err != nil {
		return err
	}
	c.legacyDone(q)
	return nil
}

// legacyPending reports whether counted calls may still be in flight.
func (c *Context) legacyPending() bool { return c.legacySettled.Load() < c.legacyQueued.Load() }

// legacyDone records that the first q counted calls have finished.
func (c *Context) legacyDone(q uint64) {
	for {
		old := c.legacySettled.Load()
		if old >= q || c.legacySettled.CompareAndSwap(old, q) {
			return
		}
	}
}

// NewContext retains dev's primary context: the one context per device that
// the CUDA runtime, and so PyTorch and CuPy, share. Close releases it.
func NewContext(dev Device) (*Context, error) { return newContext("NewContext", dev) }

func newContext(op string, dev Device) (*Context, error) {
	if err := openDriver(op); err != nil {
		return nil, err
	}
	if err := dev.valid(op); err != nil {
		return nil, err
	}
	c := &Context{dev: dev}
	c.ioDone.L = &c.ioMu
	if err := check(op, driver.DevicePrimaryCtxRetain(&c.handle, dev.handle)); err != nil {
		return nil, err
	}
	c.life.Arm(track.Context, runtime.AddCleanup(c, func(d driver.Device) {
		track.Forgotten(track.Context)
		capturegate.Cleanup(func() { driver.DevicePrimaryCtxRelease(d) })
	}, dev.handle))
	return c, nil
}

// Open is the one call to start: it returns device ordinal's primary
// context (NewContext) and a new stream in it, for the work to queue. Close
// both when done, the stream first:
//
//	ctx, s, err := cuda.Open(0)
//	if err != nil {
//		return err // no driver, or no such device: the error says which
//	}
//	defer ctx.Close()
//	defer s.Close()
func Open(ordinal int) (*Context, *Stream, error) {
	const op = "Open" // the call the user made, in every error it returns
	dev, err := getDevice(op, ordinal)
	if err != nil {
		return nil, nil, err
	}
	ctx, err := newContext(op, dev)
	if err != nil {
		return nil, nil, err
	}
	s, err := ctx.newStream(op, 0)
	if err != nil {
		lifetime.CloseTemp(&err, ctx.Close)
		return nil, nil, err
	}
	return ctx, s, nil
}

// Device returns the context's device.
func (c *Context) Device() Device {
	if c == nil {
		return Device{}
	}
	return c.dev
}

// Close releases the context. It waits for calls in flight in the context;
// calls made while it runs, and afterwards every method of the context and
// of objects made in it, return ErrClosed. It frees the staging buffer
// ReadFrom and WriteTo keep in the context, gives the memory its streams
// keep for reuse (AllocAsync) back to its pools, and closes the graphs,
// graph instances and growable buffers made in it that are still open,
// which the driver does not destroy with a context. Close the other objects
// made in the context before the context itself: the driver destroys what
// they hold once the last retain of the primary context is released.
// Afterwards each object's Close (or Free) returns nil. Two Closes at once
// take turns. Closing twice,
// or a nil Context, is a no-op; if the driver refuses the release, the
// context stays open and Close may be called again.
func (c *Context) Close() error {
	if c == nil {
		return nil
	}
	const op = "Context.Close"
	// One Close at a time: a second one, finding the releases taken,
	// would close the context under the first one's releases, which then
	// could release nothing.
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	if c.life.Status() == lifetime.Held {
		if err := c.runReleases(); err != nil {
			return err // the context stays open; Close tries them again
		}
	}
	if err := c.flushCaches(op); err != nil {
		c.releases.reopen()
		return err
	}
	c.closeCondKernel()
	if err := c.closeIO(); err != nil {
		c.releases.reopen()
		return err
	}
	s, err := c.life.Close(func() (bool, error) {
		if err := check(op, driver.DevicePrimaryCtxRelease(c.dev.handle)); err != nil {
			return false, stillOpen(err, "the context")
		}
		return true, nil
	})
	if s != lifetime.Closed {
		c.reopenIO()
		c.releases.reopen()
	}
	if s == lifetime.Zero {
		return holdErr(op, "the Context", s)
	}
	return err
}

// takeIO starts a ReadFrom or WriteTo given no staging buffer: it returns
// the context's, or a new one while another call has that, and counts the
// call until giveIO. It refuses once Close has begun.
func (c *Context) takeIO(op string) (*StagingBuffer, error) {
	c.ioMu.Lock()
	defer c.ioMu.Unlock()
	if c.ioClosing {
		return nil, errorf(op, ErrClosed, "the context is closing")
	}
	c.ioCalls++
	sb := c.io
	c.io = nil
	if sb == nil {
		sb = new(StagingBuffer) // its memory is allocated at first use
	}
	return sb, nil
}

// giveIO ends a call takeIO started: sb becomes the context's staging
// buffer again, or is closed where the context has one already.
func (c *Context) giveIO(sb *StagingBuffer) error {
	c.ioMu.Lock()
	keep := c.io == nil
	if keep {
		c.io = sb
	}
	c.ioMu.Unlock()
	// The call is counted until sb is closed, so that Context.Close, which
	// waits for the count, never releases the context under that Close.
	var err error
	if !keep {
		lifetime.CloseTemp(&err, sb.Close)
	}
	c.ioMu.Lock()
	if c.ioCalls--; c.ioCalls == 0 {
		c.ioDone.Broadcast()
	}
	c.ioMu.Unlock()
	return err
}

// closeIO refuses new ReadFrom and WriteTo calls given no staging buffer,
// waits for those under way, and frees the context's staging buffer. If
// that fails, the context stays as it was.
func (c *Context) closeIO() error {
	c.ioMu.Lock()
	c.ioClosing = true
	for c.ioCalls > 0 {
		c.ioDone.Wait()
	}
	sb := c.io
	c.io = nil
	c.ioMu.Unlock()
	if err := sb.Close(); err != nil {
		c.ioMu.Lock()
		c.io, c.ioClosing = sb, false
		c.ioMu.Unlock()
		return err
	}
	return nil
}

// reopenIO undoes closeIO's refusal, for a Close that failed.
func (c *Context) reopenIO() {
	c.ioMu.Lock()
	c.ioClosing = false
	c.ioMu.Unlock()
}

// open returns ErrClosed where c is closed or closing, without holding it:
// for a call on an object of c that binds nothing (see life.holdLive).
func (c *Context) open(op string) error {
	if c.life.Status() == lifetime.Closed {
		return closed(op, "the context")
	}
	return nil
}

// isClosed reports whether Close released the context.
func (c *Context) isClosed() bool { return c.life.IsClosed() }

// bind holds c against Close until the matching unbind and, where the
// driver backend does not bind in each call (purego), makes c current on the
// calling goroutine's OS thread, locked to it until unbind. With cgo each
// generated call binds its context itself, in the same crossing.
func (c *Context) bind(op string) error {
	if c == nil {
		return errorf(op, ErrInvalidValue, "nil *Context")
	}
	if err := c.hold(op); err != nil {
		return err
	}
	if err := c.bindHeld(op); err != nil {
		c.life.Release()
		return err
	}
	return nil
}

// hold keeps c open until c.life.Release, without making it current: for
// a call that reaches no driver function.
func (c *Context) hold(op string) error { return holdErr(op, "the context", c.life.Hold()) }

// bindHeld is bind for a call made on behalf of an operation that holds c
// already, on another goroutine: it makes c current (purego) without
// holding c again, which a Close under way would refuse in the middle of
// that operation.
func (c *Context) bindHeld(op string) error {
	if driver.BindsInCall {
		return nil
	}
	runtime.LockOSThread()
	if err := c.makeCurrent(op); err != nil {
		runtime.UnlockOSThread()
		return err
	}
	return nil
}

func (c *Context) unbindHeld() {
	if !driver.BindsInCall {
		runtime.UnlockOSThread()
	}
}

// doHeld runs calls, driver calls for an operation that holds c, between
// bindHeld and unbindHeld.
func (c *Context) doHeld(op string, calls func() error) error {
	if err := c.bindHeld(op); err != nil {
		return err
	}
	defer c.unbindHeld()
	return calls()
}

// makeCurrent makes c current on the calling thread, if it is not.
func (c *Context) makeCurrent(op string) error {
	var cur driver.Context
	s := driver.CtxGetCurrent(&cur)
	if s.OK() && cur != c.handle {
		s = driver.CtxSetCurrent(c.handle)
	}
	return check(op, s)
}

func (c *Context) unbind() {
	c.unbindHeld()
	c.life.Release()
}

// Synchronize waits until the device has finished all work queued in the
// context, on every stream, and returns the first error of that work.
func (c *Context) Synchronize() error {
	const op = "Context.Synchronize"
	if err := c.bind(op); err != nil {
		return err
	}
	defer c.unbind()
	if _, err := c.flushAll(op); err != nil {
		return err
	}
	q := c.legacyQueued.Load()
	if err := check(op, driver.CtxSynchronize(c.handle)); err != nil {
		return err
	}
	c.legacyDone(q)
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
	if err := check(op, driver.MemGetInfo(c.handle, &f, &t)); err != nil {
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
	if err := check(op, driver.CtxGetStreamPriorityRange(c.handle, &l, &g)); err != nil {
		return 0, 0, err
	}
	return int(l), int(g), nil
}
