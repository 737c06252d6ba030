// Package libhandle is what the library packages' Handle (cublas,
// cusparse, cusolver, cudnn) shares, apart from the library: a handle
// bound to one stream, held by its calls and closed once they are done,
// whose calls take turns, with the device work buffers the library asks
// for, and a Close that may be tried again after a failure. Each package
// keeps what is its own: the library's objects (made with Make, released
// by the destroy it gives Close), its settings, and its String's details.
package libhandle

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/attach"
	"github.com/gocuda/cuda/internal/calledas"
	"github.com/gocuda/cuda/internal/capturegate"
	"github.com/gocuda/cuda/internal/describe"
	"github.com/gocuda/cuda/internal/lifetime"
	"github.com/gocuda/cuda/internal/track"
)

// Errors makes a package's own errors (its Error type, matching
// sentinel). A zero value of it must work: a zero Base has nothing else
// to make its errors with.
type Errors interface {
	Errorf(op string, sentinel error, format string, args ...any) error
}

// Base is the shared part of a Handle, its field. The zero Base is a
// zero Handle's: every call refuses it with cuda.ErrInvalidValue.
type Base[E Errors] struct {
	// life is held by every call and closed by Close, which waits for the
	// calls in flight (internal/lifetime).
	life lifetime.Life
	// mu makes calls take turns: a library's handle is not for
	// concurrent use, and the work buffers and what the package keeps
	// beside them are shared. Lock order: life's hold, then mu, then the
	// holds Stream.Do takes on the stream and the buffers.
	mu        sync.Mutex
	stream    *cuda.Stream
	rawStream uintptr // the stream's CUstream, for String
	ctx       *cuda.Context
	// work are the work buffers, nil until a call needs one (Call.Work);
	// guarded by mu. workName names them in messages ("the work area").
	work     []*cuda.DeviceBuffer[byte]
	workName string
	// owner is the handle's registration on its context's Close
	// (Spec.Owner), forgotten once the handle is closed.
	owner *attach.Owner
	// unfinished is set by a Close that released the library's objects
	// but failed to free a work buffer: calls are refused (there is
	// nothing left to make them with) until a Close finishes.
	unfinished atomic.Bool
}

// Spec is what Arm is told of a new handle.
type Spec struct {
	// Stream is the stream the handle queues its work on, RawStream its
	// CUstream (Make returns it).
	Stream    *cuda.Stream
	RawStream uintptr
	// Kind counts the handle (internal/track); Cleanup is the backstop
	// that releases the library's objects of a handle nobody closed
	// (runtime.AddCleanup with Forgotten).
	Kind    track.Kind
	Cleanup runtime.Cleanup
	// Owner is the handle's tie to its context's Close (NewOwner), which
	// closes a handle still open, since the driver does not destroy a
	// library's objects with the context (their host memory would stay the
	// process's). Cleanup takes it and calls Forgotten.
	Owner *attach.Owner
	// Work are the work buffers' slots: nil ones are made by the first
	// call that needs them (Call.Work), others given (a workspace made
	// with the handle). Close frees them after the library's objects.
	// WorkName names them in messages: "the workspace", "a work buffer".
	Work     []*cuda.DeviceBuffer[byte]
	WorkName string
}

// Make runs create with s's context current and its CUstream, which it
// returns: create makes the library's objects and binds them to the
// stream. Where it fails, destroy releases what it made (destroy must
// pass over what was not made), and the error is named op. mem is held
// open with the stream.
func Make(op string, s *cuda.Stream, create func(stream uintptr) error, destroy func(op string) error, mem ...cuda.Memory) (uintptr, error) {
	var raw uintptr
	err := s.Do(func(stream uintptr) error {
		raw = stream
		err := create(stream)
		if err != nil {
			lifetime.CloseTemp(&err, func() error { return destroy(op) })
		}
		return err
	}, mem...)
	return raw, calledas.Op(op, err)
}

