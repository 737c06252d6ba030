package compute

import (
	"strings"

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
		return nil // no launch, as cuda.Function.Launch: nothing to compile for
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
