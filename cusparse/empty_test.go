package cusparse_test

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cusparse"
	"github.com/gocuda/cuda/internal/cudatest"
)

// TestEmptyShapes: matrices with no rows, no columns or both, of either
// index type, go through every operation: made from slices, converted,
// written out dense and read back, multiplied (a product over no columns
// is zero: alpha·A·x + beta·y is beta·y, and y is not read where beta is
// 0), and, square, solved. cuSPARSE is not asked where the answer needs
// no arithmetic (on the fake, no cusparse call but the handle's is
// counted): what it makes of the NULL arrays of empty buffers is its own.
// Only beta·y for a beta other than 0 and 1 is its work.
func TestEmptyShapes(t *testing.T) {
	ctx, s, h := handle(t)
	for _, sh := range [][2]int{{0, 0}, {0, 3}, {3, 0}} {
		t.Run(fmt.Sprintf("%dx%d/int32", sh[0], sh[1]), func(t *testing.T) { checkEmpty[int32](t, ctx, s, h, sh[0], sh[1]) })
		t.Run(fmt.Sprintf("%dx%d/int64", sh[0], sh[1]), func(t *testing.T) { checkEmpty[int64](t, ctx, s, h, sh[0], sh[1]) })
	}
}

func checkEmpty[I cusparse.Index](t *testing.T, ctx *cuda.Context, s *cuda.Stream, h *cusparse.Handle, rows, cols int) {
	nan := math.NaN()
	filled := func(n int, v float64) *cuda.DeviceBuffer[float64] {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = v
		}
		return upload(t, ctx, xs)
	}
	zeros := func(what string, b *cuda.DeviceBuffer[float64], want float64) {
		t.Helper()
		for i, v := range download(t, s, b) {
			if v != want {
				t.Fatalf("%s[%d] = %v, want %v", what, i, v, want)
			}
		}
	}
	fake := cudatest.Fake(t)
	// quiet runs f, which must not call cuSPARSE (on the fake).
	quiet := func(what string, f func() error) {
		t.Helper()
		if fake != nil {
			fake.ResetCounts()
		}
		if err := f(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if fake == nil {
			return
		}
		for name, n := range fake.Counts() {
			if strings.HasPrefix(name, "cusparse") && n > 0 {
				t.Errorf("%s: %s called %d times: nothing there is cuSPARSE's", what, name, n)
			}
		}
	}
	made := map[string]*cusparse.Matrix[I, float64]{
		"NewCSR": free(t, must(cusparse.NewCSR(s, rows, cols, make([]I, rows+1), nil, []float64{}))(t)),
		"NewCSC": free(t, must(cusparse.NewCSC(s, rows, cols, make([]I, cols+1), nil, []float64{}))(t)),
		"NewCOO": free(t, must(cusparse.NewCOO(s, rows, cols, []I{}, []I{}, []float64{}))(t)),
	}
	for name, a := range made {
		for _, f := range []cusparse.Format{cusparse.CSR, cusparse.CSC, cusparse.COO} {
			var m *cusparse.Matrix[I, float64]
			quiet("Convert", func() (err error) { m, err = cusparse.Convert(h, a, f); return err })
			free(t, m)
			if m.Format() != f || m.Rows() != rows || m.Cols() != cols || m.NNZ() != 0 {
				t.Fatalf("Convert(%s, %v) = %v", name, f, m)
			}
			outer, _, _ := must3(m.ToHost())(t)
			for i, o := range outer {
				if o != 0 {
					t.Fatalf("Convert(%s, %v): outer[%d] = %d, want 0", name, f, i, o)
				}
			}
		}
		for _, layout := range []cusparse.Layout{cusparse.RowMajor, cusparse.ColMajor} {
			d := cusparse.Dense[float64]{Data: filled(rows*cols, nan), Rows: rows, Cols: cols, Layout: layout}
			quiet("ToDense", func() error { return cusparse.ToDense(h, a, d) })
			var back *cusparse.Matrix[I, float64]
			quiet("FromDense", func() (err error) { back, err = cusparse.FromDense[I](h, d); return err })
			free(t, back)
			if back.Rows() != rows || back.Cols() != cols || back.NNZ() != 0 {
				t.Fatalf("FromDense(%v) = %v", layout, back)
			}
		}
		for _, op := range []cusparse.Op{cusparse.NoTrans, cusparse.Trans} {
			r, c := rows, cols
			if op != cusparse.NoTrans {
				r, c = c, r
			}
			x, y := filled(c, 1), filled(r, nan)
			quiet("SpMV, beta 0", func() error { return cusparse.SpMV(h, op, 2, a, x, 0, y) })
			zeros("SpMV y", y, 0)
			y = filled(r, 3)
			quiet("SpMV, beta 1", func() error { return cusparse.SpMV(h, op, 2, a, x, 1, y) })
			zeros("SpMV y", y, 3)
			y = filled(r, 3)
			if err := cusparse.SpMV(h, op, 2, a, x, 0.5, y); err != nil {
				t.Fatalf("SpMV(%s, %v, beta 0.5): %v", name, op, err)
			}
			zeros("SpMV y", y, 1.5)
			B := cusparse.Dense[float64]{Data: filled(c*2, 1), Rows: c, Cols: 2, Layout: cusparse.ColMajor}
			C := cusparse.NewDense(filled(r*2, nan), r, 2)
			quiet("SpMM, beta 0", func() error { return cusparse.SpMM(h, op, 2, a, B, 0, C) })
			zeros("SpMM c", C.Data, 0)
		}
	}
	csr := made["NewCSR"]
	// A product over no inner dimension, and of no rows or columns.
	b := free(t, must(cusparse.NewCSR(s, cols, 2, make([]I, cols+1), nil, []float64{}))(t))
	if reflect.TypeFor[I]().Kind() == reflect.Int64 {
		if _, err := cusparse.SpGEMM(h, csr, b); err == nil {
			t.Fatal("SpGEMM of int64 indices: nil error")
		}
	} else {
		var c *cusparse.Matrix[I, float64]
		quiet("SpGEMM", func() (err error) { c, err = cusparse.SpGEMM(h, csr, b); return err })
		free(t, c)
		if c.Rows() != rows || c.Cols() != 2 || c.NNZ() != 0 {
			t.Fatalf("SpGEMM = %v, want %dx2 of no non-zeros", c, rows)
		}
	}
	if rows == cols {
		for _, a := range []*cusparse.Matrix[I, float64]{csr, made["NewCOO"]} {
			quiet("SpSV", func() error {
				return cusparse.SpSV(h, cusparse.NoTrans, cusparse.Lower, cusparse.Unit, 1, a, filled(0, 0), filled(0, 0))
			})
			B := cusparse.NewDense(filled(0, 0), 0, 2)
			quiet("SpSM", func() error { return cusparse.SpSM(h, cusparse.NoTrans, cusparse.Upper, cusparse.NonUnit, 1, a, B, B) })
		}
	}
}