// Forgotten is the body of the cleanup of a handle nobody closed: it
// counts it and has its owner (Spec.Owner) release the library's objects,
// unless the context's Close did, once no global capture forbids it
// (internal/capturegate). The work buffers are buffers of their own, freed
// by their own cleanups.
func Forgotten(kind track.Kind, owner *attach.Owner) {
	track.Forgotten(kind)
	capturegate.Cleanup(owner.Destroy)
}

// NewOwner returns the Spec.Owner of h, a handle of ctx: the context's
// Close closes h, or, where h was collected and its cleanup has not run,
// releases the library's objects with destroy, with ctx current.
func NewOwner[H any](ctx *cuda.Context, h *H, close func(*H) error, destroy func(op string) error) *attach.Owner {
	return attach.NewOwner(ctx, h, close, func() error { return closedIsGone(ctx.Do(func() error { return destroy("Handle cleanup") })) })
}

// closedIsGone is err, nil where it is ErrClosed: a closed context took
// what there was to release.
func closedIsGone(err error) error {
	if errors.Is(err, cuda.ErrClosed) {
		return nil
	}
	return err
}

// Arm makes c live, as spec says. It is called once, by New, before the
// handle is shared. It returns an error where the context is closing or closed, and the
// handle cannot be tied to its Close: the caller closes the handle and
// returns the error.
func (c *Base[E]) Arm(spec Spec) error {
	c.stream, c.rawStream, c.ctx = spec.Stream, spec.RawStream, spec.Stream.Context()
	c.work, c.workName = spec.Work, spec.WorkName
	c.owner = spec.Owner
	c.life.Arm(spec.Kind, spec.Cleanup)
	return c.owner.Register()
}

func (c *Base[E]) errorf(op string, sentinel error, format string, args ...any) error {
	var e E
	return e.Errorf(op, sentinel, format, args...)
}

// Stream returns the handle's stream, nil for a nil or zero one.
func (c *Base[E]) Stream() *cuda.Stream {
	if c == nil {
		return nil
	}
	return c.stream
}

// RawStream returns the handle's stream's CUstream, for a library's call
// made in a Do.
func (c *Base[E]) RawStream() uintptr { return c.rawStream }

// Context returns the handle's stream's context, nil for a zero one.
func (c *Base[E]) Context() *cuda.Context { return c.ctx }

// Operand names a call's argument in errors, with its context.
type Operand struct {
	Name string
	Ctx  *cuda.Context
}

// Arg is buffer b as an Operand named name.
func Arg[T any](name string, b *cuda.DeviceBuffer[T]) Operand {
	return Operand{Name: name, Ctx: b.Context()}
}

// SameContext refuses, by its name, an operand of another context than
// the handle's, or of none (a zero DeviceBuffer): Stream.Do, under Do, can
// tell one only by its place among the call's memory ("memory 3").
func (c *Base[E]) SameContext(op string, operands ...Operand) error {
	for _, o := range operands {
		if o.Ctx != c.ctx {
			return c.errorf(op, cuda.ErrInvalidValue, "%s", OtherContext(o.Name, o.Ctx))
		}
	}
	return nil
}

// OtherContext says what is wrong with an operand named name, of context
// ctx, that is not of the handle's context: a zero buffer (ctx nil), or
// memory of another context. The packages that check their operands
// themselves (cublas, cusolver) wrap it in their errors.
func OtherContext(name string, ctx *cuda.Context) string {
	if ctx == nil {
		return name + " is a zero cuda.DeviceBuffer: make one with cuda.Alloc or cuda.FromHost"
	}
	return name + " belongs to another context than the handle"
}

// Valid returns the error for a nil or zero handle: c is nil for a nil
// *Handle (a package's Handle has no Base to give then).
func (c *Base[E]) Valid(op string) error {
	switch {
	case c == nil:
		return c.errorf(op, cuda.ErrInvalidValue, "nil *Handle")
	case c.life.Status() == lifetime.Zero:
		return c.errorf(op, cuda.ErrInvalidValue, "a zero Handle: make one with New")
	}
	return nil
}

