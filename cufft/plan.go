package cufft

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/attach"
	"github.com/gocuda/cuda/internal/calledas"
	"github.com/gocuda/cuda/internal/capturegate"
	"github.com/gocuda/cuda/internal/describe"
	clib "github.com/gocuda/cuda/internal/lib/cufft"
	"github.com/gocuda/cuda/internal/lifetime"
	"github.com/gocuda/cuda/internal/track"
)

// Type is a transform's type (cufftType).
type Type int

// The transforms: complex to complex, real to complex (forward) and
// complex to real (inverse), in single and double precision.
const (
	C2C Type = 0x29 // complex64 to complex64
	Z2Z Type = 0x69 // complex128 to complex128
	R2C Type = 0x2a // float32 to complex64
	D2Z Type = 0x6a // float64 to complex128
	C2R Type = 0x2c // complex64 to float32
	Z2D Type = 0x6c // complex128 to float64
)

var typeNames = map[Type]string{C2C: "C2C", Z2Z: "Z2Z", R2C: "R2C", D2Z: "D2Z", C2R: "C2R", Z2D: "Z2D"}

func (t Type) String() string {
	if s, ok := typeNames[t]; ok {
		return s
	}
	return fmt.Sprintf("Type(%d)", int(t))
}

// Direction is a complex-to-complex transform's direction.
type Direction int

const (
	Forward Direction = -1 // exp(-2πi jk/n)
	Inverse Direction = 1  // exp(+2πi jk/n), not scaled
)

// Plan is a cuFFT plan: one transform's type, shape and batch, executed on
// one stream. It is safe for use by many goroutines, whose executions take
// turns. Close it when done. The zero Plan is not usable: its methods
// return cuda.ErrInvalidValue.
type Plan struct {
	// life is held by every execution and closed by Close, which waits for
	// those in flight (internal/lifetime).
	life lifetime.Life
	// mu makes executions take turns: they set the plan's work area.
	// Lock order: life's hold, then mu, then the holds Stream.Do takes.
	mu      sync.Mutex
	stream  *cuda.Stream
	raw     *raw
	typ     Type
	shape   []int
	batch   int
	work    *cuda.DeviceBuffer[byte] // the work area, set once; empty where none is needed
	in, out int                      // elements of the input and the output, batches included
	owner   *attach.Owner            // its tie to its context's Close
	// unfinished is set by a Close that destroyed the library's plan but
	// failed to free the work area: the Plan refuses executions (there is
	// no cuFFT plan left to run) until a Close finishes.
	unfinished atomic.Bool
}

// raw is the library's plan, shared with the cleanup of a Plan nobody
// closed.
type raw struct {
	ctx *cuda.Context
	h   clib.Handle
	ok  bool // made: h is the library's
}

func (r *raw) destroy(op string) error {
	if !r.ok {
		return nil
	}
	if err := check(op, "cufftDestroy", clib.Destroy(r.h)); err != nil {
		return err
	}
	r.ok = false
	return nil
}

