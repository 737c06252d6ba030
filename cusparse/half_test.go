package cusparse_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cusparse"
)

// half is the half types cuSPARSE multiplies in float32.
type half interface{ cuda.Float16 | cuda.BFloat16 }

// toHalf rounds x to H.
func toHalf[H half](x float64) H {
	var h H
	switch p := any(&h).(type) {
	case *cuda.Float16:
		*p = cuda.NewFloat16(float32(x))
	case *cuda.BFloat16:
		*p = cuda.NewBFloat16(float32(x))
	}
	return h
}

// fromHalf returns h's value.
func fromHalf[H half](h H) float64 {
	switch x := any(h).(type) {
	case cuda.Float16:
		return float64(x.Float32())
	case cuda.BFloat16:
		return float64(x.Float32())
	}
	return math.NaN()
}

// halfEps is H's rounding of a result (half an ulp relative, and a
// little for float32's sums).
func halfEps[H half]() float64 {
	var h H
	if _, ok := any(h).(cuda.Float16); ok {
		return 1.5e-3
	}
	return 1e-2
}

// halfRef is m with its values rounded to H, as the matrix holds them.
func halfRef[H half](m ref) ref {
	out := ref{rows: m.rows, cols: m.cols}
	for _, e := range m.e {
		out.e = append(out.e, entry{e.r, e.c, complex(fromHalf(toHalf[H](real(e.v))), 0)})
	}
	return out
}

func halfValues[H half](n int, seed uint64) ([]H, []complex128) {
	rng := rand.New(rand.NewPCG(seed, 13))
	hs, cs := make([]H, n), make([]complex128, n)
	for i := range hs {
		hs[i] = toHalf[H](2*rng.Float64() - 1)
		cs[i] = complex(fromHalf(hs[i]), 0)
	}
	return hs, cs
}

// nearHalf checks got against want as near does, for H.
func nearHalf[H half](t *testing.T, what string, got []H, want []complex128, scale []float64) {
	t.Helper()
	c := make([]float64, len(got))
	for i, g := range got {
		c[i] = fromHalf(g)
	}
	near(t, what, c, want, scale, halfEps[H]())
}

// TestHalf checks SpMV and SpMM of float16 and bfloat16 matrices made by
// NewCSR and NewCOO (duplicates summed) against the CPU reference, with
// both index types, at odd sizes with empty rows.
func TestHalf(t *testing.T) {
	ctx, s, h := handle(t)
	for i, sh := range []struct {
		kind       string
		rows, cols int
	}{{"random", 1, 1}, {"banded", 3, 3}, {"powerlaw", 3, 3}, {"random", 97, 97}, {"banded", 97, 41}, {"powerlaw", 97, 97}, {"empty", 5, 5}} {
		name := fmt.Sprintf("%s-%dx%d", sh.kind, sh.rows, sh.cols)
		seed := uint64(100 + i)
		t.Run(name+"/int32-float16", func(t *testing.T) { checkHalf[int32, cuda.Float16](t, ctx, s, h, sh.kind, sh.rows, sh.cols, seed) })
		t.Run(name+"/int64-bfloat16", func(t *testing.T) { checkHalf[int64, cuda.BFloat16](t, ctx, s, h, sh.kind, sh.rows, sh.cols, seed) })
		if raceEnabled {
			continue
		}
		t.Run(name+"/int64-float16", func(t *testing.T) { checkHalf[int64, cuda.Float16](t, ctx, s, h, sh.kind, sh.rows, sh.cols, seed) })
		t.Run(name+"/int32-bfloat16", func(t *testing.T) { checkHalf[int32, cuda.BFloat16](t, ctx, s, h, sh.kind, sh.rows, sh.cols, seed) })
	}
}