// Hold keeps the handle open until Release: it refuses a nil, zero or
// closed one, and one whose Close failed to free a work buffer.
func (c *Base[E]) Hold(op string) error {
	if err := c.Valid(op); err != nil {
		return err
	}
	if c.life.Hold() != lifetime.Held {
		return c.errorf(op, cuda.ErrClosed, "the handle is closed")
	}
	if c.unfinished.Load() {
		c.life.Release()
		return c.errorf(op, cuda.ErrClosed, "the handle is closed, but its Close failed to free %s: call Close again", c.workName)
	}
	return nil
}

// Release ends a Hold that succeeded.
func (c *Base[E]) Release() { c.life.Release() }

// Lock takes the handle's turn, for what the package keeps beside the
// library's handle (settings, plans); Unlock gives it back. Lock comes
// after a Hold, where there is one.
func (c *Base[E]) Lock()   { c.mu.Lock() }
func (c *Base[E]) Unlock() { c.mu.Unlock() }

// Call is what Do's fn is given.
type Call[E Errors] struct {
	op string
	c  *Base[E]
	// Stream is the stream's CUstream.
	Stream uintptr
	// Capturing says whether the stream captures: then the work buffers
	// are among the memory the call holds, so that the graph keeps them
	// from being freed, and one that must grow is refused.
	Capturing bool
}

// Work returns the address of work buffer i of at least n bytes, 0 for 0
// bytes, growing it first where it is smaller: stream-ordered, on the
// handle's stream, the old one freed after the work queued there. While
// the stream captures, a buffer that must grow is refused (its
// allocation would be the graph's): run the call once outside the
// capture first.
func (k *Call[E]) Work(i int, n uintptr) (uintptr, error) {
	if n == 0 {
		return 0, nil
	}
	if b := k.c.work[i]; b != nil && uintptr(b.Len()) >= n {
		return uintptr(b.Ptr()), nil
	}
	if k.Capturing {
		return 0, k.c.errorf(k.op, cuda.ErrNotSupported, "the stream captures and %s must grow to %d bytes: run the call once before the capture", k.c.workName, n)
	}
	if err := k.c.grow(k.op, i, n); err != nil {
		return 0, err
	}
	return uintptr(k.c.work[i].Ptr()), nil
}

// Buffer returns work buffer i as it is, nil before a call made it.
// Called in the handle's turn.
func (c *Base[E]) Buffer(i int) *cuda.DeviceBuffer[byte] { return c.work[i] }

// Do runs fn with the handle held, its turn taken, and its stream and mem
// held open with their context current (Stream.Do); while the stream
// captures, the work buffers too. Its errors of package cuda are named
// op.
func (c *Base[E]) Do(op string, mem []cuda.Memory, fn func(k *Call[E]) error) error {
	if err := c.Hold(op); err != nil {
		return err
	}
	defer c.life.Release()
	c.mu.Lock()
	defer c.mu.Unlock()
	k := &Call[E]{op: op, c: c, Capturing: c.stream.Capturing()}
	if k.Capturing {
		for _, b := range c.work {
			if b != nil {
				mem = append(mem, b)
			}
		}
	}
	return calledas.Op(op, c.stream.Do(func(stream uintptr) error {
		k.Stream = stream
		return fn(k)
	}, mem...))
}

// Idle is Do for a call that has nothing to queue (a problem with no
// elements): it holds what a call with work holds, so that a closed
// handle or stream, or freed memory, is an error there too (ErrClosed),
// not the nil an empty problem would otherwise earn it.
func (c *Base[E]) Idle(op string, mem []cuda.Memory) error {
	return c.Do(op, mem, func(*Call[E]) error { return nil })
}