// NewPlan makes a plan of type t for arrays of the given shape (one to
// three dimensions, row-major: the last one contiguous), batch of them one
// after the other, executed on s. For R2C and D2Z the shape is the real
// input's and the output's last dimension is shape[last]/2+1; for C2R and
// Z2D the shape is the real output's.
func NewPlan(s *cuda.Stream, t Type, shape []int, batch int) (*Plan, error) {
	const op = "NewPlan"
	if s == nil {
		return nil, errorf(op, cuda.ErrInvalidValue, "s is a nil *cuda.Stream")
	}
	if _, ok := typeNames[t]; !ok {
		return nil, errorf(op, cuda.ErrInvalidValue, "t is %d: an unknown transform type", int(t))
	}
	if len(shape) < 1 || len(shape) > 3 {
		return nil, errorf(op, cuda.ErrInvalidValue, "shape %v: want one to three dimensions", shape)
	}
	total := 1
	for _, n := range shape {
		if n < 1 || n > math.MaxInt32 || total > math.MaxInt32/n {
			return nil, errorf(op, cuda.ErrInvalidValue, "shape %v: want dimensions of 1 or more, 2^31 elements at most", shape)
		}
		total *= n
	}
	if batch < 1 || batch > math.MaxInt32 || total > math.MaxInt/batch {
		return nil, errorf(op, cuda.ErrInvalidValue, "batch %d: want 1 to 2^31-1 arrays", batch)
	}
	if err := open(op); err != nil {
		return nil, err
	}
	p := &Plan{stream: s, typ: t, shape: append([]int(nil), shape...), batch: batch}
	half := total / shape[len(shape)-1] * (shape[len(shape)-1]/2 + 1)
	switch t {
	case C2C, Z2Z:
		p.in, p.out = total*batch, total*batch
	case R2C, D2Z:
		p.in, p.out = total*batch, half*batch
	default:
		p.in, p.out = half*batch, total*batch
	}
	r := &raw{ctx: s.Context()}
	p.raw = r
	var workBytes int
	var n [3]int32
	for i, d := range shape {
		n[i] = int32(d)
	}
	err := s.Do(func(stream uintptr) error {
		if err := check(op, "cufftCreate", clib.Create(&r.h)); err != nil {
			return err
		}
		r.ok = true
		var work uintptr
		err := errors.Join(
			// The work area is gocuda's, set at each execution.
			check(op, "cufftSetAutoAllocation", clib.SetAutoAllocation(r.h, 0)),
			check(op, "cufftMakePlanMany", clib.MakePlanMany(r.h, int32(len(shape)), &n[0], nil, 1, 0, nil, 1, 0, int32(t), int32(batch), &work)),
		)
		if err == nil {
			err = check(op, "cufftSetStream", clib.SetStream(r.h, stream))
		}
		if err != nil {
			if e := (*Error)(nil); errors.As(err, &e) && e.Detail == "" {
				e.Detail = fmt.Sprintf("%v of shape %v, batch %d", t, shape, batch)
			}
			lifetime.CloseTemp(&err, func() error { return r.destroy(op) })
		}
		workBytes = int(work)
		return err
	})
	if err != nil {
		return nil, named(op, err)
	}
	if err := p.setWorkArea(op, workBytes); err != nil {
		lifetime.CloseTemp(&err, func() error { return r.ctx.Do(func() error { return r.destroy(op) }) })
		return nil, named(op, err)
	}
	// The driver does not destroy a plan with its context: the context's
	// Close closes one still open.
	p.owner = attach.NewOwner(r.ctx, p, (*Plan).Close, func() error {
		if err := r.ctx.Do(func() error { return r.destroy("Plan cleanup") }); !errors.Is(err, cuda.ErrClosed) {
			return err
		}
		return nil
	})
	p.life.Arm(track.FFTPlan, runtime.AddCleanup(p, func(o *attach.Owner) {
		track.Forgotten(track.FFTPlan)
		capturegate.Cleanup(o.Destroy)
	}, p.owner))
	if err := p.owner.Register(); err != nil { // the context is closing
		return nil, calledas.Op(op, errors.Join(err, p.Close()))
	}
	return p, nil
}

// setWorkArea gives the plan its work area: stream-ordered memory on its
// stream (cuMemAlloc's while the stream captures, whose allocations are the
// graph's), kept until Close.
func (p *Plan) setWorkArea(op string, bytes int) error {
	var err error
	if p.stream.Capturing() {
		p.work, err = cuda.Alloc[byte](p.raw.ctx, bytes)
	} else {
		p.work, err = cuda.AllocAsync[byte](p.stream, bytes)
	}
	if err != nil {
		return err
	}
	if bytes == 0 {
		return nil
	}
	err = p.stream.Do(func(uintptr) error {
		return check(op, "cufftSetWorkArea", clib.SetWorkArea(p.raw.h, uintptr(p.work.Ptr())))
	}, p.work)
	if err != nil {
		lifetime.CloseTemp(&err, p.work.Free)
	}
	return err
}

// valid returns the error for a nil or zero Plan.
func (p *Plan) valid(op string) error {
	switch {
	case p == nil:
		return errorf(op, cuda.ErrInvalidValue, "nil *Plan")
	case p.life.Status() == lifetime.Zero:
		return errorf(op, cuda.ErrInvalidValue, "a zero Plan: make one with NewPlan")
	}
	return nil
}

// Type returns the plan's transform type.
func (p *Plan) Type() Type {
	if p == nil {
		return 0
	}
	return p.typ
}

// Shape returns the plan's shape and batch.
func (p *Plan) Shape() (shape []int, batch int) {
	if p == nil {
		return nil, 0
	}
	return append([]int(nil), p.shape...), p.batch
}

// WorkBytes returns the bytes of the plan's work area.
func (p *Plan) WorkBytes() int {
	if p == nil {
		return 0
	}
	return p.work.Len()
}

// Stream returns the stream p executes on.
func (p *Plan) Stream() *cuda.Stream {
	if p == nil {
		return nil
	}
	return p.stream
}

