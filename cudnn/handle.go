package cudnn

import (
	"errors"
	"fmt"
	"runtime"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/attach"
	"github.com/gocuda/cuda/internal/calledas"
	clib "github.com/gocuda/cuda/internal/lib/cudnn"
	"github.com/gocuda/cuda/internal/libhandle"
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
	// base is the handle's life, its turn (the lock order is there), its
	// stream and its work area; the rest is guarded by its turn.
	base libhandle.Base[errs]
	raw  *raw
	// benchmark and tf32 are the settings of SetBenchmark and SetTF32.
	benchmark, tf32 bool
}

// errs makes the shared handle's errors this package's.
type errs struct{}

func (errs) Errorf(op string, sentinel error, format string, args ...any) error {
	return errorf(op, sentinel, format, args...)
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
	rawStream, err := libhandle.Make(op, s, func(stream uintptr) error {
		if err := check(op, "cudnnCreate", clib.Create(&r.h)); err != nil {
			return err
		}
		return check(op, "cudnnSetStream", clib.SetStream(r.h, stream))
	}, r.destroy)
	if err != nil {
		return nil, err
	}
	h := &Handle{raw: r}
	// Forgotten: the work area is a buffer of its own, freed by its own
	// cleanup.
	owner := libhandle.NewOwner(s.Context(), h, (*Handle).Close, r.destroy)
	if err := h.base.Arm(libhandle.Spec{Stream: s, RawStream: rawStream, Kind: track.DNNHandle, Owner: owner,
		Cleanup:  runtime.AddCleanup(h, func(o *attach.Owner) { libhandle.Forgotten(track.DNNHandle, o) }, owner),
		Work:     make([]*cuda.DeviceBuffer[byte], 1),
		WorkName: "the work area"}); err != nil {
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
// from being freed, and a work area that must grow is refused
// (libhandle.Call.Work): run the call once outside the capture first.
//
// args are the call's buffers by name (nil ones, optional and left out,
// are skipped): one of another context than h's is refused by its name.
func (h *Handle) do(op string, args []named, fn func(c *call) error) error {
	mem := make([]cuda.Memory, 0, len(args))
	for _, a := range args {
		if m := a.b.memory(); m != nil {
			if err := h.core().SameContext(op, libhandle.Operand{Name: a.name, Ctx: a.b.Context()}); err != nil {
				return err
			}
			mem = append(mem, m)
		}
	}
	return h.core().Do(op, mem, func(k *libhandle.Call[errs]) error {
		return fn(&call{op: op, lh: h.raw.h, raw: h.raw, capturing: k.Capturing, benchmark: h.benchmark, tf32: h.tf32,
			work: func(n uintptr) (uintptr, error) { return k.Work(0, n) }, ctx: h.base.Context(), stream: h.base.Stream()})
	})
}

// SetBenchmark chooses how h picks a convolution's algorithm for a shape
// it has not run yet: by cuDNN's heuristics (false, the default), or by
// timing every algorithm once (true; cudnnFindConvolution*Algorithm, as
// PyTorch's torch.backends.cudnn.benchmark), which runs the convolution
// several times and waits for h's stream the first time each shape is
// seen. A choice made stays with its shape. The engines cuDNN compiles at
// run time (NVRTC) are timed only where none of those it ships compiled
// runs: one faulted on H100s and H200s, leaving the context unusable.
// An engine whose timed run fails with an error no other engine may
// answer (an execution fault, after which the context is unusable) is
// named in the error by cuDNN's global index.
func (h *Handle) SetBenchmark(on bool) error {
	return h.set("Handle.SetBenchmark", func() { h.benchmark = on })
}

// SetTF32 allows (true) or forbids (false, the default) float32
// convolutions to run on tensor cores in TF32, whose products keep 10
// bits of mantissa: CUDNN_DEFAULT_MATH rather than CUDNN_FMA_MATH
// (PyTorch allows it by default: torch.backends.cudnn.allow_tf32). The
// half types always may use tensor cores.
func (h *Handle) SetTF32(on bool) error {
	return h.set("Handle.SetTF32", func() { h.tf32 = on })
}

// set changes a setting of h (f), h held and its turn taken: a closed
// Handle's settings are refused with cuda.ErrClosed, as its calls are
// (valid alone let a setting of a closed Handle pass as done), as
// cublas's SetMathMode does.
func (h *Handle) set(op string, f func()) error {
	if err := h.core().Hold(op); err != nil {
		return err
	}
	defer h.base.Release()
	h.base.Lock()
	defer h.base.Unlock()
	f()
	return nil
}

// Stream returns the stream h queues its work on.
func (h *Handle) Stream() *cuda.Stream { return h.core().Stream() }

// WorkBytes returns the bytes of device memory h's work area holds now.
func (h *Handle) WorkBytes() int { return h.core().WorkBytes() }

// String describes h, as package cuda's objects print: its device, its
// stream's CUstream and its work area's bytes, as
// `cudnn.Handle{cuda:0, stream 0x5a1c2e0, work 1048576 B}`, with "closed"
// once closed. It calls neither cuDNN nor the driver.
func (h *Handle) String() string {
	return h.core().String("cudnn.Handle", fmt.Sprintf("work %d B", h.WorkBytes()))
}

// Close waits for the calls in flight, releases the descriptors and the
// library's handle (cuDNN waits for the device's work as it does) and
// frees the work area. Close of a closed Handle returns nil. Once h's
// context is closed, the library's handle went with it, and Close frees
// what is left. A Close that fails may be tried again, and finishes what
// the failed one left.
func (h *Handle) Close() error {
	return h.core().Close("Handle.Close", func(op string) error { return h.raw.destroy(op) })
}
