package gonumtest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cusolver"
	"github.com/gocuda/cuda/internal/cudatest"
	"gonum.org/v1/gonum/mat"
)

func TestMain(m *testing.M) { cudatest.Main(m) }

// sizes are the sizes checked: the fake computes on the CPU, in Jacobi
// sweeps for SVD and eigenvalues, so the large ones run on a GPU only.
func sizes(large ...int) []int {
	s := []int{1, 3, 97}
	if !cudatest.IsFake() {
		s = append(s, large...)
	}
	return s
}

// handle returns a handle on a stream of a new context, closed when the
// test ends.
func handle(t *testing.T) (*cuda.Context, *cusolver.Handle) {
	t.Helper()
	ctx := cudatest.Context(t)
	h := cudatest.Must(cusolver.New(cudatest.Stream(t, ctx)))(t)
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("Handle.Close: %v", err)
		}
	})
	return ctx, h
}

func random(rng *rand.Rand, r, c int) *mat.Dense {
	d := mat.NewDense(r, c, nil)
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			d.Set(i, j, 2*rng.Float64()-1)
		}
	}
	return d
}

// spd returns M·Mᵀ/n + I: symmetric, positive definite, well conditioned;
// above 1000, where that product takes gonum seconds, a symmetric matrix
// of uniform numbers in [-1, 1) plus n·I, positive definite because
// diagonally dominant.
func spd(rng *rand.Rand, n int) *mat.SymDense {
	s := mat.NewSymDense(n, nil)
	if n > 1000 {
		for i := 0; i < n; i++ {
			for j := 0; j <= i; j++ {
				s.SetSym(i, j, 2*rng.Float64()-1)
			}
			s.SetSym(i, i, s.At(i, i)+float64(n))
		}
		return s
	}
	s.SymOuterK(1/float64(n), random(rng, n, n))
	for i := 0; i < n; i++ {
		s.SetSym(i, i, s.At(i, i)+1)
	}
	return s
}

// put lays m out in layout, as T, on the device.
func put[T cuda.Float](t *testing.T, ctx *cuda.Context, m mat.Matrix, layout cusolver.Layout) cusolver.Matrix[T] {
	t.Helper()
	r, c := m.Dims()
	v := make([]T, max(r*c, 1))
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			if layout == cusolver.ColMajor {
				v[j*r+i] = T(m.At(i, j))
			} else {
				v[i*c+j] = T(m.At(i, j))
			}
		}
	}
	return cusolver.Matrix[T]{Data: cudatest.Upload(t, ctx, v), Rows: r, Cols: c, Layout: layout}
}

// get waits for h's stream and reads m.
func get[T cuda.Float](t *testing.T, h *cusolver.Handle, m cusolver.Matrix[T]) *mat.Dense {
	t.Helper()
	if err := h.Stream().Synchronize(); err != nil {
		t.Fatal(err)
	}
	v := cudatest.Download(t, m.Data)
	d := mat.NewDense(max(m.Rows, 1), max(m.Cols, 1), nil)
	for i := 0; i < m.Rows; i++ {
		for j := 0; j < m.Cols; j++ {
			if m.Layout == cusolver.ColMajor {
				d.Set(i, j, float64(v[j*m.Rows+i]))
			} else {
				d.Set(i, j, float64(v[i*m.Cols+j]))
			}
		}
	}
	return d
}

func vec[T cuda.Float](t *testing.T, h *cusolver.Handle, b *cuda.DeviceBuffer[T], n int) []float64 {
	t.Helper()
	if err := h.Stream().Synchronize(); err != nil {
		t.Fatal(err)
	}
	v := cudatest.Download(t, b)
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(v[i])
	}
	return out
}

// eps is T's machine epsilon; the checks allow a multiple of it scaled by
// the size (normwise backward errors).
func eps[T cuda.Float]() float64 {
	var z T
	if any(z) == any(float32(0)) {
		return 0x1p-23
	}
	return 0x1p-52
}

func check(t *testing.T, what string, got, bound float64) {
	t.Helper()
	if !(got <= bound) {
		t.Errorf("%s = %.3g, more than %.3g", what, got, bound)
	}
}

