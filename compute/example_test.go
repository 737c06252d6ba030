package compute_test

import (
	"fmt"
	"log"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/compute"
)

// An elementwise kernel of one's own: y = a·x + y, with a a scalar.
func ExampleNewElementwise() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	defer s.Close()
	axpy, err := compute.NewElementwise("axpy", "float32 a, float32 x, float32 y", "float32 y", "y = a * x + y;")
	if err != nil {
		log.Fatal(err)
	}
	x, _ := cuda.FromHost(ctx, []float32{1, 2, 3})
	y, _ := cuda.FromHost(ctx, []float32{10, 20, 30})
	defer x.Free()
	defer y.Free()
	if err := axpy.Launch(s, float32(2), x, y); err != nil {
		log.Fatal(err) // a body that does not compile: NVRTC's log is here
	}
	out := make([]float32, 3)
	if err := y.CopyToHost(out); err != nil { // waits for the kernel
		log.Fatal(err)
	}
	fmt.Println(out) // [12 24 36]
}

// A reduction of one's own: the sum of squares, folded in float64.
func ExampleNewReduction() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	defer s.Close()
	sumsq, err := compute.NewReduction("sumsq", "float32 x", "float64 y", "x * x", "a + b", "0", "y = a;", "float64")
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
	fmt.Println(out[0]) // 14
}

// Three standard operations chained on one stream: a bfloat16 copy of
// float32 data, its rows' softmax, and their sums (each 1, give or take
// bfloat16's rounding).
func Example() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	defer s.Close()
	shape := compute.Shape{Rows: 2, Cols: 3}
	x, _ := cuda.FromHost(ctx, []float32{1, 2, 3, 0, 0, 0})
	h, _ := cuda.Alloc[cuda.BFloat16](ctx, 6)
	sums, _ := cuda.Alloc[cuda.BFloat16](ctx, 2)
	defer x.Free()
	defer h.Free()
	defer sums.Free()
	if err := compute.Cast(s, h, x); err != nil {
		log.Fatal(err)
	}
	if err := compute.Softmax(s, h, h, shape); err != nil {
		log.Fatal(err)
	}
	if err := compute.SumAxis(s, sums, h, shape, compute.PerRow); err != nil {
		log.Fatal(err)
	}
	out := make([]cuda.BFloat16, 2)
	if err := sums.CopyToHost(out); err != nil {
		log.Fatal(err)
	}
	fmt.Println(out) // [1 1]
}
