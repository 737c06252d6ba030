package cusparse_test

import (
	"errors"
	"fmt"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cusparse"
)

// shapes are the matrices every operation is checked on: each kind at the
// issue's odd sizes, and rectangular ones.
var shapes = []struct {
	kind       string
	rows, cols int
}{
	{"random", 1, 1}, {"banded", 3, 3}, {"powerlaw", 3, 3}, {"random", 97, 97}, {"banded", 97, 97}, {"powerlaw", 97, 97},
	{"random", 1000, 1000}, {"banded", 1000, 1000}, {"powerlaw", 1000, 1000},
	{"random", 4099, 4099}, {"banded", 4099, 4099}, {"powerlaw", 4099, 4099},
	{"random", 97, 41}, {"powerlaw", 3, 1000}, {"empty", 5, 5}, {"empty", 1, 7},
}

// TestOperations checks every operation against the CPU reference, on
// each shape, with both index types and every value type.
func TestOperations(t *testing.T) {
	ctx, s, h := handle(t)
	for i, sh := range shapes {
		if testing.Short() && sh.rows > 1000 || raceEnabled && sh.rows > 97 {
			continue
		}
		name := fmt.Sprintf("%s-%dx%d", sh.kind, sh.rows, sh.cols)
		seed := uint64(i + 1)
		t.Run(name+"/int32-float64", func(t *testing.T) { checkAll[int32, float64](t, ctx, s, h, sh.kind, sh.rows, sh.cols, seed) })
		t.Run(name+"/int64-complex64", func(t *testing.T) { checkAll[int64, complex64](t, ctx, s, h, sh.kind, sh.rows, sh.cols, seed) })
		if raceEnabled {
			// The race detector's run checks the plumbing, on two of the
			// eight combinations.
			continue
		}
		t.Run(name+"/int32-float32", func(t *testing.T) { checkAll[int32, float32](t, ctx, s, h, sh.kind, sh.rows, sh.cols, seed) })
		t.Run(name+"/int32-complex64", func(t *testing.T) { checkAll[int32, complex64](t, ctx, s, h, sh.kind, sh.rows, sh.cols, seed) })
		t.Run(name+"/int32-complex128", func(t *testing.T) { checkAll[int32, complex128](t, ctx, s, h, sh.kind, sh.rows, sh.cols, seed) })
		t.Run(name+"/int64-float32", func(t *testing.T) { checkAll[int64, float32](t, ctx, s, h, sh.kind, sh.rows, sh.cols, seed) })
		t.Run(name+"/int64-float64", func(t *testing.T) { checkAll[int64, float64](t, ctx, s, h, sh.kind, sh.rows, sh.cols, seed) })
		t.Run(name+"/int64-complex128", func(t *testing.T) { checkAll[int64, complex128](t, ctx, s, h, sh.kind, sh.rows, sh.cols, seed) })
	}
}

func checkAll[I cusparse.Index, T cusparse.Element](t *testing.T, ctx *cuda.Context, s *cuda.Stream, h *cusparse.Handle, kind string, rows, cols int, seed uint64) {
	m := gen(kind, rows, cols, isComplex[T](), seed)
	coo := fromTriplets[I, T](t, s, m, seed)
	formats := map[cusparse.Format]*cusparse.Matrix[I, T]{cusparse.COO: coo}
	outer := t // the matrices kept live for the operations after
	t.Run("Convert", func(t *testing.T) {
		// Every format from every other: COO to CSR and CSC, then each of
		// those back to the others.
		for _, from := range []cusparse.Format{cusparse.COO, cusparse.CSR, cusparse.CSC} {
			for _, to := range []cusparse.Format{cusparse.CSR, cusparse.CSC, cusparse.COO} {
				src := formats[from]
				if src == nil {
					t.Fatalf("no %v matrix to convert from", from)
				}
				out := must(cusparse.Convert(h, src, to))(t)
				if formats[to] == nil {
					formats[to] = free(outer, out)
				} else {
					free(t, out)
				}
				checkArrays(t, fmt.Sprintf("%v from %v", to, from), out, m)
			}
		}
	})
	if t.Failed() {
		return
	}
	for _, f := range []cusparse.Format{cusparse.CSR, cusparse.CSC, cusparse.COO} {
		a := formats[f]
		t.Run("SpMV/"+f.String(), func(t *testing.T) { checkSpMV(t, ctx, s, h, a, m, seed) })
		t.Run("SpMM/"+f.String(), func(t *testing.T) { checkSpMM(t, ctx, s, h, a, m, seed) })
		if rows*cols <= 1<<20 {
			t.Run("ToDense/"+f.String(), func(t *testing.T) { checkToDense(t, ctx, h, a, m) })
		}
	}
	t.Run("SpGEMM", func(t *testing.T) { checkSpGEMM(t, s, h, formats[cusparse.CSR], m, seed) })
	if rows == cols {
		for _, f := range []cusparse.Format{cusparse.CSR, cusparse.COO} {
			t.Run("SpSV/"+f.String(), func(t *testing.T) { checkSpSV[I, T](t, ctx, s, h, f, m, seed) })
		}
	}
}

