package cublas

import (
	"errors"
	"runtime"
	"sync"
	"unsafe"

	cuda "github.com/gocuda/cuda"
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
	// life is held by every call and closed by Close, which waits for the
	// calls in flight (internal/lifetime).
	life lifetime.Life
	// mu makes calls take turns: a cuBLAS handle is not for concurrent
	// use, and the cached Matmul plans are shared. Lock order: life's
	// hold, then mu, then the holds Stream.Do takes on the stream and the
	// buffers.
	mu        sync.Mutex
	stream    *cuda.Stream
	ctx       *cuda.Context
	raw       *raw
	workspace *cuda.DeviceBuffer[byte]
	math      MathMode
	plans     map[planKey]*plan // Matmul's descriptors and algorithm, per shape
}

// raw is the library's handles, shared with the cleanup of a Handle nobody
// closed.
type raw struct {
	ctx      *cuda.Context
	blas, lt uintptr
}

// destroy releases the handles, cuBLASLt's first; each is zeroed once gone,
// so that a failed destroy can be tried again. Called with ctx current.
func (r *raw) destroy(op string) error {
	if r.lt != 0 {
		if err := callLt(op, "cublasLtDestroy", lib.fn.ltDestroy, r.lt); err != nil {
			return err
		}
		r.lt = 0
	}
	if r.blas != 0 {
		// cublasDestroy waits for the device's work first.
		if err := call(op, "cublasDestroy_v2", lib.fn.destroy, r.blas); err != nil {
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
		return nil, errorf(op, cuda.ErrInvalidValue, "nil *cuda.Stream")
	}
	if err := open(op); err != nil {
		return nil, err
	}
	ctx := s.Context()
	ws, err := cuda.Alloc[byte](ctx, WorkspaceBytes)
	if err != nil {
		return nil, err
	}
	r := &raw{ctx: ctx}
	err = s.Do(func(stream uintptr) error {
		if err := call(op, "cublasCreate_v2", lib.fn.create, uintptr(unsafe.Pointer(&r.blas))); err != nil {
			return err
		}
		err := errors.Join(
			call(op, "cublasSetStream_v2", lib.fn.setStream, r.blas, stream),
			// After the stream: setting one resets the workspace.
			call(op, "cublasSetWorkspace_v2", lib.fn.setWorkspace, r.blas, uintptr(ws.Ptr()), WorkspaceBytes),
			call(op, "cublasSetPointerMode_v2", lib.fn.setPointerMode, r.blas, 0), // CUBLAS_POINTER_MODE_HOST
		)
		if err != nil {
			lifetime.CloseTemp(&err, func() error { return r.destroy(op) })
		}
		return err
	}, ws)
	if err != nil {
		lifetime.CloseTemp(&err, ws.Free)
		return nil, err
	}
	h := &Handle{stream: s, ctx: ctx, raw: r, workspace: ws, plans: map[planKey]*plan{}}
	h.life.Arm(track.BLASHandle, runtime.AddCleanup(h, func(r *raw) {
		// Forgotten: its plans are lost to cuBLASLt's handle, which
		// frees them with it. The workspace is a buffer of its own,
		// freed by its own cleanup.
		track.Forgotten(track.BLASHandle)
		r.ctx.Do(func() error { return r.destroy("Handle cleanup") })
	}, r))
	return h, nil
}

// valid returns the error for a nil or zero Handle.
func (h *Handle) valid(op string) error {
	switch {
	case h == nil:
		return errorf(op, cuda.ErrInvalidValue, "nil *Handle")
	case h.life.Status() == lifetime.Zero:
		return errorf(op, cuda.ErrInvalidValue, "a zero Handle: make one with New")
	}
	return nil
}

// hold keeps h open until h.life.Release.
func (h *Handle) hold(op string) error {
	if err := h.valid(op); err != nil {
		return err
	}
	if h.life.Hold() != lifetime.Held {
		return errorf(op, cuda.ErrClosed, "the handle is closed")
	}
	return nil
}

// do runs queue, which calls the library, with h held, its turn taken, and
// h's stream and mem held open with their context current (Stream.Do).
func (h *Handle) do(op string, mem []cuda.Memory, queue func(stream uintptr) error) error {
	if err := h.hold(op); err != nil {
		return err
	}
	defer h.life.Release()
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stream.Do(queue, mem...)
}

// Stream returns the stream h queues its work on.
func (h *Handle) Stream() *cuda.Stream {
	if h == nil {
		return nil
	}
	return h.stream
}

// SetMathMode sets which arithmetic h's later float32 products (Gemm, its
// batched forms, Matmul) may use.
func (h *Handle) SetMathMode(m MathMode) error {
	const op = "Handle.SetMathMode"
	if m != DefaultMath && m != TF32Math {
		return errorf(op, cuda.ErrInvalidValue, "unknown math mode %d", int(m))
	}
	if err := h.hold(op); err != nil {
		return err
	}
	defer h.life.Release()
	h.mu.Lock()
	h.math = m
	h.mu.Unlock()
	return nil
}

// MathMode returns h's math mode.
func (h *Handle) MathMode() MathMode {
	if h.valid("Handle.MathMode") != nil {
		return DefaultMath
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.math
}

// Close waits for the calls in flight, releases the library's handles
// (cuBLAS waits for the device's work as it does) and frees the workspace.
// A Close the library refuses leaves h usable and may be tried again; Close
// of a closed Handle returns nil. Once h's context is closed, the library's
// handles went with it, and Close frees what is left.
func (h *Handle) Close() error {
	const op = "Handle.Close"
	if err := h.valid(op); err != nil {
		return err
	}
	_, err := h.life.Close(func() (bool, error) {
		err := h.ctx.Do(func() error {
			for key, p := range h.plans {
				if err := p.destroy(op); err != nil {
					return err
				}
				delete(h.plans, key)
			}
			return h.raw.destroy(op)
		})
		if err != nil && !errors.Is(err, cuda.ErrClosed) {
			return false, err
		}
		if err := h.workspace.Free(); err != nil && !errors.Is(err, cuda.ErrClosed) {
			return false, err
		}
		return true, nil
	})
	return err
}
