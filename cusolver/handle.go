package cusolver

import (
	"errors"
	"runtime"
	"unsafe"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/attach"
	"github.com/gocuda/cuda/internal/calledas"
	clib "github.com/gocuda/cuda/internal/lib/cusolver"
	"github.com/gocuda/cuda/internal/libhandle"
	"github.com/gocuda/cuda/internal/track"
)

// Handle is a cuSOLVER handle for one stream: every call queues its work on
// that stream, in the stream's order, with the handle's workspaces. Close
// it when done. It is safe for use by many goroutines, whose calls take
// turns. The zero Handle is not usable: its methods return
// cuda.ErrInvalidValue.
type Handle struct {
	// base is the handle's life, its turn (the lock order is there) and
	// its stream; the rest is guarded by its turn.
	base libhandle.Base[errs]
	raw  *raw
	// dev is the device workspace (stream-ordered memory, grown by
	// freeing it in stream order and allocating more); host the host
	// workspace, page-locked; retired are host workspaces outgrown, kept
	// until Close since work queued before may still use them.
	dev     *cuda.DeviceBuffer[byte]
	host    *cuda.PinnedBuffer[byte]
	retired []*cuda.PinnedBuffer[byte]
	// ptrs is the batched Cholesky's array of device pointers, for the
	// batch it was last made for.
	ptrs    *cuda.DeviceBuffer[uint64]
	ptrsKey [3]uintptr // base address, matrix bytes, count
	// workPtrs is the same for the batch transposed into the device
	// workspace (transpose.go).
	workPtrs    *cuda.DeviceBuffer[uint64]
	workPtrsKey [3]uintptr
	// trMod and tr are the batched Cholesky's transpose (transpose.go),
	// loaded by the first batch that needs it; trOff says the driver
	// refused it.
	trMod *cuda.Module
	tr    *transposer
	trOff bool
	// scratch takes the info of the calls whose info only numbers a bad
	// argument (getrs, potrs, orgqr, ormqr), which the package checks
	// before calling: nobody reads it.
	scratch *cuda.DeviceBuffer[int32]
}

// errs makes the shared handle's errors this package's.
type errs struct{}

func (errs) Errorf(op string, sentinel error, format string, args ...any) error {
	return errorf(op, sentinel, format, args...)
}

// raw is the library's objects, shared with the cleanup of a Handle nobody
// closed.
type raw struct {
	ctx    *cuda.Context
	h      clib.Handle
	params clib.Params
	svdj   clib.GesvdjInfo
	syevj  clib.SyevjInfo
}

// destroy releases the library's objects, each zeroed once gone, so that
// a failed destroy can be tried again. Called with ctx current.
func (r *raw) destroy(op string) error {
	if r.svdj != 0 {
		if err := check(op, "cusolverDnDestroyGesvdjInfo", clib.DnDestroyGesvdjInfo(r.svdj)); err != nil {
			return err
		}
		r.svdj = 0
	}
	if r.syevj != 0 {
		if err := check(op, "cusolverDnDestroySyevjInfo", clib.DnDestroySyevjInfo(r.syevj)); err != nil {
			return err
		}
		r.syevj = 0
	}
	if r.params != 0 {
		if err := check(op, "cusolverDnDestroyParams", clib.DnDestroyParams(r.params)); err != nil {
			return err
		}
		r.params = 0
	}
	if r.h != 0 {
		if err := check(op, "cusolverDnDestroy", clib.DnDestroy(r.h)); err != nil {
			return err
		}
		r.h = 0
	}
	return nil
}

// New makes a Handle that queues its work on s. Its workspaces are
// allocated by the first calls that need them.
func New(s *cuda.Stream) (*Handle, error) {
	const op = "New"
	if s == nil {
		return nil, errorf(op, cuda.ErrInvalidValue, "s is a nil *cuda.Stream")
	}
	preloadDeps()
	if err := open(op); err != nil {
		return nil, err
	}
	r := &raw{ctx: s.Context()}
	rawStream, err := libhandle.Make(op, s, func(stream uintptr) error {
		if err := check(op, "cusolverDnCreate", clib.DnCreate(&r.h)); err != nil {
			return err
		}
		err := check(op, "cusolverDnSetStream", clib.DnSetStream(r.h, stream))
		if err == nil {
			err = check(op, "cusolverDnCreateParams", clib.DnCreateParams(&r.params))
		}
		if err == nil {
			err = check(op, "cusolverDnCreateGesvdjInfo", clib.DnCreateGesvdjInfo(&r.svdj))
		}
		if err == nil {
			err = check(op, "cusolverDnCreateSyevjInfo", clib.DnCreateSyevjInfo(&r.syevj))
		}
		return err
	}, r.destroy)
	if err != nil {
		return nil, err
	}
	h := &Handle{raw: r}
	// The workspaces are buffers of their own, freed by their own
	// cleanups.
	owner := libhandle.NewOwner(s.Context(), h, (*Handle).Close, r.destroy)
	if err := h.base.Arm(libhandle.Spec{Stream: s, RawStream: rawStream, Kind: track.SolverHandle, Owner: owner,
		Cleanup: runtime.AddCleanup(h, func(o *attach.Owner) { libhandle.Forgotten(track.SolverHandle, o) }, owner)}); err != nil {
		return nil, calledas.Op(op, errors.Join(err, h.Close()))
	}
	return h, nil
}

// core returns h's shared part, nil for a nil h.
func (h *Handle) core() *libhandle.Base[errs] {
	if h == nil {
		return nil
	}
	return &h.base
}

// valid returns the error for a nil or zero Handle.
func (h *Handle) valid(op string) error { return h.core().Valid(op) }