// fromTriplets makes m with NewCOO from its entries shuffled, some split
// in two (duplicates summed), and checks what it holds.
func fromTriplets[I cusparse.Index, T cusparse.Element](t *testing.T, s *cuda.Stream, m ref, seed uint64) *cusparse.Matrix[I, T] {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 3))
	var ri, ci []I
	var v []T
	for k, e := range m.e {
		if k%3 == 0 {
			// Split: two halves that sum to the value. Halves of a
			// float are exact, so the sum is the value in every type.
			half := of[T](e.v / 2)
			ri, ci, v = append(ri, I(e.r), I(e.r)), append(ci, I(e.c), I(e.c)), append(v, half, of[T](e.v)-half)
			continue
		}
		ri, ci, v = append(ri, I(e.r)), append(ci, I(e.c)), append(v, of[T](e.v))
	}
	rng.Shuffle(len(v), func(a, b int) { ri[a], ri[b] = ri[b], ri[a]; ci[a], ci[b] = ci[b], ci[a]; v[a], v[b] = v[b], v[a] })
	coo := free(t, must(cusparse.NewCOO(s, m.rows, m.cols, ri, ci, v))(t))
	checkArrays(t, "NewCOO", coo, m)
	return coo
}

// checkArrays checks a's arrays are m's in a's format.
func checkArrays[I cusparse.Index, T cusparse.Element](t *testing.T, what string, a *cusparse.Matrix[I, T], m ref) {
	t.Helper()
	if a.Rows() != m.rows || a.Cols() != m.cols || a.NNZ() != len(m.e) {
		t.Fatalf("%s: %dx%d with %d non-zeros, want %dx%d with %d", what, a.Rows(), a.Cols(), a.NNZ(), m.rows, m.cols, len(m.e))
	}
	outer, inner, val := must3(a.ToHost())(t)
	var wo, wi []I
	var wv []T
	switch a.Format() {
	case cusparse.CSR:
		wo, wi, wv = csrOf[I, T](m)
	case cusparse.CSC:
		wo, wi, wv = csrOf[I, T](m.op(cusparse.Trans))
	case cusparse.COO:
		for _, e := range m.e {
			wo, wi, wv = append(wo, I(e.r)), append(wi, I(e.c)), append(wv, of[T](e.v))
		}
	}
	if len(outer) != len(wo) {
		t.Fatalf("%s: %d outer indices, want %d", what, len(outer), len(wo))
	}
	for k := range wo {
		if outer[k] != wo[k] {
			t.Fatalf("%s: outer[%d] = %d, want %d", what, k, outer[k], wo[k])
		}
	}
	for k := range wi {
		if inner[k] != wi[k] || val[k] != wv[k] {
			t.Fatalf("%s: non-zero %d is %d: %v, want %d: %v", what, k, inner[k], val[k], wi[k], wv[k])
		}
	}
}

// must3 is must for three results and an error.
func must3[A, B, C any](a A, b B, c C, err error) func(testing.TB) (A, B, C) {
	return func(t testing.TB) (A, B, C) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return a, b, c
	}
}

// ops are the operations to check with T: ConjTrans only where it differs.
func ops[T cusparse.Element]() []cusparse.Op {
	if isComplex[T]() {
		return []cusparse.Op{cusparse.NoTrans, cusparse.Trans, cusparse.ConjTrans}
	}
	return []cusparse.Op{cusparse.NoTrans, cusparse.Trans}
}

// mulRef returns alpha·op(A)·x + beta·y, and the size of the terms summed
// into each element.
func mulRef(a ref, x []complex128, alpha complex128, beta complex128, y []complex128) ([]complex128, []float64) {
	out, scale := make([]complex128, a.rows), make([]float64, a.rows)
	for _, e := range a.e {
		out[e.r] += e.v * x[e.c]
		scale[e.r] += cmplx.Abs(e.v * x[e.c])
	}
	for i := range out {
		out[i] = alpha*out[i] + beta*y[i]
		scale[i] = cmplx.Abs(alpha)*scale[i] + cmplx.Abs(beta*y[i])
	}
	return out, scale
}

func toC[T cusparse.Element](xs []T) []complex128 {
	out := make([]complex128, len(xs))
	for i, x := range xs {
		out[i] = back(x)
	}
	return out
}

