package nccl

import (
	"sync/atomic"
	"unsafe"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/calledas"
	clib "github.com/gocuda/cuda/internal/lib/nccl"
	"github.com/gocuda/cuda/internal/lifetime"
	"github.com/gocuda/cuda/internal/uses"
)

// Registration is a device buffer registered with a communicator
// (ncclCommRegister), which lets NCCL move it without copying through its
// own buffers on the transports that can (NVLink SHARP, collnet, the
// network's zero-copy paths); on others registering changes nothing.
// While registered, the buffer cannot be freed: its Free returns
// cuda.ErrInvalidValue. Close it before freeing the buffer; closing the
// communicator closes its registrations. The zero Registration is not
// usable.
type Registration struct {
	life    lifetime.Life
	c       *Comm
	handle  unsafe.Pointer // NCCL's, never Go memory
	bytes   uintptr        // what is registered, for String
	release func()
}

// Register registers buf, device memory of the communicator's context,
// with c (NCCL 2.19 and later).
func (c *Comm) Register(buf cuda.Memory) (*Registration, error) {
	const op = "Comm.Register"
	if err := c.hold(op); err != nil {
		return nil, err
	}
	defer c.life.Release()
	// A registration is made only where it can be ended: an NCCL that
	// lacks either function has no registrations.
	if !has("ncclCommRegister") || !has("ncclCommDeregister") {
		return nil, check(op, "ncclCommRegister", clib.Missing)
	}
	if b, ok := buf.(interface{ Context() *cuda.Context }); ok && b.Context() != nil && b.Context() != c.ctx {
		return nil, errorf(op, cuda.ErrInvalidValue, "buf belongs to another context than the communicator's rank")
	}
	ptr, bytes, release, err := uses.Acquire(op, buf)
	if err != nil {
		return nil, err
	}
	if bytes == 0 {
		release()
		return nil, errorf(op, cuda.ErrInvalidValue, "buf is empty: there is nothing to register")
	}
	handle := new(unsafe.Pointer)
	if err := bound(op, c.ctx, func() error {
		return c.do(op, "ncclCommRegister", clib.CommRegister(c.handle, ptr, bytes, handle))
	}); err != nil {
		release()
		return nil, err
	}
	r := &Registration{c: c, handle: *handle, bytes: bytes, release: release}
	r.life.ArmUntracked()
	c.regMu.Lock()
	if c.regs == nil {
		c.regs = map[*Registration]struct{}{}
	}
	c.regs[r] = struct{}{}
	c.regMu.Unlock()
	return r, nil
}

// Close deregisters the buffer (ncclCommDeregister); it may then be freed.
// Closing twice, a nil Registration, or one whose communicator is closed,
// is a no-op; if NCCL refuses, the registration stays and Close may be
// called again.
func (r *Registration) Close() error {
	const op = "Registration.Close"
	if r == nil {
		return nil
	}
	if r.life.Status() == lifetime.Zero {
		return errorf(op, cuda.ErrInvalidValue, "a zero Registration: make one with Comm.Register")
	}
	if err := r.c.hold(op); err != nil {
		return nil // the communicator's Close deregistered it
	}
	defer r.c.life.Release()
	return r.deregister(op)
}

// deregister ends the registration, with its communicator held.
func (r *Registration) deregister(op string) error {
	_, err := r.life.Close(func() (bool, error) {
		if err := releasing(op, r.c.ctx, func() error {
			return r.c.do(op, "ncclCommDeregister", clib.CommDeregister(r.c.handle, r.handle))
		}); err != nil {
			return false, err
		}
		r.release()
		r.c.regMu.Lock()
		delete(r.c.regs, r)
		r.c.regMu.Unlock()
		return true, nil
	})
	return err
}

// closeRegistrations deregisters what is still registered with c, before
// c is destroyed; each one deregistered is gone for good even when a later
// one fails.
func (c *Comm) closeRegistrations(op string) error {
	for _, r := range c.registrations() {
		if err := r.deregister(op); err != nil {
			return err
		}
	}
	return nil
}

// dropRegistrations lets go of what was registered with c, once an abort
// has dropped it in NCCL with the communicator.
func (c *Comm) dropRegistrations() {
	for _, r := range c.registrations() {
		r.life.Close(func() (bool, error) { r.release(); return true, nil })
	}
	c.regMu.Lock()
	c.regs = nil
	c.regMu.Unlock()
}