// String describes p, as package cuda's objects print: its type, shape,
// batch and device, as `cufft.Plan{C2C [64 64] ×8, cuda:0}`, with
// "closed" once closed. It calls neither cuFFT nor the driver.
func (p *Plan) String() string {
	const kind = "cufft.Plan"
	if p == nil {
		return kind + "(nil)"
	}
	st := p.life.Status()
	if st == lifetime.Zero {
		return describe.Object(kind, st)
	}
	parts := []string{fmt.Sprintf("%v %v ×%d", p.typ, p.shape, p.batch), p.raw.ctx.Device().String()}
	if p.unfinished.Load() {
		// Refusing executions, as a closed plan does, until Close
		// finishes.
		return describe.Object(kind, lifetime.Held, append(parts, "closed (its work area is not freed: call Close again)")...)
	}
	return describe.Object(kind, st, parts...)
}

// Close waits for the executions in flight, destroys the plan and frees
// its work area (in the stream's order). Close of a closed Plan returns
// nil. Once p's context is closed, the library's plan went with it.
//
// A Close that fails may be tried again, and finishes what the failed one
// left. Where the library refused to destroy its plan, p is left usable.
// Where the plan is gone but its work area could not be freed (the driver
// refused, or a graph that captured an execution still uses it: close the
// graph first), p refuses executions with cuda.ErrClosed until a Close
// finishes.
func (p *Plan) Close() error {
	const op = "Plan.Close"
	if err := p.valid(op); err != nil {
		return err
	}
	_, err := p.life.Close(func() (bool, error) {
		// The plan first: the library must not reach the work area once
		// it is freed, and the plan, which the work area is set in, is
		// not made again.
		if !p.unfinished.Load() {
			if err := p.raw.ctx.Do(func() error { return p.raw.destroy(op) }); err != nil && !errors.Is(err, cuda.ErrClosed) {
				return false, named(op, err)
			}
		}
		if err := p.work.Free(); err != nil && !errors.Is(err, cuda.ErrClosed) {
			p.unfinished.Store(true)
			return false, calledas.Unfreed(op, "the work area", err)
		}
		p.owner.Closed()
		return true, nil
	})
	return err
}

// ExecC2C transforms src into dst with a C2C plan, in direction dir. It
// is in place where dst == src (the same buffer); otherwise the two may
// not overlap.
func (p *Plan) ExecC2C(dst, src *cuda.DeviceBuffer[complex64], dir Direction) error {
	return execDir(p, "Plan.ExecC2C", C2C, dst, src, dir, clib.ExecC2C)
}

// ExecZ2Z transforms src into dst with a Z2Z plan, in direction dir. It
// is in place where dst == src (the same buffer); otherwise the two may
// not overlap.
func (p *Plan) ExecZ2Z(dst, src *cuda.DeviceBuffer[complex128], dir Direction) error {
	return execDir(p, "Plan.ExecZ2Z", Z2Z, dst, src, dir, clib.ExecZ2Z)
}

// ExecR2C transforms the real src into its half spectrum dst with an R2C
// plan, out of place: dst and src may not overlap.
func (p *Plan) ExecR2C(dst *cuda.DeviceBuffer[complex64], src *cuda.DeviceBuffer[float32]) error {
	return exec(p, "Plan.ExecR2C", R2C, dst, src, clib.ExecR2C)
}

// ExecD2Z transforms the real src into its half spectrum dst with a D2Z
// plan, out of place: dst and src may not overlap.
func (p *Plan) ExecD2Z(dst *cuda.DeviceBuffer[complex128], src *cuda.DeviceBuffer[float64]) error {
	return exec(p, "Plan.ExecD2Z", D2Z, dst, src, clib.ExecD2Z)
}

// ExecC2R transforms the half spectrum src into the real dst with a C2R
// plan (not scaled), out of place: dst and src may not overlap. cuFFT uses
// src as scratch: its contents are undefined afterwards.
func (p *Plan) ExecC2R(dst *cuda.DeviceBuffer[float32], src *cuda.DeviceBuffer[complex64]) error {
	return exec(p, "Plan.ExecC2R", C2R, dst, src, clib.ExecC2R)
}

// ExecZ2D transforms the half spectrum src into the real dst with a Z2D
// plan (not scaled), out of place: dst and src may not overlap. cuFFT uses
// src as scratch: its contents are undefined afterwards.
func (p *Plan) ExecZ2D(dst *cuda.DeviceBuffer[float64], src *cuda.DeviceBuffer[complex128]) error {
	return exec(p, "Plan.ExecZ2D", Z2D, dst, src, clib.ExecZ2D)
}

