package nn

import (
	"math"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/nd"
)

// ropeKernels: a thread a pair of a head's rotated dimensions (i, i +
// rot/2), or a pair of those past rot copied, so that in place is safe
// (each thread reads what it alone writes).
var ropeKernels = &layerSource{body: `
extern "C" __global__ void nn_rope_NN_SUFFIX(const nn_t* x, nn_t* y, long long rows, int seq, int heads, int dim, int rot, int headsFirst, long long offset, double logBase) {
	const int half = dim / 2, rhalf = rot / 2;
	const long long n = rows * half, stride = (long long)gridDim.x * blockDim.x;
	for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += stride) {
		const long long r = e / half;
		const int i = (int)(e % half);
		const nn_t* xr = x + r * dim;
		nn_t* yr = y + r * dim;
		if (i >= rhalf) { // past the rotated dimensions: copied
			const int j = rot + 2 * (i - rhalf);
			const nn_t a = xr[j], b = xr[j + 1];
			yr[j] = a;
			yr[j + 1] = b;
			continue;
		}
		const long long s = headsFirst ? r % seq : (r / heads) % seq;
		// The angle in float64, reduced to [-π, π] before float32 takes its
		// sine and cosine: a float32 angle (position times base^(-2i/rot))
		// is off by position·2⁻²⁴ radians, 0.006 at position 100,000.
		const double inv = exp(-(double)(2 * i) / (double)rot * logBase); // base^(-2i/rot)
		double angle = (double)(offset + s) * inv;
		angle -= 6.283185307179586 * rint(angle * 0.15915494309189535);
		float sn, cs;
		sincosf((float)angle, &sn, &cs);
		const float a = nn_ld(xr[i]), b = nn_ld(xr[i + rhalf]);
		yr[i] = nn_st(a * cs - b * sn);
		yr[i + rhalf] = nn_st(b * cs + a * sn);
	}
}
`}

// Rotary is the shape of RoPE's rotation.
type Rotary struct {
	// Base is θ's base: dimension pair i of a head turns by position ·
	// Base^(-2i/Dims). 0 means 10000, Llama's and GPT-NeoX's.
	Base float32

	// Dims is how many of a head's dimensions are rotated (the first
	// Dims; the rest pass through, as GPT-NeoX's rotary_pct < 1 has it):
	// even, at most the head's. 0 means all of them.
	Dims int

	// HeadsFirst says x is [..., heads, seq, head dim] (the layout of
	// Hugging Face's attention after its transpose) rather than [...,
	// seq, heads, head dim] (the projection's output reshaped, Meta's
	// Llama and FlashAttention's).
	HeadsFirst bool
}

// RoPE returns x with rotary position embeddings applied in the
// rotate-half layout of GPT-NeoX and Hugging Face's Llama (not the
// interleaved pairs of Meta's original Llama code and GPT-J): dimension i
// of a head pairs with i + Dims/2, and the pair turns by the angle
// (offset + s) · Base^(-2i/Dims), s the position in the sequence:
//
//	y[i]        = x[i]·cos - x[i+Dims/2]·sin
//	y[i+Dims/2] = x[i+Dims/2]·cos + x[i]·sin
//
// offset is the position of the sequence's first token: the count of
// tokens already in the key/value cache when decoding, 0 for a prompt.
// x is [..., seq, heads, head dim] (r.HeadsFirst: [..., heads, seq, head
// dim]), the head dimension even, computed in float32 but for the angle,
// which is taken in float64 and reduced to [-π, π] before its sine and
// cosine (Hugging Face's float32 angle is off by position·2⁻²⁴ radians,
// thousandths of one at the positions of long contexts). x must be contiguous; the result is a new
// array of x's shape on its stream.
func RoPE[T Float](x *nd.Array[T], offset int, r Rotary) (*nd.Array[T], error) {
	const op = "RoPE"
	return layerNew(op, x, func(y *nd.Array[T]) error { return ropeInto(op, y, x, offset, r) })
}

// RoPEInto is RoPE writing into dst, of x's shape (x itself for in
// place: the query and key projections turned where they lie).
func RoPEInto[T Float](dst, x *nd.Array[T], offset int, r Rotary) error {
	return ropeInto("RoPEInto", dst, x, offset, r)
}

func ropeInto[T Float](op string, dst, x *nd.Array[T], offset int, r Rotary) error {
	xb, err := layerBuffer(op, "x", x, nil)
	if err != nil {
		return err
	}
	s := x.Stream()
	db, err := layerBuffer(op, "dst", dst, s)
	if err != nil {
		return err
	}
	shape := x.Shape()
	if err := layerSameShape(op, "dst", dst.Shape(), shape); err != nil {
		return err
	}
	if err := layerAliased(op, "dst", layerSpanOf(db), layerIn{"x", layerSpanOf(xb), true}); err != nil {
		return err
	}
	if len(shape) < 3 {
		return errorf(op, cuda.ErrInvalidValue, "x has shape %v: want [..., seq, heads, head dim], three axes or more", shape)
	}
	seq, heads, dim := shape[len(shape)-3], shape[len(shape)-2], shape[len(shape)-1]
	if r.HeadsFirst {
		seq, heads = heads, seq
	}
	rot := r.Dims
	if rot == 0 {
		rot = dim
	}
	base := r.Base
	if base == 0 {
		base = 10000
	}
	switch {
	case dim%2 != 0:
		return errorf(op, cuda.ErrInvalidValue, "the head dimension is %d: it must be even", dim)
	case rot < 0 || rot > dim || rot%2 != 0:
		return errorf(op, cuda.ErrInvalidValue, "r.Dims is %d: it must be even and at most the head dimension, %d", r.Dims, dim)
	case !(base > 1) || base-base != 0:
		return errorf(op, cuda.ErrInvalidValue, "r.Base is %v: it must be a finite number above 1", r.Base)
	case offset < 0:
		return errorf(op, cuda.ErrInvalidValue, "offset is %d: a position is zero or more", offset)
	}
	rows := x.Size() / max(dim, 1)
	if rows == 0 || dim == 0 {
		return nil
	}
	return layerLaunch[T](op, ropeKernels, "nn_rope", s, layerGrid(rows*dim/2, 256), 256, xb, db, int64(rows), int32(seq), int32(heads), int32(dim), int32(rot), ropeBool(r.HeadsFirst), int64(offset), ropeLog(base))
}

// ropeLog is the natural logarithm of base, in float64.
func ropeLog(base float32) float64 { return math.Log(float64(base)) }

// ropeBool is b as a kernel's int.
func ropeBool(b bool) int32 {
	if b {
		return 1
	}
	return 0
}
