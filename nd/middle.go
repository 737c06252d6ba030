package nd

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"unsafe"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/compute"
	"github.com/gocuda/cuda/internal/attach"
	"github.com/gocuda/cuda/internal/halfc"
)

// The fold of a block of axes in the middle of a contiguous array: outer
// slabs of mid rows of inner elements, each column of each slab folded
// into one element of the (outer, inner) result, without the copy that
// moving the axes last would take. One kernel (nd_mid), of blocks of tx
// threads across the columns by ty down mid:
//
//   - each thread takes v adjacent columns (16 bytes at most, where inner
//     and both buffers' addresses allow), loaded at once;
//   - where a slab's inner/v vectors are 256 or fewer, a block's tx
//     threads take a slab's whole row, so that the block reads its ty rows
//     as one run of memory (5×100,003×3: blocks of 3×85); wider slabs are
//     cut into tiles of a multiple of 32 vectors (2048×3×2048 float32: two
//     tiles of 256 threads an outer slab);
//   - where that would leave a block less than half full (few columns and
//     few rows: 2048×5×3), each thread folds one column whole, the
//     columns of every slab one after the other (the flat layout);
//   - each thread folds its rows (ty apart) in order, then the block's ty
//     rows of partial results fold in a fixed tree in shared memory;
//   - where the blocks across the columns do not fill the device, mid is
//     cut into chunks, a block each (grid.y): each block leaves its
//     partial results, and the last of a column's blocks to finish (an
//     atomic counter in the stream's scratch memory, which adds nothing
//     up) folds them, its threads taking the chunks ty apart, in the same
//     tree. Where the stream has no scratch to give (it captures a graph,
//     whose replays need memory of their own) or the partial results do
//     not fit it, they are allocated in stream order and a second launch
//     of the same kernel folds them, by the same code: the same bits.
//
// Every order of the folds is fixed by the shape, the type and the
// device's size: the same bits every run, as compute's reductions.

// middleThreads is the threads a block of nd_mid has at most.
const middleThreads = 256

// midPlan is the launch of a middle fold.
type midPlan struct {
	v      int // elements a thread loads at once
	tx, ty int // a block: tx threads across the columns, ty down mid
	tiles  int // blocks across a slab's columns; 0: the flat layout
	gx     int // blocks across the columns (of every slab)
	chunks int // blocks down mid
	chunk  int // rows of mid a block folds
}

// planMiddle lays out the fold of outer×mid×inner elements of size bytes
// on a device of sms multiprocessors; aligned is the addresses of the
// source and the result or'ed together.
func planMiddle(sms, size, outer, mid, inner int, aligned uintptr) midPlan {
	p := midPlan{v: max(1, 16/size)}
	for p.v > 1 && (inner%p.v != 0 || aligned%uintptr(p.v*size) != 0) {
		p.v /= 2
	}
	cv := inner / p.v // vectors across a slab
	switch {
	case cv > middleThreads:
		p.tiles = (cv + middleThreads - 1) / middleThreads
		p.tx = ((cv+p.tiles-1)/p.tiles + 31) / 32 * 32
		p.ty = 1
		p.gx = outer * p.tiles
	default:
		p.tiles, p.tx = 1, cv
		p.ty = max(1, min(middleThreads/cv, mid))
		p.gx = outer
		if p.tx*p.ty < middleThreads/2 {
			p.tiles, p.tx, p.ty = 0, middleThreads, 1
			p.gx = (outer*cv + middleThreads - 1) / middleThreads
		}
	}
	// Chunks of mid, where the blocks across the columns leave the device
	// short of threads (about 2048 a multiprocessor), each thread keeping
	// 4 rows or more of its chunk.
	threads := p.gx * p.tx * p.ty
	want := (sms*2048 + threads - 1) / threads
	p.chunks = max(1, min(want, (mid+4*p.ty-1)/(4*p.ty), 65535))
	p.chunk = (mid + p.chunks - 1) / p.chunks
	p.chunks = (mid + p.chunk - 1) / p.chunk
	return p
}

