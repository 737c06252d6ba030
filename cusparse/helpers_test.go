package cusparse_test

import (
	"cmp"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cusparse"
	"github.com/gocuda/cuda/internal/cudatest"
)

func TestMain(m *testing.M) {
	// A GPU without cuSPARSE: these tests run against the fake driver,
	// which answers cuSPARSE's calls too, except where the GPU machine's
	// scripts require the real thing.
	if os.Getenv(cusparse.EnvLibrary) == "" && os.Getenv(cudatest.EnvRequireGPU) != "1" && !cudatest.Loadable("libcusparse.so.12", "/usr/local/cuda/lib64/libcusparse.so.12") {
		os.Setenv(cudatest.EnvDriver, "fake")
	}
	cudatest.Main(m)
}

// must is cudatest.Must: h := must(cusparse.New(s))(t).
func must[T any](v T, err error) func(testing.TB) T { return cudatest.Must(v, err) }

// handle returns a context, a stream and a Handle on it, closed when the
// test ends.
func handle(t testing.TB) (*cuda.Context, *cuda.Stream, *cusparse.Handle) {
	t.Helper()
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	h, err := cusparse.New(s)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("Handle.Close: %v", err)
		}
	})
	return ctx, s, h
}

// free frees m when the test ends.
func free[I cusparse.Index, T cusparse.Value](t testing.TB, m *cusparse.Matrix[I, T]) *cusparse.Matrix[I, T] {
	t.Helper()
	t.Cleanup(func() {
		if err := m.Free(); err != nil {
			t.Errorf("Matrix.Free: %v", err)
		}
	})
	return m
}

// upload copies data to a new buffer freed when the test ends.
func upload[T any](t testing.TB, ctx *cuda.Context, data []T) *cuda.DeviceBuffer[T] {
	t.Helper()
	return cudatest.Upload(t, ctx, data)
}

// entry is one non-zero of a reference matrix, its value in complex128
// whatever the element type.
type entry struct {
	r, c int
	v    complex128
}

// ref is a sparse matrix on the host: the tests' CPU reference.
type ref struct {
	rows, cols int
	e          []entry // sorted by row, then column; one per position
}

// gen makes a reference matrix of a kind: "random" (up to 6 non-zeros a
// row at random columns), "banded" (the diagonals -2..2) or "powerlaw"
// (row i holds about 60/(i+1)^0.7 non-zeros, columns drawn towards the
// first ones), with empty rows and columns in each. Values are on
// [-1, 1], with imaginary parts where complex is set. "empty" has no
// non-zeros at all.
func gen(kind string, rows, cols int, complexValues bool, seed uint64) ref {
	rng := rand.New(rand.NewPCG(seed, 7))
	value := func() complex128 {
		v := complex(2*rng.Float64()-1, 0)
		if complexValues {
			v += complex(0, 2*rng.Float64()-1)
		}
		return v
	}
	emptyCol := func(c int) bool { return cols > 4 && c%7 == 3 }
	set := map[[2]int]complex128{}
	for i := range rows {
		if rows > 2 && i%5 == 2 { // an empty row
			continue
		}
		switch kind {
		case "random":
			for range rng.IntN(7) {
				c := rng.IntN(cols)
				if !emptyCol(c) {
					set[[2]int{i, c}] = value()
				}
			}
		case "banded":
			for c := i - 2; c <= i+2; c++ {
				if c >= 0 && c < cols && !emptyCol(c) {
					set[[2]int{i, c}] = value()
				}
			}
		case "powerlaw":
			n := int(60 / math.Pow(float64(i+1), 0.7))
			for range min(n+1, cols) {
				c := int(float64(cols) * math.Pow(rng.Float64(), 3))
				if c < cols && !emptyCol(c) {
					set[[2]int{i, c}] = value()
				}
			}
		}
	}
	m := ref{rows: rows, cols: cols}
	for k, v := range set {
		m.e = append(m.e, entry{k[0], k[1], v})
	}
	m.sort()
	return m
}

func (m *ref) sort() {
	slices.SortFunc(m.e, func(a, b entry) int { return cmp.Or(cmp.Compare(a.r, b.r), cmp.Compare(a.c, b.c)) })
}

// transposed returns op(m).
func (m ref) op(o cusparse.Op) ref {
	if o == cusparse.NoTrans {
		return m
	}
	t := ref{rows: m.cols, cols: m.rows}
	for _, e := range m.e {
		v := e.v
		if o == cusparse.ConjTrans {
			v = cmplx.Conj(v)
		}
		t.e = append(t.e, entry{e.c, e.r, v})
	}
	t.sort()
	return t
}

// csr returns m's CSR arrays (csc: its CSC arrays; coo: its row indices).
func csrOf[I cusparse.Index, T cusparse.Element](m ref) (off, ind []I, val []T) {
	off = make([]I, m.rows+1)
	for _, e := range m.e {
		off[e.r+1]++
		ind = append(ind, I(e.c))
		val = append(val, of[T](e.v))
	}
	for i := range m.rows {
		off[i+1] += off[i]
	}
	return off, ind, val
}

// of converts a complex128 to T: its real part for a real T.
func of[T cusparse.Element](c complex128) T {
	var out T
	switch v := reflect.ValueOf(&out).Elem(); v.Kind() {
	case reflect.Float32, reflect.Float64:
		v.SetFloat(real(c))
	default:
		v.SetComplex(c)
	}
	return out
}

// back converts a T to complex128.
func back[T cusparse.Element](x T) complex128 {
	switch v := reflect.ValueOf(x); v.Kind() {
	case reflect.Float32, reflect.Float64:
		return complex(v.Float(), 0)
	default:
		return v.Complex()
	}
}

// isComplex reports whether T is complex.
func isComplex[T cusparse.Element]() bool {
	k := reflect.TypeFor[T]().Kind()
	return k == reflect.Complex64 || k == reflect.Complex128
}

// eps is T's tolerance, relative to the size of the terms summed.
func eps[T cusparse.Element]() float64 {
	k := reflect.TypeFor[T]().Kind()
	if k == reflect.Float32 || k == reflect.Complex64 {
		return 1e-4
	}
	return 1e-11
}

// values returns n values from seed, of T.
func values[T cusparse.Element](n int, seed uint64) []T {
	rng := rand.New(rand.NewPCG(seed, 11))
	out := make([]T, n)
	for i := range out {
		out[i] = of[T](complex(2*rng.Float64()-1, 2*rng.Float64()-1))
	}
	return out
}

// near checks got against want element by element, each within tol
// times scale[i] (the size of what was summed into it) plus tol.
func near[T cusparse.Element](t *testing.T, what string, got []T, want []complex128, scale []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d elements, want %d", what, len(got), len(want))
	}
	bad := 0
	for i := range got {
		s := 1.0
		if scale != nil {
			s += scale[i]
		}
		if d := cmplx.Abs(back(got[i]) - want[i]); !(d <= tol*s) {
			if bad++; bad <= 5 {
				t.Errorf("%s[%d] = %v, want %v (off by %.3g, allowed %.3g)", what, i, got[i], want[i], d, tol*s)
			}
		}
	}
	if bad > 5 {
		t.Errorf("%s: %d elements wrong in all", what, bad)
	}
}

// download waits for s, then copies b to a new slice.
func download[T any](t testing.TB, s *cuda.Stream, b *cuda.DeviceBuffer[T]) []T {
	t.Helper()
	if err := s.Synchronize(); err != nil {
		t.Fatalf("Synchronize: %v", err)
	}
	return cudatest.Download(t, b)
}
