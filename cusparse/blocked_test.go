package cusparse_test

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cusparse"
	"github.com/gocuda/cuda/internal/cudatest"
)

// blockedShapes are the blocked matrices checked: the odd sizes (3 and 97
// as one block: a block is at least 2), rectangular ones, odd blocks, and
// one with no non-zeros.
var blockedShapes = []struct {
	kind              string
	rows, cols, block int
}{
	{"powerlaw", 3, 3, 3}, {"random", 97, 97, 97}, {"banded", 97, 97, 97},
	{"powerlaw", 99, 33, 3}, {"random", 96, 48, 4}, {"banded", 98, 98, 7}, {"random", 99, 99, 3}, {"empty", 6, 6, 2},
}

// denseOf returns m row-major, as T.
func denseOf[T cusparse.Element](m ref) []T {
	out := make([]T, m.rows*m.cols)
	for _, e := range m.e {
		out[e.r*m.cols+e.c] = of[T](e.v)
	}
	return out
}

// TestBlocked checks BSR and Blocked-ELL matrices made from dense Go
// matrices (NewBSR, NewBlockedELL) and from CSR and COO ones (ToBSR,
// ToBlockedELL) against the CPU reference: written out dense (ToDense),
// BSR times vectors (SpMV), both times dense matrices of either layout
// (SpMM).
func TestBlocked(t *testing.T) {
	ctx, s, h := handle(t)
	for i, sh := range blockedShapes {
		name := fmt.Sprintf("%s-%dx%d-b%d", sh.kind, sh.rows, sh.cols, sh.block)
		seed := uint64(200 + i)
		t.Run(name+"/int32-float64", func(t *testing.T) {
			checkBlocked[int32, float64](t, ctx, s, h, sh.kind, sh.rows, sh.cols, sh.block, seed)
		})
		t.Run(name+"/int64-complex64", func(t *testing.T) {
			checkBlocked[int64, complex64](t, ctx, s, h, sh.kind, sh.rows, sh.cols, sh.block, seed)
		})
		if raceEnabled {
			continue
		}
		t.Run(name+"/int64-float32", func(t *testing.T) {
			checkBlocked[int64, float32](t, ctx, s, h, sh.kind, sh.rows, sh.cols, sh.block, seed)
		})
		t.Run(name+"/int32-complex128", func(t *testing.T) {
			checkBlocked[int32, complex128](t, ctx, s, h, sh.kind, sh.rows, sh.cols, sh.block, seed)
		})
	}
}