// middleFold folds src, outer×mid×inner, over mid into dst, outer×inner.
func middleFold[T Elem](what string, dst, src *cuda.DeviceBuffer[T], outer, mid, inner int, s *cuda.Stream) (err error) {
	t := ctypeOf[T]()
	k, acc, err := middleKernel(what, t)
	if err != nil {
		return err
	}
	sms, err := smsOf(s)
	if err != nil {
		return err
	}
	if middleSMs > 0 {
		sms = middleSMs
	}
	p := planMiddle(sms, int(unsafe.Sizeof(*new(T))), outer, mid, inner, uintptr(src.Ptr())|uintptr(dst.Ptr()))
	cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: p.gx, Y: p.chunks}, Block: cuda.Dim3{X: p.tx, Y: p.ty}, Stream: s}
	launch := func(partial, counters cuda.DevicePtr, phase int32) error {
		return k.Launch(cfg, src, dst, boxInt64(int64(outer)), boxInt64(int64(mid)), boxInt64(int64(inner)),
			boxInt64(int64(p.tiles)), boxInt64(int64(p.chunk)), boxInt64(int64(p.chunks)), partial, counters, phase, int32(p.v))
	}
	if p.chunks == 1 {
		return launch(0, 0, 0)
	}
	bytes := p.chunks * outer * inner * ctypes[acc].size()
	addr, size, err := attach.StreamScratch(s)
	if err != nil {
		return err
	}
	if addr != 0 && p.gx <= attach.ScratchCounters && 4*attach.ScratchCounters+bytes <= size && !middleNoScratch {
		return launch(cuda.DevicePtr(addr+4*attach.ScratchCounters), cuda.DevicePtr(addr), 0)
	}
	// The partial results in stream order, folded by a second launch.
	part, err := cuda.AllocAsync[byte](s, bytes)
	if err != nil {
		return err
	}
	defer func() { // a failed free is the fold's error, and is tried again
		if e := part.Free(); e != nil {
			err = errors.Join(err, e)
			part.Free()
		}
	}()
	if err := launch(part.Ptr(), 0, 0); err != nil {
		return err
	}
	cfg.Grid.Y = 1
	return launch(part.Ptr(), 0, 1)
}

// The tests' hooks: middleNoScratch makes every middle fold of several
// chunks take stream-ordered memory and a second launch, as in a
// capture; middleSMs, where positive, lays folds out for a device of that
// many multiprocessors (an H100's 132 on the fake's 4).
var (
	middleNoScratch bool
	middleSMs       int
)

// size returns the bytes of an element of t: from a table by its id, as
// a small call asks it several times (its operands' alignment and
// overlaps), where the names' comparisons took some 1.5% of nd's
// AddInto on the host.
func (t ctype) size() int { return ctypeSizes[t.id] }

// ctypeSizes are the ctypes' sizes, by id.
var ctypeSizes = func() (s [len(ctypeList)]int) {
	for i, t := range ctypeList {
		switch t.name {
		case "int8", "uint8":
			s[i] = 1
		case "int16", "uint16", "float16", "bfloat16":
			s[i] = 2
		case "int32", "uint32", "float32":
			s[i] = 4
		default:
			s[i] = 8
		}
	}
	return s
}()

// smCounts are the devices' multiprocessor counts, by ordinal.
var smCounts sync.Map // int -> int

// smsOf returns the multiprocessors of s's device.
func smsOf(s *cuda.Stream) (int, error) {
	dev := s.Context().Device()
	if v, ok := smCounts.Load(dev.Ordinal()); ok {
		return v.(int), nil
	}
	n, err := dev.MultiprocessorCount()
	if err != nil {
		return 0, err
	}
	n = max(1, n)
	smCounts.Store(dev.Ordinal(), n)
	return n, nil
}

// middleOp returns each fold's identity, combination of a and b, and
// value of an element x (in T's value type), in the accumulator's type.
func middleOp(what string, t ctype, acc string) (identity, combine, value string) {
	v := ctypes[acc].value
	lowest, highest := limits(t)
	nanFirst := ""
	if t.float {
		nanFirst = "a != a ? a : b != b ? b : "
	}
	switch what {
	case "sum", "mean":
		return "0", "a + b", "(" + v + ")x"
	case "prod":
		return "1", "a * b", "(" + v + ")x"
	case "max":
		return lowest, nanFirst + "(a > b ? a : b)", "(" + v + ")x"
	case "min":
		return highest, nanFirst + "(a < b ? a : b)", "(" + v + ")x"
	case "all":
		return "1", "a & b", "x != 0"
	}
	return "0", "a | b", "x != 0" // any
}

