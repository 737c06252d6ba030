package cusparse_test

import (
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cusparse"
	"github.com/gocuda/cuda/internal/cudatest"
)

// The docs' promises at their edges, as an outside reader of them tests
// them: closed handles and streams, freed matrices, zero values, strided
// dense operands and triplets of every sort, against small references
// worked by hand.

// everyCall is each operation of the package on h, a (3x3, CSR, int64
// indices where I is int64) and operands that fit it; the names say which.
func everyCall[I cusparse.Index](t *testing.T, ctx *cuda.Context, h *cusparse.Handle, a *cusparse.Matrix[I, float64]) []struct {
	name string
	call func() error
} {
	x := upload(t, ctx, []float64{1, 2, 3})
	y := upload(t, ctx, []float64{0, 0, 0})
	d := func() cusparse.Dense[float64] { return cusparse.NewDense(upload(t, ctx, make([]float64, 9)), 3, 3) }
	return []struct {
		name string
		call func() error
	}{
		{"SpMV", func() error { return cusparse.SpMV(h, cusparse.NoTrans, 1, a, x, 0, y) }},
		{"SpMM", func() error { return cusparse.SpMM(h, cusparse.NoTrans, 1, a, d(), 0, d()) }},
		{"SpSV", func() error { return cusparse.SpSV(h, cusparse.NoTrans, cusparse.Lower, cusparse.NonUnit, 1, a, x, y) }},
		{"SpSM", func() error {
			return cusparse.SpSM(h, cusparse.NoTrans, cusparse.Lower, cusparse.NonUnit, 1, a, d(), d())
		}},
		{"SpGEMM", func() error { return errOf(cusparse.SpGEMM(h, a, a)) }},
		{"Convert", func() error { return errOf(cusparse.Convert(h, a, cusparse.CSC)) }},
		{"ToDense", func() error { return cusparse.ToDense(h, a, d()) }},
		{"FromDense", func() error { return errOf(cusparse.FromDense[I](h, d())) }},
		{"ToBSR", func() error { return errOf(cusparse.ToBSR(h, a, 3)) }},
		{"ToBlockedELL", func() error { return errOf(cusparse.ToBlockedELL(h, a, 3)) }},
	}
}

// diag3 is the 3x3 matrix diag(1, 2, 3) in CSR.
func diag3[I cusparse.Index](t *testing.T, s *cuda.Stream) *cusparse.Matrix[I, float64] {
	t.Helper()
	return free(t, must(cusparse.NewCSR(s, 3, 3, []I{0, 1, 2, 3}, []I{0, 1, 2}, []float64{1, 2, 3}))(t))
}

// TestPromisesClosedHandle: every call on a closed handle, or on a
// handle whose stream was closed, is cuda.ErrClosed (int64 indices too,
// whose conversions go through the host); Close twice is nil.
func TestPromisesClosedHandle(t *testing.T) {
	t.Run("int32", func(t *testing.T) { closedHandle[int32](t) })
	t.Run("int64", func(t *testing.T) { closedHandle[int64](t) })
}