func checkSpMV[I cusparse.Index, T cusparse.Element](t *testing.T, ctx *cuda.Context, s *cuda.Stream, h *cusparse.Handle, a *cusparse.Matrix[I, T], m ref, seed uint64) {
	for _, op := range ops[T]() {
		om := m.op(op)
		x, y0 := values[T](om.cols, seed+1), values[T](om.rows, seed+2)
		dx, dy := upload(t, ctx, x), upload(t, ctx, y0)
		alpha, beta := of[T](complex(1.5, 0.5)), of[T](complex(-0.5, 0.25))
		if err := cusparse.SpMV(h, op, alpha, a, dx, beta, dy); err != nil {
			t.Fatalf("SpMV(%v): %v", op, err)
		}
		want, scale := mulRef(om, toC(x), back(alpha), back(beta), toC(y0))
		near(t, "SpMV("+op.String()+") y", download(t, s, dy), want, scale, eps[T]())
		// beta 0: y is not read (NaN there stays out of the result).
		if err := dy.Memset8(0xff); err != nil {
			t.Fatal(err)
		}
		if err := cusparse.SpMV(h, op, alpha, a, dx, 0, dy); err != nil {
			t.Fatalf("SpMV(%v, beta 0): %v", op, err)
		}
		want, scale = mulRef(om, toC(x), back(alpha), 0, make([]complex128, om.rows))
		near(t, "SpMV("+op.String()+", beta 0) y", download(t, s, dy), want, scale, eps[T]())
	}
}

func checkSpMM[I cusparse.Index, T cusparse.Element](t *testing.T, ctx *cuda.Context, s *cuda.Stream, h *cusparse.Handle, a *cusparse.Matrix[I, T], m ref, seed uint64) {
	const n = 3
	for _, op := range ops[T]() {
		om := m.op(op)
		for _, layouts := range [][2]cusparse.Layout{{cusparse.RowMajor, cusparse.RowMajor}, {cusparse.ColMajor, cusparse.ColMajor}, {cusparse.RowMajor, cusparse.ColMajor}} {
			b, c0 := values[T](om.cols*n, seed+3), values[T](om.rows*n, seed+4)
			db, dc := upload(t, ctx, b), upload(t, ctx, c0)
			B := cusparse.Dense[T]{Data: db, Rows: om.cols, Cols: n, Layout: layouts[0]}
			C := cusparse.Dense[T]{Data: dc, Rows: om.rows, Cols: n, Layout: layouts[1]}
			alpha, beta := of[T](complex(0.75, -1)), of[T](complex(2, 0))
			if err := cusparse.SpMM(h, op, alpha, a, B, beta, C); err != nil {
				t.Fatalf("SpMM(%v, b %v, c %v): %v", op, layouts[0], layouts[1], err)
			}
			at := func(d cusparse.Dense[T], xs []T, i, j int) complex128 {
				if d.Layout == cusparse.ColMajor {
					return back(xs[j*d.Rows+i])
				}
				return back(xs[i*d.Cols+j])
			}
			got := download(t, s, dc)
			var gotCol []T
			var want []complex128
			var scale []float64
			for j := range n {
				x, y := make([]complex128, om.cols), make([]complex128, om.rows)
				for i := range x {
					x[i] = at(B, b, i, j)
				}
				for i := range y {
					y[i] = at(C, c0, i, j)
					if C.Layout == cusparse.ColMajor {
						gotCol = append(gotCol, got[j*C.Rows+i])
					} else {
						gotCol = append(gotCol, got[i*C.Cols+j])
					}
				}
				w, sc := mulRef(om, x, back(alpha), back(beta), y)
				want, scale = append(want, w...), append(scale, sc...)
			}
			near(t, fmt.Sprintf("SpMM(%v, b %v, c %v) c", op, layouts[0], layouts[1]), gotCol, want, scale, eps[T]())
			// beta 0: C is not read (NaN there stays out of the result).
			if err := dc.Memset8(0xff); err != nil {
				t.Fatal(err)
			}
			if err := cusparse.SpMM(h, op, alpha, a, B, 0, C); err != nil {
				t.Fatalf("SpMM(%v, b %v, c %v, beta 0): %v", op, layouts[0], layouts[1], err)
			}
			got = download(t, s, dc)
			gotCol, want, scale = gotCol[:0], want[:0], scale[:0]
			for j := range n {
				x := make([]complex128, om.cols)
				for i := range x {
					x[i] = at(B, b, i, j)
				}
				for i := range om.rows {
					gotCol = append(gotCol, got[at2(C, i, j)])
				}
				w, sc := mulRef(om, x, back(alpha), 0, make([]complex128, om.rows))
				want, scale = append(want, w...), append(scale, sc...)
			}
			near(t, fmt.Sprintf("SpMM(%v, b %v, c %v, beta 0) c", op, layouts[0], layouts[1]), gotCol, want, scale, eps[T]())
		}
	}
}