// relResidual is ||A·X - B||_F / (||A||_F·||X||_F), and the bound the
// checks allow for n×n problems in T.
func relResidual(a, x, b mat.Matrix) float64 {
	var r mat.Dense
	r.Mul(a, x)
	r.Sub(&r, b)
	return mat.Norm(&r, 2) / (mat.Norm(a, 2)*mat.Norm(x, 2) + 1e-300)
}

func bound[T cuda.Float](n int) float64 { return 50 * float64(n+1) * eps[T]() }

func layouts() []cusolver.Layout { return []cusolver.Layout{cusolver.RowMajor, cusolver.ColMajor} }

func TestLUAgainstGonum(t *testing.T) {
	t.Run("float32", testLU[float32])
	t.Run("float64", testLU[float64])
}

func testLU[T cuda.Float](t *testing.T) {
	ctx, h := handle(t)
	rng := rand.New(rand.NewPCG(1, 1))
	for _, n := range sizes(1000, 4099) {
		for _, layout := range layouts() {
			t.Run(fmt.Sprintf("%d/%v", n, layout), func(t *testing.T) {
				a := random(rng, n, n)
				b := random(rng, n, 2)
				f := cudatest.Must(cusolver.LU(h, put[T](t, ctx, a, layout)))(t)
				defer f.Free()
				bd := put[T](t, ctx, b, cusolver.ColMajor)
				if err := cusolver.Solve(h, f, bd.Data, 2); err != nil {
					t.Fatal(err)
				}
				if err := f.Err(); err != nil {
					t.Fatal(err)
				}
				x := get(t, h, bd)
				check(t, "||A·X - B|| / (||A||·||X||)", relResidual(a, x, b), bound[T](n))
				if n <= 1000 {
					var lu mat.LU
					lu.Factorize(a)
					var want mat.Dense
					if err := lu.SolveTo(&want, false, b); err != nil {
						t.Fatal(err)
					}
					var d mat.Dense
					d.Sub(x, &want)
					// Random matrices are well enough conditioned at
					// these sizes for the solutions to agree closely.
					check(t, "||X - gonum's X|| / ||X||", mat.Norm(&d, 2)/mat.Norm(&want, 2), 1e4*bound[T](n))
				}
			})
		}
	}
}

func TestCholeskyAgainstGonum(t *testing.T) {
	t.Run("float32", testCholesky[float32])
	t.Run("float64", testCholesky[float64])
}

func testCholesky[T cuda.Float](t *testing.T) {
	ctx, h := handle(t)
	rng := rand.New(rand.NewPCG(2, 2))
	for _, n := range sizes(1000, 4099) {
		for _, layout := range layouts() {
			t.Run(fmt.Sprintf("%d/%v", n, layout), func(t *testing.T) {
				a := spd(rng, n)
				m := put[T](t, ctx, a, layout)
				f := cudatest.Must(cusolver.Cholesky(h, m, cusolver.Lower))(t)
				if err := f.Err(); err != nil {
					t.Fatal(err)
				}
				got := get(t, h, m)
				l := mat.NewTriDense(n, mat.Lower, nil)
				for i := 0; i < n; i++ {
					for j := 0; j <= i; j++ {
						l.SetTri(i, j, got.At(i, j))
					}
				}
				if n <= 1000 {
					// L·Lᵀ in gonum takes seconds above.
					var llt mat.Dense
					llt.Mul(l, l.T())
					llt.Sub(&llt, a)
					check(t, "||L·Lᵀ - A|| / ||A||", mat.Norm(&llt, 2)/mat.Norm(a, 2), bound[T](n))
					var ch mat.Cholesky
					if !ch.Factorize(a) {
						t.Fatal("gonum: not positive definite")
					}
					var want mat.TriDense
					ch.LTo(&want)
					var d mat.Dense
					d.Sub(l, &want)
					check(t, "||L - gonum's L|| / ||L||", mat.Norm(&d, 2)/mat.Norm(&want, 2), 10*bound[T](n))
				}
				b := random(rng, n, 3)
				bd := put[T](t, ctx, b, cusolver.ColMajor)
				if err := cusolver.CholeskySolve(h, f, bd.Data, 3); err != nil {
					t.Fatal(err)
				}
				check(t, "||A·X - B|| / (||A||·||X||)", relResidual(a, get(t, h, bd), b), bound[T](n))
			})
		}
	}
}