func closedHandle[I cusparse.Index](t *testing.T) {
	ctx, s, _ := handle(t)
	a := diag3[I](t, s)
	h := must(cusparse.New(s))(t)
	for range 2 {
		if err := h.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	int64 := reflect.TypeFor[I]().Kind() == reflect.Int64
	for _, c := range everyCall(t, ctx, h, a) {
		if int64 && c.name == "SpGEMM" {
			continue // refused first for its indices (cuda.ErrNotSupported)
		}
		t.Run("closed handle/"+c.name, func(t *testing.T) {
			cudatest.WantErr(t, c.name+" on a closed handle", c.call(), cuda.ErrClosed, "closed")
		})
	}
	s2 := must(ctx.NewStream())(t)
	h2 := must(cusparse.New(s2))(t)
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range everyCall(t, ctx, h2, a) {
		if int64 && c.name == "SpGEMM" {
			continue
		}
		t.Run("closed stream/"+c.name, func(t *testing.T) {
			cudatest.WantErr(t, c.name+" on a handle whose stream is closed", c.call(), cuda.ErrClosed, "closed")
		})
	}
	if err := h2.Close(); err != nil {
		t.Errorf("Close of a handle whose stream is closed: %v", err)
	}
}

// TestPromisesFreedMatrix: a freed matrix is cuda.ErrClosed in every
// call, and in its own methods that reach its arrays; its Free again is
// nil, and it still describes itself.
func TestPromisesFreedMatrix(t *testing.T) {
	ctx, s, h := handle(t)
	a := must(cusparse.NewCSR(s, 3, 3, []int64{0, 1, 2, 3}, []int64{0, 1, 2}, []float64{1, 2, 3}))(t)
	for range 2 {
		if err := a.Free(); err != nil {
			t.Fatalf("Free: %v", err)
		}
	}
	for _, c := range everyCall(t, ctx, h, a) {
		if c.name == "FromDense" {
			continue // no matrix
		}
		t.Run(c.name, func(t *testing.T) {
			cudatest.WantErr(t, c.name+" of a freed matrix", c.call(), cuda.ErrClosed, "the matrix is freed")
		})
	}
	cudatest.WantErr(t, "ToHost of a freed matrix", errOf3(a.ToHost()), cuda.ErrClosed, "the matrix is freed")
	if a.Rows() != 3 || a.Cols() != 3 || !strings.Contains(a.String(), "freed") {
		t.Errorf("a freed matrix: %dx%d, %s", a.Rows(), a.Cols(), a)
	}
	// One of the product's operands freed.
	b := diag3[int32](t, s)
	c := must(cusparse.NewCSR(s, 3, 3, []int32{0, 1, 2, 3}, []int32{0, 1, 2}, []float64{1, 2, 3}))(t)
	if err := c.Free(); err != nil {
		t.Fatal(err)
	}
	cudatest.WantErr(t, "SpGEMM with b freed", errOf(cusparse.SpGEMM(h, b, c)), cuda.ErrClosed, "the matrix is freed")
}

// TestPromisesZeroValues: the zero value of every exported type is
// refused with cuda.ErrInvalidValue where it is used, and answers the
// methods that call nothing without a panic.
func TestPromisesZeroValues(t *testing.T) {
	ctx, s, h := handle(t)
	a := diag3[int32](t, s)
	var zh cusparse.Handle
	for _, c := range everyCall(t, ctx, &zh, a) {
		t.Run("zero Handle/"+c.name, func(t *testing.T) {
			cudatest.WantErr(t, c.name+" on a zero Handle", c.call(), cuda.ErrInvalidValue, "zero Handle")
		})
	}
	zm := &cusparse.Matrix[int32, float64]{}
	for _, c := range everyCall(t, ctx, h, zm) {
		if c.name == "FromDense" {
			continue // no matrix
		}
		t.Run("zero Matrix/"+c.name, func(t *testing.T) {
			cudatest.WantErr(t, c.name+" of a zero Matrix", c.call(), cuda.ErrInvalidValue, "zero Matrix")
		})
	}
	x := upload(t, ctx, []float64{1, 2, 3})
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"Handle.Close", zh.Close()},
		{"Matrix.Free", zm.Free()},
		{"Matrix.Arrays", errOf3(zm.Arrays())},
		{"Matrix.ToHost", errOf3(zm.ToHost())},
		{"SpMM of a zero Dense b", cusparse.SpMM(h, cusparse.NoTrans, 1, a, cusparse.Dense[float64]{}, 0, cusparse.NewDense(x, 3, 1))},
		{"SpMM into a zero Dense c", cusparse.SpMM(h, cusparse.NoTrans, 1, a, cusparse.NewDense(x, 3, 1), 0, cusparse.Dense[float64]{})},
		{"ToDense into a zero Dense", cusparse.ToDense(h, a, cusparse.Dense[float64]{})},
		{"FromDense of a zero Dense", errOf(cusparse.FromDense[int32](h, cusparse.Dense[float64]{}))},
		{"SpSM of zero Denses", cusparse.SpSM(h, cusparse.NoTrans, cusparse.Lower, cusparse.Unit, 1, a, cusparse.Dense[float64]{}, cusparse.Dense[float64]{})},
	} {
		t.Run(tc.name, func(t *testing.T) { cudatest.WantErr(t, tc.name, tc.err, cuda.ErrInvalidValue, "") })
	}
	if zh.Stream() != nil || zh.WorkBytes() != 0 || zh.String() == "" {
		t.Errorf("zero Handle: Stream %v, WorkBytes %d, String %q", zh.Stream(), zh.WorkBytes(), zh.String())
	}
	if zm.Rows() != 0 || zm.Cols() != 0 || zm.NNZ() != 0 || zm.BlockSize() != 0 || zm.Format() != cusparse.CSR || !strings.Contains(zm.String(), "zero") {
		t.Errorf("zero Matrix: %s", zm)
	}
}