func checkBlocked[I cusparse.Index, T cusparse.Element](t *testing.T, ctx *cuda.Context, s *cuda.Stream, h *cusparse.Handle, kind string, rows, cols, block int, seed uint64) {
	m := gen(kind, rows, cols, isComplex[T](), seed)
	dense := denseOf[T](m)
	off, ind, val := csrOf[I, T](m)
	csr := free(t, must(cusparse.NewCSR(s, rows, cols, off, ind, val))(t))
	coo := free(t, must(cusparse.Convert(h, csr, cusparse.COO))(t))
	mats := map[string]*cusparse.Matrix[I, T]{
		"NewBSR":            free(t, must(cusparse.NewBSR[I](s, rows, cols, block, dense))(t)),
		"NewBlockedELL":     free(t, must(cusparse.NewBlockedELL[I](s, rows, cols, block, dense))(t)),
		"ToBSR(CSR)":        free(t, must(cusparse.ToBSR(h, csr, block))(t)),
		"ToBlockedELL(COO)": free(t, must(cusparse.ToBlockedELL(h, coo, block))(t)),
		"ToBSR(COO)":        free(t, must(cusparse.ToBSR(h, coo, block))(t)),
		"ToBlockedELL(CSR)": free(t, must(cusparse.ToBlockedELL(h, csr, block))(t)),
	}
	for _, what := range slices.Sorted(func(yield func(string) bool) {
		for k := range mats {
			if !yield(k) {
				return
			}
		}
	}) {
		a := mats[what]
		if a.BlockSize() != block || a.Rows() != rows || a.Cols() != cols {
			t.Fatalf("%s: %v, block size %d: want %dx%d in blocks of %d", what, a, a.BlockSize(), rows, cols, block)
		}
		// ToDense, into a strided buffer whose gaps it must leave alone.
		for _, layout := range []cusparse.Layout{cusparse.RowMajor, cusparse.ColMajor} {
			major, minor := rows, cols
			if layout == cusparse.ColMajor {
				major, minor = cols, rows
			}
			stride := minor + 2
			fill := make([]T, major*stride)
			for k := range fill {
				fill[k] = of[T](7)
			}
			out := upload(t, ctx, fill)
			if err := cusparse.ToDense(h, a, cusparse.Dense[T]{Data: out, Rows: rows, Cols: cols, Stride: stride, Layout: layout}); err != nil {
				t.Fatalf("%s: ToDense %v: %v", what, layout, err)
			}
			got := download(t, s, out)
			for i := range major {
				for j := range stride {
					want := of[T](7)
					if j < minor {
						r, c := i, j
						if layout == cusparse.ColMajor {
							r, c = j, i
						}
						want = dense[r*cols+c]
					}
					if got[i*stride+j] != want {
						t.Fatalf("%s: ToDense %v: element %d of line %d is %v, want %v", what, layout, j, i, got[i*stride+j], want)
					}
				}
			}
		}
		if a.Format() == cusparse.BSR {
			x, y0 := values[T](cols, seed+1), values[T](rows, seed+2)
			dx, dy := upload(t, ctx, x), upload(t, ctx, y0)
			alpha, beta := of[T](complex(1.5, 0.5)), of[T](complex(-0.5, 0.25))
			if err := cusparse.SpMV(h, cusparse.NoTrans, alpha, a, dx, beta, dy); err != nil {
				t.Fatalf("%s: SpMV: %v", what, err)
			}
			want, scale := mulRef(m, toC(x), back(alpha), back(beta), toC(y0))
			near(t, what+": SpMV y", download(t, s, dy), want, scale, eps[T]())
		}
		const n = 3
		for _, layout := range []cusparse.Layout{cusparse.RowMajor, cusparse.ColMajor} {
			b, c0 := values[T](cols*n, seed+3), values[T](rows*n, seed+4)
			db, dc := upload(t, ctx, b), upload(t, ctx, c0)
			B := cusparse.Dense[T]{Data: db, Rows: cols, Cols: n, Layout: layout}
			C := cusparse.Dense[T]{Data: dc, Rows: rows, Cols: n, Layout: layout}
			alpha, beta := of[T](complex(0.75, -1)), of[T](complex(2, 0))
			err := cusparse.SpMM(h, cusparse.NoTrans, alpha, a, B, beta, C)
			if a.Format() == cusparse.BlockedELL && (reflect.TypeFor[I]().Kind() == reflect.Int64 || isComplex[T]()) {
				// cuSPARSE multiplies Blocked-ELL matrices of int32
				// indices and real values only: refused before the call.
				if !errors.Is(err, cuda.ErrNotSupported) || !strings.Contains(err.Error(), "BlockedELL") {
					t.Fatalf("%s: SpMM %v: %v; want ErrNotSupported naming BlockedELL", what, layout, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s: SpMM %v: %v", what, layout, err)
			}
			idx := func(i, j, r int) int {
				if layout == cusparse.ColMajor {
					return j*r + i
				}
				return i*n + j
			}
			got := download(t, s, dc)
			var gotCol []T
			var want []complex128
			var scale []float64
			for j := range n {
				xv, yv := make([]complex128, cols), make([]complex128, rows)
				for i := range xv {
					xv[i] = back(b[idx(i, j, cols)])
				}
				for i := range yv {
					yv[i] = back(c0[idx(i, j, rows)])
					gotCol = append(gotCol, got[idx(i, j, rows)])
				}
				w, sc := mulRef(m, xv, back(alpha), back(beta), yv)
				want, scale = append(want, w...), append(scale, sc...)
			}
			near(t, fmt.Sprintf("%s: SpMM %v c", what, layout), gotCol, want, scale, eps[T]())
		}
	}
}

// TestBlockedArrays: the arrays of a small matrix in each blocked format,
// as cuSPARSE reads them.
func TestBlockedArrays(t *testing.T) {
	_, s, _ := handle(t)
	// [ 1 2 | 0 0 | 0 0 ]
	// [ 0 3 | 0 0 | 0 4 ]
	// [ 0 0 | 0 0 | 0 0 ]
	// [ 0 0 | 0 0 | 0 0 ]
	dense := []float32{
		1, 2, 0, 0, 0, 0,
		0, 3, 0, 0, 0, 4,
		0, 0, 0, 0, 0, 0,
		0, 0, 0, 0, 0, 0,
	}
	bsr := free(t, must(cusparse.NewBSR[int32](s, 4, 6, 2, dense))(t))
	off, ind, val := must3(bsr.ToHost())(t)
	if want := []int32{0, 2, 2}; !slices.Equal(off, want) {
		t.Errorf("BSR offsets %v, want %v", off, want)
	}
	if want := []int32{0, 2}; !slices.Equal(ind, want) {
		t.Errorf("BSR block columns %v, want %v", ind, want)
	}
	if want := []float32{1, 2, 0, 3, 0, 0, 0, 4}; !slices.Equal(val, want) {
		t.Errorf("BSR values %v, want %v (each block row-major)", val, want)
	}
	if bsr.NNZ() != 8 {
		t.Errorf("BSR NNZ = %d, want 8 (two blocks of 4)", bsr.NNZ())
	}
	ell := free(t, must(cusparse.NewBlockedELL[int64](s, 4, 6, 2, dense))(t))
	off2, ind2, val2 := must3(ell.ToHost())(t)
	if len(off2) != 0 {
		t.Errorf("Blocked-ELL's first array %v, want none", off2)
	}
	if want := []int64{0, 2, -1, -1}; !slices.Equal(ind2, want) {
		t.Errorf("Blocked-ELL block columns %v, want %v", ind2, want)
	}
	if want := []float32{1, 2, 0, 0, 0, 3, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0}; !slices.Equal(val2, want) {
		t.Errorf("Blocked-ELL values %v, want %v (rows of two blocks' columns)", val2, want)
	}
	if got, want := ell.String(), "cusparse.Matrix[int64,float32]{BlockedELL 4x6, blocks of 2x2, 16 values}"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
}

// TestBlockedHalf: a Blocked-ELL matrix of float16 and of bfloat16 times
// dense matrices (SpMMHalf), against the CPU reference.
func TestBlockedHalf(t *testing.T) {
	ctx, s, h := handle(t)
	t.Run("float16", func(t *testing.T) { checkBlockedHalf[cuda.Float16](t, ctx, s, h) })
	t.Run("bfloat16", func(t *testing.T) { checkBlockedHalf[cuda.BFloat16](t, ctx, s, h) })
}

func checkBlockedHalf[H half](t *testing.T, ctx *cuda.Context, s *cuda.Stream, h *cusparse.Handle) {
	const rows, cols, block, n = 96, 64, 16, 5
	m := halfRef[H](gen("banded", rows, cols, false, 9))
	dense := make([]H, rows*cols)
	for _, e := range m.e {
		dense[e.r*cols+e.c] = toHalf[H](real(e.v))
	}
	a := free(t, must(cusparse.NewBlockedELL[int32](s, rows, cols, block, dense))(t))
	for _, layout := range []cusparse.Layout{cusparse.RowMajor, cusparse.ColMajor} {
		b, bc := halfValues[H](cols*n, 3)
		db, dc := upload(t, ctx, b), upload(t, ctx, make([]H, rows*n))
		B := cusparse.Dense[H]{Data: db, Rows: cols, Cols: n, Layout: layout}
		C := cusparse.Dense[H]{Data: dc, Rows: rows, Cols: n, Layout: layout}
		if err := cusparse.SpMMHalf(h, cusparse.NoTrans, 1, a, B, 0, C); err != nil {
			t.Fatal(err)
		}
		idx := func(i, j, r int) int {
			if layout == cusparse.ColMajor {
				return j*r + i
			}
			return i*n + j
		}
		got := download(t, s, dc)
		var gotCol []H
		var want []complex128
		var scale []float64
		for j := range n {
			xv := make([]complex128, cols)
			for i := range xv {
				xv[i] = bc[idx(i, j, cols)]
			}
			for i := range rows {
				gotCol = append(gotCol, got[idx(i, j, rows)])
			}
			w, sc := mulRef(m, xv, 1, 0, make([]complex128, rows))
			want, scale = append(want, w...), append(scale, sc...)
		}
		nearHalf(t, fmt.Sprintf("SpMMHalf %v c", layout), gotCol, want, scale)
	}
	x := upload(t, ctx, make([]H, cols))
	y := upload(t, ctx, make([]H, rows))
	if err := cusparse.SpMVHalf(h, cusparse.NoTrans, 1, a, x, 0, y); !errors.Is(err, cuda.ErrNotSupported) {
		t.Errorf("SpMVHalf of Blocked-ELL = %v, want cuda.ErrNotSupported", err)
	}
}

// TestBlockedRefused: what cuSPARSE does not take of the blocked formats,
// and shapes that are not whole blocks, refused in words before cuSPARSE.
func TestBlockedRefused(t *testing.T) {
	ctx, s, h := handle(t)
	dense := make([]float64, 16)
	dense[0], dense[5], dense[15] = 1, 2, 3
	bsr := free(t, must(cusparse.NewBSR[int32](s, 4, 4, 2, dense))(t))
	ell := free(t, must(cusparse.NewBlockedELL[int32](s, 4, 4, 2, dense))(t))
	csr := free(t, must(cusparse.NewCSR(s, 4, 4, []int32{0, 1, 2, 2, 3}, []int32{0, 1, 3}, []float64{1, 2, 3}))(t))
	x, y := upload(t, ctx, make([]float64, 4)), upload(t, ctx, make([]float64, 4))
	d := cusparse.NewDense(upload(t, ctx, make([]float64, 16)), 4, 4)
	for _, c := range []struct {
		name string
		err  error
		want error
	}{
		{"SpMV of Blocked-ELL", cusparse.SpMV(h, cusparse.NoTrans, 1, ell, x, 0, y), cuda.ErrNotSupported},
		{"SpMV of BSR transposed", cusparse.SpMV(h, cusparse.Trans, 1, bsr, x, 0, y), cuda.ErrNotSupported},
		{"SpMM of Blocked-ELL transposed", cusparse.SpMM(h, cusparse.Trans, 1, ell, d, 0, d), cuda.ErrNotSupported},
		{"SpSV of BSR", cusparse.SpSV(h, cusparse.NoTrans, cusparse.Lower, cusparse.NonUnit, 1, bsr, x, y), cuda.ErrInvalidValue},
		{"SpSM of Blocked-ELL", cusparse.SpSM(h, cusparse.NoTrans, cusparse.Lower, cusparse.NonUnit, 1, ell, d, d), cuda.ErrInvalidValue},
		{"SpGEMM of BSR", second(cusparse.SpGEMM(h, bsr, bsr)), cuda.ErrInvalidValue},
		{"Convert of BSR", second(cusparse.Convert(h, bsr, cusparse.CSR)), cuda.ErrInvalidValue},
		{"Convert to BlockedELL", second(cusparse.Convert(h, csr, cusparse.BlockedELL)), cuda.ErrInvalidValue},
		{"ToBSR of BlockedELL", second(cusparse.ToBSR(h, ell, 2)), cuda.ErrInvalidValue},
		{"ToBlockedELL block 3 of 4x4", second(cusparse.ToBlockedELL(h, csr, 3)), cuda.ErrInvalidValue},
		{"ToBSR block 0", second(cusparse.ToBSR(h, csr, 0)), cuda.ErrInvalidValue},
		{"ToBSR block 1", second(cusparse.ToBSR(h, csr, 1)), cuda.ErrInvalidValue},
		{"NewBlockedELL block 1", second(cusparse.NewBlockedELL[int32](s, 4, 4, 1, dense)), cuda.ErrInvalidValue},
		{"ToBSR nil handle", second(cusparse.ToBSR(nil, csr, 2)), cuda.ErrInvalidValue},
		{"ToBSR nil matrix", second(cusparse.ToBSR[int32, float64](h, nil, 2)), cuda.ErrInvalidValue},
		{"NewBSR 5x4 in blocks of 2", second(cusparse.NewBSR[int32](s, 5, 4, 2, make([]float64, 20))), cuda.ErrInvalidValue},
		{"NewBSR short dense", second(cusparse.NewBSR[int32](s, 4, 4, 2, make([]float64, 15))), cuda.ErrInvalidValue},
		{"NewBSR negative", second(cusparse.NewBSR[int32](s, -2, 4, 2, make([]float64, 0))), cuda.ErrInvalidValue},
		{"NewBlockedELL nil stream", second(cusparse.NewBlockedELL[int64](nil, 4, 4, 2, dense)), cuda.ErrInvalidValue},
		{"NewBlockedELL block -1", second(cusparse.NewBlockedELL[int64](s, 4, 4, -1, dense)), cuda.ErrInvalidValue},
		{"ToDense of BSR, wrong shape", cusparse.ToDense(h, bsr, cusparse.NewDense(upload(t, ctx, make([]float64, 8)), 2, 4)), cuda.ErrInvalidValue},
	} {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.err, c.want)
		}
	}
	if err := bsr.Free(); err != nil {
		t.Fatal(err)
	}
	if err := cusparse.ToDense(h, bsr, d); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("ToDense of a freed BSR matrix = %v, want cuda.ErrClosed", err)
	}
}

