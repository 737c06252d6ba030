package nn

import (
	"errors"
	"strings"
	"sync"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/compute"
	"github.com/gocuda/cuda/internal/closed"
	"github.com/gocuda/cuda/internal/halfc"
	"github.com/gocuda/cuda/nd"
)

// Float is the element types of the layers' arrays: float32 (and types
// defined on it), cuda.Float16 and cuda.BFloat16. Every layer computes
// and accumulates in float32 whatever the type it reads and writes.
type Float interface {
	~float32 | cuda.Float16 | cuda.BFloat16
}

// layerType is how a kernel's source spells an element type: its
// storage in memory, and the suffix of its kernels' names.
type layerType struct {
	storage string // "float", or "unsigned short" for the halves
	suffix  string // "f32", "f16", "bf16"
	conv    string // the C of nn_ld and nn_st for the type (halfc's conversions for the halves)
}

var layerTypes = [3]layerType{
	{"float", "f32", `
__device__ __forceinline__ float nn_ld(float v) { return v; }
__device__ __forceinline__ float nn_st(float v) { return v; }
`},
	{"unsigned short", "f16", halfc.Source + `
__device__ __forceinline__ float nn_ld(unsigned short h) { return gocuda_f16_to_f32(h); }
__device__ __forceinline__ unsigned short nn_st(float f) { return gocuda_f32_to_f16(f); }
`},
	{"unsigned short", "bf16", halfc.Source + `
__device__ __forceinline__ float nn_ld(unsigned short h) { return gocuda_bf16_to_f32(h); }
__device__ __forceinline__ unsigned short nn_st(float f) { return gocuda_f32_to_bf16(f); }
`},
}

// layerTypeOf returns T's index in layerTypes: Float16 and BFloat16 by
// identity, anything else (float32 and types defined on it) as float32.
func layerTypeOf[T Float]() int {
	switch any(*new(T)).(type) {
	case cuda.Float16:
		return 1
	case cuda.BFloat16:
		return 2
	}
	return 0
}

// layerPrelude is the C every source of the package starts with, after
// its type's nn_t, nn_ld and nn_st: the vector of a wide load, the sums
// of a row's lanes.
const layerPrelude = `
// nn_vec is V elements loaded or stored at once, aligned to its size.
template <typename E, int V> struct __align__(sizeof(E) * V) nn_vec { E v[V]; };
// nn_aligned reports whether p is aligned to a 16-byte vector.
__device__ __forceinline__ bool nn_aligned(const void* p) { return ((unsigned long long)p & 15ull) == 0; }
// nn_sum returns the sum of v over a row's lanes, to every lane: a warp's
// (lanes of 32) or the block's (lanes of blockDim.x, every thread of the
// block calling it), in a fixed order, so that a row sums the same bits
// every run.
__device__ __forceinline__ float nn_sum(float v, int lanes) {
	#pragma unroll
	for (int k = 16; k > 0; k >>= 1) v += __shfl_xor_sync(0xffffffffu, v, k);
	if (lanes > 32) {
		__shared__ float nn_part[32];
		__syncthreads(); // the last call's readers are done
		if (threadIdx.x % 32 == 0) nn_part[threadIdx.x / 32] = v;
		__syncthreads();
		v = 0;
		for (int w = 0; w < (int)(blockDim.x / 32); w++) v += nn_part[w];
	}
	return v;
}
// nn_max returns the largest of v over a row's lanes, as nn_sum.
__device__ __forceinline__ float nn_max(float v, int lanes) {
	#pragma unroll
	for (int k = 16; k > 0; k >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, k));
	if (lanes > 32) {
		__shared__ float nn_partm[32];
		__syncthreads();
		if (threadIdx.x % 32 == 0) nn_partm[threadIdx.x / 32] = v;
		__syncthreads();
		v = nn_partm[0];
		for (int w = 1; w < (int)(blockDim.x / 32); w++) v = fmaxf(v, nn_partm[w]);
	}
	return v;
}
`

// layerSource is one source of the package's kernels, written once for
// every element type: body names the element type nn_t, reads an element
// with nn_ld and writes one with nn_st, and suffixes each kernel's name
// with NN_SUFFIX (the Go code replaces it with the type's suffix, so that
// the fake's host compiler, which looks for extern "C" __global__ names,
// sees them written out).
type layerSource struct {
	body    string
	once    [3]sync.Once
	sources [3]string
	mu      sync.Mutex
	kernels map[string]*compute.RawKernel
}

