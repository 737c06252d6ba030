package cusparse

import (
	"errors"
	"fmt"
	"runtime"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/attach"
	"github.com/gocuda/cuda/internal/calledas"
	clib "github.com/gocuda/cuda/internal/lib/cusparse"
	"github.com/gocuda/cuda/internal/libhandle"
	"github.com/gocuda/cuda/internal/track"
)

// Handle is a cuSPARSE handle for one stream: every call queues its work
// on that stream, in the stream's order. It keeps the work buffers
// cuSPARSE asks for, in stream-ordered memory of the stream, reused by
// later calls and grown when a call needs more. Close it when done. It is
// safe for use by many goroutines, whose calls take turns. The zero Handle
// is not usable: its methods return cuda.ErrInvalidValue.
type Handle struct {
	// base is the handle's life, its turn (the lock order is there), its
	// stream and its two work buffers (SpGEMM needs both at once).
	base libhandle.Base[errs]
	raw  *raw
}

// errs makes the shared handle's errors this package's.
type errs struct{}

func (errs) Errorf(op string, sentinel error, format string, args ...any) error {
	return errorf(op, sentinel, format, args...)
}

// raw is the library's handle, shared with the cleanup of a Handle nobody
// closed.
type raw struct {
	ctx *cuda.Context
	h   clib.Handle
}

// destroy releases the handle, zeroed once gone so that a failed destroy
// can be tried again. Called with ctx current.
func (r *raw) destroy(op string) error {
	if r.h == 0 {
		return nil
	}
	// cusparseDestroy waits for the device's work first.
	if err := check(op, "cusparseDestroy", clib.Destroy(r.h)); err != nil {
		return err
	}
	r.h = 0
	return nil
}

// New makes a Handle that queues its work on s. It allocates nothing on
// the device: the work buffers come with the first calls that need them.
func New(s *cuda.Stream) (*Handle, error) {
	const op = "New"
	if s == nil {
		return nil, errorf(op, cuda.ErrInvalidValue, "s is a nil *cuda.Stream")
	}
	if err := load(op); err != nil {
		return nil, err
	}
	r := &raw{ctx: s.Context()}
	rawStream, err := libhandle.Make(op, s, func(stream uintptr) error {
		if err := check(op, "cusparseCreate", clib.Create(&r.h)); err != nil {
			return err
		}
		return check(op, "cusparseSetStream", clib.SetStream(r.h, stream))
	}, r.destroy)
	if err != nil {
		return nil, err
	}
	h := &Handle{raw: r}
	owner := libhandle.NewOwner(s.Context(), h, (*Handle).Close, r.destroy)
	if err := h.base.Arm(libhandle.Spec{Stream: s, RawStream: rawStream, Kind: track.SparseHandle, Owner: owner,
		Cleanup:  runtime.AddCleanup(h, func(o *attach.Owner) { libhandle.Forgotten(track.SparseHandle, o) }, owner),
		Work:     make([]*cuda.DeviceBuffer[byte], 2),
		WorkName: "a work buffer"}); err != nil {
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

// hold keeps h open until h.base.Release.
func (h *Handle) hold(op string) error { return h.core().Hold(op) }

// do runs fn with h held, its turn taken, and h's stream and mem held
// open with their context current (Stream.Do). fn queues the work with
// the library's handle; work(i, n) returns the address of work buffer i
// (of two: SpGEMM needs both at once) of at least n bytes, grown where it
// is smaller (libhandle.Call.Work).
func (h *Handle) do(op string, mem []cuda.Memory, fn func(lh clib.Handle, work func(i int, n uintptr) (uintptr, error)) error) error {
	return h.core().Do(op, mem, func(c *libhandle.Call[errs]) error { return fn(h.raw.h, c.Work) })
}

// Stream returns the stream h queues its work on.
func (h *Handle) Stream() *cuda.Stream { return h.core().Stream() }

// WorkBytes returns the bytes of device memory h's work buffers hold now.
func (h *Handle) WorkBytes() int { return h.core().WorkBytes() }

// String describes h, as package cuda's objects print: its device, its
// stream's CUstream and its work buffers' bytes, as
// `cusparse.Handle{cuda:0, stream 0x5a1c2e0, work 1048576 B}`, with
// "closed" once closed. It calls neither cuSPARSE nor the driver.
func (h *Handle) String() string {
	return h.core().String("cusparse.Handle", fmt.Sprintf("work %d B", h.WorkBytes()))
}

// Close waits for the calls in flight, releases the library's handle
// (cuSPARSE waits for the device's work as it does) and frees the work
// buffers. Close of a closed Handle returns nil. Once h's context is
// closed, the library's handle went with it, and Close frees what is left.
// A Close that fails may be tried again, and finishes what the failed one
// left.
func (h *Handle) Close() error {
	return h.core().Close("Handle.Close", func(op string) error { return h.raw.destroy(op) })
}
