package nn

import (
	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/nd"
)

// activationKernels are the activations, element by element, 16 bytes at
// a time where the arrays are aligned (the elements past the last whole
// vector one at a time), a grid striding over the vectors.
var activationKernels = &layerSource{body: `
// nn_act is activation OP of x (and of b for SwiGLU).
// The GELUs are written without 1 + erf and 1 + tanh, which cancel to
// nothing for negative x (gelu(-5) lost all but a digit, gelu(-10) was 0):
// 1 + erf(z) is erfc(-z), and 1 + tanh(u) is 2 / (1 + e^(-2u)), exact
// rewrites that keep float32's relative precision on both sides.
template <int OP> __device__ __forceinline__ float nn_act(float x, float b) {
	if (OP == 0) return 0.5f * x * erfcf(x * -0.70710678118654752f); // GELU, erf
	if (OP == 1) { // GELU, tanh approximation: x·σ(2u)
		const float u = 0.79788456080286536f * (x + 0.044715f * x * x * x);
		return x / (1.0f + expf(-2.0f * u));
	}
	const float s = x / (1.0f + expf(-x)); // SiLU
	return OP == 3 ? s * b : s;
}
template <int OP, int V>
__device__ __forceinline__ void nn_act_run(const nn_t* x, const nn_t* b, nn_t* y, long long n) {
	typedef nn_vec<nn_t, V> vec;
	const long long vectors = n / V, stride = (long long)gridDim.x * blockDim.x;
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < vectors; i += stride) {
		const vec xv = ((const vec*)x)[i];
		vec bv, yv;
		if (OP == 3) bv = ((const vec*)b)[i];
		#pragma unroll
		for (int k = 0; k < V; k++) yv.v[k] = nn_st(nn_act<OP>(nn_ld(xv.v[k]), OP == 3 ? nn_ld(bv.v[k]) : 0.0f));
		((vec*)y)[i] = yv;
	}
	if (blockIdx.x == 0) {
		for (long long i = vectors * V + threadIdx.x; i < n; i += blockDim.x) y[i] = nn_st(nn_act<OP>(nn_ld(x[i]), OP == 3 ? nn_ld(b[i]) : 0.0f));
	}
}
#define NN_ACT_V (16 / (int)sizeof(nn_t))
#define NN_ACT(OP)                                                              \
	if (nn_aligned(x) && nn_aligned(y) && (!b || nn_aligned(b))) nn_act_run<OP, NN_ACT_V>(x, b, y, n); \
	else nn_act_run<OP, 1>(x, b, y, n);
extern "C" __global__ void nn_gelu_NN_SUFFIX(const nn_t* x, const nn_t* b, nn_t* y, long long n) { NN_ACT(0) }
extern "C" __global__ void nn_gelu_tanh_NN_SUFFIX(const nn_t* x, const nn_t* b, nn_t* y, long long n) { NN_ACT(1) }
extern "C" __global__ void nn_silu_NN_SUFFIX(const nn_t* x, const nn_t* b, nn_t* y, long long n) { NN_ACT(2) }
extern "C" __global__ void nn_swiglu_NN_SUFFIX(const nn_t* x, const nn_t* b, nn_t* y, long long n) { NN_ACT(3) }
`}

// GELU returns the Gaussian error linear unit of x, element by element,
// with the error function (PyTorch's F.gelu(x), approximate='none'):
//
//	gelu(x) = x/2 · (1 + erf(x/√2))
//
// computed in float32 as x/2 · erfc(-x/√2), the same function without
// the cancellation of 1 + erf for negative x (its relative precision kept
// into the tail, where the sum rounds to 0). x must be contiguous; the result is a new array of
// x's shape on its stream.
func GELU[T Float](x *nd.Array[T]) (*nd.Array[T], error) {
	return activationNew("GELU", "nn_gelu", x, nil)
}

// GELUInto is GELU writing into dst, of x's shape (x itself for in
// place).
func GELUInto[T Float](dst, x *nd.Array[T]) error {
	return activationInto("GELUInto", "nn_gelu", dst, x, nil)
}