// TestPromisesTriplets: NewCOO takes triplets in any order, sums repeated
// positions (keeping a sum of zero), refuses negative and out-of-range
// indices saying which, and int64 indices past int32's range are kept
// whole through every conversion.
func TestPromisesTriplets(t *testing.T) {
	ctx, s, h := handle(t)
	_ = ctx
	for _, tc := range []struct {
		name     string
		r, c     []int32
		v        []float64
		want     string // error, or "" for none
		rowsWant []int32
		colsWant []int32
		valsWant []float64
	}{
		{name: "unsorted with repeats", r: []int32{2, 0, 2, 0, 1}, c: []int32{1, 2, 1, 0, 1}, v: []float64{1, 2, 3, 4, 5},
			rowsWant: []int32{0, 0, 1, 2}, colsWant: []int32{0, 2, 1, 1}, valsWant: []float64{4, 2, 5, 4}},
		{name: "repeats summing to zero", r: []int32{1, 1}, c: []int32{2, 2}, v: []float64{1, -1},
			rowsWant: []int32{1}, colsWant: []int32{2}, valsWant: []float64{0}},
		{name: "no triplets", r: []int32{}, c: []int32{}, v: []float64{}},
		{name: "negative row", r: []int32{-1}, c: []int32{0}, v: []float64{1}, want: "triplet 0 is at (-1, 0), outside the 3x3 matrix"},
		{name: "negative column", r: []int32{0, 1}, c: []int32{0, -3}, v: []float64{1, 1}, want: "triplet 1 is at (1, -3), outside the 3x3 matrix"},
		{name: "column past the end", r: []int32{0}, c: []int32{3}, v: []float64{1}, want: "triplet 0 is at (0, 3), outside the 3x3 matrix"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := cusparse.NewCOO(s, 3, 3, tc.r, tc.c, tc.v)
			if tc.want != "" {
				cudatest.WantErr(t, "NewCOO", err, cuda.ErrInvalidValue, tc.want)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			free(t, m)
			r, c, v := must3(m.ToHost())(t)
			if !slices.Equal(r, tc.rowsWant) || !slices.Equal(c, tc.colsWant) || !slices.Equal(v, tc.valsWant) || m.NNZ() != len(tc.valsWant) {
				t.Errorf("NewCOO = rows %v cols %v values %v (NNZ %d); want %v %v %v", r, c, v, m.NNZ(), tc.rowsWant, tc.colsWant, tc.valsWant)
			}
			// Through CSR and back, on the device.
			csr := free(t, must(cusparse.Convert(h, m, cusparse.CSR))(t))
			back := free(t, must(cusparse.Convert(h, csr, cusparse.COO))(t))
			r, c, v = must3(back.ToHost())(t)
			if !slices.Equal(r, tc.rowsWant) || !slices.Equal(c, tc.colsWant) || !slices.Equal(v, tc.valsWant) {
				t.Errorf("COO→CSR→COO = rows %v cols %v values %v; want %v %v %v", r, c, v, tc.rowsWant, tc.colsWant, tc.valsWant)
			}
		})
	}
	t.Run("int64 past int32", func(t *testing.T) {
		const big = int64(math.MaxInt32) + 5
		m := free(t, must(cusparse.NewCOO(s, 2, int(big)+1, []int64{1, 0, 1}, []int64{big, 7, 3}, []float64{1, 2, 3}))(t))
		csr := free(t, must(cusparse.Convert(h, m, cusparse.CSR))(t))
		off, ind, val := must3(csr.ToHost())(t)
		if !slices.Equal(off, []int64{0, 1, 3}) || !slices.Equal(ind, []int64{7, 3, big}) || !slices.Equal(val, []float64{2, 3, 1}) {
			t.Errorf("CSR of int64 indices past int32 = %v %v %v", off, ind, val)
		}
		back := free(t, must(cusparse.Convert(h, csr, cusparse.COO))(t))
		r, c, v := must3(back.ToHost())(t)
		if !slices.Equal(r, []int64{0, 1, 1}) || !slices.Equal(c, []int64{7, 3, big}) || !slices.Equal(v, []float64{2, 3, 1}) {
			t.Errorf("back to COO = %v %v %v", r, c, v)
		}
		cudatest.WantErr(t, "NewCOO of int32 indices past int32", errOf(cusparse.NewCOO(s, 2, int(big)+1, []int32{0}, []int32{0}, []float64{1})), cuda.ErrInvalidValue, "more than int32 indices count")
	})
}