func TestQRAgainstGonum(t *testing.T) {
	t.Run("float32", testQR[float32])
	t.Run("float64", testQR[float64])
}

func testQR[T cuda.Float](t *testing.T) {
	ctx, h := handle(t)
	rng := rand.New(rand.NewPCG(3, 3))
	for _, n := range sizes(1000) {
		for _, m := range []int{n, n + n/2 + 1} {
			t.Run(fmt.Sprintf("%dx%d", m, n), func(t *testing.T) {
				a := random(rng, m, n)
				md := put[T](t, ctx, a, cusolver.ColMajor)
				f := cudatest.Must(cusolver.QR(h, md))(t)
				defer f.Free()
				qd := put[T](t, ctx, mat.NewDense(m, n, nil), cusolver.ColMajor)
				if err := cusolver.QRQ(h, f, qd); err != nil {
					t.Fatal(err)
				}
				q, rr := get(t, h, qd), get(t, h, md)
				r := mat.NewDense(n, n, nil)
				for i := 0; i < n; i++ {
					for j := i; j < n; j++ {
						r.Set(i, j, rr.At(i, j))
					}
				}
				var qtq mat.Dense
				qtq.Mul(q.T(), q)
				for i := 0; i < n; i++ {
					qtq.Set(i, i, qtq.At(i, i)-1)
				}
				check(t, "||QᵀQ - I||", mat.Norm(&qtq, 2), bound[T](m))
				var qr mat.Dense
				qr.Mul(q, r)
				qr.Sub(&qr, a)
				check(t, "||Q·R - A|| / ||A||", mat.Norm(&qr, 2)/mat.Norm(a, 2), bound[T](m))
				// gonum's R, up to the signs of its rows.
				var g mat.QR
				g.Factorize(a)
				var want mat.Dense
				g.RTo(&want)
				diff := 0.0
				for i := 0; i < n; i++ {
					for j := i; j < n; j++ {
						diff = math.Max(diff, math.Abs(math.Abs(r.At(i, j))-math.Abs(want.At(i, j))))
					}
				}
				check(t, "max ||R| - |gonum's R||", diff, 1e3*bound[T](m)*math.Sqrt(float64(m)))
			})
		}
	}
}

func TestSVDAgainstGonum(t *testing.T) {
	t.Run("float32", testSVD[float32])
	t.Run("float64", testSVD[float64])
}

func testSVD[T cuda.Float](t *testing.T) {
	ctx, h := handle(t)
	rng := rand.New(rand.NewPCG(4, 4))
	for _, n := range sizes(1000) {
		for _, layout := range layouts() {
			// The shape each layout takes: wide row-major, tall
			// column-major.
			m, c := n, n
			if n > 1 {
				if layout == cusolver.RowMajor {
					c = n + 5
				} else {
					m = n + 5
				}
			}
			t.Run(fmt.Sprintf("%dx%d/%v", m, c, layout), func(t *testing.T) {
				a := random(rng, m, c)
				k := min(m, c)
				s := cudatest.Must(cuda.Alloc[T](ctx, k))(t)
				defer s.Free()
				u := put[T](t, ctx, mat.NewDense(m, m, nil), layout)
				vt := put[T](t, ctx, mat.NewDense(c, c, nil), layout)
				info := cudatest.Must(cusolver.SVD(h, put[T](t, ctx, a, layout), s, u, vt))(t)
				if err := info.Err(); err != nil {
					t.Fatal(err)
				}
				sv, ud, vd := vec(t, h, s, k), get(t, h, u), get(t, h, vt)
				var g mat.SVD
				if !g.Factorize(a, mat.SVDNone) {
					t.Fatal("gonum's SVD failed")
				}
				want := g.Values(nil)
				diff := 0.0
				for i := range sv {
					diff = math.Max(diff, math.Abs(sv[i]-want[i]))
				}
				check(t, "max |S - gonum's S| / S[0]", diff/want[0], bound[T](max(m, c)))
				for _, o := range []struct {
					name string
					q    mat.Matrix
				}{{"U", ud}, {"V", vd.T()}} {
					var qtq mat.Dense
					qtq.Mul(o.q.T(), o.q)
					r, _ := qtq.Dims()
					for i := 0; i < r; i++ {
						qtq.Set(i, i, qtq.At(i, i)-1)
					}
					check(t, "||"+o.name+"ᵀ"+o.name+" - I||", mat.Norm(&qtq, 2), bound[T](max(m, c)))
				}
				sm := mat.NewDense(m, c, nil)
				for i := 0; i < k; i++ {
					sm.Set(i, i, sv[i])
				}
				var usv mat.Dense
				usv.Product(ud, sm, vd)
				usv.Sub(&usv, a)
				check(t, "||U·S·Vᵀ - A|| / ||A||", mat.Norm(&usv, 2)/mat.Norm(a, 2), bound[T](max(m, c)))
			})
		}
	}
}