// at2 is the index of element (i, j) of the packed d in its buffer.
func at2[T cusparse.Element](d cusparse.Dense[T], i, j int) int {
	if d.Layout == cusparse.ColMajor {
		return j*d.Rows + i
	}
	return i*d.Cols + j
}

func checkToDense[I cusparse.Index, T cusparse.Element](t *testing.T, ctx *cuda.Context, h *cusparse.Handle, a *cusparse.Matrix[I, T], m ref) {
	for _, layout := range []cusparse.Layout{cusparse.RowMajor, cusparse.ColMajor} {
		d := cusparse.Dense[T]{Data: upload(t, ctx, values[T](m.rows*m.cols, 5)), Rows: m.rows, Cols: m.cols, Layout: layout}
		if err := cusparse.ToDense(h, a, d); err != nil {
			t.Fatalf("ToDense(%v): %v", layout, err)
		}
		want := make([]complex128, m.rows*m.cols)
		for _, e := range m.e {
			if layout == cusparse.ColMajor {
				want[e.c*m.rows+e.r] = back(of[T](e.v))
			} else {
				want[e.r*m.cols+e.c] = back(of[T](e.v))
			}
		}
		near(t, "ToDense("+layout.String()+")", download(t, h.Stream(), d.Data), want, nil, 0)
		// And back: FromDense finds the same non-zeros, as CSR.
		back := free(t, must(cusparse.FromDense[I](h, d))(t))
		checkArrays(t, "FromDense("+layout.String()+")", back, m)
	}
}

// checkSpGEMM multiplies m by a matrix of m's columns as rows, made from
// another reference of the same kind, and checks the product densely by
// rows.
func checkSpGEMM[I cusparse.Index, T cusparse.Element](t *testing.T, s *cuda.Stream, h *cusparse.Handle, a *cusparse.Matrix[I, T], m ref, seed uint64) {
	bm := gen("random", m.cols, max(m.rows/2, 1), isComplex[T](), seed+9)
	off, ind, val := csrOf[I, T](bm)
	b := free(t, must(cusparse.NewCSR(s, bm.rows, bm.cols, off, ind, val))(t))
	if reflect.TypeFor[I]().Kind() == reflect.Int64 {
		// cuSPARSE's SpGEMM takes 32-bit indices only.
		if _, err := cusparse.SpGEMM(h, a, b); !errors.Is(err, cuda.ErrNotSupported) {
			t.Fatalf("SpGEMM of int64 indices: %v, want cuda.ErrNotSupported", err)
		}
		return
	}
	c := free(t, must(cusparse.SpGEMM(h, a, b))(t))
	if c.Format() != cusparse.CSR || c.Rows() != m.rows || c.Cols() != bm.cols {
		t.Fatalf("SpGEMM: %v %dx%d, want CSR %dx%d", c.Format(), c.Rows(), c.Cols(), m.rows, bm.cols)
	}
	// The reference product, row by row.
	byRow := make([][]entry, bm.rows)
	for _, e := range bm.e {
		byRow[e.r] = append(byRow[e.r], e)
	}
	want := map[[2]int]complex128{}
	scale := map[[2]int]float64{}
	for _, e := range m.e {
		for _, f := range byRow[e.c] {
			k := [2]int{e.r, f.c}
			want[k] += e.v * f.v
			scale[k] += cmplx.Abs(e.v * f.v)
		}
	}
	co, ci, cv := must3(c.ToHost())(t)
	seen := 0
	for i := range c.Rows() {
		for k := co[i]; k < co[i+1]; k++ {
			if k > co[i] && ci[k] <= ci[k-1] {
				t.Fatalf("SpGEMM: row %d's columns do not increase at %d", i, k)
			}
			key := [2]int{i, int(ci[k])}
			w, ok := want[key]
			if !ok {
				if back(cv[k]) != 0 {
					t.Fatalf("SpGEMM: (%d, %d) = %v, where the product has nothing", i, ci[k], cv[k])
				}
				continue
			}
			seen++
			if d := cmplx.Abs(back(cv[k]) - w); !(d <= eps[T]()*(1+scale[key])) {
				t.Fatalf("SpGEMM: (%d, %d) = %v, want %v", i, ci[k], cv[k], w)
			}
		}
	}
	if seen != len(want) {
		t.Fatalf("SpGEMM: %d of the product's %d positions stored", seen, len(want))
	}
}

