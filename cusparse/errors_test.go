package cusparse_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cusparse"
	"github.com/gocuda/cuda/internal/cudatest"
)

// TestInvalid: bad input is an error matching cuda.ErrInvalidValue that
// says what was wrong, before cuSPARSE is called.
func TestInvalid(t *testing.T) {
	ctx, s, h := handle(t)
	a := free(t, must(cusparse.NewCSR(s, 2, 3, []int32{0, 1, 3}, []int32{2, 0, 1}, []float64{1, 2, 3}))(t))
	coo := free(t, must(cusparse.NewCOO(s, 2, 2, []int32{0, 1}, []int32{0, 1}, []float64{1, 1}))(t))
	csc := free(t, must(cusparse.Convert(h, coo, cusparse.CSC))(t))
	x3, x2 := upload(t, ctx, []float64{1, 2, 3}), upload(t, ctx, []float64{1, 2})
	d23 := cusparse.NewDense(upload(t, ctx, make([]float64, 6)), 2, 3)
	d32 := cusparse.NewDense(upload(t, ctx, make([]float64, 6)), 3, 2)
	_, _, cooValues, err := coo.Arrays()
	if err != nil {
		t.Fatal(err)
	}
	row := free(t, must(cusparse.NewCOO(s, 1, 2, []int32{0, 0}, []int32{0, 1}, []float64{1, 2}))(t))
	_, _, rowValues, err := row.Arrays()
	if err != nil {
		t.Fatal(err)
	}
	d22 := cusparse.NewDense(upload(t, ctx, make([]float64, 4)), 2, 2)
	// 2^40 rows of one non-zero: its CSR offsets are 8 TiB, its BSR's of
	// blocks of 2 4 TiB, and its Blocked-ELL's column indices as many.
	tall := free(t, must(cusparse.NewCOO(s, 1<<40, 2, []int64{5}, []int64{1}, []float64{1}))(t))
	huge := free(t, must(cusparse.NewCOO(s, 1<<32, 1<<32, []int64{}, []int64{}, []float64{}))(t))
	freed := must(cusparse.NewCOO(s, 1, 1, []int32{0}, []int32{0}, []float64{1}))(t)
	if err := freed.Free(); err != nil {
		t.Fatal(err)
	}
	closed := must(cusparse.New(s))(t)
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		err  error
		want string // in the message
		is   error
	}{
		{"NewCSR nil stream", errOf(cusparse.NewCSR[int32, float64](nil, 1, 1, []int32{0, 0}, nil, nil)), "s is a nil", cuda.ErrInvalidValue},
		{"NewCSR offsets length", errOf(cusparse.NewCSR(s, 2, 2, []int32{0, 0}, nil, []float64{})), "len(offsets) is 2: want 3", cuda.ErrInvalidValue},
		{"NewCSR values length", errOf(cusparse.NewCSR(s, 1, 2, []int32{0, 1}, []int32{0}, []float64{})), "len(values) is 0", cuda.ErrInvalidValue},
		{"NewCSR offsets end", errOf(cusparse.NewCSR(s, 1, 2, []int32{0, 2}, []int32{0}, []float64{1})), "offsets run from 0 to 2", cuda.ErrInvalidValue},
		{"NewCSR offsets past the end", errOf(cusparse.NewCSR(s, 2, 2, []int32{0, 2, 1}, []int32{0}, []float64{1})), "offsets[1] is 2, past len(indices), 1", cuda.ErrInvalidValue},
		{"NewCSR offsets back", errOf(cusparse.NewCSR(s, 3, 2, []int32{0, 1, 0, 1}, []int32{0}, []float64{1})), "offsets[2] is 0, less than offsets[1]", cuda.ErrInvalidValue},
		{"NewCSR index range", errOf(cusparse.NewCSR(s, 1, 2, []int32{0, 1}, []int32{2}, []float64{1})), "indices[0] is 2, outside 0..1", cuda.ErrInvalidValue},
		{"NewCSR unsorted", errOf(cusparse.NewCSR(s, 1, 3, []int32{0, 2}, []int32{2, 1}, []float64{1, 1})), "must increase (NewCOO sorts and sums)", cuda.ErrInvalidValue},
		{"NewCSC repeated", errOf(cusparse.NewCSC(s, 3, 1, []int64{0, 2}, []int64{1, 1}, []float32{1, 1})), "a column's indices must increase", cuda.ErrInvalidValue},
		{"NewCSR negative", errOf(cusparse.NewCSR(s, -1, 2, []int32{0}, nil, []float64{})), "must not be negative", cuda.ErrInvalidValue},
		{"NewCOO too big for int32", errOf(cusparse.NewCOO(s, 1<<31, 1, []int32{}, []int32{}, []float64{})), "more than int32 indices count", cuda.ErrInvalidValue},
		{"NewCOO lengths", errOf(cusparse.NewCOO(s, 2, 2, []int32{0}, []int32{0, 1}, []float64{1})), "len(rowInd) 1, len(colInd) 2", cuda.ErrInvalidValue},
		{"NewCOO outside", errOf(cusparse.NewCOO(s, 2, 2, []int32{0, 2}, []int32{0, 1}, []float64{1, 1})), "triplet 1 is at (2, 1), outside the 2x2 matrix", cuda.ErrInvalidValue},
		{"NewCOO nil stream", errOf(cusparse.NewCOO[int32, float64](nil, 1, 1, nil, nil, nil)), "s is a nil", cuda.ErrInvalidValue},
		{"New nil stream", errOf(cusparse.New(nil)), "s is a nil", cuda.ErrInvalidValue},
		{"SpMV nil handle", cusparse.SpMV(nil, cusparse.NoTrans, 1, a, x3, 0, x2), "nil *Handle", cuda.ErrInvalidValue},
		{"SpMV zero handle", cusparse.SpMV(&cusparse.Handle{}, cusparse.NoTrans, 1, a, x3, 0, x2), "a zero Handle", cuda.ErrInvalidValue},
		{"SpMV closed handle", cusparse.SpMV(closed, cusparse.NoTrans, 1, a, x3, 0, x2), "the handle is closed", cuda.ErrClosed},
		{"SpMV nil matrix", cusparse.SpMV(h, cusparse.NoTrans, 1, (*cusparse.Matrix[int32, float64])(nil), x3, 0, x2), "nil *Matrix", cuda.ErrInvalidValue},
		{"SpMV zero matrix", cusparse.SpMV(h, cusparse.NoTrans, 1, &cusparse.Matrix[int32, float64]{}, x3, 0, x2), "a zero Matrix", cuda.ErrInvalidValue},
		{"SpMV freed matrix", cusparse.SpMV(h, cusparse.NoTrans, 1, freed, x2, 0, x2), "the matrix is freed", cuda.ErrClosed},
		{"SpMV x length", cusparse.SpMV(h, cusparse.NoTrans, 1, a, x2, 0, x2), "len(x) is 2: want 3", cuda.ErrInvalidValue},
		{"SpMV y length (Trans)", cusparse.SpMV(h, cusparse.Trans, 1, a, x2, 0, x2), "len(y) is 2: want 3", cuda.ErrInvalidValue},
		{"SpMV nil x", cusparse.SpMV(h, cusparse.NoTrans, 1, a, nil, 0, x2), "x is nil", cuda.ErrInvalidValue},
		{"SpMV op", cusparse.SpMV(h, 7, 1, a, x3, 0, x2), "op is 7", cuda.ErrInvalidValue},
		{"SpMM shapes", cusparse.SpMM(h, cusparse.NoTrans, 1, a, d23, 0, d23), "want b 3x3 and c 2x3", cuda.ErrInvalidValue},
		{"SpMM short buffer", cusparse.SpMM(h, cusparse.NoTrans, 1, a, cusparse.NewDense(x3, 3, 2), 0, d32), "it needs 6 elements, and b.Data holds 3", cuda.ErrInvalidValue},
		{"SpMM stride", cusparse.SpMM(h, cusparse.NoTrans, 1, a, cusparse.Dense[float64]{Data: d32.Data, Rows: 3, Cols: 2, Stride: 1}, 0, d23), "b.Stride is 1: want 0 (packed) or at least 2", cuda.ErrInvalidValue},
		{"SpMM layout", cusparse.SpMM(h, cusparse.NoTrans, 1, a, cusparse.Dense[float64]{Data: d32.Data, Rows: 3, Cols: 2, Layout: 5}, 0, d23), "b.Layout is 5", cuda.ErrInvalidValue},
		{"SpMM stride past any buffer", cusparse.SpMM(h, cusparse.NoTrans, 1, a, cusparse.Dense[float64]{Data: d32.Data, Rows: 3, Cols: 2, Stride: math.MaxInt/2 + 1}, 0, cusparse.NewDense(upload(t, ctx, make([]float64, 4)), 2, 2)), "b is 3x2 row-major with stride 4611686018427387904: beyond any buffer", cuda.ErrInvalidValue},
		{"ToDense sizes past any buffer", cusparse.ToDense(h, huge, cusparse.Dense[float64]{Data: x3, Rows: 1 << 32, Cols: 1 << 32}), "d is 4294967296x4294967296 row-major with stride 4294967296: beyond any buffer", cuda.ErrInvalidValue},
		{"Convert int64 past the device", errOf(cusparse.Convert(h, tall, cusparse.CSR)), "out of memory", cuda.ErrOutOfMemory},
		{"ToBSR int64 past the device", errOf(cusparse.ToBSR(h, tall, 2)), "out of memory", cuda.ErrOutOfMemory},
		{"ToBlockedELL int64 past the device", errOf(cusparse.ToBlockedELL(h, tall, 2)), "out of memory", cuda.ErrOutOfMemory},
		{"NewBSR sizes past int64", errOf(cusparse.NewBSR[int64](s, 1<<32, 1<<32, 2, []float64{})), "more than int64 indices count", cuda.ErrInvalidValue},
		{"SpMV y is x", cusparse.SpMV(h, cusparse.NoTrans, 1, coo, x2, 0, x2), "y overlaps x", cuda.ErrInvalidValue},
		{"SpMV y is a's values", cusparse.SpMV(h, cusparse.NoTrans, 1, coo, x2, 0, cooValues), "y overlaps a's arrays", cuda.ErrInvalidValue},
		{"SpSV y is a's values", cusparse.SpSV(h, cusparse.NoTrans, cusparse.Lower, cusparse.NonUnit, 1, coo, x2, cooValues), "y overlaps a's arrays", cuda.ErrInvalidValue},
		{"SpSM c is a's values", cusparse.SpSM(h, cusparse.NoTrans, cusparse.Lower, cusparse.NonUnit, 1, coo, cusparse.NewDense(x2, 2, 1), cusparse.NewDense(cooValues, 2, 1)), "c overlaps a's arrays", cuda.ErrInvalidValue},
		{"ToDense into a's values", cusparse.ToDense(h, row, cusparse.NewDense(rowValues, 1, 2)), "d overlaps a's arrays", cuda.ErrInvalidValue},
		{"SpMM c is b", cusparse.SpMM(h, cusparse.NoTrans, 1, coo, d22, 0, d22), "c overlaps b", cuda.ErrInvalidValue},
		{"SpMM nil data", cusparse.SpMM(h, cusparse.NoTrans, 1, a, cusparse.Dense[float64]{Rows: 3, Cols: 2}, 0, d23), "b.Data is nil", cuda.ErrInvalidValue},
		{"SpGEMM format", errOf(cusparse.SpGEMM(h, coo, coo)), "a is COO and b COO: SpGEMM takes CSR", cuda.ErrInvalidValue},
		{"SpGEMM shapes", errOf(cusparse.SpGEMM(h, a, a)), "a's columns must be b's rows", cuda.ErrInvalidValue},
		{"SpSV square", cusparse.SpSV(h, cusparse.NoTrans, cusparse.Lower, cusparse.NonUnit, 1, a, x2, x2), "needs a square matrix", cuda.ErrInvalidValue},
		{"SpSV CSC", cusparse.SpSV(h, cusparse.NoTrans, cusparse.Lower, cusparse.NonUnit, 1, csc, x2, x2), "take CSR or COO", cuda.ErrInvalidValue},
		{"SpSV fill", cusparse.SpSV(h, cusparse.NoTrans, 2, cusparse.NonUnit, 1, coo, x2, x2), "fill is 2", cuda.ErrInvalidValue},
		{"SpSV diag", cusparse.SpSV(h, cusparse.NoTrans, cusparse.Lower, 2, 1, coo, x2, x2), "diag is 2", cuda.ErrInvalidValue},
		{"SpSV y", cusparse.SpSV(h, cusparse.NoTrans, cusparse.Lower, cusparse.Unit, 1, coo, x2, x3), "len(y) is 3: want 2", cuda.ErrInvalidValue},
		{"SpSM shapes", cusparse.SpSM(h, cusparse.NoTrans, cusparse.Lower, cusparse.Unit, 1, coo, d23, d32), "want b and c of a's rows", cuda.ErrInvalidValue},
		{"Convert format", errOf(cusparse.Convert(h, a, 9)), "f is 9", cuda.ErrInvalidValue},
		{"Convert to BSR", errOf(cusparse.Convert(h, a, cusparse.BSR)), "ToBSR", cuda.ErrInvalidValue},
		{"ToDense shape", cusparse.ToDense(h, a, d32), "a is 2x3 and d 3x2", cuda.ErrInvalidValue},
		{"FromDense nil data", errOf(cusparse.FromDense[int32](h, cusparse.Dense[float64]{Rows: 1, Cols: 1})), "d.Data is nil", cuda.ErrInvalidValue},
		{"Arrays of a freed matrix", errOf3(freed.Arrays()), "the matrix is freed", cuda.ErrClosed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err == nil || !errors.Is(tt.err, tt.is) || !strings.Contains(tt.err.Error(), tt.want) {
				t.Errorf("got %v, want an error matching %v that says %q", tt.err, tt.is, tt.want)
			}
		})
	}
}

