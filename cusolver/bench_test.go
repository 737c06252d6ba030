package cusolver_test

import (
	"fmt"
	"math/cmplx"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cusolver"
	"github.com/gocuda/cuda/internal/cudatest"
)

// BenchmarkSolver is issue 51's dense benchmarks (item 4), each case
// BenchmarkSolver/<op>/<dtype>/<shape>, beside PyTorch and CuPy:
// bench/pyref/solver_peers.py times the same cases under the same names
// and scripts/gpu-solver.sh runs both and sets them side by side.
//
// Each call is what the peers' call does, from an input they leave
// untouched: a copy of A on the stream into a work matrix (the peers copy
// their input into the column-major matrix cuSOLVER overwrites, as
// PyTorch's clone and CuPy's asfortranarray do), then the factorization,
// and for lu_solve the solve of one right-hand side (torch.linalg.solve_ex,
// cupy.linalg.solve), for qr Q formed (torch.linalg.qr's and cupy's
// reduced mode: geqrf and orgqr), for svd U and Vᵀ in full, for eigh the
// vectors, for the batches the vectors. No call waits for its info (as
// PyTorch's _ex forms): each result is freed unread (Info.Free). The handle's
// workspaces are reused from call to call, as the package does.
//
// A case times b.N calls and one Synchronize by CUDA events recorded
// before and after them, after a call to warm up, and reports µs per call
// (us/op), as package nd's BenchmarkND. GOCUDA_SOLVER_OPS (a comma list of
// ops) selects a subset. On the fake driver, whose cuSOLVER computes on the
// CPU, the cases skip unless GOCUDA_SOLVER_FAKE=1, which runs each at a
// small size (to check the benchmark, not to time it).
func BenchmarkSolver(b *testing.B) {
	ops := map[string]bool{}
	for _, op := range strings.Split(os.Getenv("GOCUDA_SOLVER_OPS"), ",") {
		if op = strings.TrimSpace(op); op != "" {
			ops[op] = true
		}
	}
	small := cudatest.IsFake()
	if small && os.Getenv("GOCUDA_SOLVER_FAKE") != "1" {
		b.Skip("the fake computes cuSOLVER's calls on the CPU: GOCUDA_SOLVER_FAKE=1 runs the cases small")
	}
	ctx := cudatest.Context(b)
	s := cudatest.Stream(b, ctx)
	h := must(cusolver.New(s))(b)
	defer h.Close()
	for _, c := range solverCases() {
		if len(ops) > 0 && !ops[c.op] {
			continue
		}
		b.Run(c.op+"/"+c.dtype+"/"+c.shape, func(b *testing.B) {
			n, count := c.n, c.count
			if small {
				n, count = min(n, 24), min(count, 16)
			}
			c.run(b, h, n, count)
		})
	}
}

// solverCase is one case: its name's parts, its size (n, or the batch's
// count of 8×8 matrices), and what sets it up and times it.
type solverCase struct {
	op, dtype, shape string
	n, count         int
	run              benchFunc
}

// benchFunc sets up and times a case.
type benchFunc = func(b *testing.B, h *cusolver.Handle, n, count int)

// solverCases is the table of cases. bench/pyref/solver_peers.py's CASES
// is the same table: a case added here is added there, under the same
// name.
func solverCases() []solverCase {
	var cases []solverCase
	add := func(op string, sizes []int, f32, f64 benchFunc) {
		for _, n := range sizes {
			cases = append(cases, solverCase{op, "f32", fmt.Sprint(n), n, 0, f32}, solverCase{op, "f64", fmt.Sprint(n), n, 0, f64})
		}
	}
	add("lu_solve", []int{256, 1024, 4096, 8192}, benchLUSolve[float32], benchLUSolve[float64])
	add("cholesky", []int{256, 1024, 4096, 8192}, benchCholesky[float32], benchCholesky[float64])
	add("qr", []int{256, 1024, 4096}, benchQR[float32], benchQR[float64])
	add("svd", []int{256, 1024, 4096}, benchSVD[float32], benchSVD[float64])
	add("eigh", []int{256, 1024, 4096}, benchEigh[float32], benchEigh[float64])
	// The batches of 10000 8×8 matrices, real, then complex (Hermitian for
	// the Cholesky): the peers' float32, float64, complex64 and complex128
	// batches. The other triangle: row-major Upper is cuSOLVER's
	// column-major lower, its fast one (2.8x the other on an H100), which
	// the peers call; row-major Lower takes it through two transposes.
	type batch struct {
		name   string
		dtypes [2]string
		run    [2]benchFunc
	}
	reals, complexes := [2]string{"f32", "f64"}, [2]string{"c64", "c128"}
	for _, op := range []batch{
		{"cholesky_batched", reals, [2]benchFunc{benchCholeskyBatched[float32], benchCholeskyBatched[float64]}},
		{"cholesky_batched_upper", reals, [2]benchFunc{benchCholeskyBatchedUpper[float32], benchCholeskyBatchedUpper[float64]}},
		{"svd_batched", reals, [2]benchFunc{benchSVDBatched[float32, float32], benchSVDBatched[float64, float64]}},
		{"cholesky_batched", complexes, [2]benchFunc{benchCholeskyBatched[complex64], benchCholeskyBatched[complex128]}},
		{"cholesky_batched_upper", complexes, [2]benchFunc{benchCholeskyBatchedUpper[complex64], benchCholeskyBatchedUpper[complex128]}},
		{"svd_batched", complexes, [2]benchFunc{benchSVDBatched[complex64, float32], benchSVDBatched[complex128, float64]}},
	} {
		for k := range 2 {
			cases = append(cases, solverCase{op.name, op.dtypes[k], "10000x8x8", 8, 10000, op.run[k]})
		}
	}
	return cases
}