// checkSpSV solves with each triangle, diagonal and op, by SpSV and SpSM,
// and checks the residual op(T)·y - alpha·x on the CPU.
func checkSpSV[I cusparse.Index, T cusparse.Element](t *testing.T, ctx *cuda.Context, s *cuda.Stream, h *cusparse.Handle, f cusparse.Format, m ref, seed uint64) {
	// A diagonal that dominates, so that the solve is well conditioned;
	// the whole matrix is stored, and the solve must read one triangle.
	d := ref{rows: m.rows, cols: m.cols}
	diag := map[int]bool{}
	for _, e := range m.e {
		if e.r == e.c {
			e.v = 8 + e.v
			diag[e.r] = true
		}
		d.e = append(d.e, e)
	}
	for i := range m.rows {
		if !diag[i] && i%4 != 1 { // rows without a stored diagonal: Unit only
			d.e = append(d.e, entry{i, i, 8})
		}
	}
	d.sort()
	off, ind, val := csrOf[I, T](d)
	var a *cusparse.Matrix[I, T]
	if f == cusparse.CSR {
		a = free(t, must(cusparse.NewCSR(s, d.rows, d.cols, off, ind, val))(t))
	} else {
		var ri, ci []I
		for _, e := range d.e {
			ri, ci = append(ri, I(e.r)), append(ci, I(e.c))
		}
		a = free(t, must(cusparse.NewCOO(s, d.rows, d.cols, ri, ci, val))(t))
	}
	// NonUnit only where every row stores its diagonal.
	stored := 0
	for _, e := range d.e {
		if e.r == e.c {
			stored++
		}
	}
	hasDiag := stored == d.rows
	alpha := of[T](complex(2, -1))
	for _, op := range ops[T]() {
		for _, fill := range []cusparse.Fill{cusparse.Lower, cusparse.Upper} {
			for _, dg := range []cusparse.Diag{cusparse.NonUnit, cusparse.Unit} {
				if dg == cusparse.NonUnit && !hasDiag {
					continue
				}
				name := fmt.Sprintf("%v-%v-%v", op, fill, dg)
				tri := triangle(d, fill, dg).op(op)
				x := values[T](d.rows, seed+6)
				dx, dy := upload(t, ctx, x), upload(t, ctx, make([]T, d.rows))
				if err := cusparse.SpSV(h, op, fill, dg, alpha, a, dx, dy); err != nil {
					t.Fatalf("SpSV(%s): %v", name, err)
				}
				y := download(t, s, dy)
				res, scale := mulRef(tri, toC(y), 1, 0, make([]complex128, d.rows))
				want := toC(x)
				for i := range want {
					want[i] *= back(alpha)
					scale[i] += cmplx.Abs(want[i])
				}
				near(t, "SpSV("+name+") op(T)·y", toTyped[T](res), want, scale, 10*eps[T]())
				// SpSM with two columns, the first x, the second 2x, B and
				// C row-major, then column-major.
				const k = 2
				twice := make([]complex128, d.rows)
				for i := range twice {
					twice[i] = 2 * back(y[i])
				}
				for _, layout := range []cusparse.Layout{cusparse.RowMajor, cusparse.ColMajor} {
					b := make([]T, d.rows*k)
					at := func(i, j int) int {
						if layout == cusparse.ColMajor {
							return j*d.rows + i
						}
						return i*k + j
					}
					for i := range d.rows {
						b[at(i, 0)], b[at(i, 1)] = x[i], x[i]+x[i]
					}
					B := cusparse.Dense[T]{Data: upload(t, ctx, b), Rows: d.rows, Cols: k, Layout: layout}
					C := cusparse.Dense[T]{Data: upload(t, ctx, make([]T, d.rows*k)), Rows: d.rows, Cols: k, Layout: layout}
					if err := cusparse.SpSM(h, op, fill, dg, alpha, a, B, C); err != nil {
						t.Fatalf("SpSM(%s, %v): %v", name, layout, err)
					}
					c := download(t, s, C.Data)
					first, second := make([]T, d.rows), make([]T, d.rows)
					for i := range d.rows {
						first[i], second[i] = c[at(i, 0)], c[at(i, 1)]
					}
					near(t, fmt.Sprintf("SpSM(%s, %v) first column", name, layout), first, toC(y), nil, 10*eps[T]())
					near(t, fmt.Sprintf("SpSM(%s, %v) second column", name, layout), second, twice, nil, 20*eps[T]())
				}
			}
		}
	}
}

// triangle returns m's triangle fill with its diagonal (ones for Unit).
func triangle(m ref, fill cusparse.Fill, dg cusparse.Diag) ref {
	out := ref{rows: m.rows, cols: m.cols}
	for _, e := range m.e {
		switch {
		case e.r == e.c:
			if dg == cusparse.NonUnit {
				out.e = append(out.e, e)
			}
		case fill == cusparse.Lower && e.c < e.r, fill == cusparse.Upper && e.c > e.r:
			out.e = append(out.e, e)
		}
	}
	if dg == cusparse.Unit {
		for i := range m.rows {
			out.e = append(out.e, entry{i, i, 1})
		}
		out.sort()
	}
	return out
}

