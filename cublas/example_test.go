package cublas_test

import (
	"fmt"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cublas"
)

// A row-major product, C = A·B, of a 2×3 and a 3×2 matrix, laid out as Go
// lays them out.
func ExampleGemm() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ctx.Close()
	defer s.Close()
	h, err := cublas.New(s)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()

	a, _ := cuda.FromHost(ctx, []float32{
		1, 2, 3,
		4, 5, 6,
	})
	defer a.Free()
	b, _ := cuda.FromHost(ctx, []float32{
		1, 0,
		0, 1,
		1, 1,
	})
	defer b.Free()
	c, _ := cuda.Alloc[float32](ctx, 4)
	defer c.Free()

	err = cublas.Gemm(h, 1, cublas.NewMatrix(a, 2, 3), cublas.NewMatrix(b, 3, 2), 0, cublas.NewMatrix(c, 2, 2))
	out := make([]float32, 4)
	if err == nil {
		// The product is queued on s; the copy waits for the work queued
		// on c first.
		err = c.CopyToHost(out)
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out[:2])
	fmt.Println(out[2:])
	// Output:
	// [4 5]
	// [10 11]
}

// A linear layer of a network, y = ReLU(x·W + b), in bfloat16, in one
// cuBLASLt call.
func ExampleMatmul() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ctx.Close()
	defer s.Close()
	h, err := cublas.New(s)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()

	bf := func(v ...float32) []cuda.BFloat16 {
		out := make([]cuda.BFloat16, len(v))
		for i, f := range v {
			out[i] = cuda.NewBFloat16(f)
		}
		return out
	}
	x, _ := cuda.FromHost(ctx, bf(1, -2)) // one input of 2 features
	defer x.Free()
	w, _ := cuda.FromHost(ctx, bf(1, 2, 3, 4, 5, 6)) // 2×3: 3 outputs
	defer w.Free()
	bias, _ := cuda.FromHost(ctx, bf(0.5, 0.5, 20))
	defer bias.Free()
	y, _ := cuda.Alloc[cuda.BFloat16](ctx, 3)
	defer y.Free()

	err = cublas.Matmul(h, 1, cublas.NewMatrix(x, 1, 2), cublas.NewMatrix(w, 2, 3), 0, cublas.NewMatrix(y, 1, 3), cublas.ReLU, bias)
	out := make([]cuda.BFloat16, 3)
	if err == nil {
		err = y.CopyToHost(out) // waits for the product
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out) // x·W = [-7 -8 -9]; + bias = [-6.5 -7.5 11]; ReLU
	// Output: [0 0 11]
}
