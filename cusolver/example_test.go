package cusolver_test

import (
	"errors"
	"fmt"
	"math/cmplx"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cusolver"
)

// Solve a linear system A·x = b through an LU factorization; A is
// row-major, as Go lays it out.
func Example() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ctx.Close()
	defer s.Close()
	h, err := cusolver.New(s)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()

	a, _ := cuda.FromHost(ctx, []float64{
		2, 1, 1,
		1, 3, 2,
		1, 0, 0,
	})
	defer a.Free()
	b, _ := cuda.FromHost(ctx, []float64{4, 5, 6})
	defer b.Free()

	lu, err := cusolver.LU(h, cusolver.NewMatrix(a, 3, 3))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lu.Free()
	if err := cusolver.Solve(h, lu, b, 1); err != nil {
		fmt.Println(err)
		return
	}
	// Err waits for the stream and says whether A was singular.
	if err := lu.Err(); errors.Is(err, cusolver.ErrSingular) {
		fmt.Println("singular:", err)
		return
	}
	x, _ := b.ToHost()
	fmt.Printf("%.3g\n", x)
	// Output: [6 15 -23]
}

// A matrix that is not positive definite: Err names the leading minor.
func ExampleCholesky() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ctx.Close()
	defer s.Close()
	h, _ := cusolver.New(s)
	defer h.Close()

	a, _ := cuda.FromHost(ctx, []float32{
		4, 2, 2,
		2, 5, 7,
		2, 7, 1,
	})
	defer a.Free()
	f, _ := cusolver.Cholesky(h, cusolver.NewMatrix(a, 3, 3), cusolver.Lower)
	err = f.Err()
	fmt.Println(errors.Is(err, cusolver.ErrNotPositiveDefinite))
	fmt.Println(err)
	// Output:
	// true
	// cusolver: Cholesky: the matrix is not positive definite: the leading minor of order 3 is not positive definite
}

// The eigenvalues of a complex Hermitian matrix are real: a complex64
// matrix's go into float32s.
func ExampleEigh_hermitian() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ctx.Close()
	defer s.Close()
	h, err := cusolver.New(s)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()

	a, _ := cuda.FromHost(ctx, []complex64{
		2, 1 - 1i,
		1 + 1i, 3,
	})
	defer a.Free()
	w, _ := cuda.Alloc[float32](ctx, 2)
	defer w.Free()
	info, err := cusolver.Eigh(h, cusolver.NewMatrix(a, 2, 2), cusolver.Lower, w, false)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := info.Err(); err != nil {
		fmt.Println(err)
		return
	}
	vals, _ := w.ToHost()
	fmt.Printf("%.3g\n", vals)
	// Output: [1 4]
}

// The QR factorization of a complex column-major matrix: Q is unitary, R's
// diagonal real (its signs are the library's choice).
func ExampleQR_complex() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ctx.Close()
	defer s.Close()
	h, err := cusolver.New(s)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()

	// A = [3i; 4], one column.
	a, _ := cuda.FromHost(ctx, []complex128{3i, 4})
	defer a.Free()
	m := cusolver.Matrix[complex128]{Data: a, Rows: 2, Cols: 1, Layout: cusolver.ColMajor}
	f, err := cusolver.QR(h, m)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Free()
	q, _ := cuda.Alloc[complex128](ctx, 2)
	defer q.Free()
	if err := cusolver.QRQ(h, f, cusolver.Matrix[complex128]{Data: q, Rows: 2, Cols: 1, Layout: cusolver.ColMajor}); err != nil {
		fmt.Println(err)
		return
	}
	r, _ := a.ToHost()
	qv, _ := q.ToHost()
	// Q·R = A: Q's column times R(0,0).
	same := cmplx.Abs(qv[0]*r[0]-3i) < 1e-12 && cmplx.Abs(qv[1]*r[0]-4) < 1e-12
	fmt.Printf("|R(0,0)| = %.3g, Q·R = A: %v\n", cmplx.Abs(r[0]), same)
	// Output: |R(0,0)| = 5, Q·R = A: true
}

// A batch of complex Hermitian positive definite matrices factored in one
// call, A = L·Lᴴ each, L in the lower triangle (row-major, as Go reads
// it); the upper triangle is left as it was.
func ExampleCholeskyBatched_complex() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ctx.Close()
	defer s.Close()
	h, err := cusolver.New(s)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()

	a, _ := cuda.FromHost(ctx, []complex64{
		4, 2 - 2i, // the first matrix
		2 + 2i, 3,
		1, -1i, // the second
		1i, 5,
	})
	defer a.Free()
	info, err := cusolver.CholeskyBatched(h, cusolver.NewMatrix(a, 2, 2), 2, cusolver.Lower)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := info.Err(); err != nil {
		fmt.Println(err)
		return
	}
	v, _ := a.ToHost()
	for i := range v {
		v[i] = complex(real(v[i])+0, imag(v[i])+0) // no -0
	}
	for m := 0; m < 2; m++ {
		l := v[m*4 : m*4+4]
		fmt.Printf("L%d: %.3g; %.3g %.3g\n", m, l[0], l[2], l[3])
	}
	// Output:
	// L0: (2+0i); (1+1i) (1+0i)
	// L1: (1+0i); (0+1i) (2+0i)
}