func checkHalf[I cusparse.Index, H half](t *testing.T, ctx *cuda.Context, s *cuda.Stream, h *cusparse.Handle, kind string, rows, cols int, seed uint64) {
	m := halfRef[H](gen(kind, rows, cols, false, seed))
	// CSR from its arrays; COO from triplets with every third split in
	// two halves (exact in either type), summed by NewCOO.
	off := make([]I, m.rows+1)
	var ind, ri, ci []I
	var val, cv []H
	for k, e := range m.e {
		off[e.r+1]++
		v := toHalf[H](real(e.v))
		ind, val = append(ind, I(e.c)), append(val, v)
		if k%3 == 0 {
			hv := toHalf[H](real(e.v) / 2)
			ri, ci, cv = append(ri, I(e.r), I(e.r)), append(ci, I(e.c), I(e.c)), append(cv, hv, hv)
			continue
		}
		ri, ci, cv = append(ri, I(e.r)), append(ci, I(e.c)), append(cv, v)
	}
	for i := range m.rows {
		off[i+1] += off[i]
	}
	rng := rand.New(rand.NewPCG(seed, 5))
	rng.Shuffle(len(cv), func(a, b int) { ri[a], ri[b] = ri[b], ri[a]; ci[a], ci[b] = ci[b], ci[a]; cv[a], cv[b] = cv[b], cv[a] })
	csr := free(t, must(cusparse.NewCSR(s, m.rows, m.cols, off, ind, val))(t))
	coo := free(t, must(cusparse.NewCOO(s, m.rows, m.cols, ri, ci, cv))(t))
	if _, _, got, err := coo.ToHost(); err != nil || len(got) != len(m.e) {
		t.Fatalf("NewCOO's values: %d (%v), want %d", len(got), err, len(m.e))
	} else {
		for k, e := range m.e {
			if fromHalf(got[k]) != real(e.v) {
				t.Fatalf("NewCOO's value %d is %v, want %v (the halves summed)", k, got[k], real(e.v))
			}
		}
	}
	const alpha, beta = 1.5, -0.5
	for _, a := range []*cusparse.Matrix[I, H]{csr, coo} {
		for _, op := range []cusparse.Op{cusparse.NoTrans, cusparse.Trans} {
			om := m.op(op)
			x, xc := halfValues[H](om.cols, seed+1)
			y0, yc := halfValues[H](om.rows, seed+2)
			dx, dy := upload(t, ctx, x), upload(t, ctx, y0)
			if err := cusparse.SpMVHalf(h, op, alpha, a, dx, beta, dy); err != nil {
				t.Fatalf("SpMV(%v) of %v: %v", op, a, err)
			}
			want, scale := mulRef(om, xc, 1.5, -0.5, yc)
			nearHalf(t, fmt.Sprintf("SpMV(%v) of %v: y", op, a.Format()), download(t, s, dy), want, scale)

			const n = 3
			for _, layout := range []cusparse.Layout{cusparse.RowMajor, cusparse.ColMajor} {
				b, bc := halfValues[H](om.cols*n, seed+3)
				c0, cc := halfValues[H](om.rows*n, seed+4)
				db, dc := upload(t, ctx, b), upload(t, ctx, c0)
				B := cusparse.Dense[H]{Data: db, Rows: om.cols, Cols: n, Layout: layout}
				C := cusparse.Dense[H]{Data: dc, Rows: om.rows, Cols: n, Layout: layout}
				if err := cusparse.SpMMHalf(h, op, alpha, a, B, beta, C); err != nil {
					t.Fatalf("SpMM(%v, %v) of %v: %v", op, layout, a, err)
				}
				at := func(i, j, r, c int) int {
					if layout == cusparse.ColMajor {
						return j*r + i
					}
					return i*c + j
				}
				got := download(t, s, dc)
				var gotCol []H
				var want []complex128
				var scale []float64
				for j := range n {
					xv, yv := make([]complex128, om.cols), make([]complex128, om.rows)
					for i := range xv {
						xv[i] = bc[at(i, j, om.cols, n)]
					}
					for i := range yv {
						yv[i] = cc[at(i, j, om.rows, n)]
						gotCol = append(gotCol, got[at(i, j, om.rows, n)])
					}
					w, sc := mulRef(om, xv, 1.5, -0.5, yv)
					want, scale = append(want, w...), append(scale, sc...)
				}
				nearHalf(t, fmt.Sprintf("SpMM(%v, %v) of %v: c", op, layout, a.Format()), gotCol, want, scale)
			}
		}
	}
}

// TestHalfArguments: SpMVHalf and SpMMHalf check their operands as SpMV
// and SpMM do, and compute with alpha and beta as float32: 1 is one (a
// Float16's constant 1 would be its smallest subnormal).
func TestHalfArguments(t *testing.T) {
	ctx, s, h := handle(t)
	a := free(t, must(cusparse.NewCSR(s, 2, 2, []int32{0, 1, 2}, []int32{0, 1}, []cuda.Float16{cuda.NewFloat16(1), cuda.NewFloat16(2)}))(t))
	x := upload(t, ctx, []cuda.Float16{cuda.NewFloat16(3), cuda.NewFloat16(4)})
	y := upload(t, ctx, []cuda.Float16{0, 0})
	if err := cusparse.SpMVHalf(h, cusparse.NoTrans, 1, a, x, 0, y); err != nil {
		t.Fatal(err)
	}
	if got := download(t, s, y); got[0].Float32() != 3 || got[1].Float32() != 8 {
		t.Errorf("SpMVHalf with alpha 1 gave %v, want [3 8]", got)
	}
	short := upload(t, ctx, []cuda.Float16{1})
	c := cusparse.NewDense(upload(t, ctx, make([]cuda.Float16, 2)), 2, 1)
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"SpMVHalf short x", cusparse.SpMVHalf(h, cusparse.NoTrans, 1, a, short, 0, y)},
		{"SpMVHalf nil y", cusparse.SpMVHalf(h, cusparse.NoTrans, 1, a, x, 0, nil)},
		{"SpMVHalf bad op", cusparse.SpMVHalf(h, 7, 1, a, x, 0, y)},
		{"SpMMHalf b rows", cusparse.SpMMHalf(h, cusparse.NoTrans, 1, a, cusparse.NewDense(short, 1, 1), 0, c)},
		{"SpMMHalf nil c", cusparse.SpMMHalf(h, cusparse.NoTrans, 1, a, cusparse.NewDense(x, 2, 1), 0, cusparse.Dense[cuda.Float16]{})},
		{"SpMVHalf nil handle", cusparse.SpMVHalf(nil, cusparse.NoTrans, 1, a, x, 0, y)},
		{"SpMMHalf nil matrix", cusparse.SpMMHalf[int32](h, cusparse.NoTrans, 1, nil, cusparse.NewDense(x, 2, 1), 0, c)},
	} {
		if !errors.Is(tc.err, cuda.ErrInvalidValue) {
			t.Errorf("%s: %v, want cuda.ErrInvalidValue", tc.name, tc.err)
		}
	}
}
