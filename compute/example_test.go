package compute_test

import (
	"fmt"
	"log"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/compute"
)

// An elementwise kernel of one's own: y = a·x + y, with a a scalar. The
// operation is written as CuPy takes it, without its last semicolon.
func ExampleNewElementwise() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	// Closing the context also closes the kernels compute loaded in it:
	// there is no compute.Release to call first.
	defer ctx.Close()
	defer s.Close()
	axpy, err := compute.NewElementwise(compute.ElementwiseSpec{
		Name:      "axpy",
		InParams:  "float32 a, float32 x, float32 y",
		OutParams: "float32 y",
		Operation: "y = a * x + y",
	})
	if err != nil {
		log.Fatal(err)
	}
	x, _ := cuda.FromHost(ctx, []float32{1, 2, 3})
	y, _ := cuda.FromHost(ctx, []float32{10, 20, 30})
	defer x.Free()
	defer y.Free()
	if err := axpy.Launch(s, float32(2), x, y); err != nil {
		log.Fatal(err) // an operation that does not compile: NVRTC's log is here
	}
	out := make([]float32, 3)
	if err := y.CopyToHost(out); err != nil { // waits for the kernel
		log.Fatal(err)
	}
	fmt.Println(out)
	// Output: [12 24 36]
}

// A reduction of one's own: the sum of squares, folded in float64. Each
// of CuPy's ReductionKernel arguments is a field of its own.
func ExampleNewReduction() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	defer s.Close()
	sumsq, err := compute.NewReduction(compute.ReductionSpec{
		Name:        "sumsq",
		InParams:    "float32 x",
		OutParams:   "float64 y",
		MapExpr:     "x * x",
		ReduceExpr:  "a + b",
		PostMapExpr: "y = a",
		Identity:    "0",
		ReduceType:  "float64",
	})
	if err != nil {
		log.Fatal(err)
	}
	x, _ := cuda.FromHost(ctx, []float32{1, 2, 3})
	y, _ := cuda.Alloc[float64](ctx, 1)
	defer x.Free()
	defer y.Free()
	if err := sumsq.Launch(s, x, y); err != nil {
		log.Fatal(err)
	}
	out := make([]float64, 1)
	if err := y.CopyToHost(out); err != nil {
		log.Fatal(err)
	}
	fmt.Println(out[0])
	// Output: 14
}

// Three standard operations chained on one stream, each taking it last: a
// bfloat16 copy of float32 data, its rows' softmax, and their sums (each
// 1, give or take bfloat16's rounding). Closing the context releases the
// kernels they loaded.
func Example() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := ctx.Close(); err != nil { // compute's kernels too
			log.Fatal(err)
		}
	}()
	defer s.Close()
	shape := compute.Shape{Rows: 2, Cols: 3}
	x, _ := cuda.FromHost(ctx, []float32{1, 2, 3, 0, 0, 0})
	h, _ := cuda.Alloc[cuda.BFloat16](ctx, 6)
	sums, _ := cuda.Alloc[cuda.BFloat16](ctx, 2)
	defer x.Free()
	defer h.Free()
	defer sums.Free()
	if err := compute.Cast(h, x, s); err != nil {
		log.Fatal(err)
	}
	if err := compute.Softmax(h, h, shape, s); err != nil {
		log.Fatal(err)
	}
	if err := compute.SumAxis(sums, h, shape, compute.PerRow, s); err != nil {
		log.Fatal(err)
	}
	out := make([]cuda.BFloat16, 2)
	if err := sums.CopyToHost(out); err != nil {
		log.Fatal(err)
	}
	fmt.Println(out)
	// Output: [1 1]
}

// A kernel written whole in CUDA C, as CuPy's RawKernel: here a block per
// row sums its row in shared memory.
func ExampleNewRawKernel() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	defer s.Close()
	sums, err := compute.NewRawKernel(`
extern "C" __global__ void row_sums(const float* x, float* out, int cols) {
	__shared__ float part[32];
	float v = 0;
	for (int j = threadIdx.x; j < cols; j += 32) v += x[blockIdx.x * cols + j];
	part[threadIdx.x] = v;
	__syncthreads();
	if (threadIdx.x == 0) {
		for (int j = 1; j < 32; j++) v += part[j];
		out[blockIdx.x] = v;
	}
}`, "row_sums")
	if err != nil {
		log.Fatal(err)
	}
	x, _ := cuda.FromHost(ctx, []float32{1, 2, 3, 4, 5, 6})
	out, _ := cuda.Alloc[float32](ctx, 2)
	defer x.Free()
	defer out.Free()
	cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: 2, Y: 1, Z: 1}, Block: cuda.Dim3{X: 32, Y: 1, Z: 1}, Stream: s}
	if err := sums.Launch(cfg, x, out, int32(3)); err != nil {
		log.Fatal(err)
	}
	got := make([]float32, 2)
	if err := out.CopyToHost(got); err != nil {
		log.Fatal(err)
	}
	fmt.Println(got)
	// Output: [6 15]
}
