package cudnn

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/calledas"
	"github.com/gocuda/cuda/internal/describe"
	clib "github.com/gocuda/cuda/internal/lib/cudnn"
	"github.com/gocuda/cuda/internal/lifetime"
	"github.com/gocuda/cuda/internal/track"
)

// Handle is a cuDNN handle for one stream: every call queues its work on
// that stream, in the stream's order. It keeps the work area cuDNN asks
// for, in stream-ordered memory of the stream, reused by later calls and
// grown when a call needs more, and, for each convolution shape it has run,
// the descriptors and the algorithm chosen. Close it when done. It is safe
// for use by many goroutines, whose calls take turns. The zero Handle is
// not usable: its methods return cuda.ErrInvalidValue.
type Handle struct {
	// life is held by every call and closed by Close, which waits for the
	// calls in flight (internal/lifetime).
	life lifetime.Life
	// mu makes calls take turns: a cuDNN handle is not for concurrent
	// use, and the work area and the plans are shared. Lock order: life's
	// hold, then mu, then the holds Stream.Do takes on the stream and the
	// buffers.
	mu        sync.Mutex
	stream    *cuda.Stream
	rawStream uintptr // the stream's CUstream, for String
	ctx       *cuda.Context
	raw       *raw
	// work is the work area, nil until a call needs one; guarded by mu.
	work *cuda.DeviceBuffer[byte]
	// benchmark and tf32 are the settings of SetBenchmark and SetTF32;
	// guarded by mu.
	benchmark, tf32 bool
	// unfinished is set by a Close that released the library's handle
	// but failed to free the work area: the Handle refuses calls until a
	// Close finishes.
	unfinished atomic.Bool
}

// raw is the library's handle and the convolutions' plans (descriptors
// the library made), shared with the cleanup of a Handle nobody closed.
type raw struct {
	ctx   *cuda.Context
	h     clib.Handle
	plans map[convKey]*convPlan
	// attn are the attention plans (attention.go), made by the first
	// call that needs one.
	attn map[attnKey]*attnPlan
}

// destroy releases the plans and the handle, each zeroed once gone so
// that a failed destroy can be tried again. Called with ctx current.
func (r *raw) destroy(op string) error {
	for k, p := range r.plans {
		if err := p.destroy(op); err != nil {
			return err
		}
		delete(r.plans, k)
	}
	for k, p := range r.attn {
		if err := p.destroy(op); err != nil {
			return err
		}
		delete(r.attn, k)
	}
	if r.h == 0 {
		return nil
	}
	// cudnnDestroy waits for the device's work first.
	if err := check(op, "cudnnDestroy", clib.Destroy(r.h)); err != nil {
		return err
	}
	r.h = 0
	return nil
}