// registrations returns what is registered with c now.
func (c *Comm) registrations() []*Registration {
	c.regMu.Lock()
	defer c.regMu.Unlock()
	regs := make([]*Registration, 0, len(c.regs))
	for r := range c.regs {
		regs = append(regs, r)
	}
	return regs
}

// Allocation is device memory NCCL allocated (ncclMemAlloc): memory of the
// kind its fastest paths need (NVLink SHARP and other multicast or
// registered transfers), to use as any device buffer through Buffer and to
// register with a communicator. The zero Allocation is not usable.
type Allocation struct {
	life  lifetime.Life
	ctx   *cuda.Context
	ptr   uintptr
	bytes int
	// buf is the memory as a buffer: Free closes it, and makes a new one
	// when NCCL then refuses to free the memory.
	buf atomic.Pointer[cuda.DeviceBuffer[byte]]
}

// Alloc allocates bytes of device memory on ctx's device through NCCL
// (ncclMemAlloc, NCCL 2.19 and later). Free it with Free.
func Alloc(ctx *cuda.Context, bytes int) (*Allocation, error) {
	const op = "Alloc"
	if ctx == nil {
		return nil, errorf(op, cuda.ErrInvalidValue, "nil *cuda.Context")
	}
	if bytes <= 0 {
		return nil, errorf(op, cuda.ErrInvalidValue, "%d bytes: allocate at least one", bytes)
	}
	if err := open(op); err != nil {
		return nil, err
	}
	ptr := new(uintptr)
	if err := bound(op, ctx, func() error {
		return check(op, "ncclMemAlloc", clib.MemAlloc(ptr, uintptr(bytes)))
	}); err != nil {
		return nil, err
	}
	buf, err := cuda.FromRaw[byte](ctx, cuda.DevicePtr(*ptr), bytes)
	if err != nil {
		bound(op, ctx, func() error { return check(op, "ncclMemFree", clib.MemFree(*ptr)) })
		return nil, err
	}
	a := &Allocation{ctx: ctx, ptr: *ptr, bytes: bytes}
	a.buf.Store(buf)
	a.life.ArmUntracked()
	return a, nil
}

// Buffer returns the memory as a device buffer of bytes (cuda.ViewAs
// gives it another element type); it is closed by Free, and freeing it
// frees nothing. Nil for a nil or zero Allocation. After a Free that NCCL
// refused, Buffer returns a new buffer over the memory, which is still
// allocated: the one Free closed stays closed.
func (a *Allocation) Buffer() *cuda.DeviceBuffer[byte] {
	if a == nil {
		return nil
	}
	return a.buf.Load()
}

// Free returns the memory to NCCL (ncclMemFree), once no graph or
// registration uses it, after the work queued in its context, as the
// driver's free waits for it; freeing twice, or a nil Allocation, is a
// no-op. A Free that fails leaves the memory allocated, and may be called
// again.
func (a *Allocation) Free() error {
	const op = "Allocation.Free"
	if a == nil {
		return nil
	}
	if a.life.Status() == lifetime.Zero {
		return errorf(op, cuda.ErrInvalidValue, "a zero Allocation: make one with Alloc")
	}
	_, err := a.life.Close(func() (bool, error) {
		// The context is bound first, so that a bind that fails leaves
		// the buffer open. The buffer's Free refuses while a graph or a
		// registration uses it, leaving it open; once it has closed the
		// buffer, nothing can reach the memory, and NCCL frees it.
		err := bound(op, a.ctx, func() error {
			if err := a.buf.Load().Free(); err != nil {
				return calledas.Op(op, err)
			}
			// cuMemFree waits for the context's work, NCCL's free need
			// not: wait for it, such as the last bytes of a copy from
			// pageable memory, which lands after CopyFromHost returns.
			err := a.ctx.Synchronize()
			if err == nil {
				err = check(op, "ncclMemFree", clib.MemFree(a.ptr))
			}
			if err != nil {
				// The memory stays. Package cuda reopens no buffer it
				// closed: Buffer gets a new one over the memory.
				if buf, ferr := cuda.FromRaw[byte](a.ctx, cuda.DevicePtr(a.ptr), a.bytes); ferr == nil {
					a.buf.Store(buf)
				}
			}
			return calledas.Op(op, err)
		})
		return err == nil, err
	})
	return err
}

// has reports whether the NCCL opened has the function name: for a call
// that needs another one later, made only where both are there.
func has(name string) bool {
	for _, sym := range clib.Table.Symbols {
		if sym.Name == name {
			return *sym.Addr != 0
		}
	}
	return false
}