// do runs queue, which calls the library, with h held, its turn taken, and
// h's stream and mem held open with their context current (Stream.Do).
func (h *Handle) do(op string, mem []cuda.Memory, queue func() error) error {
	return h.core().Do(op, mem, func(*libhandle.Call[errs]) error { return queue() })
}

// workspace returns device and host workspaces of at least dev and host
// bytes, growing h's: the device one is freed in stream order and a larger
// one allocated so (a little more than asked, so that sizes that creep up
// do not reallocate each call); a host one outgrown is kept until Close.
// Called in do.
func (h *Handle) workspace(op string, dev, host uintptr) (uintptr, unsafe.Pointer, error) {
	if dev > 0 && (h.dev == nil || uintptr(h.dev.Len()) < dev) {
		if h.dev != nil {
			if err := h.dev.FreeOn(h.base.Stream()); err != nil {
				return 0, nil, err
			}
			h.dev = nil
		}
		b, err := cuda.AllocAsync[byte](h.base.Stream(), int(dev+dev/8))
		if err != nil {
			return 0, nil, err
		}
		h.dev = b
	}
	if host > 0 && (h.host == nil || uintptr(h.host.Len()) < host) {
		b, err := cuda.AllocPinned[byte](h.base.Context(), int(host+host/8))
		if err != nil {
			return 0, nil, err
		}
		if h.host != nil {
			h.retired = append(h.retired, h.host)
		}
		h.host = b
	}
	var d uintptr
	var p unsafe.Pointer
	if dev > 0 {
		d = uintptr(h.dev.Ptr())
	}
	if host > 0 {
		p = unsafe.Pointer(&h.host.Data()[0])
	}
	return d, p, nil
}

// scratchInfo returns the device address of h's scratch info, allocated
// by the first call that needs it. Called in do.
func (h *Handle) scratchInfo() (uintptr, error) {
	if h.scratch == nil {
		b, err := cuda.AllocAsync[int32](h.base.Stream(), 4)
		if err != nil {
			return 0, err
		}
		h.scratch = b
	}
	return uintptr(h.scratch.Ptr()), nil
}

// lwork returns a device workspace of lwork elements of T (the legacy
// API's), as workspace does.
func lwork[T Element](h *Handle, op string, lwork int32) (uintptr, error) {
	if lwork < 0 {
		return 0, errorf(op, cuda.ErrInvalidValue, "cuSOLVER asked for a workspace of %d elements", lwork)
	}
	d, _, err := h.workspace(op, uintptr(lwork)*unsafe.Sizeof(*new(T)), 0)
	return d, err
}

// Stream returns the stream h queues its work on.
func (h *Handle) Stream() *cuda.Stream { return h.core().Stream() }

// WorkspaceBytes returns the sizes of h's device and host workspaces now:
// what the calls so far asked for, and a little more. It calls neither
// cuSOLVER nor the driver.
func (h *Handle) WorkspaceBytes() (device, host int) {
	if h.valid("Handle.WorkspaceBytes") != nil {
		return 0, 0
	}
	h.base.Lock()
	defer h.base.Unlock()
	if h.dev != nil {
		device = h.dev.Len()
	}
	if h.host != nil {
		host = h.host.Len()
	}
	return device, host
}

// String describes h, as package cuda's objects print: its device and its
// stream's CUstream, as `cusolver.Handle{cuda:0, stream 0x5a1c2e0}`, with
// "closed" once closed. It calls neither cuSOLVER nor the driver.
func (h *Handle) String() string {
	return h.core().String("cusolver.Handle")
}

// Close waits for the calls in flight, frees the workspaces (the device
// ones in stream order, after the work queued), unloads the batched
// Cholesky's transpose kernel where a call loaded it (after the work
// queued on h's stream: Close then waits for it) and releases the
// library's objects. Close of a closed Handle returns nil. Once h's context is
// closed, the library's objects went with it. A Close that fails leaves h
// usable, and may be tried again.
func (h *Handle) Close() error {
	const op = "Handle.Close"
	return h.core().CloseWith(op, func() (bool, error) {
		// The workspaces first: a handle whose free failed stays usable
		// (they are made again when needed), and Close may be tried
		// again. Stream-ordered frees follow the work that uses them.
		var errs []error
		free := func(what string, f func() error) bool {
			if err := f(); err != nil && !errors.Is(err, cuda.ErrClosed) {
				errs = append(errs, calledas.Unfreed(op, what, err))
				return false
			}
			return true
		}
		if h.dev != nil && free("the device workspace", func() error { return h.dev.FreeOn(h.base.Stream()) }) {
			h.dev = nil
		}
		if h.scratch != nil && free("the scratch info", func() error { return h.scratch.FreeOn(h.base.Stream()) }) {
			h.scratch = nil
		}
		if h.ptrs != nil && free("the batch's pointers", func() error { return h.ptrs.FreeOn(h.base.Stream()) }) {
			h.ptrs = nil
		}
		if h.workPtrs != nil && free("the transposed batch's pointers", func() error { return h.workPtrs.FreeOn(h.base.Stream()) }) {
			h.workPtrs = nil
		}
		if h.trMod != nil && free("the transpose kernel", h.closeTranspose) {
			h.trMod, h.tr = nil, nil
		}
		for len(h.retired) > 0 && free("a host workspace", h.retired[0].Free) {
			h.retired = h.retired[1:]
		}
		if h.host != nil && free("the host workspace", h.host.Free) {
			h.host = nil
		}
		if len(errs) > 0 {
			return false, errors.Join(errs...)
		}
		if err := h.base.Destroy(op, h.raw.destroy); err != nil {
			return false, err
		}
		return true, nil
	})
}
