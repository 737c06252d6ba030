package nd_test

import (
	"errors"
	"fmt"
	"log"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/nd"
)

// An array from a Go slice, a transposed view of it (no copy), and one
// element: printed as NumPy prints them.
func ExampleFromSlice() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	defer s.Close()
	a, err := nd.FromSlice(s, []float32{0, 1, 2, 3, 4, 5}, 2, 3)
	if err != nil {
		log.Fatal(err)
	}
	defer a.Free() // in stream order; the views of a close with it
	fmt.Println(a)
	fmt.Println(a.T())
	v, _ := a.Item(1, -1)
	fmt.Println(v)
	// Output:
	// nd.Array[float32]([[0., 1., 2.],
	//                    [3., 4., 5.]], shape=(2, 3), dtype=float32)
	// nd.Array[float32]([[0., 3.],
	//                    [1., 4.],
	//                    [2., 5.]], shape=(3, 2), dtype=float32)
	// 5
}

// A bias added to every row: the row broadcasts as in NumPy, and the
// result is a new array on the operands' stream.
func ExampleAdd() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	defer s.Close()
	x, _ := nd.FromSlice(s, []float32{1, 2, 3, 4, 5, 6}, 2, 3)
	bias, _ := nd.FromSlice(s, []float32{10, 20, 30})
	defer x.Free()
	defer bias.Free()
	y, err := nd.Add(x, bias)
	if err != nil {
		log.Fatal(err)
	}
	defer y.Free()
	fmt.Println(y.ToSlice())
	// Output: [11 22 33 14 25 36] <nil>
}

// Reductions over any axes, with keepdims, and a softmax along an axis.
func ExampleSum() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	defer s.Close()
	a, _ := nd.Arange[float32](s, 0, 6, 1)
	defer a.Free()
	m, _ := a.Reshape(2, 3)
	rows, _ := nd.Sum(m, nd.Along(1))
	cols, _ := nd.Sum(m, nd.Along(0).KeepDims())
	all, _ := nd.Sum(m, nd.Along())
	for _, r := range []*nd.Array[float32]{rows, cols, all} {
		defer r.Free()
		v, _ := r.ToSlice()
		fmt.Println(r.Shape(), v)
	}
	// Output:
	// [2] [3 12]
	// [1 3] [3 5 7]
	// [] [15]
}

// A chain of elementwise operations fused into one kernel: each array is
// read once, the result written once, and the chain checked once.
func ExampleLazy() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	defer s.Close()
	a, _ := nd.FromSlice(s, []float32{-2, -1, 1, 2})
	b, _ := nd.FromSlice(s, []float32{3, 3, 3, 3})
	defer a.Free()
	defer b.Free()
	// relu(a·b + 1)·b
	y, err := nd.Lazy(a).Mul(nd.Lazy(b)).Add(nd.Const[float32](1)).Relu().Mul(nd.Lazy(b)).Eval()
	if err != nil {
		log.Fatal(err)
	}
	defer y.Free()
	fmt.Println(y.ToSlice())
	// Output: [0 0 12 21] <nil>
}

// A matrix product through cuBLAS: a transposed view is read as cuBLAS's
// transposed operand, and batches broadcast as NumPy's matmul's.
func ExampleMatmul() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	defer s.Close()
	a, _ := nd.FromSlice(s, []float32{1, 2, 3, 4, 5, 6}, 3, 2)
	defer a.Free()
	p, err := nd.Matmul(a.T(), a) // (2×3)·(3×2)
	if err != nil {
		log.Fatal(err)
	}
	defer p.Free()
	fmt.Println(p.ToSlice())
	// Output: [35 44 44 56] <nil>
}

// A chain that fails checks once: the first failure comes through every
// later step.
func Example_chain() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	defer s.Close()
	x, _ := nd.Zeros[float32](s, 2, 3)
	w, _ := nd.Zeros[float32](s, 2, 3)
	defer x.Free()
	defer w.Free()
	h, _ := nd.Matmul(x, w) // 2×3 by 2×3: fails
	defer h.Free()
	y, err := nd.Softmax(h, -1)
	defer y.Free()
	fmt.Println(errors.Is(err, cuda.ErrInvalidValue))
	fmt.Println(err)
	// Output:
	// true
	// nd: Softmax: nd: Matmul: invalid value: a has shape [2 3] and b [2 3]: a's last axis (3) must match b's second to last (2): a is the result of an operation that failed
}