func errOf[T any](_ T, err error) error { return err }

func errOf3[A, B, C any](_ A, _ B, _ C, err error) error { return err }

// TestLibraryErrors: cuSPARSE's own refusals, from the fake where it can
// be made to fail: each names the call the user made and cuSPARSE's
// function, carries its code, and leaves the handle usable; the work
// buffer's allocation failing is the driver's error, named after the call.
func TestLibraryErrors(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	ctx, s, h := handle(t)
	a := free(t, must(cusparse.NewCOO(s, 2, 2, []int32{0, 1, 1}, []int32{0, 0, 1}, []float64{2, 1, 4}))(t))
	x, y := upload(t, ctx, []float64{1, 1}), upload(t, ctx, []float64{0, 0})
	for _, tt := range []struct {
		call string
		code int
		run  func() error
		is   error
	}{
		{"cusparseSpMV", 3, func() error { return cusparse.SpMV(h, cusparse.NoTrans, 1, a, x, 0, y) }, cuda.ErrInvalidValue},
		{"cusparseSpMV_bufferSize", 10, func() error { return cusparse.SpMV(h, cusparse.NoTrans, 1, a, x, 0, y) }, cuda.ErrNotSupported},
		{"cusparseCreateCoo", 2, func() error { return cusparse.SpMV(h, cusparse.NoTrans, 1, a, x, 0, y) }, cuda.ErrOutOfMemory},
		{"cusparseSpSV_analysis", 7, func() error { return cusparse.SpSV(h, cusparse.NoTrans, cusparse.Lower, cusparse.NonUnit, 1, a, x, y) }, nil},
		{"cusparseSpGEMM_compute", 2, func() error {
			c := must(cusparse.Convert(h, a, cusparse.CSR))(t)
			defer c.Free()
			_, err := cusparse.SpGEMM(h, c, c)
			return err
		}, cuda.ErrOutOfMemory},
		{"cusparseXcoo2csr", 6, func() error { _, err := cusparse.Convert(h, a, cusparse.CSR); return err }, nil},
		{"cusparseDenseToSparse_analysis", 3, func() error {
			_, err := cusparse.FromDense[int32](h, cusparse.NewDense(upload(t, ctx, []float64{1, 0, 0, 1}), 2, 2))
			return err
		}, cuda.ErrInvalidValue},
	} {
		t.Run(tt.call, func(t *testing.T) {
			f.Fail(tt.call, 1, tt.code)
			defer f.ResetFaults()
			err := tt.run()
			if !errors.Is(err, cusparse.Result(tt.code)) || !strings.Contains(err.Error(), tt.call) || tt.is != nil && !errors.Is(err, tt.is) {
				t.Fatalf("with %s failing with %d: %v", tt.call, tt.code, err)
			}
			f.ResetFaults()
			if err := cusparse.SpMV(h, cusparse.NoTrans, 1, a, x, 0, y); err != nil {
				t.Fatalf("SpMV after: %v", err)
			}
			if got := download(t, s, y); got[0] != 2 || got[1] != 5 {
				t.Fatalf("SpMV after: y = %v, want [2 5]", got)
			}
		})
	}
	// The work buffer cannot be allocated: the driver's error, named after
	// the call; a fresh handle has no buffer yet.
	h2 := must(cusparse.New(s))(t)
	defer h2.Close()
	f.Fail("cuMemAllocAsync", 1, 2)
	if err := cusparse.SpMV(h2, cusparse.NoTrans, 1, a, x, 0, y); !errors.Is(err, cuda.ErrOutOfMemory) || !strings.Contains(err.Error(), "cusparse: SpMV") && !strings.Contains(err.Error(), ": SpMV: ") {
		t.Errorf("SpMV with its work buffer's allocation failing: %v", err)
	}
	f.ResetFaults()
	// A Close that fails leaves the handle usable; a second one closes it.
	f.Fail("cusparseDestroy", 1, 7)
	if err := h2.Close(); !errors.Is(err, cusparse.ResultInternalError) || !strings.Contains(err.Error(), "Handle.Close") {
		t.Fatalf("Close with cusparseDestroy failing: %v", err)
	}
	if err := cusparse.SpMV(h2, cusparse.NoTrans, 1, a, x, 0, y); err != nil {
		t.Errorf("SpMV after the failed Close: %v", err)
	}
	if err := h2.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if n := f.Live("sparse"); n != 1 {
		t.Errorf("%d cuSPARSE objects alive, want 1 (the test's handle)", n)
	}
}

