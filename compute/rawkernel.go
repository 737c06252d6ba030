package compute

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"weak"

	cuda "github.com/gocuda/cuda"
)

// RawKernel is a kernel written whole in CUDA C, as CuPy's RawKernel: the
// source is compiled by NVRTC for the device of the first launch in each
// context, through the same caches as the generated kernels (in memory per
// context, and on disk), and the caller chooses the grid, the block and
// the shared memory. Where Elementwise and Reduction write the loop, a
// RawKernel is for what needs threads to cooperate in a way of the
// caller's choosing: a block per row, tiles in shared memory, warp
// shuffles.
//
// The kernel must be declared extern "C" __global__ so that its name is
// not mangled. One source may hold several kernels: RawKernels made from
// the same source share its compiled module.
//
// A RawKernel is safe for concurrent use. Its zero value returns an error
// from Launch.
type RawKernel struct {
	name string
	v    *variant
}

// NewRawKernel returns the kernel name of source. Nothing is compiled
// until the first launch: a source that does not compile is an error of
// that launch, which carries NVRTC's log.
func NewRawKernel(source, name string) (*RawKernel, error) {
	const op = "NewRawKernel"
	if strings.TrimSpace(source) == "" {
		return nil, errorf(op, cuda.ErrInvalidValue, "the source is empty")
	}
	if !cIdent(name) {
		return nil, errorf(op, cuda.ErrInvalidValue, "kernel name %q is not a C identifier", name)
	}
	if !strings.Contains(source, name) {
		return nil, errorf(op, cuda.ErrInvalidValue, "the source does not mention kernel %s", name)
	}
	return &RawKernel{name: name, v: &variant{src: source}}, nil
}

// Name returns the kernel's name; "" for a nil or zero RawKernel.
func (k *RawKernel) Name() string {
	if k == nil {
		return ""
	}
	return k.name
}

// Launch compiles the kernel for cfg.Stream's context if it is not yet
// loaded there, and launches it with args, as cuda.Function.Launch takes
// them (buffers, numbers, DevicePtrs, structs of numbers), and cfg as it
// takes it (a Y or Z of zero means 1; a grid's X of zero launches
// nothing, and compiles nothing). A capture
// does not compile: launch the kernel once before capturing it.
func (k *RawKernel) Launch(cfg cuda.LaunchConfig, args ...any) error {
	const op = "RawKernel.Launch"
	if k == nil || k.v == nil {
		return errorf(op, cuda.ErrInvalidValue, "nil or zero *RawKernel: make one with NewRawKernel")
	}
	switch {
	case cfg.Stream == nil:
		return errorf(op, cuda.ErrInvalidValue, "cfg.Stream is nil: a launch is queued on a stream")
	case cfg.Stream.Context() == nil:
		return errorf(op, cuda.ErrInvalidValue, "cfg.Stream is a zero cuda.Stream: make one with cuda.Open or Context.NewStream")
	}
	if cfg.Grid.X == 0 {
		// No launch, as cuda.Function.Launch, and nothing to compile for;
		// but what Function.Launch refuses whatever the grid (a bad
		// configuration, a closed stream, a freed buffer) is refused
		// here too: by the function itself where it is loaded in the
		// stream's context, else by the checks that need no kernel.
		if f, ok := loaded(cfg.Stream.Context(), k.v, k.name); ok {
			return wrap(op, f.Launch(cfg, args...), "launching %s", k.name)
		}
		return emptyLaunch(op, cfg, args)
	}
	f, err := kernel(op, cfg.Stream, k.v, k.name, nil)
	if err != nil {
		return err
	}
	return wrap(op, f.Launch(cfg, args...), "launching %s", k.name)
}

// Function returns the kernel compiled and loaded in ctx, for what
// cuda.Function offers beside Launch (its attributes, occupancy, a larger
// dynamic shared memory).
func (k *RawKernel) Function(ctx *cuda.Context) (*cuda.Function, error) {
	const op = "RawKernel.Function"
	if k == nil || k.v == nil {
		return nil, errorf(op, cuda.ErrInvalidValue, "nil or zero *RawKernel: make one with NewRawKernel")
	}
	if ctx == nil {
		return nil, errorf(op, cuda.ErrInvalidValue, "ctx is a nil *cuda.Context")
	}
	return function(op, ctx, k.v, k.name)
}

// cIdent reports whether s is a C identifier (any: ident is the stricter
// test of a generated kernel's parameter names).
func cIdent(s string) bool {
	for i, r := range s {
		switch {
		case r == '_', 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z':
		case i > 0 && '0' <= r && r <= '9':
		default:
			return false
		}
	}
	return s != ""
}

// loaded returns kernel name of v where it is loaded in ctx already, and
// compiles or loads nothing.
func loaded(ctx *cuda.Context, v *variant, name string) (*cuda.Function, bool) {
	if cm, ok := modules.Load(weak.Make(ctx)); ok {
		if f, ok := cm.(*contextModules).funcs.Load(funcKey{v, name}); ok {
			return f.(*cuda.Function), true
		}
	}
	return nil, false
}

// emptyLaunch returns the error cuda.Function.Launch would of a launch of
// no blocks, of what it checks without the kernel: the configuration's
// dimensions (a grid's X of 0, any other from 1, a Y or Z of 0 meaning 1)
// and dynamic shared memory, and the device buffers among args, closed
// or of another context than cfg.Stream. The kernel's own limits (its
// threads a block, its shared memory) need it compiled: they are left to
// the first launch that has blocks.
func emptyLaunch(op string, cfg cuda.LaunchConfig, args []any) error {
	one := func(d int) int {
		if d == 0 {
			return 1
		}
		return d
	}
	for _, d := range []int{one(cfg.Grid.Y), one(cfg.Grid.Z), cfg.Block.X, one(cfg.Block.Y), one(cfg.Block.Z)} {
		if d < 1 || d > math.MaxUint32 {
			return errorf(op, cuda.ErrInvalidValue, "grid %v, block %v: every dimension must be from 1 to %d (a grid's X may be 0: no launch)", cfg.Grid, cfg.Block, uint32(math.MaxUint32))
		}
	}
	if cfg.SharedMemBytes < 0 || cfg.SharedMemBytes > math.MaxUint32 {
		return errorf(op, cuda.ErrInvalidValue, "dynamic shared memory %d bytes out of range", cfg.SharedMemBytes)
	}
	for i, a := range args {
		// A *cuda.DeviceBuffer of any element type (reflectLiveness's
		// Slice); anything else, or a nil or zero one, is Function.Launch's
		// to judge with the kernel.
		b, ok := a.(bufferInfo)
		if v := reflect.ValueOf(a); !ok || v.Kind() != reflect.Pointer || v.IsNil() || !v.MethodByName("Slice").IsValid() || b.Context() == nil {
			continue
		}
		if err := (reflectLiveness{}).closed(b); errors.Is(err, cuda.ErrClosed) {
			return &Error{Op: op, Err: cuda.ErrClosed, Detail: fmt.Sprintf("argument %d is a closed device buffer (freed, or its context closed)", i)}
		}
		if b.Context() != cfg.Stream.Context() {
			return errorf(op, cuda.ErrInvalidValue, "argument %d is a device buffer of another context than cfg.Stream", i)
		}
	}
	return nil
}