// New makes a Handle that queues its work on s. It allocates nothing on
// the device: the work area comes with the first call that needs one.
func New(s *cuda.Stream) (*Handle, error) {
	const op = "New"
	if s == nil {
		return nil, errorf(op, cuda.ErrInvalidValue, "s is a nil *cuda.Stream")
	}
	if err := load(op); err != nil {
		return nil, err
	}
	r := &raw{ctx: s.Context(), plans: map[convKey]*convPlan{}}
	var rawStream uintptr
	err := s.Do(func(stream uintptr) error {
		rawStream = stream
		if err := check(op, "cudnnCreate", clib.Create(&r.h)); err != nil {
			return err
		}
		err := check(op, "cudnnSetStream", clib.SetStream(r.h, stream))
		if err != nil {
			lifetime.CloseTemp(&err, func() error { return r.destroy(op) })
		}
		return err
	})
	if err != nil {
		return nil, calledas.Op(op, err)
	}
	h := &Handle{stream: s, rawStream: rawStream, ctx: r.ctx, raw: r}
	h.life.Arm(track.DNNHandle, runtime.AddCleanup(h, func(r *raw) {
		// Forgotten: the work area is a buffer of its own, freed by its
		// own cleanup.
		track.Forgotten(track.DNNHandle)
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
		return errorf(op, cuda.ErrClosed, "the handle is closed, but its Close failed to free its work area: call Close again")
	}
	return nil
}

// call is what a call's fn is given: the library's handle, the plans, the
// settings, and work, which returns the address of the work area of at
// least n bytes (0 for 0 bytes), growing it first where it is smaller
// (stream-ordered, on h's stream, the old one freed after the work queued
// there).
type call struct {
	op              string
	lh              clib.Handle
	raw             *raw
	capturing       bool
	benchmark, tf32 bool
	work            func(n uintptr) (uintptr, error)
	// ctx and stream are the Handle's, for SetBenchmark's events.
	ctx    *cuda.Context
	stream *cuda.Stream
}

// do runs fn with h held, its turn taken, and h's stream and mem held open
// with their context current (Stream.Do). While the stream captures, the
// work area is among the memory the call uses, so that the graph keeps it
// from being freed, and a work area that must grow is refused (its
// allocation would be the graph's): run the call once outside the capture
// first.
func (h *Handle) do(op string, mem []cuda.Memory, fn func(c *call) error) error {
	if err := h.hold(op); err != nil {
		return err
	}
	defer h.life.Release()
	h.mu.Lock()
	defer h.mu.Unlock()
	capturing := h.stream.Capturing()
	if capturing && h.work != nil {
		mem = append(mem, h.work)
	}
	c := &call{op: op, lh: h.raw.h, raw: h.raw, capturing: capturing, benchmark: h.benchmark, tf32: h.tf32, ctx: h.ctx, stream: h.stream}
	c.work = func(n uintptr) (uintptr, error) {
		if n == 0 {
			return 0, nil
		}
		if b := h.work; b != nil && uintptr(b.Len()) >= n {
			return uintptr(b.Ptr()), nil
		}
		if capturing {
			return 0, errorf(op, cuda.ErrNotSupported, "the stream captures and the work area must grow to %d bytes: run the call once before the capture", n)
		}
		if err := h.grow(op, n); err != nil {
			return 0, err
		}
		return uintptr(h.work.Ptr()), nil
	}
	return calledas.Op(op, h.stream.Do(func(uintptr) error { return fn(c) }, mem...))
}

// grow replaces the work area by one of at least n bytes (rounded up to
// 1 MiB past 1 MiB, so that sizes close to one another share a buffer):
// the new one is allocated first, so that a failure leaves the old one,
// which is then freed on the stream, after the work queued there. Called
// with mu held.
func (h *Handle) grow(op string, n uintptr) error {
	const round = 1 << 20
	if n > round {
		n = (n + round - 1) / round * round
	}
	b, err := cuda.AllocAsync[byte](h.stream, int(n))
	if err != nil {
		return calledas.Op(op, err)
	}
	old := h.work
	h.work = b
	if old != nil {
		if err := old.FreeOn(h.stream); err != nil {
			lifetime.CloseTemp(&err, func() error { return old.FreeOn(h.stream) })
			return calledas.Op(op, err)
		}
	}
	return nil
}

// SetBenchmark chooses how h picks a convolution's algorithm for a shape
// it has not run yet: by cuDNN's heuristics (false, the default), or by
// timing every algorithm once (true; cudnnFindConvolution*Algorithm, as
// PyTorch's torch.backends.cudnn.benchmark), which runs the convolution
// several times and waits for h's stream the first time each shape is
// seen. A choice made stays with its shape.
func (h *Handle) SetBenchmark(on bool) error {
	if err := h.valid("Handle.SetBenchmark"); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.benchmark = on
	return nil
}

// SetTF32 allows (true) or forbids (false, the default) float32
// convolutions to run on tensor cores in TF32, whose products keep 10
// bits of mantissa: CUDNN_DEFAULT_MATH rather than CUDNN_FMA_MATH
// (PyTorch allows it by default: torch.backends.cudnn.allow_tf32). The
// half types always may use tensor cores.
func (h *Handle) SetTF32(on bool) error {
	if err := h.valid("Handle.SetTF32"); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tf32 = on
	return nil
}

// Stream returns the stream h queues its work on.
func (h *Handle) Stream() *cuda.Stream {
	if h == nil {
		return nil
	}
	return h.stream
}

// WorkBytes returns the bytes of device memory h's work area holds now.
func (h *Handle) WorkBytes() int {
	if h.valid("Handle.WorkBytes") != nil {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.work == nil {
		return 0
	}
	return h.work.Len()
}

// String describes h, as package cuda's objects print: its device, its
// stream's CUstream and its work area's bytes, as
// `cudnn.Handle{cuda:0, stream 0x5a1c2e0, work 1048576 B}`, with "closed"
// once closed. It calls neither cuDNN nor the driver.
func (h *Handle) String() string {
	const kind = "cudnn.Handle"
	if h == nil {
		return kind + "(nil)"
	}
	st := h.life.Status()
	if st == lifetime.Zero {
		return describe.Object(kind, st)
	}
	parts := []string{h.ctx.Device().String(), fmt.Sprintf("stream %#x", h.rawStream), fmt.Sprintf("work %d B", h.WorkBytes())}
	if h.unfinished.Load() {
		return describe.Object(kind, lifetime.Held, append(parts, "closed (the work area is not freed: call Close again)")...)
	}
	return describe.Object(kind, st, parts...)
}

// Close waits for the calls in flight, releases the descriptors and the
// library's handle (cuDNN waits for the device's work as it does) and
// frees the work area. Close of a closed Handle returns nil. Once h's
// context is closed, the library's handle went with it, and Close frees
// what is left. A Close that fails may be tried again, and finishes what
// the failed one left.
func (h *Handle) Close() error {
	const op = "Handle.Close"
	if err := h.valid(op); err != nil {
		return err
	}
	_, err := h.life.Close(func() (bool, error) {
		if !h.unfinished.Load() {
			if err := h.ctx.Do(func() error { return h.raw.destroy(op) }); err != nil && !errors.Is(err, cuda.ErrClosed) {
				return false, calledas.Op(op, err)
			}
		}
		if b := h.work; b != nil {
			if err := b.Free(); err != nil && !errors.Is(err, cuda.ErrClosed) {
				h.unfinished.Store(true)
				return false, calledas.Unfreed(op, "the work area", err)
			}
			h.work = nil
		}
		return true, nil
	})
	return err
}
