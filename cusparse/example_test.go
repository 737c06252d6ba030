package cusparse_test

import (
	"fmt"
	"log"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cusparse"
)

// A sparse matrix from triplets in any order, a position given twice
// summed, times a vector: y = A·x.
func ExampleSpMV() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	defer s.Close()
	h, err := cusparse.New(s)
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()

	// [ 1 0 2 ]
	// [ 0 0 0 ]
	// [ 0 3 4 ]  (the 4 as 1 + 3)
	a, err := cusparse.NewCOO(s, 3, 3,
		[]int32{2, 0, 2, 0, 2},
		[]int32{2, 0, 1, 2, 2},
		[]float64{1, 1, 3, 2, 3})
	if err != nil {
		log.Fatal(err)
	}
	defer a.Free()
	x, _ := cuda.FromHost(ctx, []float64{1, 10, 100})
	defer x.Free()
	y, _ := cuda.Alloc[float64](ctx, 3)
	defer y.Free()
	if err := cusparse.SpMV(h, cusparse.NoTrans, 1, a, x, 0, y); err != nil {
		log.Fatal(err)
	}
	out, _ := y.ToHost()
	fmt.Println(a)
	fmt.Println(out)
	// Output:
	// cusparse.Matrix[int32,float64]{COO 3x3, 4 non-zeros}
	// [201 0 430]
}

// A sparse product of two CSR matrices: the result's non-zeros are
// counted on the device, and the result is a new CSR matrix.
func ExampleSpGEMM() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	defer s.Close()
	h, err := cusparse.New(s)
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()

	// A = [ 1 2 ]   B = [ 0 1 ]
	//     [ 0 3 ]       [ 1 0 ]
	a, _ := cusparse.NewCSR(s, 2, 2, []int32{0, 2, 3}, []int32{0, 1, 1}, []float32{1, 2, 3})
	defer a.Free()
	b, _ := cusparse.NewCSR(s, 2, 2, []int32{0, 1, 2}, []int32{1, 0}, []float32{1, 1})
	defer b.Free()
	c, err := cusparse.SpGEMM(h, a, b)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Free()
	offsets, columns, values, _ := c.ToHost()
	fmt.Println(offsets, columns, values)
	// Output: [0 2 3] [0 1 0] [2 1 3]
}

// A lower triangular solve, L·y = x, with L read from the lower triangle of
// a matrix that stores more.
func ExampleSpSV() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	defer s.Close()
	h, err := cusparse.New(s)
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()

	// [ 2 9 ]  the 9 is above the diagonal: Lower ignores it
	// [ 1 4 ]
	a, _ := cusparse.NewCSR(s, 2, 2, []int32{0, 2, 4}, []int32{0, 1, 0, 1}, []float64{2, 9, 1, 4})
	defer a.Free()
	x, _ := cuda.FromHost(ctx, []float64{4, 10})
	defer x.Free()
	y, _ := cuda.Alloc[float64](ctx, 2)
	defer y.Free()
	if err := cusparse.SpSV(h, cusparse.NoTrans, cusparse.Lower, cusparse.NonUnit, 1, a, x, y); err != nil {
		log.Fatal(err)
	}
	out, _ := y.ToHost()
	fmt.Println(out)
	// Output: [2 2]
}

// A dense matrix's non-zeros as a sparse matrix, converted to CSC.
func ExampleFromDense() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	defer s.Close()
	h, err := cusparse.New(s)
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()

	data, _ := cuda.FromHost(ctx, []complex64{
		0, 1i,
		2, 0,
		0, 3,
	})
	defer data.Free()
	a, err := cusparse.FromDense[int64](h, cusparse.NewDense(data, 3, 2))
	if err != nil {
		log.Fatal(err)
	}
	defer a.Free()
	c, err := cusparse.Convert(h, a, cusparse.CSC)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Free()
	offsets, rows, values, _ := c.ToHost()
	fmt.Println(c.Format(), offsets, rows, values)
	// Output: CSC [0 1 3] [1 0 2] [(2+0i) (0+1i) (3+0i)]
}

// A float16 matrix times a float16 vector, computed in float32: alpha and
// beta are float32.
func ExampleSpMVHalf() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	defer s.Close()
	h, err := cusparse.New(s)
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()

	f := cuda.NewFloat16
	// [ 1   0 ]
	// [ 0.5 2 ]
	a, err := cusparse.NewCSR(s, 2, 2, []int32{0, 1, 3}, []int32{0, 0, 1}, []cuda.Float16{f(1), f(0.5), f(2)})
	if err != nil {
		log.Fatal(err)
	}
	defer a.Free()
	x, _ := cuda.FromHost(ctx, []cuda.Float16{f(4), f(3)})
	defer x.Free()
	y, _ := cuda.Alloc[cuda.Float16](ctx, 2)
	defer y.Free()
	if err := cusparse.SpMVHalf(h, cusparse.NoTrans, 2, a, x, 0, y); err != nil {
		log.Fatal(err)
	}
	got, _ := y.ToHost()
	fmt.Println(got)
	// Output: [8 16]
}

// A matrix in blocks of 2×2 (BSR), times a vector; written out dense.
func ExampleNewBSR() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	defer s.Close()
	h, err := cusparse.New(s)
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()

	a, err := cusparse.NewBSR[int32](s, 4, 4, 2, []float64{
		1, 2, 0, 0,
		0, 3, 0, 0,
		0, 0, 0, 0,
		0, 0, 4, 0,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer a.Free()
	fmt.Println(a)
	x, _ := cuda.FromHost(ctx, []float64{1, 1, 1, 1})
	defer x.Free()
	y, _ := cuda.Alloc[float64](ctx, 4)
	defer y.Free()
	if err := cusparse.SpMV(h, cusparse.NoTrans, 1, a, x, 0, y); err != nil {
		log.Fatal(err)
	}
	got, _ := y.ToHost()
	fmt.Println(got)
	// Output:
	// cusparse.Matrix[int32,float64]{BSR 4x4, blocks of 2x2, 8 values}
	// [3 3 0 4]
}
