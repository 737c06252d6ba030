package nn

import (
	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/nd"
)

// dropoutKernels: element i of the array is kept where a hash of (seed,
// offset + i) is at or above p·2³², a counter-based draw (no generator
// state: the same seed and offset draw the same mask, on any grid).
var dropoutKernels = &layerSource{body: `
// nn_dropout_mix is splitmix64's finaliser.
__device__ __forceinline__ unsigned long long nn_dropout_mix(unsigned long long z) {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}
// nn_dropout_keep is whether counter c of seed is kept, below threshold
// dropped.
__device__ __forceinline__ bool nn_dropout_keep(unsigned long long seed, unsigned long long c, unsigned long long threshold) {
	const unsigned long long h = nn_dropout_mix(nn_dropout_mix(seed) + c * 0x9e3779b97f4a7c15ull);
	return (h >> 32) >= threshold;
}
extern "C" __global__ void nn_dropout_NN_SUFFIX(const nn_t* x, nn_t* y, unsigned char* mask, long long n, unsigned long long seed, unsigned long long offset, unsigned long long threshold, float scale) {
	const long long stride = (long long)gridDim.x * blockDim.x;
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
		const bool keep = nn_dropout_keep(seed, offset + (unsigned long long)i, threshold);
		if (y) y[i] = nn_st(keep ? nn_ld(x[i]) * scale : 0.0f);
		if (mask) mask[i] = keep ? 1 : 0;
	}
}
`}

// Dropout returns x with each element zeroed with probability p and the
// others scaled by 1/(1-p), as PyTorch's F.dropout(x, p, training=True),
// drawn by a hash of (seed, offset + i) for element i (in row-major
// order) rather than by a generator's state: the same seed and offset
// give the same mask every run, on any device, so that the backward pass
// draws it again (DropoutBackward) instead of keeping it. A caller
// dropping several arrays with one seed advances offset by each array's
// size, as PyTorch's Philox offset. p is in [0, 1]; 1 zeroes every
// element. x must be contiguous; the result is a new array on its
// stream.
func Dropout[T Float](x *nd.Array[T], p float32, seed, offset uint64) (*nd.Array[T], error) {
	const op = "Dropout"
	return layerNew(op, x, func(y *nd.Array[T]) error { return dropoutInto(op, y, x, p, seed, offset) })
}

// DropoutInto is Dropout writing into dst, of x's shape (x itself for in
// place).
func DropoutInto[T Float](dst, x *nd.Array[T], p float32, seed, offset uint64) error {
	return dropoutInto("DropoutInto", dst, x, p, seed, offset)
}

// DropoutBackward returns the gradient of Dropout(x, p, seed, offset)
// given dy, the gradient of its result: dy through the same mask, scaled
// the same (the mask drawn again from seed and offset).
func DropoutBackward[T Float](dy *nd.Array[T], p float32, seed, offset uint64) (*nd.Array[T], error) {
	const op = "DropoutBackward"
	if _, err := layerBuffer(op, "dy", dy, nil); err != nil {
		return nil, err
	}
	dx, err := nd.Empty[T](dy.Stream(), dy.Shape()...)
	if err != nil {
		return nil, wrap(op, err)
	}
	if err := dropoutInto(op, dx, dy, p, seed, offset); err != nil {
		layerDrop(dx)
		return nil, err
	}
	return dx, nil
}

// DropoutMask returns the mask Dropout draws for an array of shape with
// p, seed and offset: 1 where an element is kept, 0 where it is dropped,
// allocated on s.
func DropoutMask(s *cuda.Stream, p float32, seed, offset uint64, shape ...int) (*nd.Array[nd.Bool], error) {
	const op = "DropoutMask"
	threshold, _, err := dropoutThreshold(op, p)
	if err != nil {
		return nil, err
	}
	m, err := nd.Empty[nd.Bool](s, shape...)
	if err != nil {
		return nil, wrap(op, err)
	}
	mb, _ := m.Buffer()
	n := m.Size()
	if err := layerLaunch[float32](op, dropoutKernels, "nn_dropout", s, layerGrid(n, 256), 256, cuda.DevicePtr(0), cuda.DevicePtr(0), mb, int64(n), seed, offset, threshold, float32(0)); err != nil {
		layerDrop(m)
		return nil, err
	}
	return m, nil
}

// dropoutThreshold returns the hash's bound below which an element is
// dropped, p·2³², and the scale of those kept.
func dropoutThreshold(op string, p float32) (uint64, float32, error) {
	if !(p >= 0 && p <= 1) {
		return 0, 0, errorf(op, cuda.ErrInvalidValue, "p is %v: a probability is in [0, 1]", p)
	}
	if p == 1 {
		return 1 << 32, 0, nil
	}
	return uint64(float64(p) * (1 << 32)), 1 / (1 - p), nil
}

func dropoutInto[T Float](op string, dst, x *nd.Array[T], p float32, seed, offset uint64) error {
	name := "x"
	if op == "DropoutBackward" {
		name = "dy"
	}
	xb, err := layerBuffer(op, name, x, nil)
	if err != nil {
		return err
	}
	s := x.Stream()
	db, err := layerBuffer(op, "dst", dst, s)
	if err != nil {
		return err
	}
	if err := layerSameShape(op, "dst", dst.Shape(), x.Shape()); err != nil {
		return err
	}
	if err := layerAliased(op, "dst", layerSpanOf(db), layerIn{name, layerSpanOf(xb), true}); err != nil {
		return err
	}
	threshold, scale, err := dropoutThreshold(op, p)
	if err != nil {
		return err
	}
	n := x.Size()
	return layerLaunch[T](op, dropoutKernels, "nn_dropout", s, layerGrid(n, 256), 256, xb, db, cuda.DevicePtr(0), int64(n), seed, offset, threshold, scale)
}