// grow replaces work buffer i by one of at least n bytes (rounded up to
// 1 MiB past 1 MiB, so that sizes close to one another share a buffer):
// the new one is allocated first, so that a failure leaves the old one,
// which is then freed on the stream, after the work queued there. Called
// in the handle's turn.
func (c *Base[E]) grow(op string, i int, n uintptr) error {
	const round = 1 << 20
	if n > round {
		n = (n + round - 1) / round * round
	}
	b, err := cuda.AllocAsync[byte](c.stream, int(n))
	if err != nil {
		return calledas.Op(op, err)
	}
	old := c.work[i]
	c.work[i] = b
	if old != nil {
		if err := old.FreeOn(c.stream); err != nil {
			lifetime.CloseTemp(&err, func() error { return old.FreeOn(c.stream) })
			return calledas.Op(op, err)
		}
	}
	return nil
}

// WorkBytes returns the bytes of device memory the work buffers hold
// now, 0 for a nil or zero handle.
func (c *Base[E]) WorkBytes() int {
	if c == nil || c.life.Status() == lifetime.Zero {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, b := range c.work {
		if b != nil {
			n += b.Len()
		}
	}
	return n
}

// String describes the handle, as package cuda's objects print: kind,
// its device, its stream's CUstream and more, with "closed" once closed,
// or closed and why until a failed Close finishes; kind(nil) for a nil
// one. It calls neither the library nor the driver.
func (c *Base[E]) String(kind string, more ...string) string {
	if c == nil {
		return kind + "(nil)"
	}
	st := c.life.Status()
	if st == lifetime.Zero {
		return describe.Object(kind, st)
	}
	parts := append([]string{c.ctx.Device().String(), fmt.Sprintf("stream %#x", c.rawStream)}, more...)
	if c.unfinished.Load() {
		// Refusing calls, as a closed handle does, until Close finishes.
		return describe.Object(kind, lifetime.Held, append(parts, "closed ("+c.workName+" is not freed: call Close again)")...)
	}
	return describe.Object(kind, st, parts...)
}

// Close waits for the calls in flight, releases the library's objects
// with destroy, with the context current (the library waits for the
// device's work as it does), unless a Close before did, then frees the
// work buffers. Close of a closed handle returns nil. Once the context
// is closed, the library's objects went with it, and Close frees what is
// left.
//
// A Close that fails may be tried again, and finishes what the failed
// one left. Where the library refused to release its objects, the handle
// is left usable; where they are gone but a work buffer could not be
// freed (the driver refused, or a graph that captured a call still uses
// it), calls are refused with cuda.ErrClosed until a Close finishes.
func (c *Base[E]) Close(op string, destroy func(op string) error) error {
	return c.CloseWith(op, func() (bool, error) {
		if !c.unfinished.Load() {
			if err := c.Destroy(op, destroy); err != nil {
				return false, err
			}
		}
		for i, b := range c.work {
			if b == nil {
				continue
			}
			if err := b.Free(); err != nil && !errors.Is(err, cuda.ErrClosed) {
				c.unfinished.Store(true)
				return false, calledas.Unfreed(op, c.workName, err)
			}
			c.work[i] = nil
		}
		return true, nil
	})
}

// CloseWith is Close with a release of the package's own: it waits for
// the calls in flight and runs release, which reports whether all is
// released (then the handle is closed for good) or the handle stays
// usable, to be closed again.
func (c *Base[E]) CloseWith(op string, release func() (gone bool, err error)) error {
	if err := c.Valid(op); err != nil {
		return err
	}
	_, err := c.life.Close(func() (bool, error) {
		gone, err := release()
		if gone {
			c.owner.Closed()
		}
		return gone, err
	})
	return err
}

// Destroy runs destroy with the context current, as Close does. A closed
// context is no error: its Close closed the handle first (Spec.Owner), or
// the handle was made while it ran, with nothing left to destroy it with.
func (c *Base[E]) Destroy(op string, destroy func(op string) error) error {
	if err := c.ctx.Do(func() error { return destroy(op) }); err != nil && !errors.Is(err, cuda.ErrClosed) {
		return calledas.Op(op, err)
	}
	return nil
}