func second[A any](_ A, err error) error { return err }

// TestFakeRefusals: the fake answers the combinations of types, formats
// and operations cuSPARSE's SpMV does not take as cuSPARSE does
// (CUSPARSE_STATUS_NOT_SUPPORTED), where the package's own checks would
// refuse them first.
func TestFakeRefusals(t *testing.T) {
	if cudatest.Fake(t) == nil {
		return // ran in a child process against the fake
	}
	ctx, s, h := handle(t)
	const f32, f64, f16 = 0, 1, 2
	hm := free(t, must(cusparse.NewCSR(s, 2, 2, []int32{0, 1, 2}, []int32{0, 1}, []cuda.Float16{0x3c00, 0x3c00}))(t))
	ell := free(t, must(cusparse.NewBlockedELL[int32](s, 2, 2, 2, []float32{1, 0, 0, 1}))(t))
	bsr := free(t, must(cusparse.NewBSR[int32](s, 2, 2, 2, []float32{1, 0, 0, 1}))(t))
	hx := upload(t, ctx, make([]cuda.Float16, 2))
	fx := upload(t, ctx, make([]float32, 2))
	dx := upload(t, ctx, make([]float64, 2))
	for _, c := range []struct {
		name string
		err  error
	}{
		{"halves computing in float16", cusparse.SpMVBufferSize(h, cusparse.NoTrans, f16, hm, hx, hx)},
		{"halves computing in float64", cusparse.SpMVBufferSize(h, cusparse.NoTrans, f64, hm, hx, hx)},
		{"a half matrix, float64 vectors", cusparse.SpMVBufferSize(h, cusparse.NoTrans, f32, hm, dx, dx)},
		{"Blocked-ELL", cusparse.SpMVBufferSize(h, cusparse.NoTrans, f32, ell, fx, fx)},
		{"BSR transposed", cusparse.SpMVBufferSize(h, cusparse.Trans, f32, bsr, fx, fx)},
		{"float32 computing in float64", cusparse.SpMVBufferSize(h, cusparse.NoTrans, f64, bsr, fx, fx)},
	} {
		if !errors.Is(c.err, cusparse.ResultNotSupported) {
			t.Errorf("%s: %v, want %v", c.name, c.err, cusparse.ResultNotSupported)
		}
	}
	if err := cusparse.SpMVBufferSize(h, cusparse.NoTrans, f32, hm, hx, hx); err != nil {
		t.Errorf("halves computing in float32: %v", err)
	}
	if err := cusparse.SpMVBufferSize(h, cusparse.NoTrans, f32, bsr, fx, fx); err != nil {
		t.Errorf("BSR: %v", err)
	}
}