// TestWorkReused: the work buffer grows to what a call asks for and is
// reused by the calls after, of the same size or smaller.
func TestWorkReused(t *testing.T) {
	ctx, s, h := handle(t)
	if h.WorkBytes() != 0 {
		t.Fatalf("a new handle holds %d bytes of work buffers", h.WorkBytes())
	}
	m := gen("random", 300, 300, false, 1)
	off, ind, val := csrOf[int32, float32](m)
	a := free(t, must(cusparse.NewCSR(s, 300, 300, off, ind, val))(t))
	x, y := upload(t, ctx, values[float32](300, 1)), upload(t, ctx, make([]float32, 300))
	if err := cusparse.SpMV(h, cusparse.NoTrans, 1, a, x, 0, y); err != nil {
		t.Fatal(err)
	}
	n := h.WorkBytes()
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	f.ResetCounts()
	for range 10 {
		if err := cusparse.SpMV(h, cusparse.NoTrans, 1, a, x, 0, y); err != nil {
			t.Fatal(err)
		}
	}
	if c := f.Counts(); c["cuMemAllocAsync"] != 0 || c["cuMemFreeAsync"] != 0 || h.WorkBytes() != n {
		t.Errorf("10 calls: %d allocations, %d frees, %d bytes held (was %d): want the buffer reused", c["cuMemAllocAsync"], c["cuMemFreeAsync"], h.WorkBytes(), n)
	}
}