// libName returns the name of the library function op calls: "cufftExecC2C"
// for "Plan.ExecC2C".
func libName(op string) string { return "cufft" + op[len("Plan."):] }

func execDir[T any](p *Plan, op string, t Type, dst, src *cuda.DeviceBuffer[T], dir Direction,
	fn func(plan clib.Handle, idata, odata uintptr, direction int32) clib.Result) error {
	if dir != Forward && dir != Inverse {
		return errorf(op, cuda.ErrInvalidValue, "dir is %d: want Forward or Inverse", int(dir))
	}
	name := libName(op)
	return run(p, op, t, dst, src, true, func(h clib.Handle, in, out uintptr) error {
		return check(op, name, fn(h, in, out, int32(dir)))
	})
}

func exec[O, I any](p *Plan, op string, t Type, dst *cuda.DeviceBuffer[O], src *cuda.DeviceBuffer[I],
	fn func(plan clib.Handle, idata, odata uintptr) clib.Result) error {
	name := libName(op)
	return run(p, op, t, dst, src, false, func(h clib.Handle, in, out uintptr) error {
		return check(op, name, fn(h, in, out))
	})
}

// run checks the buffers against p and executes transform on them in p's
// turn, on p's stream, with the work area held. inPlace says the
// transform may be in place (dst == src).
func run[O, I any](p *Plan, op string, t Type, dst *cuda.DeviceBuffer[O], src *cuda.DeviceBuffer[I], inPlace bool,
	transform func(h clib.Handle, in, out uintptr) error) (err error) {
	if err := p.valid(op); err != nil {
		return err
	}
	switch {
	case p.typ != t:
		return errorf(op, cuda.ErrInvalidValue, "the plan is %v: %s needs a plan of type %v", p.typ, op[len("Plan."):], t)
	case dst == nil:
		return errorf(op, cuda.ErrInvalidValue, "dst is a nil *cuda.DeviceBuffer")
	case src == nil:
		return errorf(op, cuda.ErrInvalidValue, "src is a nil *cuda.DeviceBuffer")
	case src.Len() != p.in || dst.Len() != p.out:
		return errorf(op, cuda.ErrInvalidValue, "src has %d elements and dst %d; the %v plan of shape %v, batch %d, takes %d and makes %d",
			src.Len(), dst.Len(), t, p.shape, p.batch, p.in, p.out)
	}
	ctx := p.stream.Context()
	switch {
	case dst.Context() != ctx:
		return errorf(op, cuda.ErrInvalidValue, "dst belongs to another context than the plan's stream")
	case src.Context() != ctx:
		return errorf(op, cuda.ErrInvalidValue, "src belongs to another context than the plan's stream")
	}
	inStart, inEnd := uintptr(src.Ptr()), uintptr(src.Ptr())+uintptr(src.ByteSize())
	outStart, outEnd := uintptr(dst.Ptr()), uintptr(dst.Ptr())+uintptr(dst.ByteSize())
	if inStart < outEnd && outStart < inEnd && !(inPlace && inStart == outStart) {
		if err := cmp.Or(closedArg(op, "dst", dst), closedArg(op, "src", src)); err != nil {
			return err
		}
		if inPlace {
			return errorf(op, cuda.ErrInvalidValue, "dst and src overlap without being the same buffer (dst == src is in place)")
		}
		return errorf(op, cuda.ErrInvalidValue, "dst and src overlap: %v transforms are out of place here", t)
	}
	if p.life.Hold() != lifetime.Held {
		return errorf(op, cuda.ErrClosed, "the plan is closed")
	}
	defer p.life.Release()
	if p.unfinished.Load() {
		return errorf(op, cuda.ErrClosed, "the plan is closed, but its Close failed to free the work area: call Close again")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	in, freeIn, err := complexAligned(src, p.stream, t == R2C || t == D2Z, true)
	if err != nil {
		return named(op, err)
	}
	defer func() { err = errors.Join(err, named(op, freeIn())) }()
	out, freeOut, err := complexAligned(dst, p.stream, t == C2R || t == Z2D, false)
	if err != nil {
		return named(op, err)
	}
	defer func() { err = errors.Join(err, named(op, freeOut())) }()
	err = named(op, p.stream.Do(func(uintptr) error {
		return transform(p.raw.h, uintptr(in.Ptr()), uintptr(out.Ptr()))
	}, in, out, p.work))
	if err == nil && out != dst {
		err = named(op, dst.CopyFromDeviceAsync(out, p.stream))
	}
	return err
}
