package cublas

import (
	"errors"
	"runtime"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/attach"
	"github.com/gocuda/cuda/internal/calledas"
	clib "github.com/gocuda/cuda/internal/lib/cublas"
	"github.com/gocuda/cuda/internal/libhandle"
	"github.com/gocuda/cuda/internal/lifetime"
	"github.com/gocuda/cuda/internal/track"
)

// WorkspaceBytes is the device memory a Handle gives cuBLAS and cuBLASLt as
// scratch for their kernels: 32 MiB, what cuBLAS asks for on Hopper (and
// what PyTorch gives it there).
const WorkspaceBytes = 32 << 20

// MathMode says which arithmetic float32 products may use.
type MathMode int

const (
	// DefaultMath computes float32 products in float32.
	DefaultMath MathMode = iota
	// TF32Math lets float32 products use the tensor cores' TF32
	// arithmetic (inputs rounded to 10 bits of fraction, float32
	// accumulation): several times faster, as PyTorch's allow_tf32.
	TF32Math
)

func (m MathMode) String() string {
	switch m {
	case DefaultMath:
		return "default"
	case TF32Math:
		return "TF32"
	}
	return "MathMode(?)"
}

// Handle is a cuBLAS handle, with its cuBLASLt handle, for one stream: every
// call queues its work on that stream, in the stream's order. Close it when
// done. It is safe for use by many goroutines, whose calls take turns (they
// queue work, and only Dot, Nrm2, Asum and Iamax wait for it). The zero
// Handle is not usable: its methods return cuda.ErrInvalidValue.
type Handle struct {
	// base is the handle's life, its turn (the lock order is there), its
	// stream and its workspace; the rest is guarded by its turn.
	base  libhandle.Base[errs]
	raw   *raw
	math  MathMode
	plans map[planKey]*plan // Matmul's descriptors and algorithm, per shape
	// stale are plans Close took out of plans whose destroy failed: out
	// of Matmul's reach, released when Close is tried again.
	stale []*plan
}

// errs makes the shared handle's errors this package's.
type errs struct{}

func (errs) Errorf(op string, sentinel error, format string, args ...any) error {
	return errorf(op, sentinel, format, args...)
}

// raw is the library's handles, shared with the cleanup of a Handle nobody
// closed.
type raw struct {
	ctx  *cuda.Context
	blas clib.Handle
	lt   clib.LtHandle
}

// destroy releases the handles, cuBLASLt's first; each is zeroed once gone,
// so that a failed destroy can be tried again. Called with ctx current.
func (r *raw) destroy(op string) error {
	if r.lt != 0 {
		if err := checkLt(op, "cublasLtDestroy", clib.LtDestroy(r.lt)); err != nil {
			return err
		}
		r.lt = 0
	}
	if r.blas != 0 {
		// cublasDestroy waits for the device's work first.
		if err := check(op, "cublasDestroy_v2", clib.Destroy(r.blas)); err != nil {
			return err
		}
		r.blas = 0
	}
	return nil
}