// source returns the whole source for element type ti.
func (k *layerSource) source(ti int) string {
	k.once[ti].Do(func() {
		t := layerTypes[ti]
		k.sources[ti] = "typedef " + t.storage + " nn_t;\n" + t.conv + layerPrelude +
			strings.ReplaceAll(k.body, "NN_SUFFIX", t.suffix)
	})
	return k.sources[ti]
}

// kernel returns the kernel of the source named name (without its
// suffix) for T.
func layerKernel[T Float](k *layerSource, name string) (*compute.RawKernel, error) {
	ti := layerTypeOf[T]()
	full := name + "_" + layerTypes[ti].suffix
	k.mu.Lock()
	defer k.mu.Unlock()
	if r := k.kernels[full]; r != nil {
		return r, nil
	}
	r, err := compute.NewRawKernel(k.source(ti), full)
	if err != nil {
		return nil, err
	}
	if k.kernels == nil {
		k.kernels = map[string]*compute.RawKernel{}
	}
	k.kernels[full] = r
	return r, nil
}

// layerLaunch launches kernel name of k for T on s, grid blocks of block
// threads.
func layerLaunch[T Float](op string, k *layerSource, name string, s *cuda.Stream, grid, block int, args ...any) error {
	if grid == 0 {
		return nil
	}
	r, err := layerKernel[T](k, name)
	if err != nil {
		return wrap(op, err)
	}
	cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: grid, Y: 1, Z: 1}, Block: cuda.Dim3{X: block, Y: 1, Z: 1}, Stream: s}
	return wrap(op, r.Launch(cfg, args...))
}

// layerRowLayout chooses how a row kernel takes rows of cols elements: lanes
// threads a row (a warp, or the whole block for wide rows), block
// threads a block, grid blocks.
func layerRowLayout(rows, cols int) (lanes, block, grid int) {
	if cols <= 1024 {
		const warps = 4
		return 32, 32 * warps, (rows + warps - 1) / warps
	}
	block = 256
	if cols >= 8192 {
		block = 512
	}
	return block, block, rows
}

// layerBuffer returns a's memory for a kernel: a must be a live, contiguous
// array (the layers read rows in memory order: Contiguous makes a copy
// that is one), on stream s where s is not nil.
func layerBuffer[T nd.Elem](op, name string, a *nd.Array[T], s *cuda.Stream) (*cuda.DeviceBuffer[T], error) {
	if a == nil {
		return nil, errorf(op, cuda.ErrInvalidValue, "%s is a nil *nd.Array", name)
	}
	b, err := a.Buffer()
	if err != nil {
		return nil, &Error{Op: op, Err: err, Detail: "argument " + name}
	}
	if s != nil && a.Stream() != s {
		return nil, errorf(op, cuda.ErrInvalidValue, "%s is on another stream than the first array: order the streams with events and make the arrays on one", name)
	}
	return b, nil
}

// layerRows returns the rows and columns of x taken as rows along its last
// axis, or op's error for a 0-d array.
func layerRows(op, name string, shape []int) (rows, cols int, err error) {
	if len(shape) == 0 {
		return 0, 0, errorf(op, cuda.ErrInvalidValue, "%s is 0-d: the layer works on its last axis", name)
	}
	cols = shape[len(shape)-1]
	rows = 1
	for _, d := range shape[:len(shape)-1] {
		rows *= d
	}
	return rows, cols, nil
}

// layerSameShape returns op's error where got is not want.
func layerSameShape(op, name string, got, want []int) error {
	if len(got) != len(want) {
		return errorf(op, cuda.ErrInvalidValue, "%s has shape %v, want %v", name, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			return errorf(op, cuda.ErrInvalidValue, "%s has shape %v, want %v", name, got, want)
		}
	}
	return nil
}

// layerDrop frees a, a result a call made before it failed: once more
// if the driver refuses (a refusal leaves the memory allocated and the
// Free to be made again), the call's own error being the one it returns.
func layerDrop[T nd.Elem](a *nd.Array[T]) {
	if a != nil && a.Free() != nil {
		a.Free()
	}
}