// TestString: what a Handle and a Matrix print.
func TestString(t *testing.T) {
	_, s, h := handle(t)
	if got := h.String(); !strings.HasPrefix(got, "cusparse.Handle{") || !strings.Contains(got, "stream 0x") {
		t.Errorf("Handle.String() = %q", got)
	}
	a := must(cusparse.NewCOO(s, 3, 4, []int64{0, 2}, []int64{1, 3}, []complex64{1, 2}))(t)
	if got, want := a.String(), "cusparse.Matrix[int64,complex64]{COO 3x4, 2 non-zeros}"; got != want {
		t.Errorf("Matrix.String() = %q, want %q", got, want)
	}
	a.Free()
	for _, tt := range []struct{ got, want string }{
		{a.String(), "cusparse.Matrix[int64,complex64]{freed}"},
		{(&cusparse.Matrix[int32, float32]{}).String(), "cusparse.Matrix[int32,float32]{zero}"},
		{(*cusparse.Matrix[int32, float32])(nil).String(), "cusparse.Matrix[int32,float32](nil)"},
		{(*cusparse.Handle)(nil).String(), "cusparse.Handle(nil)"},
		{cusparse.CSC.String(), "CSC"},
		{cusparse.Format(9).String(), "Format(9)"},
		{cusparse.ConjTrans.String(), "ConjTrans"},
		{cusparse.Upper.String(), "Upper"},
		{cusparse.Unit.String(), "Unit"},
		{cusparse.ColMajor.String(), "column-major"},
	} {
		if tt.got != tt.want {
			t.Errorf("String() = %q, want %q", tt.got, tt.want)
		}
	}
}

