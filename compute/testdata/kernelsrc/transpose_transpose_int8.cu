
extern "C" __global__ void transpose_int8(const signed char* __restrict__ src, signed char* dst, long long rows, long long cols) {
	__shared__ signed char tile[32][33];
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
extern "C" __global__ void transpose_int8_skinny(const signed char* __restrict__ src, signed char* dst, unsigned long long rows, unsigned long long cols) {
	const unsigned long long n = rows * cols, stride = (unsigned long long)blockDim.x * gridDim.x;
	for (unsigned long long j = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; j < n; j += stride) {
		const unsigned long long c = j / rows; // dst's row: src's column
		dst[j] = src[(j - c * rows) * cols + c];
	}
}