// layerNew allocates a result of x's shape on x's stream and fills it with
// fill, freeing it again where fill fails.
func layerNew[T Float](op string, x *nd.Array[T], fill func(y *nd.Array[T]) error) (*nd.Array[T], error) {
	if _, err := layerBuffer(op, "x", x, nil); err != nil {
		return nil, err
	}
	y, err := nd.Empty[T](x.Stream(), x.Shape()...)
	if err != nil {
		return nil, wrap(op, err)
	}
	if err := fill(y); err != nil {
		layerDrop(y)
		return nil, err
	}
	return y, nil
}

// layerFreed frees a, a temporary of a call, joining a refusal into *err
// (so that a release that fails is the call's error, not lost), after
// trying once more so that a passing refusal leaks nothing.
func layerFreed[T nd.Elem](err *error, a *nd.Array[T]) {
	if a == nil {
		return
	}
	if e := a.Free(); e != nil {
		a.Free()
		*err = errors.Join(*err, e)
	}
}

// layerSpan is the device memory of a contiguous array: its first byte
// and the byte past its last (an empty span for nil or no elements), and
// the buffer that holds it (nil for nil), which layerAliased asks whether
// it is closed where the span overlaps another.
type layerSpan struct {
	lo, hi uintptr
	buf    closed.Any
}

// layerSpanOf is b's span.
func layerSpanOf[T any](b *cuda.DeviceBuffer[T]) layerSpan {
	if b == nil {
		return layerSpan{}
	}
	lo := uintptr(b.Ptr())
	return layerSpan{lo, lo + uintptr(b.ByteSize()), closed.Of[T]{B: b}}
}

// layerArraySpan is a's span, empty for nil (an optional weight); a has
// been checked by layerBuffer.
func layerArraySpan[T nd.Elem](a *nd.Array[T]) layerSpan {
	if a == nil {
		return layerSpan{}
	}
	b, err := a.Buffer()
	if err != nil {
		return layerSpan{}
	}
	return layerSpanOf(b)
}

// overlaps reports whether a and b share a byte.
func (a layerSpan) overlaps(b layerSpan) bool {
	return a.lo < a.hi && b.lo < b.hi && a.lo < b.hi && b.lo < a.hi
}

// same reports whether a and b are the same memory, whatever the buffers
// that hold it.
func (a layerSpan) same(b layerSpan) bool { return a.lo == b.lo && a.hi == b.hi }

// layerIn is an input of a call, for layerAliased: its name, its memory,
// and whether the output may be it (in place: each thread reads the
// elements it alone writes, before it writes them).
type layerIn struct {
	name    string
	span    layerSpan
	inPlace bool
}

// layerAliased returns op's error where output out (named name) shares
// memory with an input other than by being the very memory of one that
// may be written in place. Arrays are compared by their memory, not as
// pointers: a view of the same memory (a Reshape of it, or a Slice that
// starts a few elements on) is the same memory to the kernel, which
// would read elements another thread has already written. Where either
// of two overlapping spans is closed (a KVCache's memory, or an array's
// since its check), the error is cuda.ErrClosed (see package closed).
func layerAliased(op, name string, out layerSpan, ins ...layerIn) error {
	for _, in := range ins {
		if !out.overlaps(in.span) || in.inPlace && out.same(in.span) {
			continue
		}
		for _, a := range [2]layerIn{{name, out, false}, in} {
			if a.span.buf.Closed() { // an overlapping span is not empty: it has a buffer
				return &Error{Op: op, Err: cuda.ErrClosed, Detail: a.name + " is closed (freed, or its context closed)"}
			}
		}
		switch {
		case out.same(in.span):
			return errorf(op, cuda.ErrInvalidValue, "%s and %s are one array (the same memory): %s is read after %s is written", name, in.name, in.name, name)
		case in.inPlace:
			return errorf(op, cuda.ErrInvalidValue, "%s overlaps %s without being the same memory: for in place pass %s itself, else memory apart", name, in.name, in.name)
		default:
			return errorf(op, cuda.ErrInvalidValue, "%s overlaps %s: it must be memory apart, as %s is read while %s is written", name, in.name, in.name, name)
		}
	}
	return nil
}