func TestEighAgainstGonum(t *testing.T) {
	t.Run("float32", testEigh[float32])
	t.Run("float64", testEigh[float64])
}

func testEigh[T cuda.Float](t *testing.T) {
	ctx, h := handle(t)
	rng := rand.New(rand.NewPCG(5, 5))
	for _, n := range sizes(1000) {
		for _, layout := range layouts() {
			t.Run(fmt.Sprintf("%d/%v", n, layout), func(t *testing.T) {
				a := mat.NewSymDense(n, nil)
				a.SymOuterK(1, random(rng, n, n))
				m := put[T](t, ctx, a, layout)
				w := cudatest.Must(cuda.Alloc[T](ctx, n))(t)
				defer w.Free()
				info := cudatest.Must(cusolver.Eigh(h, m, cusolver.Lower, w, true))(t)
				if err := info.Err(); err != nil {
					t.Fatal(err)
				}
				wv := vec(t, h, w, n)
				// The vectors are contiguous: V column-major.
				v := get(t, h, cusolver.Matrix[T]{Data: m.Data, Rows: n, Cols: n, Layout: cusolver.ColMajor})
				var g mat.EigenSym
				if !g.Factorize(a, false) {
					t.Fatal("gonum's EigenSym failed")
				}
				want := g.Values(nil) // ascending, as cuSOLVER's
				scale := math.Max(math.Abs(want[0]), math.Abs(want[n-1]))
				diff := 0.0
				for i := range wv {
					diff = math.Max(diff, math.Abs(wv[i]-want[i]))
				}
				check(t, "max |Λ - gonum's Λ| / max |Λ|", diff/scale, bound[T](n))
				var vtv mat.Dense
				vtv.Mul(v.T(), v)
				for i := 0; i < n; i++ {
					vtv.Set(i, i, vtv.At(i, i)-1)
				}
				check(t, "||VᵀV - I||", mat.Norm(&vtv, 2), bound[T](n))
				var av, vl mat.Dense
				av.Mul(a, v)
				vl.Mul(v, mat.NewDiagDense(n, wv))
				av.Sub(&av, &vl)
				check(t, "||A·V - V·Λ|| / ||A||", mat.Norm(&av, 2)/mat.Norm(a, 2), bound[T](n))
			})
		}
	}
}

func TestLeastSquaresAgainstGonum(t *testing.T) {
	t.Run("float32", testLeastSquares[float32])
	t.Run("float64", testLeastSquares[float64])
}

func testLeastSquares[T cuda.Float](t *testing.T) {
	ctx, h := handle(t)
	rng := rand.New(rand.NewPCG(6, 6))
	for _, n := range sizes(1000) {
		m := n + n/2 + 1
		t.Run(fmt.Sprintf("%dx%d", m, n), func(t *testing.T) {
			a := random(rng, m, n)
			b := random(rng, m, 2)
			x := cudatest.Must(cuda.Alloc[T](ctx, n*2))(t)
			defer x.Free()
			info := cudatest.Must(cusolver.LeastSquares(h, put[T](t, ctx, a, cusolver.ColMajor), put[T](t, ctx, b, cusolver.ColMajor).Data, x, 2))(t)
			if err := info.Err(); err != nil {
				t.Fatal(err)
			}
			got := get(t, h, cusolver.Matrix[T]{Data: x, Rows: n, Cols: 2, Layout: cusolver.ColMajor})
			var want mat.Dense
			if err := want.Solve(a, b); err != nil {
				t.Fatal(err)
			}
			var d mat.Dense
			d.Sub(got, &want)
			check(t, "||X - gonum's X|| / ||X||", mat.Norm(&d, 2)/mat.Norm(&want, 2), 1e3*bound[T](m))
		})
	}
}