// benchMatrix returns count n×n matrices of T on the device, freed when
// the run ends: random in [-1, 1) (a complex number's real and imaginary
// parts each), Hermitian (symmetric; a complex one's diagonal real) where
// herm, plus n·I where dominant (positive definite, as diagonally
// dominant), and a work buffer of the same size.
func benchMatrix[T scalar](b *testing.B, ctx *cuda.Context, n, count int, herm, dominant bool) (src, work *cuda.DeviceBuffer[T]) {
	b.Helper()
	v := benchElements[T](n, count, herm, dominant)
	src = cudatest.Upload(b, ctx, v)
	work = cudatest.Upload(b, ctx, v)
	return src, work
}

// benchElements returns benchMatrix's elements: the peers' matrices
// (bench/pyref/solver_peers.py), the same draws of the same source.
func benchElements[T scalar](n, count int, herm, dominant bool) []T {
	rng := rand.New(rand.NewPCG(uint64(n), uint64(count)))
	cplx := isComplex[T]()
	v := make([]T, n*n*max(count, 1))
	for m := 0; m < max(count, 1); m++ {
		a := v[m*n*n : (m+1)*n*n]
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				var x complex128
				if cplx { // both parts drawn, even where the other triangle's are taken
					x = complex(2*rng.Float64()-1, 2*rng.Float64()-1)
				}
				switch {
				case herm && j > i:
					a[i*n+j] = to[T](cmplx.Conj(of(a[j*n+i])))
					continue
				case !cplx:
					x = complex(2*rng.Float64()-1, 0)
				case herm && j == i:
					x = complex(real(x), 0)
				}
				a[i*n+j] = to[T](x)
			}
			if dominant {
				a[i*n+i] = to[T](of(a[i*n+i]) + complex(float64(n), 0))
			}
		}
	}
	return v
}

