package compute

import (
	"fmt"

	cuda "github.com/gocuda/cuda"
)

// checkMatrix checks buffers of a matrix operation: each of shape's
// elements and of s's context.
func checkMatrix(op string, s *cuda.Stream, shape Shape, bufs map[string]bufferInfo) error {
	if s == nil || s.Context() == nil {
		return errorf(op, cuda.ErrInvalidValue, "nil or zero *cuda.Stream")
	}
	if shape.Rows < 0 || shape.Cols < 0 || shape.Cols > 0 && shape.Rows > int(^uint(0)>>1)/shape.Cols {
		return errorf(op, cuda.ErrInvalidValue, "shape %d×%d: dimensions must be zero or more, and their product an int", shape.Rows, shape.Cols)
	}
	for name, b := range bufs {
		switch {
		case b == nil || b.Context() == nil:
			return errorf(op, cuda.ErrInvalidValue, "%s is a nil or zero *DeviceBuffer", name)
		case b.Context() != s.Context():
			return errorf(op, cuda.ErrInvalidValue, "%s belongs to another context than the stream", name)
		case b.Len() != shape.Rows*shape.Cols:
			return errorf(op, cuda.ErrInvalidValue, "%s has %d elements: a %d×%d matrix has %d", name, b.Len(), shape.Rows, shape.Cols, shape.Rows*shape.Cols)
		}
	}
	return nil
}

// softmaxSource is the kernel of Softmax and LogSoftmax over rows of T: a
// block per row, which finds the row's largest element, then the sum of
// the exponentials of the differences from it (in T's value type, float
// for the halves; double for float64), each in a fixed tree.
func softmaxSource(t dtype, name string, logarithm bool) string {
	out := "exp(x - m) / sum"
	if logarithm {
		out = "x - m - log(sum)"
	}
	return prelude + fmt.Sprintf(`
typedef %[2]s gocuda_v;
__device__ __forceinline__ gocuda_v gocuda_block(gocuda_v v, bool maximum) {
	__shared__ gocuda_v s[256];
	s[threadIdx.x] = v;
	__syncthreads();
	for (unsigned int k = blockDim.x / 2; k > 0; k >>= 1) {
		if (threadIdx.x < k) {
			gocuda_v a = s[threadIdx.x], b = s[threadIdx.x + k];
			s[threadIdx.x] = maximum ? ((a != a) ? a : (b != b) ? b : (a > b ? a : b)) : a + b;
		}
		__syncthreads();
	}
	gocuda_v r = s[0];
	__syncthreads();
	return r;
}
extern "C" __global__ void %[1]s(const %[3]s* gocuda_src, %[3]s* gocuda_dst, long long rows, long long cols) { // dst may be src: no __restrict__
	for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
		const %[3]s* in = gocuda_src + r * cols;
		%[3]s* out = gocuda_dst + r * cols;
		gocuda_v m = -__int_as_float(0x7f800000);
		for (long long c = threadIdx.x; c < cols; c += blockDim.x) { gocuda_v x = %[4]s; m = (m != m) ? m : (x != x) ? x : (x > m ? x : m); }
		m = gocuda_block(m, true);
		gocuda_v sum = 0;
		for (long long c = threadIdx.x; c < cols; c += blockDim.x) { gocuda_v x = %[4]s; sum += exp(x - m); }
		sum = gocuda_block(sum, false);
		for (long long c = threadIdx.x; c < cols; c += blockDim.x) { gocuda_v x = %[4]s; out[c] = %[5]s; }
	}
}
`, name, t.value, t.storage, t.load("in[c]"), t.store(out))
}

// Softmax sets each row of dst to the softmax of src's row: e^(x-max) over
// the row's sum of them. src and dst are row-major matrices of shape (dst
// may be src).
func Softmax[T Float](s *cuda.Stream, dst, src *cuda.DeviceBuffer[T], shape Shape) error {
	return softmax("Softmax", s, dst, src, shape, false)
}

