// graphbench: the C reference for gocuda's stream-ordered memory and graph
// benchmarks (ordered_test.go, graph_bench_test.go): the same driver calls,
// timed as Go's testing.B does (mean over about 0.3 s after a warm-up).
// Prints one line per benchmark: name ns_per_op.
//
//   AllocAsync/N     cuMemAllocAsync + cuMemFreeAsync of N bytes on one
//                    stream, from the device's warm default pool
//   Alloc/N          cuMemAlloc + cuMemFree of N bytes
//   GraphReplay      a graph of 100 empty kernels launched, then synchronized
//   StreamLaunches   the same 100 launches on the stream, then synchronized
//   GraphCapture     capturing the 100 launches and instantiating the graph
//   GraphUpdate      capturing them again and updating the instance in place
//   GraphCaptureOnly capturing the 100 launches, then destroying the graph
//   GraphCaptureBound the same, each launch preceded by cuCtxGetCurrent (what
//                    gocuda's cgo shim asks before each call): the price of
//                    that check
//   GraphSetKernelParams  changing the arguments of node 50 of an instance
//                    of 100 saxpy nodes built node by node
//                    (cuGraphExecKernelNodeSetParams), no launch
//
// Build on the GPU machine: nvcc -O2 -o graphbench graphbench.c -lcuda
// Run: graphbench testdata/kernels.ptx
#include "cref.h"

static CUstream stream;
static CUfunction empty;
static size_t bytes;
static CUgraphExec exec;

static void alloc_async(void) {
	CUdeviceptr p;
	CHECK(cuMemAllocAsync(&p, bytes, stream));
	CHECK(cuMemFreeAsync(p, stream));
}

static void alloc_sync(void) {
	CUdeviceptr p;
	CHECK(cuMemAlloc_v2(&p, bytes));
	CHECK(cuMemFree_v2(p));
}

static void launches(void) {
	for (int i = 0; i < 100; i++) CHECK(cuLaunchKernel(empty, 1, 1, 1, 1, 1, 1, 0, stream, NULL, NULL));
}

static void stream_launches(void) {
	launches();
	CHECK(cuStreamSynchronize(stream));
}

static CUgraph capture(void) {
	CUgraph g;
	CHECK(cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
	launches();
	CHECK(cuStreamEndCapture(stream, &g));
	return g;
}

static void graph_capture_only(void) { CHECK(cuGraphDestroy(capture())); }

static void graph_capture_bound(void) {
	CUgraph g;
	CHECK(cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
	for (int i = 0; i < 100; i++) {
		CUcontext cur;
		CHECK(cuCtxGetCurrent(&cur));
		CHECK(cuLaunchKernel(empty, 1, 1, 1, 1, 1, 1, 0, stream, NULL, NULL));
	}
	CHECK(cuStreamEndCapture(stream, &g));
	CHECK(cuGraphDestroy(g));
}

static void graph_replay(void) {
	CHECK(cuGraphLaunch(exec, stream));
	CHECK(cuStreamSynchronize(stream));
}

static void graph_capture(void) {
	CUgraph g = capture();
	CUgraphExec e;
	CHECK(cuGraphInstantiateWithFlags(&e, g, 0));
	CHECK(cuGraphExecDestroy(e));
	CHECK(cuGraphDestroy(g));
}

static void graph_update(void) {
	CUgraph g = capture();
	CUgraphExecUpdateResultInfo info;
	CHECK(cuGraphExecUpdate_v2(exec, g, &info));
	CHECK(cuGraphDestroy(g));
}

static CUfunction saxpy;
static CUgraphExec built;
static CUgraphNode middle;
static CUdeviceptr x;
static float a;

static CUDA_KERNEL_NODE_PARAMS saxpy_params(float *pa, void **args) {
	static unsigned n = 256;
	args[0] = pa, args[1] = &x, args[2] = &x, args[3] = &n;
	CUDA_KERNEL_NODE_PARAMS p = {0};
	p.func = saxpy;
	p.gridDimX = 1, p.gridDimY = 1, p.gridDimZ = 1;
	p.blockDimX = 256, p.blockDimY = 1, p.blockDimZ = 1;
	p.kernelParams = args;
	return p;
}

static void build_graph(void) {
	CUgraph g;
	CHECK(cuGraphCreate(&g, 0));
	CUgraphNode last = NULL;
	float one = 1;
	void *args[4];
	for (int i = 0; i < 100; i++) {
		CUDA_KERNEL_NODE_PARAMS p = saxpy_params(&one, args);
		CUgraphNode node;
		CHECK(cuGraphAddKernelNode(&node, g, last ? &last : NULL, last ? 1 : 0, &p));
		if (i == 50) middle = node;
		last = node;
	}
	CHECK(cuGraphInstantiateWithFlags(&built, g, 0));
}

static void graph_set_params(void) {
	void *args[4];
	a++;
	CUDA_KERNEL_NODE_PARAMS p = saxpy_params(&a, args);
	CHECK(cuGraphExecKernelNodeSetParams(built, middle, &p));
}

static double measure(void (*op)(void)) {
	op();
	long reps = 1;
	for (;;) {
		double t0 = now();
		for (long i = 0; i < reps; i++) op();
		CHECK(cuStreamSynchronize(stream));
		double dt = now() - t0;
		if (dt > 0.3 || reps > 100000000) return dt / reps * 1e9;
		reps = dt < 0.01 ? reps * 10 : (long)(reps * 0.36 / dt) + 1;
	}
}

int main(int argc, char **argv) {
	if (argc != 2) {
		fprintf(stderr, "usage: graphbench kernels.ptx\n");
		return 2;
	}
	FILE *f = fopen(argv[1], "rb");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	static char ptx[1 << 20];
	size_t len = fread(ptx, 1, sizeof ptx - 1, f);
	fclose(f);
	ptx[len] = 0;
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CHECK(cuCtxSetCurrent(ctx));
	CHECK(cuStreamCreateWithPriority(&stream, CU_STREAM_NON_BLOCKING, 0));
	CHECK(cuModuleLoadData(&mod, ptx));
	CHECK(cuModuleGetFunction(&empty, mod, "empty"));
	size_t sizes[] = {256, 1 << 20, 64 << 20};
	const char *names[] = {"256B", "1MiB", "64MiB"};
	for (int i = 0; i < 3; i++) {
		bytes = sizes[i];
		printf("AllocAsync/%s %.1f\n", names[i], measure(alloc_async));
		printf("Alloc/%s %.1f\n", names[i], measure(alloc_sync));
	}
	CUgraph g = capture();
	CHECK(cuGraphInstantiateWithFlags(&exec, g, 0));
	CHECK(cuGraphDestroy(g));
	printf("GraphReplay %.1f\n", measure(graph_replay));
	printf("StreamLaunches %.1f\n", measure(stream_launches));
	printf("GraphCapture %.1f\n", measure(graph_capture));
	printf("GraphUpdate %.1f\n", measure(graph_update));
	printf("GraphCaptureOnly %.1f\n", measure(graph_capture_only));
	printf("GraphCaptureBound %.1f\n", measure(graph_capture_bound));
	CHECK(cuModuleGetFunction(&saxpy, mod, "saxpy"));
	CHECK(cuMemAlloc(&x, 256 * sizeof(float)));
	build_graph();
	printf("GraphSetKernelParams %.1f\n", measure(graph_set_params));
	return 0;
}
