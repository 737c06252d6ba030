package cuda

import (
	"runtime"

	"github.com/gocuda/cuda/internal/driver"
)

// Do runs fn with c current on the calling goroutine's OS thread, locked to
// it until fn returns, and c held open (Close waits for fn). It is for
// calling other CUDA libraries, which find the device through the current
// context: the CUDA runtime, and so NCCL, cuBLAS or a cgo kernel library,
// then use the same primary context as gocuda. gocuda's own calls work
// inside fn too; once Close has been called on c they return ErrClosed at
// once (Close waits for fn to return). fn must not close c itself: that
// would wait for fn.
func (c *Context) Do(fn func() error) error {
	const op = "Context.Do"
	if fn == nil {
		return errorf(op, ErrInvalidValue, "nil function")
	}
	if err := c.bindThread(op); err != nil {
		return err
	}
	defer c.unbindThread()
	return fn()
}

// bindThread is bind that always locks the OS thread and makes c current on
// it, whatever the driver backend.
func (c *Context) bindThread(op string) error {
	if err := c.bind(op); err != nil {
		return err
	}
	if !driver.BindsInCall {
		return nil // bind did both
	}
	runtime.LockOSThread()
	if err := c.makeCurrent(op); err != nil {
		c.unbindThread()
		return err
	}
	return nil
}

func (c *Context) unbindThread() {
	if driver.BindsInCall {
		runtime.UnlockOSThread()
	}
	c.unbind()
}

// Do queues work of another library on s: it runs fn as Context.Do does,
// with the raw CUstream handle of s, after the device work that gocuda's
// synchronous calls may have left pending (so that fn's work sees their
// results), and with s and each of mem held open: neither closed nor freed
// before fn returns. fn should only queue work on the stream; Synchronize
// waits for it, like for gocuda's own.
//
// Each of mem must belong to the stream's context.
func (s *Stream) Do(fn func(stream uintptr) error, mem ...Memory) error {
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
	held, err := holdAll(op, held)
	if err != nil {
		return err
	}
	defer releaseAll(held)
	s.uses(allocs...)
	if err := s.ctx.bindThread(op); err != nil {
		return err
	}
	defer s.ctx.unbindThread()
	if err := s.willQueue(op); err != nil {
		return err
	}
	return fn(uintptr(s.handle))
}