// New makes a Handle that queues its work on s, with a workspace of
// WorkspaceBytes of device memory in s's context, DefaultMath, and scalars
// (alpha, beta, results) in host memory.
func New(s *cuda.Stream) (*Handle, error) {
	const op = "New"
	if s == nil {
		return nil, errorf(op, cuda.ErrInvalidValue, "s is a nil *cuda.Stream")
	}
	if err := open(op); err != nil {
		return nil, err
	}
	ctx := s.Context()
	ws, err := cuda.Alloc[byte](ctx, WorkspaceBytes)
	if err != nil {
		return nil, calledas.Op(op, err)
	}
	r := &raw{ctx: ctx}
	rawStream, err := libhandle.Make(op, s, func(stream uintptr) error {
		if err := check(op, "cublasCreate_v2", clib.Create(&r.blas)); err != nil {
			return err
		}
		return errors.Join(
			check(op, "cublasSetStream_v2", clib.SetStream(r.blas, stream)),
			// After the stream: setting one resets the workspace.
			check(op, "cublasSetWorkspace_v2", clib.SetWorkspace(r.blas, uintptr(ws.Ptr()), WorkspaceBytes)),
			check(op, "cublasSetPointerMode_v2", clib.SetPointerMode(r.blas, 0)), // CUBLAS_POINTER_MODE_HOST
		)
	}, r.destroy, ws)
	if err != nil {
		lifetime.CloseTemp(&err, ws.Free)
		return nil, calledas.Op(op, err)
	}
	h := &Handle{raw: r, plans: map[planKey]*plan{}}
	// Forgotten: its plans are lost to cuBLASLt's handle, which frees
	// them with it. The workspace is a buffer of its own, freed by its
	// own cleanup.
	owner := libhandle.NewOwner(s.Context(), h, (*Handle).Close, r.destroy)
	if err := h.base.Arm(libhandle.Spec{Stream: s, RawStream: rawStream, Kind: track.BLASHandle, Owner: owner,
		Cleanup:  runtime.AddCleanup(h, func(o *attach.Owner) { libhandle.Forgotten(track.BLASHandle, o) }, owner),
		Work:     []*cuda.DeviceBuffer[byte]{ws},
		WorkName: "the workspace"}); err != nil {
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
// While the stream captures, the workspace is among the memory the call
// uses, so that the graph keeps it from being freed (Close then fails
// until the graph is closed); outside a capture Close's cublasDestroy
// waits for the work that uses it, and a call holds no more than it names.
func (h *Handle) do(op string, mem []cuda.Memory, queue func(stream uintptr) error) error {
	return h.core().Do(op, mem, func(c *libhandle.Call[errs]) error { return queue(c.Stream) })
}

// Stream returns the stream h queues its work on.
func (h *Handle) Stream() *cuda.Stream { return h.core().Stream() }

// SetMathMode sets which arithmetic h's later float32 products (Gemm, its
// batched forms, Matmul) may use.
func (h *Handle) SetMathMode(m MathMode) error {
	const op = "Handle.SetMathMode"
	if m != DefaultMath && m != TF32Math {
		return errorf(op, cuda.ErrInvalidValue, "m is %d: want DefaultMath or TF32Math", int(m))
	}
	if err := h.core().Hold(op); err != nil {
		return err
	}
	defer h.base.Release()
	h.base.Lock()
	h.math = m
	h.base.Unlock()
	return nil
}

// MathMode returns h's math mode.
func (h *Handle) MathMode() MathMode {
	if h.valid("Handle.MathMode") != nil {
		return DefaultMath
	}
	h.base.Lock()
	defer h.base.Unlock()
	return h.math
}

// String describes h, as package cuda's objects print: its device, its
// stream's CUstream and whether float32 products may use TF32, as
// `cublas.Handle{cuda:0, stream 0x5a1c2e0, TF32 off}`, with "closed" once
// closed. It calls neither cuBLAS nor the driver.
func (h *Handle) String() string {
	tf32 := "off"
	if h.MathMode() == TF32Math {
		tf32 = "on"
	}
	return h.core().String("cublas.Handle", "TF32 "+tf32)
}

// Close waits for the calls in flight, releases the library's handles
// (cuBLAS waits for the device's work as it does) and frees the workspace.
// Close of a closed Handle returns nil. Once h's context is closed, the
// library's handles went with it, and Close frees what is left.
//
// A Close that fails may be tried again, and finishes what the failed one
// left. Where the library refused to release its handles, h is left usable
// (the Matmul plans and the cuBLASLt handle Close released are made again
// when needed). Where the handles are gone but the workspace could not be
// freed (the driver refused, or a graph that captured one of h's calls
// still uses it), h refuses calls with cuda.ErrClosed until a Close
// finishes.
func (h *Handle) Close() error {
	// Once the handles are gone (or went with the context), h has nothing
	// left to call cuBLAS with, and stays closed to calls until the
	// workspace is freed too.
	return h.core().Close("Handle.Close", func(op string) error { return h.release(op) })
}

// release releases the library's objects in an order that leaves h whole
// if one fails: the Matmul plans, taken out of Matmul's reach first, and
// the cuBLASLt handle (both made again when Matmul needs them), then the
// cuBLAS handle, the one part that is not made again. Called in Close,
// with h's context current.
func (h *Handle) release(op string) error {
	for key, p := range h.plans {
		h.stale = append(h.stale, p)
		delete(h.plans, key)
	}
	for len(h.stale) > 0 {
		if err := h.stale[0].destroy(op); err != nil {
			return err
		}
		h.stale = h.stale[1:]
	}
	return h.raw.destroy(op)
}