// limits returns the C of T's lowest and highest values: infinities for
// the floats.
func limits(t ctype) (lowest, highest string) {
	switch t.name {
	case "float32", "float16", "bfloat16":
		return "-__int_as_float(0x7f800000)", "__int_as_float(0x7f800000)"
	case "float64":
		return "-__longlong_as_double(0x7ff0000000000000LL)", "__longlong_as_double(0x7ff0000000000000LL)"
	case "int8":
		return "-128", "127"
	case "int16":
		return "-32768", "32767"
	case "int32":
		return "(-2147483647 - 1)", "2147483647"
	case "int64":
		return "(-9223372036854775807LL - 1)", "9223372036854775807LL"
	case "uint8":
		return "0", "255"
	case "uint16":
		return "0", "65535"
	case "uint32":
		return "0", "4294967295u"
	}
	return "0", "18446744073709551615ull"
}

// middleAcc returns the type a fold of t accumulates in: a product's
// (max and min too: every value of T is one of its accumulator's), or
// truth values.
func middleAcc(what string, t ctype) string {
	if what == "all" || what == "any" {
		return "uint8"
	}
	return accOf(t)
}

type middleKey struct {
	what string
	t    int
}

var middleKernels sync.Map // middleKey -> *compute.RawKernel

// middleKernel returns the kernel of a middle fold of t, and the name of
// its accumulator's type.
func middleKernel(what string, t ctype) (*compute.RawKernel, string, error) {
	acc := middleAcc(what, t)
	key := middleKey{what, t.id}
	if k, ok := middleKernels.Load(key); ok {
		return k.(*compute.RawKernel), acc, nil
	}
	name := "nd_mid_" + what + "_" + t.name
	k, err := compute.NewRawKernel(middleSource(what, t, acc, name), name)
	if err != nil {
		return nil, "", err
	}
	got, _ := middleKernels.LoadOrStore(key, k)
	return got.(*compute.RawKernel), acc, nil
}

// middleSource writes nd_mid's source for a fold of t.
func middleSource(what string, t ctype, acc, name string) string {
	identity, combine, value := middleOp(what, t, acc)
	av := ctypes[acc].value
	storage, load, store := t.storage(), t.load("e"), t.store("v")
	var b strings.Builder
	if t.half {
		b.WriteString(halfc.Source)
	}
	post := "r"
	if what == "mean" {
		post = "r / (nd_acc)mid"
	}
	fmt.Fprintf(&b, `
typedef %[1]s nd_t;
typedef %[2]s nd_acc;
__device__ __forceinline__ nd_acc nd_identity() { return %[3]s; }
__device__ __forceinline__ nd_acc nd_combine(const nd_acc a, const nd_acc b) { return %[4]s; }
__device__ __forceinline__ nd_acc nd_value(const nd_t e) { const %[5]s x = %[6]s; return %[7]s; }
__device__ __forceinline__ nd_t nd_post(const nd_acc r, const long long mid) { const %[5]s v = (%[5]s)(%[8]s); return %[9]s; }
`, storage, av, identity, combine, t.value, load, value, post, store)
	b.WriteString(middleBody)
	fmt.Fprintf(&b, `
extern "C" __global__ __launch_bounds__(%[2]d) void %[1]s(const nd_t* __restrict__ src, nd_t* __restrict__ dst, long long outer, long long mid, long long inner,
	long long tiles, long long chunk, long long chunks, nd_acc* partial, unsigned int* counters, int phase, int v) {
	switch (v) {
`, name, middleThreads)
	for v := 16 / t.size(); v > 1; v /= 2 {
		fmt.Fprintf(&b, "\tcase %[1]d: nd_mid<%[1]d>(src, dst, outer, mid, inner, tiles, chunk, chunks, partial, counters, phase); break;\n", v)
	}
	b.WriteString("\tdefault: nd_mid<1>(src, dst, outer, mid, inner, tiles, chunk, chunks, partial, counters, phase);\n\t}\n}\n")
	return b.String()
}

