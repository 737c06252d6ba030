// Gemm: a bfloat16 product of two 4096×4096 row-major matrices with cuBLAS,
// checked at a few elements against the CPU, with its speed.
//
//	go run ./examples/gemm
package main

import (
	"fmt"
	"log"
	"math"
	"math/rand/v2"
	"time"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cublas"
)

func main() {
	log.SetFlags(0)
	const n = 4096
	dev, err := cuda.GetDevice(0)
	check(err)
	ctx, err := cuda.NewContext(dev)
	check(err)
	defer ctx.Close()
	s, err := ctx.NewStream()
	check(err)
	defer s.Close()
	h, err := cublas.New(s)
	check(err)
	defer h.Close()

	// Row-major, as Go lays out a [n][n] matrix: element (i, j) at i*n+j.
	random := func() []cuda.BFloat16 {
		m := make([]cuda.BFloat16, n*n)
		for i := range m {
			m[i] = cuda.NewBFloat16(float32(rand.NormFloat64()))
		}
		return m
	}
	ha, hb := random(), random()
	a, err := cuda.FromHost(ctx, ha)
	check(err)
	defer a.Free()
	b, err := cuda.FromHost(ctx, hb)
	check(err)
	defer b.Free()
	c, err := cuda.Alloc[cuda.BFloat16](ctx, n*n)
	check(err)
	defer c.Free()
	A, B, C := cublas.NewMatrix(a, n, n), cublas.NewMatrix(b, n, n), cublas.NewMatrix(c, n, n)

	check(cublas.Gemm(h, 1, A, B, 0, C)) // warm: cuBLAS loads its kernels
	check(s.Synchronize())
	const reps = 50
	start := time.Now()
	for range reps {
		check(cublas.Gemm(h, 1, A, B, 0, C))
	}
	check(s.Synchronize())
	elapsed := time.Since(start)
	fmt.Printf("%d products of %d×%d bfloat16 matrices: %v each, %.0f TFLOP/s\n",
		reps, n, n, (elapsed / reps).Round(time.Microsecond), 2*n*n*n*reps/elapsed.Seconds()/1e12)

	hc := make([]cuda.BFloat16, n*n)
	check(c.CopyToHost(hc))
	for range 5 {
		i, j := rand.IntN(n), rand.IntN(n)
		var want, mag float64
		for k := range n {
			p := float64(ha[i*n+k].Float32()) * float64(hb[k*n+j].Float32())
			want, mag = want+p, mag+math.Abs(p)
		}
		got := float64(hc[i*n+j].Float32())
		if math.Abs(got-want) > 1e-2*mag {
			log.Fatalf("C[%d][%d] = %v, the CPU says %v", i, j, got, want)
		}
		fmt.Printf("C[%d][%d] = %8.3f (CPU: %8.3f)\n", i, j, got, want)
	}
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
