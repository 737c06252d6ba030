package cublas

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/calledas"
	"github.com/gocuda/cuda/internal/describe"
	clib "github.com/gocuda/cuda/internal/lib/cublas"
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
	rawStream uintptr // the stream's CUstream, for String
	ctx       *cuda.Context
	raw       *raw
	workspace *cuda.DeviceBuffer[byte]
	math      MathMode
	plans     map[planKey]*plan // Matmul's descriptors and algorithm, per shape
	// stale are plans Close took out of plans whose destroy failed: out
	// of Matmul's reach, released when Close is tried again.
	stale []*plan
	// unfinished is set by a Close that released the library's handles
	// but failed to free the workspace: the Handle refuses calls (there
	// is no cuBLAS handle left to make them with) until a Close finishes.
	unfinished atomic.Bool
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
	var rawStream uintptr
	err = s.Do(func(stream uintptr) error {
		rawStream = stream
		if err := check(op, "cublasCreate_v2", clib.Create(&r.blas)); err != nil {
			return err
		}
		err := errors.Join(
			check(op, "cublasSetStream_v2", clib.SetStream(r.blas, stream)),
			// After the stream: setting one resets the workspace.
			check(op, "cublasSetWorkspace_v2", clib.SetWorkspace(r.blas, uintptr(ws.Ptr()), WorkspaceBytes)),
			check(op, "cublasSetPointerMode_v2", clib.SetPointerMode(r.blas, 0)), // CUBLAS_POINTER_MODE_HOST
		)
		if err != nil {
			lifetime.CloseTemp(&err, func() error { return r.destroy(op) })
		}
		return err
	}, ws)
	if err != nil {
		lifetime.CloseTemp(&err, ws.Free)
		return nil, calledas.Op(op, err)
	}
	h := &Handle{stream: s, rawStream: rawStream, ctx: ctx, raw: r, workspace: ws, plans: map[planKey]*plan{}}
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
	if h.unfinished.Load() {
		h.life.Release()
		return errorf(op, cuda.ErrClosed, "the handle is closed, but its Close failed to free the workspace: call Close again")
	}
	return nil
}

// do runs queue, which calls the library, with h held, its turn taken, and
// h's stream and mem held open with their context current (Stream.Do).
// While the stream captures, the workspace is among the memory the call
// uses, so that the graph keeps it from being freed (Close then fails
// until the graph is closed); outside a capture Close's cublasDestroy
// waits for the work that uses it, and a call holds no more than it names.
func (h *Handle) do(op string, mem []cuda.Memory, queue func(stream uintptr) error) error {
	if err := h.hold(op); err != nil {
		return err
	}
	defer h.life.Release()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stream.Capturing() {
		mem = append(mem, h.workspace)
	}
	return calledas.Op(op, h.stream.Do(queue, mem...))
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
		return errorf(op, cuda.ErrInvalidValue, "m is %d: want DefaultMath or TF32Math", int(m))
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

// String describes h, as package cuda's objects print: its device, its
// stream's CUstream and whether float32 products may use TF32, as
// `cublas.Handle{cuda:0, stream 0x5a1c2e0, TF32 off}`, with "closed" once
// closed. It calls neither cuBLAS nor the driver.
func (h *Handle) String() string {
	const kind = "cublas.Handle"
	if h == nil {
		return kind + "(nil)"
	}
	st := h.life.Status()
	if st == lifetime.Zero {
		return describe.Object(kind, st)
	}
	tf32 := "off"
	if h.MathMode() == TF32Math {
		tf32 = "on"
	}
	parts := []string{h.ctx.Device().String(), fmt.Sprintf("stream %#x", h.rawStream), "TF32 " + tf32}
	if h.unfinished.Load() {
		// Refusing calls, as a closed handle does, until Close finishes.
		return describe.Object(kind, lifetime.Held, append(parts, "closed (its workspace is not freed: call Close again)")...)
	}
	return describe.Object(kind, st, parts...)
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
	const op = "Handle.Close"
	if err := h.valid(op); err != nil {
		return err
	}
	_, err := h.life.Close(func() (bool, error) {
		if !h.unfinished.Load() {
			if err := h.ctx.Do(func() error { return h.release(op) }); err != nil && !errors.Is(err, cuda.ErrClosed) {
				return false, calledas.Op(op, err)
			}
		}
		// The library's handles are gone (or went with the context): h
		// has nothing left to call cuBLAS with, and stays closed to calls
		// until the workspace is freed too.
		if err := h.workspace.Free(); err != nil && !errors.Is(err, cuda.ErrClosed) {
			h.unfinished.Store(true)
			return false, calledas.Unfreed(op, "the workspace", err)
		}
		return true, nil
	})
	return err
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