// TestCapture: SpMV and SpMM captured into a graph run at each launch with
// the buffers' contents of then, once a call outside the capture has
// grown the work buffer; what hands a count to the host is refused.
func TestCapture(t *testing.T) {
	ctx, s, h := handle(t)
	a := free(t, must(cusparse.NewCOO(s, 2, 2, []int32{0, 1, 1}, []int32{0, 0, 1}, []float32{2, 1, 4}))(t))
	csr := free(t, must(cusparse.Convert(h, a, cusparse.CSR))(t))
	x, y := upload(t, ctx, []float32{1, 1}), upload(t, ctx, []float32{0, 0})
	spmv := func() error { return cusparse.SpMV(h, cusparse.NoTrans, 1, csr, x, 0, y) }
	// A fresh handle has no work buffer to capture with.
	if _, err := s.Capture(cuda.CaptureThreadLocal, spmv); !errors.Is(err, cuda.ErrNotSupported) || !strings.Contains(err.Error(), "run the call once before the capture") {
		t.Fatalf("SpMV captured by a fresh handle: %v", err)
	}
	if err := spmv(); err != nil {
		t.Fatal(err)
	}
	g, err := s.Capture(cuda.CaptureThreadLocal, func() error {
		if _, err := cusparse.SpGEMM(h, csr, csr); !errors.Is(err, cuda.ErrInvalidValue) {
			t.Errorf("SpGEMM inside a capture: %v, want ErrInvalidValue", err)
		}
		if _, err := cusparse.FromDense[int32](h, cusparse.NewDense(x, 1, 2)); !errors.Is(err, cuda.ErrInvalidValue) {
			t.Errorf("FromDense inside a capture: %v, want ErrInvalidValue", err)
		}
		return spmv()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	exec := must(g.Instantiate())(t)
	defer exec.Close()
	for _, k := range []float32{1, 3} {
		if err := x.CopyFromHost([]float32{k, 2 * k}); err != nil {
			t.Fatal(err)
		}
		if err := exec.Launch(s); err != nil {
			t.Fatal(err)
		}
		if err := s.Synchronize(); err != nil {
			t.Fatal(err)
		}
		if got := download(t, s, y); got[0] != 2*k || got[1] != 9*k {
			t.Fatalf("replay with x = %v·[1 2]: y = %v, want [%v %v]", k, got, 2*k, 9*k)
		}
	}
}

// TestConcurrent: goroutines sharing a Handle take turns; each gets its
// own product.
func TestConcurrent(t *testing.T) {
	ctx, s, h := handle(t)
	a := free(t, must(cusparse.NewCOO(s, 2, 2, []int32{0, 1, 1}, []int32{0, 0, 1}, []float64{2, 1, 4}))(t))
	const n = 8
	errs := make(chan error, n)
	ys := make([]*cuda.DeviceBuffer[float64], n)
	for i := range n {
		x := upload(t, ctx, []float64{float64(i), 1})
		ys[i] = upload(t, ctx, []float64{0, 0})
		go func() {
			for range 20 {
				if err := cusparse.SpMV(h, cusparse.NoTrans, 1, a, x, 0, ys[i]); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	for i, y := range ys {
		if got := download(t, s, y); got[0] != 2*float64(i) || got[1] != float64(i)+4 {
			t.Errorf("goroutine %d: y = %v, want [%d %d]", i, got, 2*i, i+4)
		}
	}
}

// TestFakeChecks: the fake answers what the real library leaves undefined
// with cuSPARSE's statuses: a work buffer smaller than asked for, none at
// all, a descriptor destroyed.
func TestFakeChecks(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	ctx, s, h := handle(t)
	a := free(t, must(cusparse.NewCOO(s, 2, 2, []int32{0, 1, 1}, []int32{0, 0, 1}, []float64{2, 1, 4}))(t))
	x, y := upload(t, ctx, []float64{1, 1}), upload(t, ctx, []float64{0, 0})
	for _, how := range []string{"short", "nil", "destroyed"} {
		asked, err := cusparse.SpMVMisused(h, a, x, y, how)
		if asked == 0 || !errors.Is(err, cusparse.ResultInvalidValue) || !strings.Contains(err.Error(), "cusparseSpMV") {
			t.Errorf("SpMV with its buffer %s (%d bytes asked for): %v, want CUSPARSE_STATUS_INVALID_VALUE", how, asked, err)
		}
	}
	if err := cusparse.SpMV(h, cusparse.NoTrans, 1, a, x, 0, y); err != nil {
		t.Fatalf("SpMV after: %v", err)
	}
	if got := download(t, s, y); got[0] != 2 || got[1] != 5 {
		t.Fatalf("SpMV after: y = %v, want [2 5]", got)
	}
}

// TestMissingLibrary: with GOCUDA_LIBCUSPARSE naming a file that does not
// exist, a call that needs cuSPARSE fails with one line that names the
// variable with its value, wrapping ErrNotSupported, with a
// *cuda.LibraryError whose Tried is that one path.
func TestMissingLibrary(t *testing.T) {
	const path = "/nonexistent/libcusparse.so"
	if !cudatest.InChild(t) {
		cudatest.RunChild(t, cusparse.EnvLibrary+"="+path)
		return
	}
	_, err := cusparse.Version()
	msg := fmt.Sprint(err)
	if want := "cusparse: Version: " + cusparse.EnvLibrary + "=" + path + " does not load ("; !errors.Is(err, cuda.ErrNotSupported) || !strings.HasPrefix(msg, want) || strings.Contains(msg, "\n") {
		t.Errorf("Version: %q; want ErrNotSupported, one line beginning %q", msg, want)
	}
	var le *cuda.LibraryError
	if !errors.As(err, &le) || len(le.Tried) != 1 || le.Tried[0] != path {
		t.Errorf("Version: %v; want a *cuda.LibraryError whose Tried is the variable's one path", err)
	}
	if _, err := cusparse.New(cudatest.Stream(t, cudatest.Context(t))); !errors.Is(err, cuda.ErrNotSupported) {
		t.Errorf("New: %v, want ErrNotSupported", err)
	}
	if p, err := cusparse.Library(); p != "" || !errors.Is(err, cuda.ErrNotSupported) {
		t.Errorf("Library() = %q, %v", p, err)
	}
}
