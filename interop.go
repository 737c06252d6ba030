package cuda

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/gocuda/cuda/internal/driver"
)

// Do runs fn with c current on the calling goroutine's OS thread, locked to
// it until fn returns, and c held open (Close waits for fn). It is for
// calling other CUDA libraries, which find the device through the current
// context: the CUDA runtime, and so NCCL, cuBLAS or a cgo kernel library,
// then use the same primary context as gocuda. A Do (or Stream.Do) of
// another context inside fn makes c current again when it returns, for
// the rest of fn. gocuda's own calls work inside fn too, but one on the
// objects of another context may leave that context current: make fn's
// library calls after it inside a Do of c. Once Close has been called on
// c, gocuda's calls return ErrClosed at once (Close waits for fn to
// return). fn must not close c itself: that would wait for fn.
func (c *Context) Do(fn func() error) (err error) {
	const op = "Context.Do"
	if fn == nil {
		return errorf(op, ErrInvalidValue, "nil function")
	}
	prev, err := c.bindThread(op)
	if err != nil {
		return err
	}
	defer func() {
		if uerr := c.unbindThread(op, prev); err == nil {
			err = uerr
		}
	}()
	return fn()
}

// doing counts, for each driver context, the Do and Stream.Do calls under
// way on it, on any thread: a Do that begins with another context current
// makes that one current again when it ends where a Do of it is under way,
// the Do around this one (a context that is not may be released since).
var doing sync.Map // driver.Context -> *atomic.Int32

// doCount returns the count of Do calls under way on h.
func doCount(h driver.Context) *atomic.Int32 {
	if v, ok := doing.Load(h); ok {
		return v.(*atomic.Int32)
	}
	v, _ := doing.LoadOrStore(h, new(atomic.Int32))
	return v.(*atomic.Int32)
}

// doCount returns the count of Do calls under way on c's handle: doing's,
// kept in c once found (an entry of doing is never replaced), so that
// only a Do that begins with another context current looks one up.
func (c *Context) doCount() *atomic.Int32 {
	if n := c.doing.Load(); n != nil {
		return n
	}
	n := doCount(c.handle)
	c.doing.Store(n)
	return n
}

// bindThread is bind that always locks the OS thread and makes c current on
// it, whatever the driver backend. It returns the context that was current
// on the thread before, for unbindThread.
func (c *Context) bindThread(op string) (prev driver.Context, err error) {
	if c == nil {
		return 0, errorf(op, ErrInvalidValue, "nil *Context")
	}
	if err := c.hold(op); err != nil {
		return 0, err
	}
	runtime.LockOSThread()
	st := driver.CtxGetCurrent(&prev)
	if st.OK() && prev != c.handle {
		st = driver.CtxSetCurrent(c.handle)
	}
	if err := check(op, st); err != nil {
		runtime.UnlockOSThread()
		c.life.Release()
		return 0, err
	}
	c.doCount().Add(1)
	return prev, nil
}

// unbindThread undoes bindThread: where prev, current before, is another
// context in a Do under way, it makes prev current again.
func (c *Context) unbindThread(op string, prev driver.Context) error {
	c.doCount().Add(-1)
	var err error
	if prev != 0 && prev != c.handle && doCount(prev).Load() > 0 {
		err = check(op, driver.CtxSetCurrent(prev))
	}
	runtime.UnlockOSThread()
	c.life.Release()
	return err
}

// Do queues work of another library on s: it runs fn as Context.Do does,
// with the raw CUstream handle of s, after the device work that gocuda's
// synchronous calls may have left pending (so that fn's work sees their
// results), and with s and each of mem held open: neither closed nor freed
// before fn returns. fn should only queue work on the stream; Synchronize
// waits for it, like for gocuda's own.
//
// Each of mem must belong to the stream's context.
func (s *Stream) Do(fn func(stream uintptr) error, mem ...Memory) (err error) {
	const op = "Stream.Do"
	if s == nil || fn == nil {
		return errorf(op, ErrInvalidValue, "nil stream or function")
	}
	var heldArray [4]heldLife
	held := append(heldArray[:0], heldLife{&s.life, "the stream"})
	var allocArray [4]*allocation
	allocs := allocArray[:0]
	for i, m := range mem {
		var a *allocation
		if m != nil {
			_, a = m.deviceMemory()
		}
		if a == nil {
			return errorf(op, ErrInvalidValue, "memory %d is nil", i)
		}
		if a.ctx != s.ctx {
			return errorf(op, ErrInvalidValue, "memory %d belongs to another context than the stream", i)
		}
		if a.graphOnly {
			return errorf(op, ErrInvalidValue, "memory %d is a graph's (Graph.AddAlloc), which exists only while the graph runs", i)
		}
		held = append(held, heldLife{&a.life, "a device buffer"})
		allocs = append(allocs, a)
	}
	held, err = holdAll(op, held)
	if err != nil {
		return err
	}
	defer releaseAll(held)
	if err := s.use(op, allocs...); err != nil {
		return err
	}
	prev, err := s.ctx.bindThread(op)
	if err != nil {
		return err
	}
	defer func() {
		if uerr := s.ctx.unbindThread(op, prev); err == nil {
			err = uerr
		}
	}()
	if err := s.willQueue(op); err != nil {
		return err
	}
	return fn(uintptr(s.handle))
}