func toTyped[T cusparse.Element](xs []complex128) []T {
	out := make([]T, len(xs))
	for i, x := range xs {
		out[i] = of[T](x)
	}
	return out
}

// TestSpSVZeroDiagonal: a triangular solve reports no zero pivot (SpSV's
// doc): with NonUnit, a zero stored on the diagonal is no error and y is
// not finite from there; with Unit the stored diagonal, zero or not, is
// not read.
func TestSpSVZeroDiagonal(t *testing.T) {
	ctx, s, h := handle(t)
	// [[0, 0], [1, 2]], lower: row 0 divides by zero.
	a := free(t, must(cusparse.NewCSR(s, 2, 2, []int32{0, 1, 3}, []int32{0, 0, 1}, []float64{0, 1, 2}))(t))
	x := upload(t, ctx, []float64{1, 1})
	for _, tt := range []struct {
		diag   cusparse.Diag
		finite bool
		want   []float64 // where finite
	}{
		{cusparse.NonUnit, false, nil},
		{cusparse.Unit, true, []float64{1, 0}}, // y0 = 1, y1 = 1 - 1·y0
	} {
		t.Run(tt.diag.String(), func(t *testing.T) {
			y := upload(t, ctx, []float64{7, 7})
			if err := cusparse.SpSV(h, cusparse.NoTrans, cusparse.Lower, tt.diag, 1, a, x, y); err != nil {
				t.Fatalf("SpSV: %v, want nil", err)
			}
			got := download(t, s, y)
			if !tt.finite {
				if !math.IsInf(got[0], 0) && !math.IsNaN(got[0]) {
					t.Errorf("y[0] = %v, want ±Inf or NaN (1/0)", got[0])
				}
				return
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("y = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestStrided: dense operands with a stride wider than packed, each layout
// and the two mixed (Dense's doc: element (i, j) at i·Stride+j row-major,
// j·Stride+i column-major): SpMM and SpSM read and write those elements
// only, ToDense writes every one of them and nothing between, FromDense
// reads them.
func TestStrided(t *testing.T) {
	ctx, s, h := handle(t)
	// A = [[2, 0, 0], [1, 3, 0], [0, 4, 5]], lower triangular.
	a := free(t, must(cusparse.NewCOO(s, 3, 3, []int32{2, 0, 1, 1, 2}, []int32{1, 0, 0, 1, 2}, []float64{4, 2, 1, 3, 5}))(t))
	aDense := [3][3]float64{{2, 0, 0}, {1, 3, 0}, {0, 4, 5}}
	const pad = -7.0
	// dense makes a 3x2 Dense of stride 5 holding v(i, j), pad between.
	dense := func(layout cusparse.Layout, v func(i, j int) float64) cusparse.Dense[float64] {
		d := cusparse.Dense[float64]{Rows: 3, Cols: 2, Stride: 5, Layout: layout}
		major := 3
		if layout == cusparse.ColMajor {
			major = 2
		}
		xs := make([]float64, major*5)
		for i := range xs {
			xs[i] = pad
		}
		for i := range 3 {
			for j := range 2 {
				xs[idx(d, i, j)] = v(i, j)
			}
		}
		d.Data = upload(t, ctx, xs)
		return d
	}
	// check reads d back: want(i, j) in place, pad everywhere else.
	check := func(what string, d cusparse.Dense[float64], want func(i, j int) float64) {
		t.Helper()
		got := download(t, s, d.Data)
		in := map[int]bool{}
		for i := range 3 {
			for j := range 2 {
				k := idx(d, i, j)
				in[k] = true
				if math.Abs(got[k]-want(i, j)) > 1e-12 {
					t.Errorf("%s (%d, %d) = %v, want %v", what, i, j, got[k], want(i, j))
				}
			}
		}
		for k, v := range got {
			if !in[k] && v != pad {
				t.Errorf("%s: element %d between rows or columns = %v, want %v untouched", what, k, v, pad)
			}
		}
	}
	bv := func(i, j int) float64 { return float64(1 + i + 3*j) }
	mul := func(i, j int) float64 { // (A·B)(i, j)
		var sum float64
		for k := range 3 {
			sum += aDense[i][k] * bv(k, j)
		}
		return sum
	}
	layouts := []cusparse.Layout{cusparse.RowMajor, cusparse.ColMajor}
	for _, lb := range layouts {
		for _, lc := range layouts {
			name := fmt.Sprintf("b %v, c %v", lb, lc)
			t.Run("SpMM "+name, func(t *testing.T) {
				B, C := dense(lb, bv), dense(lc, func(int, int) float64 { return math.NaN() })
				if err := cusparse.SpMM(h, cusparse.NoTrans, 1, a, B, 0, C); err != nil {
					t.Fatal(err)
				}
				check("C", C, mul)
				check("B", B, bv)
			})
			t.Run("SpSM "+name, func(t *testing.T) {
				// A·C = B with B = A·X: C is X.
				B, C := dense(lb, mul), dense(lc, func(int, int) float64 { return 0 })
				if err := cusparse.SpSM(h, cusparse.NoTrans, cusparse.Lower, cusparse.NonUnit, 1, a, B, C); err != nil {
					t.Fatal(err)
				}
				check("C", C, bv)
			})
		}
	}
	t.Run("SpMM b and c interleaved in one buffer", func(t *testing.T) {
		// Rows of 4: B's 2 elements, then C's 2.
		buf := upload(t, ctx, []float64{1, 4, 0, 0, 2, 5, 0, 0, 3, 6, 0, 0})
		cv, err := buf.Slice(2, 10)
		if err != nil {
			t.Fatal(err)
		}
		B := cusparse.Dense[float64]{Data: buf, Rows: 3, Cols: 2, Stride: 4}
		C := cusparse.Dense[float64]{Data: cv, Rows: 3, Cols: 2, Stride: 4}
		if err := cusparse.SpMM(h, cusparse.NoTrans, 1, a, B, 0, C); err != nil {
			t.Fatalf("SpMM of b and c interleaved: %v, want nil (no element shared)", err)
		}
		want := []float64{1, 4, 2, 8, 2, 5, 7, 19, 3, 6, 23, 50} // A·[[1,4],[2,5],[3,6]] in the odd pairs
		if got := download(t, s, buf); !slices.Equal(got, want) {
			t.Errorf("buffer = %v, want %v", got, want)
		}
	})
	t.Run("ToDense and FromDense", func(t *testing.T) {
		for _, l := range layouts {
			// The first two columns of A, 3x2.
			two := free(t, must(cusparse.NewCSR(s, 3, 2, []int32{0, 1, 3, 4}, []int32{0, 0, 1, 1}, []float64{2, 1, 3, 4}))(t))
			d := dense(l, func(int, int) float64 { return math.NaN() })
			if err := cusparse.ToDense(h, two, d); err != nil {
				t.Fatal(err)
			}
			check("ToDense "+l.String(), d, func(i, j int) float64 { return aDense[i][j] })
			back := free(t, must(cusparse.FromDense[int64](h, d))(t))
			off, ind, val := must3(back.ToHost())(t)
			if !slices.Equal(off, []int64{0, 1, 3, 4}) || !slices.Equal(ind, []int64{0, 0, 1, 1}) || !slices.Equal(val, []float64{2, 1, 3, 4}) {
				t.Errorf("FromDense(%v) = %v %v %v", l, off, ind, val)
			}
		}
	})
}

// idx is the index of element (i, j) of d in its buffer.
func idx[T cusparse.Element](d cusparse.Dense[T], i, j int) int {
	if d.Layout == cusparse.ColMajor {
		return j*d.Stride + i
	}
	return i*d.Stride + j
}

// TestSpGEMMEmptyProduct: operands with non-zeros whose product has none
// (A's only column meets B's empty row), and a product whose non-zeros
// cancel to stored zeros: C is A·B as cuSPARSE leaves it, of the right
// shape, its offsets valid.
func TestSpGEMMEmptyProduct(t *testing.T) {
	_, s, h := handle(t)
	for _, tt := range []struct {
		name       string
		a, b       [3][]int32 // offsets, indices, and values as int32
		rows, cols int
		inner      int
		wantNNZ    []int // the stored count allowed: none, or the cancelled position
	}{
		{"no non-zeros", [3][]int32{{0, 1, 1}, {0}, {1}}, [3][]int32{{0, 0, 1}, {1}, {1}}, 2, 2, 2, []int{0}},
		{"cancelled", [3][]int32{{0, 2}, {0, 1}, {1, 1}}, [3][]int32{{0, 1, 2}, {0, 0}, {1, -1}}, 1, 1, 2, []int{0, 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			vals := func(v []int32) []float64 {
				out := make([]float64, len(v))
				for i, x := range v {
					out[i] = float64(x)
				}
				return out
			}
			a := free(t, must(cusparse.NewCSR(s, tt.rows, tt.inner, tt.a[0], tt.a[1], vals(tt.a[2])))(t))
			b := free(t, must(cusparse.NewCSR(s, tt.inner, tt.cols, tt.b[0], tt.b[1], vals(tt.b[2])))(t))
			c := free(t, must(cusparse.SpGEMM(h, a, b))(t))
			if c.Rows() != tt.rows || c.Cols() != tt.cols || !slices.Contains(tt.wantNNZ, c.NNZ()) {
				t.Fatalf("SpGEMM = %v, want %dx%d of %v non-zeros", c, tt.rows, tt.cols, tt.wantNNZ)
			}
			off, _, val := must3(c.ToHost())(t)
			if off[0] != 0 || int(off[tt.rows]) != c.NNZ() {
				t.Errorf("offsets %v for %d non-zeros", off, c.NNZ())
			}
			for _, v := range val {
				if v != 0 {
					t.Errorf("stored value %v, want only zeros", v)
				}
			}
		})
	}
}

// TestExplicitZeros: zeros given to NewCOO, alone or as repeated triplets
// that cancel, are stored elements (NewCOO's doc), kept by Convert,
// harmless to SpMV and ToDense; FromDense of the dense matrix finds the
// non-zeros alone.
func TestExplicitZeros(t *testing.T) {
	ctx, s, h := handle(t)
	// (0, 1) = 0 given; (1, 2) = 1 + -1; (1, 0) = 5.
	a := free(t, must(cusparse.NewCOO(s, 2, 3, []int32{1, 0, 1, 1}, []int32{2, 1, 2, 0}, []float64{1, 0, -1, 5}))(t))
	if a.NNZ() != 3 {
		t.Fatalf("NNZ = %d, want 3 (two stored zeros and the 5)", a.NNZ())
	}
	for _, f := range []cusparse.Format{cusparse.CSR, cusparse.CSC, cusparse.COO} {
		m := free(t, must(cusparse.Convert(h, a, f))(t))
		_, _, val := must3(m.ToHost())(t)
		if m.NNZ() != 3 || slices.Index(val, 5) < 0 || len(slices.DeleteFunc(slices.Clone(val), func(v float64) bool { return v == 0 })) != 1 {
			t.Errorf("Convert(%v): %d non-zeros %v, want the two zeros and the 5", f, m.NNZ(), val)
		}
	}
	y := upload(t, ctx, []float64{7, 7})
	if err := cusparse.SpMV(h, cusparse.NoTrans, 1, a, upload(t, ctx, []float64{1, 2, 3}), 0, y); err != nil {
		t.Fatal(err)
	}
	if got := download(t, s, y); !slices.Equal(got, []float64{0, 5}) {
		t.Errorf("SpMV = %v, want [0 5]", got)
	}
	d := cusparse.NewDense(upload(t, ctx, make([]float64, 6)), 2, 3)
	if err := cusparse.ToDense(h, a, d); err != nil {
		t.Fatal(err)
	}
	if got := download(t, s, d.Data); !slices.Equal(got, []float64{0, 0, 0, 5, 0, 0}) {
		t.Errorf("ToDense = %v", got)
	}
	if back := free(t, must(cusparse.FromDense[int32](h, d))(t)); back.NNZ() != 1 {
		t.Errorf("FromDense: %d non-zeros, want 1", back.NNZ())
	}
}

// TestSolveInPlace: SpSV with x and y one buffer, SpSM with B and C one:
// the package lets them be (it refuses only an output in A's own arrays),
// as cuSPARSE's solves take them; on a GPU this checks that cuSPARSE
// solves in place.
func TestSolveInPlace(t *testing.T) {
	ctx, s, h := handle(t)
	// A = [[2, 0], [1, 4]], lower: A·[1, 2] = [2, 9].
	a := free(t, must(cusparse.NewCSR(s, 2, 2, []int32{0, 1, 3}, []int32{0, 0, 1}, []float64{2, 1, 4}))(t))
	xy := upload(t, ctx, []float64{2, 9})
	if err := cusparse.SpSV(h, cusparse.NoTrans, cusparse.Lower, cusparse.NonUnit, 1, a, xy, xy); err != nil {
		t.Fatalf("SpSV in place: %v", err)
	}
	if got := download(t, s, xy); !slices.Equal(got, []float64{1, 2}) {
		t.Errorf("SpSV in place = %v, want [1 2]", got)
	}
	bc := cusparse.Dense[float64]{Data: upload(t, ctx, []float64{2, 4, 9, 18}), Rows: 2, Cols: 2}
	if err := cusparse.SpSM(h, cusparse.NoTrans, cusparse.Lower, cusparse.NonUnit, 1, a, bc, bc); err != nil {
		t.Fatalf("SpSM in place: %v", err)
	}
	if got := download(t, s, bc.Data); !slices.Equal(got, []float64{1, 2, 2, 4}) {
		t.Errorf("SpSM in place = %v, want [1 2 2 4]", got)
	}
}
