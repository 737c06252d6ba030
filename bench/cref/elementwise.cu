// elementwise: launch shapes and conversions for package compute's
// generated kernels, in CUDA C, timed with events (median of 20): a float32
// add of 256 MiB buffers (vectors of 4 in a grid-stride loop capped at the
// resident blocks, as compute launches it; uncapped; two vectors a
// thread per turn; twice the resident blocks) and a float32 to bfloat16
// cast of 256 MiB (compute's rounding in integer arithmetic, and the
// hardware's conversion), beside cudaMemcpy device to device.
//
// Build and run on the GPU machine: nvcc -O3 -arch=sm_90 -o elementwise bench/cref/elementwise.cu && ./elementwise
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdio.h>
#include <stdlib.h>
#include <algorithm>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)

struct alignas(16) f4 { float v[4]; };
struct alignas(8) h4 { unsigned short v[4]; };

__global__ void add_stride(const float* __restrict__ a, const float* __restrict__ b, float* y, long long n) {
	long long stride = (long long)blockDim.x * gridDim.x, nv = n / 4;
	for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < nv; j += stride) {
		f4 x = ((const f4*)a)[j], z = ((const f4*)b)[j], o;
#pragma unroll
		for (int k = 0; k < 4; k++) o.v[k] = x.v[k] + z.v[k];
		((f4*)y)[j] = o;
	}
}

__global__ void add_stride2(const float* __restrict__ a, const float* __restrict__ b, float* y, long long n) {
	long long stride = (long long)blockDim.x * gridDim.x, nv = n / 4;
	long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	for (; j + stride < nv; j += 2 * stride) {
		f4 x0 = ((const f4*)a)[j], z0 = ((const f4*)b)[j], x1 = ((const f4*)a)[j + stride], z1 = ((const f4*)b)[j + stride], o0, o1;
#pragma unroll
		for (int k = 0; k < 4; k++) { o0.v[k] = x0.v[k] + z0.v[k]; o1.v[k] = x1.v[k] + z1.v[k]; }
		((f4*)y)[j] = o0;
		((f4*)y)[j + stride] = o1;
	}
	if (j < nv) {
		f4 x = ((const f4*)a)[j], z = ((const f4*)b)[j], o;
#pragma unroll
		for (int k = 0; k < 4; k++) o.v[k] = x.v[k] + z.v[k];
		((f4*)y)[j] = o;
	}
}

__device__ __forceinline__ unsigned short soft_bf16(float f) {
	unsigned int b = __float_as_uint(f);
	if ((b & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((b >> 16) | 0x40u);
	unsigned int r = b >> 16, rem = b & 0xffffu;
	if (rem > 0x8000u || (rem == 0x8000u && (r & 1u))) r++;
	return (unsigned short)r;
}

__device__ __forceinline__ unsigned short hard_bf16(float f) {
	if (f != f) return (unsigned short)((__float_as_uint(f) >> 16) | 0x40u);
	__nv_bfloat16 h = __float2bfloat16_rn(f);
	return *(unsigned short*)&h;
}

template <bool hard>
__global__ void cast(const float* __restrict__ a, unsigned short* y, long long n) {
	long long stride = (long long)blockDim.x * gridDim.x, nv = n / 4;
	for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < nv; j += stride) {
		f4 x = ((const f4*)a)[j];
		h4 o;
#pragma unroll
		for (int k = 0; k < 4; k++) o.v[k] = hard ? hard_bf16(x.v[k]) : soft_bf16(x.v[k]);
		((h4*)y)[j] = o;
	}
}

template <typename F>
static float timed(F f) {
	cudaEvent_t a, b;
	CHECK(cudaEventCreate(&a));
	CHECK(cudaEventCreate(&b));
	f();
	float t[20];
	for (int i = 0; i < 20; i++) {
		CHECK(cudaEventRecord(a));
		f();
		CHECK(cudaEventRecord(b));
		CHECK(cudaEventSynchronize(b));
		CHECK(cudaEventElapsedTime(&t[i], a, b));
	}
	std::sort(t, t + 20);
	return t[10] * 1000;
}

int main() {
	const long long n = 64ll << 20;
	float *a, *b, *y;
	unsigned short* h;
	CHECK(cudaMalloc(&a, n * 4));
	CHECK(cudaMalloc(&b, n * 4));
	CHECK(cudaMalloc(&y, n * 4));
	CHECK(cudaMalloc(&h, n * 2));
	CHECK(cudaMemset(a, 0, n * 4));
	CHECK(cudaMemset(b, 0, n * 4));
	int sms;
	CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	int resident = sms * 8, all = (int)(n / 4 / 256);
	printf("copy 256MiB d2d            %8.1f us\n", timed([&] { CHECK(cudaMemcpyAsync(y, a, n * 4, cudaMemcpyDeviceToDevice)); }));
	printf("add capped (compute)       %8.1f us\n", timed([&] { add_stride<<<resident, 256>>>(a, b, y, n); }));
	printf("add uncapped               %8.1f us\n", timed([&] { add_stride<<<all, 256>>>(a, b, y, n); }));
	printf("add capped x2 resident     %8.1f us\n", timed([&] { add_stride<<<2 * resident, 256>>>(a, b, y, n); }));
	printf("add capped, 2 vectors/turn %8.1f us\n", timed([&] { add_stride2<<<resident, 256>>>(a, b, y, n); }));
	printf("add uncapped 128 threads   %8.1f us\n", timed([&] { add_stride<<<2 * all, 128>>>(a, b, y, n); }));
	printf("cast bf16 soft capped      %8.1f us\n", timed([&] { cast<false><<<resident, 256>>>(a, h, n); }));
	printf("cast bf16 hard capped      %8.1f us\n", timed([&] { cast<true><<<resident, 256>>>(a, h, n); }));
	printf("cast bf16 soft uncapped    %8.1f us\n", timed([&] { cast<false><<<all, 256>>>(a, h, n); }));
	printf("cast bf16 hard uncapped    %8.1f us\n", timed([&] { cast<true><<<all, 256>>>(a, h, n); }));
	return 0;
}
