// gemmcall: the C reference for BenchmarkGemmCall (package cublas): the
// same cuBLAS call, a 64x64 float32 cublasGemmEx queued on a stream with a
// 32 MiB workspace, timed per call over about a second after a warm-up,
// with the stream synchronized every 100 calls off the clock (so that the
// queue never fills and the time is the call's, not the GPU's), as
// BenchmarkGemmCall does. Prints: GemmCall ns_per_op.
//
// Build on the GPU machine: nvcc -O2 -o gemmcall gemmcall.c -lcublas -lcuda
#include <cublas_v2.h>

#include "cref.h"

#define BCHECK(x)                                                            \
	do {                                                                     \
		cublasStatus_t s_ = (x);                                             \
		if (s_ != CUBLAS_STATUS_SUCCESS) {                                   \
			fprintf(stderr, "%s:%d: %s = %d\n", __FILE__, __LINE__, #x, s_); \
			exit(1);                                                         \
		}                                                                    \
	} while (0)

int main(void) {
	CUdevice dev;
	CUcontext ctx;
	CUstream stream;
	CUdeviceptr a, ws;
	cublasHandle_t h;
	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CHECK(cuCtxSetCurrent(ctx));
	CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
	CHECK(cuMemAlloc(&a, 64 * 64 * 4));
	CHECK(cuMemsetD8(a, 0, 64 * 64 * 4));
	CHECK(cuMemAlloc(&ws, 32 << 20));
	BCHECK(cublasCreate(&h));
	BCHECK(cublasSetStream(h, (cudaStream_t)stream));
	BCHECK(cublasSetWorkspace(h, (void *)ws, 32 << 20));
	float alpha = 1, beta = 0;
	long reps = 0;
	double clock = 0;
	for (int round = 0; round < 2; round++) { // a warm-up, then the timed round
		reps = 0, clock = 0;
		while (clock < (round ? 1.0 : 0.2)) {
			double t = now();
			for (int i = 0; i < 100; i++)
				BCHECK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 64, 64, 64, &alpha, (void *)a, CUDA_R_32F, 64, (void *)a,
					CUDA_R_32F, 64, &beta, (void *)a, CUDA_R_32F, 64, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
			clock += now() - t;
			reps += 100;
			CHECK(cuStreamSynchronize(stream));
		}
	}
	printf("GemmCall %.1f\n", clock / reps * 1e9);
	return 0;
}