// LogSoftmax sets each row of dst to the log of the softmax of src's row,
// computed as x - max - log(sum of e^(x-max)).
func LogSoftmax[T Float](s *cuda.Stream, dst, src *cuda.DeviceBuffer[T], shape Shape) error {
	return softmax("LogSoftmax", s, dst, src, shape, true)
}

func softmax[T Float](op string, s *cuda.Stream, dst, src *cuda.DeviceBuffer[T], shape Shape, logarithm bool) error {
	if err := checkMatrix(op, s, shape, map[string]bufferInfo{"dst": dst, "src": src}); err != nil {
		return err
	}
	if shape.Rows == 0 || shape.Cols == 0 {
		return nil
	}
	t := floatType[T]()
	name := "softmax_" + t.name
	if logarithm {
		name = "log" + name
	}
	f, err := function(op, s.Context(), namedVariant(name, func() string { return softmaxSource(t, name, logarithm) }), name)
	if err != nil {
		return err
	}
	cfg, err := linearConfig(s, shape.Rows*blockSize)
	if err != nil {
		return wrap(op, err, "sizing the launch")
	}
	return wrap(op, f.Launch(cfg, src, dst, int64(shape.Rows), int64(shape.Cols)), "launching %s", name)
}

// transposeSource is the kernel of Transpose: tiles of 32×32 elements read
// by rows and written by columns through shared memory, so that both the
// reads and the writes are coalesced.
func transposeSource(t dtype, name string) string {
	return fmt.Sprintf(`
extern "C" __global__ void %[1]s(const %[2]s* __restrict__ src, %[2]s* dst, long long rows, long long cols) {
	__shared__ %[2]s tile[32][33];
	for (long long tr = (long long)blockIdx.y * 32; tr < rows; tr += (long long)gridDim.y * 32)
	for (long long tc = (long long)blockIdx.x * 32; tc < cols; tc += (long long)gridDim.x * 32) {
		for (int k = threadIdx.y; k < 32; k += blockDim.y) {
			long long r = tr + k, c = tc + threadIdx.x;
			if (r < rows && c < cols) tile[k][threadIdx.x] = src[r * cols + c];
		}
		__syncthreads();
		for (int k = threadIdx.y; k < 32; k += blockDim.y) {
			long long r = tc + k, c = tr + threadIdx.x; // in dst: cols rows of rows elements
			if (r < cols && c < rows) dst[r * rows + c] = tile[threadIdx.x][k];
		}
		__syncthreads();
	}
}
`, name, t.storage)
}

// Transpose sets dst, a row-major matrix of shape.Cols rows of shape.Rows
// elements, to the transpose of src, of shape. dst may not be src.
func Transpose[T Number](s *cuda.Stream, dst, src *cuda.DeviceBuffer[T], shape Shape) error {
	const op = "Transpose"
	if err := checkMatrix(op, s, shape, map[string]bufferInfo{"dst": dst, "src": src}); err != nil {
		return err
	}
	if shape.Rows*shape.Cols > 0 && dst.Ptr() == src.Ptr() {
		return errorf(op, cuda.ErrInvalidValue, "dst is src: a transpose cannot be made in place")
	}
	if shape.Rows == 0 || shape.Cols == 0 {
		return nil
	}
	t := dtypeOf[T]()
	name := "transpose_" + t.name
	f, err := function(op, s.Context(), namedVariant(name, func() string { return transposeSource(t, name) }), name)
	if err != nil {
		return err
	}
	gx, gy := min((shape.Cols+31)/32, 65535), min((shape.Rows+31)/32, 65535)
	cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: gx, Y: gy}, Block: cuda.Dim3{X: 32, Y: 8}, Stream: s}
	return wrap(op, f.Launch(cfg, src, dst, int64(shape.Rows), int64(shape.Cols)), "launching %s", name)
}