// solverLoop times op as BenchmarkSolver says.
func solverLoop(b *testing.B, s *cuda.Stream, op func() error) {
	b.Helper()
	if err := op(); err != nil {
		b.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		b.Fatal(err)
	}
	start, end := must(s.Context().NewEvent())(b), must(s.Context().NewEvent())(b)
	defer start.Close()
	defer end.Close()
	b.ResetTimer()
	if err := start.Record(s); err != nil {
		b.Fatal(err)
	}
	for range b.N {
		if err := op(); err != nil {
			b.Fatal(err)
		}
	}
	if err := end.Record(s); err != nil {
		b.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	elapsed := must(cuda.ElapsedTime(start, end))(b)
	b.ReportMetric(float64(elapsed.Nanoseconds())/1e3/float64(b.N), "us/op")
}

func benchLUSolve[T float32 | float64](b *testing.B, h *cusolver.Handle, n, _ int) {
	s := h.Stream()
	src, work := benchMatrix[T](b, s.Context(), n, 1, false, false)
	rng := rand.New(rand.NewPCG(uint64(n), 7))
	v := make([]T, n)
	for i := range v {
		v[i] = T(2*rng.Float64() - 1)
	}
	rhs1, x1 := cudatest.Upload(b, s.Context(), v), cudatest.Upload(b, s.Context(), v)
	solverLoop(b, s, func() error {
		if err := work.CopyFromDeviceAsync(src, s); err != nil {
			return err
		}
		if err := x1.CopyFromDeviceAsync(rhs1, s); err != nil {
			return err
		}
		f, err := cusolver.LU(h, cusolver.NewMatrix(work, n, n))
		if err != nil {
			return err
		}
		if err := cusolver.Solve(h, f, x1, 1); err != nil {
			return err
		}
		return f.Free()
	})
}

func benchCholesky[T float32 | float64](b *testing.B, h *cusolver.Handle, n, _ int) {
	s := h.Stream()
	src, work := benchMatrix[T](b, s.Context(), n, 1, true, true)
	solverLoop(b, s, func() error {
		if err := work.CopyFromDeviceAsync(src, s); err != nil {
			return err
		}
		f, err := cusolver.Cholesky(h, cusolver.NewMatrix(work, n, n), cusolver.Lower)
		if err != nil {
			return err
		}
		return f.Free()
	})
}

func benchQR[T float32 | float64](b *testing.B, h *cusolver.Handle, n, _ int) {
	s := h.Stream()
	src, work := benchMatrix[T](b, s.Context(), n, 1, false, false)
	q := must(cuda.Alloc[T](s.Context(), n*n))(b)
	defer q.Free()
	a := cusolver.Matrix[T]{Data: work, Rows: n, Cols: n, Layout: cusolver.ColMajor}
	qm := cusolver.Matrix[T]{Data: q, Rows: n, Cols: n, Layout: cusolver.ColMajor}
	solverLoop(b, s, func() error {
		if err := work.CopyFromDeviceAsync(src, s); err != nil {
			return err
		}
		f, err := cusolver.QR(h, a)
		if err != nil {
			return err
		}
		if err := cusolver.QRQ(h, f, qm); err != nil {
			return err
		}
		return f.Free()
	})
}

func benchSVD[T float32 | float64](b *testing.B, h *cusolver.Handle, n, _ int) {
	s := h.Stream()
	src, work := benchMatrix[T](b, s.Context(), n, 1, false, false)
	sv := must(cuda.Alloc[T](s.Context(), n))(b)
	u := must(cuda.Alloc[T](s.Context(), n*n))(b)
	vt := must(cuda.Alloc[T](s.Context(), n*n))(b)
	defer sv.Free()
	defer u.Free()
	defer vt.Free()
	solverLoop(b, s, func() error {
		if err := work.CopyFromDeviceAsync(src, s); err != nil {
			return err
		}
		info, err := cusolver.SVD(h, cusolver.NewMatrix(work, n, n), sv, cusolver.NewMatrix(u, n, n), cusolver.NewMatrix(vt, n, n))
		if err != nil {
			return err
		}
		return info.Free()
	})
}

func benchEigh[T float32 | float64](b *testing.B, h *cusolver.Handle, n, _ int) {
	s := h.Stream()
	src, work := benchMatrix[T](b, s.Context(), n, 1, true, false)
	w := must(cuda.Alloc[T](s.Context(), n))(b)
	defer w.Free()
	solverLoop(b, s, func() error {
		if err := work.CopyFromDeviceAsync(src, s); err != nil {
			return err
		}
		info, err := cusolver.Eigh(h, cusolver.NewMatrix(work, n, n), cusolver.Lower, w, true)
		if err != nil {
			return err
		}
		return info.Free()
	})
}

func benchCholeskyBatched[T scalar](b *testing.B, h *cusolver.Handle, n, count int) {
	benchCholeskyBatchedTri[T](b, h, n, count, cusolver.Lower)
}

func benchCholeskyBatchedUpper[T scalar](b *testing.B, h *cusolver.Handle, n, count int) {
	benchCholeskyBatchedTri[T](b, h, n, count, cusolver.Upper)
}

func benchCholeskyBatchedTri[T scalar](b *testing.B, h *cusolver.Handle, n, count int, tri cusolver.Triangle) {
	s := h.Stream()
	src, work := benchMatrix[T](b, s.Context(), n, count, true, true)
	solverLoop(b, s, func() error {
		if err := work.CopyFromDeviceAsync(src, s); err != nil {
			return err
		}
		info, err := cusolver.CholeskyBatched(h, cusolver.NewMatrix(work, n, n), count, tri)
		if err != nil {
			return err
		}
		return info.Free()
	})
}

func benchSVDBatched[T scalar, R float32 | float64](b *testing.B, h *cusolver.Handle, n, count int) {
	s := h.Stream()
	src, work := benchMatrix[T](b, s.Context(), n, count, false, false)
	sv := must(cuda.Alloc[R](s.Context(), n*count))(b)
	u := must(cuda.Alloc[T](s.Context(), n*n*count))(b)
	v := must(cuda.Alloc[T](s.Context(), n*n*count))(b)
	defer sv.Free()
	defer u.Free()
	defer v.Free()
	solverLoop(b, s, func() error {
		if err := work.CopyFromDeviceAsync(src, s); err != nil {
			return err
		}
		info, err := cusolver.SVDBatched(h, cusolver.NewMatrix(work, n, n), count, sv, u, v)
		if err != nil {
			return err
		}
		return info.Free()
	})
}

// TestBenchCasesMatchPeers: bench/pyref/solver_peers.py's cases are
// BenchmarkSolver's, by name and in order, so that the report sets each
// beside its peers (where python3 is found).
func TestBenchCasesMatchPeers(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	out, err := exec.Command(py, "../bench/pyref/solver_peers.py", "--list").Output()
	if err != nil {
		t.Fatalf("solver_peers.py --list: %v", err)
	}
	var want []string
	for _, c := range solverCases() {
		want = append(want, c.op+"/"+c.dtype+"/"+c.shape)
	}
	if got := strings.Fields(string(out)); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("solver_peers.py's cases:\n%v\nBenchmarkSolver's:\n%v", got, want)
	}
}