// TestPromisesStrided: dense operands with a Stride larger than their
// width: the elements between rows (columns) are neither read nor
// written, and the results are the reference's.
func TestPromisesStrided(t *testing.T) {
	ctx, s, h := handle(t)
	// A = [[1, 0, 2], [0, 3, 0]], 2x3.
	a := free(t, must(cusparse.NewCSR(s, 2, 3, []int32{0, 2, 3}, []int32{0, 2, 1}, []float64{1, 2, 3}))(t))
	const pad = -7.0
	// strided returns a buffer of rows×cols in layout with stride ld, of
	// the values at (i, j) given by f and pad elsewhere.
	strided := func(rows, cols, ld int, layout cusparse.Layout, f func(i, j int) float64) cusparse.Dense[float64] {
		major, minor := rows, cols
		if layout == cusparse.ColMajor {
			major, minor = cols, rows
		}
		xs := make([]float64, (major-1)*ld+minor+1)
		for k := range xs {
			xs[k] = pad
		}
		d := cusparse.Dense[float64]{Rows: rows, Cols: cols, Stride: ld, Layout: layout}
		for i := range rows {
			for j := range cols {
				xs[index(d, i, j)] = f(i, j)
			}
		}
		d.Data = upload(t, ctx, xs)
		return d
	}
	dense := [2][3]float64{{1, 0, 2}, {0, 3, 0}}
	for _, layout := range []cusparse.Layout{cusparse.RowMajor, cusparse.ColMajor} {
		t.Run("ToDense/"+layout.String(), func(t *testing.T) {
			d := strided(2, 3, 5, layout, func(i, j int) float64 { return 9 })
			if err := cusparse.ToDense(h, a, d); err != nil {
				t.Fatal(err)
			}
			checkStrided(t, "ToDense", download(t, s, d.Data), d, func(i, j int) float64 { return dense[i][j] }, pad)
			// And back: FromDense of the strided matrix.
			m := free(t, must(cusparse.FromDense[int32](h, d))(t))
			off, ind, val := must3(m.ToHost())(t)
			if !slices.Equal(off, []int32{0, 2, 3}) || !slices.Equal(ind, []int32{0, 2, 1}) || !slices.Equal(val, []float64{1, 2, 3}) {
				t.Errorf("FromDense of a strided d = %v %v %v", off, ind, val)
			}
		})
		t.Run("SpMM/"+layout.String(), func(t *testing.T) {
			// B = [[1, 2], [3, 4], [5, 6]] (3x2); A·B = [[11, 14], [9, 12]].
			b := strided(3, 2, 4, layout, func(i, j int) float64 { return float64(2*i + j + 1) })
			c := strided(2, 2, 3, layout, func(i, j int) float64 { return 1 })
			if err := cusparse.SpMM(h, cusparse.NoTrans, 1, a, b, 2, c); err != nil {
				t.Fatal(err)
			}
			want := [2][2]float64{{13, 16}, {11, 14}}
			checkStrided(t, "SpMM", download(t, s, c.Data), c, func(i, j int) float64 { return want[i][j] }, pad)
		})
		t.Run("SpMM over no columns/"+layout.String(), func(t *testing.T) {
			// op(A) of no columns, beta 0: C is zeroed, its padding
			// left alone.
			e := free(t, must(cusparse.NewCSR(s, 2, 0, []int32{0, 0, 0}, []int32{}, []float64{}))(t))
			b := cusparse.Dense[float64]{Data: upload(t, ctx, []float64{}), Rows: 0, Cols: 2, Layout: layout}
			c := strided(2, 2, 3, layout, func(i, j int) float64 { return math.NaN() })
			fake := cudatest.Fake(t)
			if fake != nil {
				fake.ResetCounts()
			}
			if err := cusparse.SpMM(h, cusparse.NoTrans, 1, e, b, 0, c); err != nil {
				t.Fatal(err)
			}
			if fake != nil {
				// The package doc: a product over no columns with
				// beta 0 needs no arithmetic, and is not cuSPARSE's.
				for name, n := range fake.Counts() {
					if strings.HasPrefix(name, "cusparse") && n > 0 {
						t.Errorf("%s called %d times: a product over no columns with beta 0 is not cuSPARSE's", name, n)
					}
				}
			}
			checkStrided(t, "SpMM over no columns, beta 0", download(t, s, c.Data), c, func(i, j int) float64 { return 0 }, pad)
		})
	}
}