// middleBody is nd_mid's code for any type, after its nd_t, nd_acc and
// their functions.
const middleBody = `
// nd_vec is V elements loaded or stored at once.
template <int V> struct __align__(sizeof(nd_t) * V) nd_vec { nd_t v[V]; };

// nd_tree folds each thread's r over the block's rows (threadIdx.y) in a
// fixed tree, into row 0's threads. Every thread of the block calls it.
template <int V> __device__ __forceinline__ void nd_tree(nd_acc* r) {
	if (blockDim.y == 1) return;
	__shared__ nd_acc nd_red[` + "256" + `];
	const unsigned int t = threadIdx.y * blockDim.x + threadIdx.x, y = threadIdx.y;
	const unsigned int top = 1u << (31 - __clz(blockDim.y - 1));
	#pragma unroll
	for (int e = 0; e < V; e++) {
		nd_red[t] = r[e];
		__syncthreads();
		for (unsigned int s = top; s > 0; s >>= 1) {
			if (y < s && y + s < blockDim.y) nd_red[t] = nd_combine(nd_red[t], nd_red[t + s * blockDim.x]);
			__syncthreads();
		}
		r[e] = nd_red[t];
		__syncthreads();
	}
}

// nd_arrive counts the block in at counter, once its partial results are
// written (every thread calls it), and reports whether it is the last of
// want.
__device__ __forceinline__ bool nd_arrive(unsigned int* counter, unsigned int want) {
	__shared__ bool nd_last;
	__threadfence();
	__syncthreads();
	if (threadIdx.x == 0 && threadIdx.y == 0) nd_last = atomicAdd(counter, 1u) == want - 1;
	__syncthreads();
	return nd_last;
}

// nd_mid: phase 0 folds chunk blockIdx.y of mid (rows chunk apart) of the
// block's columns, into dst where there is one chunk, else into the
// partial results (partial[(c * outer + o) * inner + j]), the last block
// of the columns folding them where there are counters; phase 1 (a
// launch of one chunk) folds the partial results of chunks chunks.
template <int V> __device__ __forceinline__ void nd_mid(const nd_t* __restrict__ src, nd_t* __restrict__ dst,
	long long outer, long long mid, long long inner, long long tiles, long long chunk, long long chunks,
	nd_acc* partial, unsigned int* counters, int phase) {
	const long long cv = inner / V;
	long long o, jv;
	if (tiles > 0) {
		o = blockIdx.x / tiles;
		jv = (blockIdx.x % tiles) * blockDim.x + threadIdx.x;
	} else {
		const long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
		o = g / cv;
		jv = g % cv;
	}
	const bool live = o < outer && jv < cv;
	const long long j = jv * V;
	nd_acc r[V];
	#pragma unroll
	for (int e = 0; e < V; e++) r[e] = nd_identity();
	if (phase == 0) {
		const long long c = blockIdx.y, k0 = c * chunk, k1 = k0 + chunk < mid ? k0 + chunk : mid;
		if (live) {
			const nd_t* p = src + o * mid * inner + j;
			#pragma unroll 4
			for (long long k = k0 + threadIdx.y; k < k1; k += blockDim.y) {
				const nd_vec<V> x = *(const nd_vec<V>*)(p + k * inner);
				#pragma unroll
				for (int e = 0; e < V; e++) r[e] = nd_combine(r[e], nd_value(x.v[e]));
			}
		}
		nd_tree<V>(r);
		if (chunks == 1) {
			if (threadIdx.y == 0 && live) {
				nd_vec<V> y;
				#pragma unroll
				for (int e = 0; e < V; e++) y.v[e] = nd_post(r[e], mid);
				*(nd_vec<V>*)(dst + o * inner + j) = y;
			}
			return;
		}
		if (threadIdx.y == 0 && live) {
			#pragma unroll
			for (int e = 0; e < V; e++) partial[(c * outer + o) * inner + j + e] = r[e];
		}
		if (!counters || !nd_arrive(&counters[blockIdx.x], (unsigned int)chunks)) return;
		#pragma unroll
		for (int e = 0; e < V; e++) r[e] = nd_identity();
	}
	// The chunks' partial results, ty apart (skipping the cache, which
	// may hold another block's stale lines), then the tree.
	if (live) {
		for (long long c = threadIdx.y; c < chunks; c += blockDim.y) {
			#pragma unroll
			for (int e = 0; e < V; e++) r[e] = nd_combine(r[e], *(const volatile nd_acc*)&partial[(c * outer + o) * inner + j + e]);
		}
	}
	nd_tree<V>(r);
	if (threadIdx.y == 0 && live) {
		nd_vec<V> y;
		#pragma unroll
		for (int e = 0; e < V; e++) y.v[e] = nd_post(r[e], mid);
		*(nd_vec<V>*)(dst + o * inner + j) = y;
	}
	if (phase == 0 && threadIdx.x == 0 && threadIdx.y == 0) counters[blockIdx.x] = 0;
}
`