// GELUTanh returns GELU's tanh approximation of x, GPT-2's (PyTorch's
// F.gelu(x, approximate='tanh')):
//
//	x/2 · (1 + tanh(√(2/π) · (x + 0.044715·x³)))
//
// computed in float32 as x·σ(2u), u the tanh's argument: the same
// function, without the cancellation of 1 + tanh for negative x.
func GELUTanh[T Float](x *nd.Array[T]) (*nd.Array[T], error) {
	return activationNew("GELUTanh", "nn_gelu_tanh", x, nil)
}

// GELUTanhInto is GELUTanh writing into dst.
func GELUTanhInto[T Float](dst, x *nd.Array[T]) error {
	return activationInto("GELUTanhInto", "nn_gelu_tanh", dst, x, nil)
}

// SiLU returns x·σ(x) (the swish; PyTorch's F.silu) of x, element by
// element.
func SiLU[T Float](x *nd.Array[T]) (*nd.Array[T], error) {
	return activationNew("SiLU", "nn_silu", x, nil)
}

// SiLUInto is SiLU writing into dst.
func SiLUInto[T Float](dst, x *nd.Array[T]) error {
	return activationInto("SiLUInto", "nn_silu", dst, x, nil)
}

// SwiGLU returns silu(gate)·up, element by element, the gated unit of
// Llama's feed-forward block (F.silu(gate_proj(x)) * up_proj(x)). It
// takes the two projections as two arrays of one shape, as Llama's
// weights keep them (gate_proj and up_proj), not the halves of one: a
// fused projection's halves along its last axis are views that are not
// contiguous, and would need copies.
func SwiGLU[T Float](gate, up *nd.Array[T]) (*nd.Array[T], error) {
	const op = "SwiGLU"
	if up == nil {
		return nil, errorf(op, cuda.ErrInvalidValue, "up is a nil *nd.Array")
	}
	return activationNew(op, "nn_swiglu", gate, up)
}

// SwiGLUInto is SwiGLU writing into dst, of gate's shape.
func SwiGLUInto[T Float](dst, gate, up *nd.Array[T]) error {
	const op = "SwiGLUInto"
	if up == nil {
		return errorf(op, cuda.ErrInvalidValue, "up is a nil *nd.Array")
	}
	return activationInto(op, "nn_swiglu", dst, gate, up)
}

func activationNew[T Float](op, kernel string, x, b *nd.Array[T]) (*nd.Array[T], error) {
	name := "x"
	if b != nil {
		name = "gate"
	}
	if _, err := layerBuffer(op, name, x, nil); err != nil {
		return nil, err
	}
	if b != nil { // checked before the result is made
		if _, err := layerBuffer(op, "up", b, x.Stream()); err != nil {
			return nil, err
		}
	}
	return layerNew(op, x, func(y *nd.Array[T]) error { return activationInto(op, kernel, y, x, b) })
}

func activationInto[T Float](op, kernel string, dst, x, b *nd.Array[T]) error {
	name := "x"
	if b != nil {
		name = "gate"
	}
	xb, err := layerBuffer(op, name, x, nil)
	if err != nil {
		return err
	}
	s := x.Stream()
	var bArg any = cuda.DevicePtr(0)
	if b != nil {
		bb, err := layerBuffer(op, "up", b, s)
		if err != nil {
			return err
		}
		if err := layerSameShape(op, "up", b.Shape(), x.Shape()); err != nil {
			return err
		}
		bArg = bb
	}
	db, err := layerBuffer(op, "dst", dst, s)
	if err != nil {
		return err
	}
	if err := layerSameShape(op, "dst", dst.Shape(), x.Shape()); err != nil {
		return err
	}
	ins := []layerIn{{name, layerSpanOf(xb), true}} // element by element: in place on either input
	if b != nil {
		ins = append(ins, layerIn{"up", layerArraySpan(b), true})
	}
	if err := layerAliased(op, "dst", layerSpanOf(db), ins...); err != nil {
		return err
	}
	n := x.Size()
	return layerLaunch[T](op, activationKernels, kernel, s, layerGrid(max(n/activationVector[T](), 1), 256), 256, xb, bArg, db, int64(n))
}

// layerGrid is the blocks of block threads for n items a thread each,
// the grid striding past a cap.
func layerGrid(n, block int) int {
	g := (n + block - 1) / block
	const most = 1 << 16
	return min(g, most)
}

// activationVector is how many elements of T a 16-byte vector holds.
func activationVector[T Float]() int {
	if layerTypeOf[T]() == 0 {
		return 4
	}
	return 8
}
