// graphwhile: the C reference for BenchmarkGraphWhile (graph_bench_test.go):
// a small kernel run 1000 times, by a While node whose body counts down on
// the device, or by 1000 launches of a one-kernel graph from the host,
// queued or each followed by a synchronize. Timed as Go's testing.B does
// (mean over about 0.3 s after a warm-up); prints "name ns_per_op".
//
//   while/countdown  body: the count-down kernel alone
//   while/saxpy      body: a saxpy over 256 floats, then the count-down
//   host/queued      1000 launches of a saxpy graph, then a synchronize
//   host/decided     1000 x (launch the graph, synchronize)
//
// Build on the GPU machine:
//   nvcc -O2 -arch=sm_90 -rdc=true -o graphwhile graphwhile.cu -lcudadevrt
#include <cuda_runtime.h>

#include "cref.h"

#define CK(x)                                                                            \
	do {                                                                                 \
		cudaError_t e_ = (x);                                                            \
		if (e_ != cudaSuccess) {                                                         \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
			exit(1);                                                                     \
		}                                                                                \
	} while (0)

__global__ void saxpy(float a, const float *x, float *y, unsigned n) {
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) y[i] = a * x[i] + y[i];
}

// count_down is gocuda's set-condition kernel with decrement set.
__global__ void count_down(cudaGraphConditionalHandle h, unsigned *word) {
	unsigned w = *word;
	if (w) *word = --w;
	cudaGraphSetConditional(h, w);
}

static cudaStream_t stream;
static cudaGraphExec_t exec;
static float *x;
static unsigned *counter;
enum { N = 256, K = 1000 };

static void add_kernel(cudaGraph_t g, cudaGraphNode_t *out, const cudaGraphNode_t *deps, size_t ndeps, void *fn, void **args, unsigned grid, unsigned block) {
	cudaGraphNodeParams p = {};
	p.type = cudaGraphNodeTypeKernel;
	p.kernel.func = fn;
	p.kernel.gridDim = dim3(grid);
	p.kernel.blockDim = dim3(block);
	p.kernel.kernelParams = args;
	CK(cudaGraphAddNode(out, g, deps, NULL, ndeps, &p));
}

static cudaGraphExec_t while_graph(int with_saxpy) {
	cudaGraph_t g;
	CK(cudaGraphCreate(&g, 0));
	cudaGraphConditionalHandle h;
	CK(cudaGraphConditionalHandleCreate(&h, g, 1, cudaGraphCondAssignDefault));
	cudaGraphNode_t start, cond, step, down;
	cudaGraphNodeParams m = {};
	m.type = cudaGraphNodeTypeMemset;
	m.memset.dst = counter;
	m.memset.value = K;
	m.memset.elementSize = 4;
	m.memset.width = 1;
	m.memset.height = 1;
	CK(cudaGraphAddNode(&start, g, NULL, NULL, 0, &m));
	cudaGraphNodeParams c = {};
	c.type = cudaGraphNodeTypeConditional;
	c.conditional.handle = h;
	c.conditional.type = cudaGraphCondTypeWhile;
	c.conditional.size = 1;
	CK(cudaGraphAddNode(&cond, g, &start, NULL, 1, &c));
	cudaGraph_t body = c.conditional.phGraph_out[0];
	float one = 1;
	unsigned n = N;
	void *sargs[] = {&one, &x, &x, &n};
	void *dargs[] = {&h, &counter};
	if (with_saxpy) {
		add_kernel(body, &step, NULL, 0, (void *)saxpy, sargs, 1, N);
		add_kernel(body, &down, &step, 1, (void *)count_down, dargs, 1, 1);
	} else {
		add_kernel(body, &down, NULL, 0, (void *)count_down, dargs, 1, 1);
	}
	cudaGraphExec_t e;
	CK(cudaGraphInstantiate(&e, g, 0));
	CK(cudaGraphDestroy(g));
	return e;
}

static void run_once(void) {
	CK(cudaGraphLaunch(exec, stream));
	CK(cudaStreamSynchronize(stream));
}

static void host_queued(void) {
	for (int i = 0; i < K; i++) CK(cudaGraphLaunch(exec, stream));
	CK(cudaStreamSynchronize(stream));
}

static void host_decided(void) {
	for (int i = 0; i < K; i++) {
		CK(cudaGraphLaunch(exec, stream));
		CK(cudaStreamSynchronize(stream));
	}
}

static double measure(void (*op)(void)) {
	op();
	long reps = 1;
	for (;;) {
		double t0 = now();
		for (long i = 0; i < reps; i++) op();
		double dt = now() - t0;
		if (dt > 0.3 || reps > 1000000) return dt / reps * 1e9;
		reps = dt < 0.01 ? reps * 10 : (long)(reps * 0.36 / dt) + 1;
	}
}

int main(void) {
	CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
	CK(cudaMalloc(&x, N * sizeof(float)));
	CK(cudaMemset(x, 0, N * sizeof(float)));
	CK(cudaMalloc(&counter, sizeof(unsigned)));
	exec = while_graph(0);
	printf("while/countdown %.1f\n", measure(run_once));
	CK(cudaGraphExecDestroy(exec));
	exec = while_graph(1);
	printf("while/saxpy %.1f\n", measure(run_once));
	CK(cudaGraphExecDestroy(exec));
	cudaGraph_t g;
	CK(cudaGraphCreate(&g, 0));
	float one = 1;
	unsigned n = N;
	void *sargs[] = {&one, &x, &x, &n};
	cudaGraphNode_t node;
	add_kernel(g, &node, NULL, 0, (void *)saxpy, sargs, 1, N);
	CK(cudaGraphInstantiate(&exec, g, 0));
	printf("host/queued %.1f\n", measure(host_queued));
	printf("host/decided %.1f\n", measure(host_decided));
	return 0;
}