// index is the index of element (i, j) of d in its buffer.
func index(d cusparse.Dense[float64], i, j int) int {
	if d.Layout == cusparse.ColMajor {
		return j*d.Stride + i
	}
	return i*d.Stride + j
}

// checkStrided checks got, d's buffer: want(i, j) at each element, pad
// everywhere else.
func checkStrided(t *testing.T, what string, got []float64, d cusparse.Dense[float64], want func(i, j int) float64, pad float64) {
	t.Helper()
	in := make([]bool, len(got))
	for i := range d.Rows {
		for j := range d.Cols {
			k := index(d, i, j)
			in[k] = true
			if got[k] != want(i, j) {
				t.Errorf("%s: element (%d, %d) = %v, want %v", what, i, j, got[k], want(i, j))
			}
		}
	}
	for k, v := range got {
		if !in[k] && v != pad {
			t.Errorf("%s: padding at %d = %v, want it untouched (%v)", what, k, v, pad)
		}
	}
}

// TestPromisesOtherContext: an operand of another context than the
// handle's is cuda.ErrInvalidValue naming it (Stream.Do, underneath,
// would name it by its place among the call's memory, "memory 3").
func TestPromisesOtherContext(t *testing.T) {
	ctx, s, h := handle(t)
	// Not cudatest.Context, whose leak check, made second, would run
	// before the first context's stream-ordered frees are done.
	other := must(cuda.NewContext(cudatest.Device(t)))(t)
	t.Cleanup(func() { other.Close() })
	a := diag3[int32](t, s)
	x, y := upload(t, ctx, []float64{1, 2, 3}), upload(t, ctx, []float64{0, 0, 0})
	ox := upload(t, other, []float64{1, 2, 3})
	os := must(other.NewStream())(t)
	t.Cleanup(func() { os.Close() })
	oa := diag3[int32](t, os)
	dense := func(c *cuda.Context) cusparse.Dense[float64] {
		return cusparse.NewDense(upload(t, c, make([]float64, 9)), 3, 3)
	}
	for _, tc := range []struct {
		name, arg string
		err       error
	}{
		{"SpMV x", "x", cusparse.SpMV(h, cusparse.NoTrans, 1, a, ox, 0, y)},
		{"SpMV y", "y", cusparse.SpMV(h, cusparse.NoTrans, 1, a, x, 0, ox)},
		{"SpMV a", "a", cusparse.SpMV(h, cusparse.NoTrans, 1, oa, x, 0, y)},
		{"SpMM c", "c", cusparse.SpMM(h, cusparse.NoTrans, 1, a, dense(ctx), 0, dense(other))},
		{"SpSV y", "y", cusparse.SpSV(h, cusparse.NoTrans, cusparse.Lower, cusparse.NonUnit, 1, a, x, ox)},
		{"SpSM b", "b", cusparse.SpSM(h, cusparse.NoTrans, cusparse.Lower, cusparse.NonUnit, 1, a, dense(other), dense(ctx))},
		{"ToDense d", "d", cusparse.ToDense(h, a, dense(other))},
		{"FromDense d", "d", second(cusparse.FromDense[int32](h, dense(other)))},
		{"Convert a", "a", second(cusparse.Convert(h, oa, cusparse.CSC))},
		{"ToBSR a", "a", second(cusparse.ToBSR(h, oa, 1))},
		{"SpGEMM b", "b", second(cusparse.SpGEMM(h, a, oa))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cudatest.WantErr(t, tc.name+" of another context", tc.err, cuda.ErrInvalidValue, tc.arg+" belongs to another context")
		})
	}
}
